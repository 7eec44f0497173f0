// Allocation failure, every allocation in turn (SQLite-style countdown; see
// alloc_countdown.hpp): for k = 1, 2, ... the k-th allocation of a call
// fails, until a run makes fewer than k allocations. Each run where an
// allocation failed must either
//   - return CHR_ENOMEM with a fresh chr_last_error() message naming the
//     function, give back every block it took, and leave the ring exactly
//     as it was (fingerprint, counts, members, every token, owners of
//     sample keys and of hashes at and just past each token); or
//   - succeed with exactly the result a run without failures gives (a
//     failure the core absorbed on purpose).
// Each call is run twice over: only the k-th allocation failing, and the
// k-th and all later ones failing. Under ASan, LeakSanitizer also checks
// at exit that nothing leaked.
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <chring_plugin.h>

#include "alloc_countdown.hpp"
#include "chr_assert.h"

namespace {

using alloc_countdown::Mode;

constexpr unsigned kMembers = 40;  // > 32: replicas(key, kMembers) leaves the linear scan
constexpr unsigned kSampleKeys = 256;
constexpr unsigned long kMaxAllocations = 100000;  // a bound on k, far above any call here

chr_options fixture_options() {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = 16;
    return opts;
}

std::string member_id(unsigned n) { return "member-" + std::to_string(n); }
std::string sample_key(unsigned k) { return "object/" + std::to_string(k * 2654435761u); }

// kMembers members of weight 1..3 in three zones, plus one of weight 0.
chr_ring *fixture_ring() {
    chr_options opts = fixture_options();
    chr_ring *ring = nullptr;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    static const char *zones[] = {"east", "west", "north"};
    for (unsigned n = 0; n <= kMembers; ++n) {
        std::string id = member_id(n);
        uint32_t weight = n == kMembers ? 0 : 1 + n % 3;
        assert_chr_ok(chr_ring_add(ring, id.data(), id.size(), weight, zones[n % 3],
                                   std::strlen(zones[n % 3]), n));
    }
    return ring;
}

// The update-path fixture's hasher. An 8-byte key hashes to its own
// little-endian value, so a lookup can land exactly on a token (and on the
// pad records after a group's last one). The tokens of "pad-owner" and
// "pad-newcomer" sit at fixed places (placed_token), the others' are mixed
// FNV-1a.
bool placed_token(const unsigned char *p, size_t len, uint64_t *value) {
    static const std::string owner = "pad-owner#", newcomer = "pad-newcomer#";
    const std::string in(reinterpret_cast<const char *>(p), len);
    const bool is_owner = in.compare(0, owner.size(), owner) == 0;
    if (!is_owner && in.compare(0, newcomer.size(), newcomer) != 0) return false;
    const uint64_t i = std::stoull(in.substr(is_owner ? owner.size() : newcomer.size()));
    // Runs of 16 tokens just past a multiple of 2^61, which starts a group
    // of the index at every prefix size this fixture uses (2^9-2^11 buckets,
    // 64 a group): each run holds the first tokens of its group.
    static const uint64_t owner_runs[] = {uint64_t(1) << 62, uint64_t(1) << 63, uint64_t(1) << 61, 0};
    const uint64_t run = is_owner ? owner_runs[(i / 16) % 4] : uint64_t(3) << 62;
    *value = run + 1 + i % 16;
    return true;
}

uint64_t identity_hash(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    uint64_t h = 0;
    if (len == 8) {
        for (int i = 7; i >= 0; --i) h = h << 8 | p[i];
        return h;
    }
    if (placed_token(p, len, &h)) return h;
    h = 0xCBF29CE484222325ull ^ seed;
    for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}
const chr_hasher identity_hasher = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "alloc-identity",
                                    "8-byte keys hash to themselves", identity_hash, 0, nullptr, 0};

// Everything a caller can observe of a ring.
struct RingState {
    uint64_t fingerprint = 0, availability = 0;
    size_t nodes = 0, tokens = 0;
    std::vector<chr_node_ref> members;  // zero-filled, so whole structs compare
    std::vector<uint64_t> owners;       // tag of each sample key's owner
    // Every token (value, owner), and the owner of the 8-byte keys of each
    // value and value + 1 (under "alloc-identity", exactly there).
    std::vector<uint64_t> token_values, token_owners, at_tokens;

    bool operator==(const RingState &o) const {
        return fingerprint == o.fingerprint && availability == o.availability && nodes == o.nodes && tokens == o.tokens &&
               owners == o.owners && token_values == o.token_values && token_owners == o.token_owners &&
               at_tokens == o.at_tokens && members.size() == o.members.size() &&
               std::memcmp(members.data(), o.members.data(), members.size() * sizeof members[0]) == 0;
    }
};

RingState capture(const chr_ring *ring) {
    RingState s;
    assert_chr_ok(chr_ring_fingerprint(ring, &s.fingerprint));
    chr_availability_info availability = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_ring_availability(ring, &availability));
    s.availability = availability.digest;
    assert_chr_ok(chr_ring_node_count(ring, &s.nodes));
    assert_chr_ok(chr_ring_token_count(ring, &s.tokens));
    s.members.resize(s.nodes);
    size_t count = 0;
    assert_chr_ok(chr_ring_nodes(ring, s.members.data(), s.members.size(), &count));
    for (unsigned k = 0; k < kSampleKeys; ++k) {
        std::string key = sample_key(k);
        chr_node_ref owner;
        assert_chr_ok(chr_ring_lookup(ring, key.data(), key.size(), &owner));
        s.owners.push_back(owner.tag);
    }
    chr_snapshot *snap = nullptr;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    for (size_t k = 0; k < s.tokens; ++k) {
        uint64_t v = 0;
        uint32_t node = 0;
        assert_chr_ok(chr_snapshot_token(snap, k, &v, &node));
        s.token_values.push_back(v);
        s.token_owners.push_back(node);
        for (uint64_t h : {v, v + 1}) {
            unsigned char key[8];
            for (int i = 0; i < 8; ++i) key[i] = static_cast<unsigned char>(h >> (8 * i));
            chr_node_view owner;
            assert_chr_ok(chr_snapshot_lookup(snap, key, 8, &owner));
            s.at_tokens.push_back(owner.tag);
        }
    }
    chr_snapshot_release(snap);
    return s;
}

// The update-path fixture: 40 members of weight 1..3 and "pad-owner" of
// weight 4 (16 tokens a unit: about 1,350 tokens, 8 groups of the token
// index, one chunk each), built in one batch. Its changes below keep the
// token count within the index's 1-3.5 tokens a bucket, so they take the
// incremental update (TokenIndex::Updater), not the full build. Each run
// of pad-owner's tokens begins a chunk; removing it changes that chunk's
// first owner, so the unchanged chunk before it (the last chunk, for the
// run at 0) is copied to get new pads: the one allocation of the update
// that only such a change reaches.
chr_ring *update_fixture_ring() {
    static bool registered = false;  // first from an Update's constructor, not armed
    if (!registered) assert_chr_ok(chr_hasher_register(&identity_hasher));
    registered = true;
    chr_options opts = fixture_options();
    opts.hasher = "alloc-identity";
    chr_ring *ring = nullptr;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    std::vector<std::string> ids;
    std::vector<chr_change> adds;
    ids.reserve(kMembers + 1);
    for (unsigned n = 0; n <= kMembers; ++n) {
        ids.push_back(n == kMembers ? std::string("pad-owner") : member_id(n));
        adds.push_back({CHR_OP_ADD, n == kMembers ? 4u : 1 + n % 3, ids.back().data(), ids.back().size(),
                        nullptr, 0, n});
    }
    assert_chr_ok(chr_ring_apply(ring, adds.data(), adds.size(), nullptr));
    return ring;
}

// ---- one call under test ------------------------------------------------------

// A call to run with failures injected, and what must hold afterwards.
struct Scenario {
    const char *who;              // the API function: failure messages must name it
    bool keeps_process_state = false;  // it may leave process-wide caches behind (plugins)
    virtual void prepare() {}     // before each run, not armed
    virtual chr_status call() = 0;  // armed
    virtual void check_failed() = 0;     // after CHR_ENOMEM: nothing changed
    virtual void check_succeeded() = 0;  // after CHR_OK: the intended result
    virtual void finish() {}      // after each run
    explicit Scenario(const char *w) : who(w) {}
    virtual ~Scenario() = default;
};

// A membership change on a fresh fixture ring per run; a successful run
// must give what the same change gives without failures.
template <class Change>
struct Update : Scenario {
    Change change;
    chr_ring *(*make)();
    RingState expected;
    chr_ring *ring = nullptr;
    RingState before;

    Update(const char *w, Change c, chr_ring *(*m)()) : Scenario(w), change(c), make(m) {
        chr_ring *reference = make();
        assert_chr_ok(change(reference));
        expected = capture(reference);
        chr_ring_free(reference);
    }
    void prepare() override {
        ring = make();
        before = capture(ring);
        assert_false(before == expected);  // the change is visible
    }
    chr_status call() override { return change(ring); }
    void check_failed() override { assert_true(capture(ring) == before); }
    void check_succeeded() override { assert_true(capture(ring) == expected); }
    void finish() override {
        chr_ring_free(ring);
        ring = nullptr;
    }
};
template <class Change>
Update<Change> update(const char *who, Change c, chr_ring *(*make)() = fixture_ring) {
    return Update<Change>(who, c, make);
}

// A read of the shared fixture ring; `read(ring, &result)` fills a
// comparable result, which must match a read without failures.
template <class Result, class Read>
struct Reading : Scenario {
    const chr_ring *ring;
    Read read;
    Result expected{}, got{};
    RingState before;

    Reading(const char *w, const chr_ring *r, Read rd) : Scenario(w), ring(r), read(rd) {
        assert_chr_ok(read(ring, &expected));
        before = capture(ring);
    }
    void prepare() override { got = Result{}; }
    chr_status call() override { return read(ring, &got); }
    void check_failed() override {
        assert_true(got == Result{});  // no partial output claimed
        assert_true(capture(ring) == before);
    }
    void check_succeeded() override { assert_true(got == expected); }
};
template <class Result, class Read>
Reading<Result, Read> reading(const char *who, const chr_ring *ring, Read read) {
    return Reading<Result, Read>(who, ring, read);
}

// chr_ring_new: on failure *out is NULL; on success an empty ring (with
// the given fingerprint, unless 0).
struct NewRing : Scenario {
    chr_ring *made = nullptr;
    uint64_t empty_fingerprint = 0;
    explicit NewRing(uint64_t empty) : Scenario("chr_ring_new"), empty_fingerprint(empty) {}
    void prepare() override { made = reinterpret_cast<chr_ring *>(this); }  // must be overwritten
    chr_status call() override {
        chr_options opts = fixture_options();
        return chr_ring_new(&opts, &made);
    }
    void check_failed() override { assert_null(made); }
    void check_succeeded() override {
        assert_non_null(made);
        uint64_t fp = 0;
        assert_chr_ok(chr_ring_fingerprint(made, &fp));
        if (empty_fingerprint) assert_true(fp == empty_fingerprint);
    }
    void finish() override {
        if (made != reinterpret_cast<chr_ring *>(this)) chr_ring_free(made);
    }
};

// ---- running a scenario with the k-th allocation failing --------------------

struct Outcome {
    chr_status status = CHR_OK;
    alloc_countdown::Tally tally{};
    long blocks_kept = 0;  // blocks allocated by the call and not freed
    char message[512] = {};  // chr_last_error(), copied without allocating
};

// Overwrites this thread's chr_last_error() with a message about another
// function, so a stale message cannot pass for the failing call's.
void prime_last_error() { (void)chr_options_init(nullptr, CHR_OPTIONS_VERSION); }

Outcome run_armed(Scenario &s, unsigned long k, Mode mode,
                  alloc_countdown::Hooks hooks = alloc_countdown::Hooks::new_only) {
    prime_last_error();
    Outcome o;
    const long blocks = alloc_countdown::outstanding_blocks();
    alloc_countdown::arm(k, mode, hooks);
    o.status = s.call();
    o.tally = alloc_countdown::disarm();
    o.blocks_kept = alloc_countdown::outstanding_blocks() - blocks;
    std::snprintf(o.message, sizeof o.message, "%s", chr_last_error());
    return o;
}

// Reader slots (reclaim.cpp) are taken on a thread's first read and reused
// after the thread exits, so a new thread only allocates one when none is
// free. Occupiers are threads that each take a slot and sleep, until one
// of them had to allocate: then the next new thread must allocate too.
class SlotOccupiers {
public:
    ~SlotOccupiers() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            release_ = true;
        }
        wake_.notify_all();
        for (std::thread &t : threads_) t.join();
        chr_ring_free(ring_);
    }
    void fill() {
        if (!ring_) {  // not before: a ring made early would spoil the cold-start test
            chr_options opts = fixture_options();
            assert_chr_ok(chr_ring_new(&opts, &ring_));
        }
        for (bool allocated = false; !allocated;) {
            bool done = false;
            threads_.emplace_back([&] {
                uint64_t fp = 0;
                alloc_countdown::arm(0, Mode::once);
                chr_status st = chr_ring_fingerprint(ring_, &fp);  // takes a slot
                bool fresh_slot = alloc_countdown::disarm().allocations > 0;
                std::unique_lock<std::mutex> lock(mu_);
                allocated = fresh_slot || st != CHR_OK;
                done = true;
                wake_.notify_all();
                wake_.wait(lock, [&] { return release_; });
            });
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return done; });
        }
    }

private:
    chr_ring *ring_ = nullptr;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable wake_;
    bool release_ = false;
};

enum class Where { this_thread, new_thread };

struct Counts {
    unsigned long failed = 0, absorbed = 0, allocations = 0;
};

Counts countdown(Scenario &s, Mode mode, Where where) {
    Counts counts;
    SlotOccupiers occupiers;
    for (unsigned long k = 1; k <= kMaxAllocations; ++k) {
        s.prepare();
        Outcome o;
        if (where == Where::this_thread) {
            o = run_armed(s, k, mode);
        } else {
            // Blocks counted across the thread's whole life: per-thread
            // buffers the call keeps are freed when the thread exits. A
            // thread's first call fails malloc too: the C library's
            // per-thread bookkeeping (glibc aborted when registering a
            // thread_local destructor could not allocate).
            occupiers.fill();
            const long blocks = alloc_countdown::outstanding_blocks();
            std::thread t([&] { o = run_armed(s, k, mode, alloc_countdown::Hooks::new_and_malloc); });
            t.join();
            o.blocks_kept = alloc_countdown::outstanding_blocks() - blocks;
        }
        if (!o.tally.injected) {  // the call made fewer than k allocations
            assert_chr_ok(o.status);
            s.check_succeeded();
            s.finish();
            counts.allocations = o.tally.allocations;
            return counts;
        }
        if (o.status == CHR_OK) {
            counts.absorbed++;
            s.check_succeeded();
        } else {
            counts.failed++;
            if (o.status != CHR_ENOMEM)
                fail_msg("%s, allocation %lu failing (%s): status %d (%s), expected CHR_ENOMEM: %s",
                         s.who, k, alloc_countdown::mode_name(mode), o.status,
                         chr_strerror(o.status), o.message);
            if (!std::strstr(o.message, s.who) || !std::strstr(o.message, "out of memory"))
                fail_msg("%s, allocation %lu failing (%s): message \"%s\" does not name the "
                         "function and the cause", s.who, k, alloc_countdown::mode_name(mode),
                         o.message);
            // On a new thread allocation 1 is the reader slot, which stays in
            // the slot list for reuse (reclaim.cpp) once taken, thread or no.
            const long kept_by_design = where == Where::new_thread && k > 1 ? 1 : 0;
            if (o.blocks_kept != kept_by_design && !s.keeps_process_state)
                fail_msg("%s, allocation %lu failing (%s): %ld blocks not freed", s.who, k,
                         alloc_countdown::mode_name(mode), o.blocks_kept);
            s.check_failed();
        }
        s.finish();
    }
    fail_msg("%s still allocating after %lu allocations", s.who, kMaxAllocations);
    return counts;
}

enum class Allocates { must, may_not };

// Runs the scenario in both modes and reports. A call that must allocate
// must have had an allocation to fail, or the test would prove nothing.
void countdown_both_modes(Scenario &s, Where where = Where::this_thread,
                          Allocates allocates = Allocates::must) {
    for (Mode mode : {Mode::once, Mode::persistent}) {
        Counts c = countdown(s, mode, where);
        std::printf("%s%s (%s): %lu allocations; %lu runs failed with CHR_ENOMEM, %lu absorbed\n",
                    s.who, where == Where::new_thread ? " on a new thread" : "",
                    alloc_countdown::mode_name(mode), c.allocations, c.failed, c.absorbed);
        if (allocates == Allocates::must) assert_true(c.failed >= 1);
    }
}

// ---- the calls ------------------------------------------------------------------

// First in the table: the process has not resolved a hasher yet, so
// chr_ring_new discovers and loads the xxh3 plugin, with failures on the
// way. Plugins it loads before a failure stay loaded (process-wide state),
// so the block balance is not checked here; LeakSanitizer checks leaks.
void test_ring_new_discovering_plugins(void **) {
    NewRing s(0);
    s.keeps_process_state = true;
    Counts c = countdown(s, Mode::once, Where::this_thread);  // once: the cold start is gone after it
    std::printf("chr_ring_new, cold (once): %lu allocations; %lu runs failed with CHR_ENOMEM, "
                "%lu absorbed\n", c.allocations, c.failed, c.absorbed);
    assert_true(c.failed >= 1);
}

uint64_t empty_ring_fingerprint() {
    chr_options opts = fixture_options();
    chr_ring *ring = nullptr;
    uint64_t fp = 0;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    assert_chr_ok(chr_ring_fingerprint(ring, &fp));
    chr_ring_free(ring);
    return fp;
}

void test_ring_new(void **) {
    NewRing s(empty_ring_fingerprint());
    countdown_both_modes(s);
}

void test_add(void **) {
    auto s = update("chr_ring_add", [](chr_ring *r) {
        return chr_ring_add(r, "newcomer", 8, 2, "south", 5, 99);
    });
    countdown_both_modes(s);
}

void test_remove(void **) {
    auto s = update("chr_ring_remove", [](chr_ring *r) {
        std::string id = member_id(5);
        return chr_ring_remove(r, id.data(), id.size());
    });
    countdown_both_modes(s);
}

void test_set_weight(void **) {
    auto s = update("chr_ring_set_weight", [](chr_ring *r) {
        std::string id = member_id(7);  // weight 2 -> 3
        return chr_ring_set_weight(r, id.data(), id.size(), 3);
    });
    countdown_both_modes(s);
}

void test_apply_batch(void **) {
    auto s = update("chr_ring_apply", [](chr_ring *r) {
        std::string gone = member_id(9), heavier = member_id(11), drained = member_id(12);
        const chr_change changes[] = {
            {CHR_OP_ADD, 2, "batch-a", 7, "east", 4, 100},
            {CHR_OP_REMOVE, 0, gone.data(), gone.size(), nullptr, 0, 0},
            {CHR_OP_SET_WEIGHT, 3, heavier.data(), heavier.size(), nullptr, 0, 0},
            {CHR_OP_SET_WEIGHT, 0, drained.data(), drained.size(), nullptr, 0, 0},
            {CHR_OP_ADD, 1, "batch-b", 7, nullptr, 0, 101},
            {CHR_OP_REMOVE, 0, "batch-b", 7, nullptr, 0, 0},  // a later change sees an earlier one
        };
        size_t failed_index = 0;
        chr_status st = chr_ring_apply(r, changes, 6, &failed_index);
        // Out of memory is a batch-wide error: failed_index must be the count.
        return st == CHR_ENOMEM && failed_index != 6 ? CHR_EINTERNAL : st;
    });
    countdown_both_modes(s);
}

// ---- availability: a new snapshot of the same tokens ------------------------------

// Two members down on the small fixture (its tokens copied) and on the
// update fixture (its index's chunks shared).
chr_status mark_two_down(chr_ring *r) {
    std::string a = member_id(3), b = member_id(8);
    const void *ids[] = {a.data(), b.data()};
    const size_t lens[] = {a.size(), b.size()};
    return chr_ring_set_availability(r, ids, lens, 2, 70);
}

void test_set_availability(void **) {
    auto s = update("chr_ring_set_availability", mark_two_down);
    countdown_both_modes(s);
}

void test_set_availability_sharing_the_index(void **) {
    auto s = update("chr_ring_set_availability", mark_two_down, update_fixture_ring);
    countdown_both_modes(s);
}

void test_set_down(void **) {
    auto s = update("chr_ring_set_down", [](chr_ring *r) {
        return chr_ring_set_down(r, "pad-owner", 9, 1);
    }, update_fixture_ring);
    countdown_both_modes(s);
}

// ---- the incremental update (TokenIndex::Updater) -------------------------------

void test_update_path_add(void **) {
    auto s = update("chr_ring_add", [](chr_ring *r) {
        return chr_ring_add(r, "pad-newcomer", 12, 1, nullptr, 0, 99);  // a run at 3 x 2^62
    }, update_fixture_ring);
    countdown_both_modes(s);
}

void test_update_path_remove(void **) {
    auto s = update("chr_ring_remove", [](chr_ring *r) {
        return chr_ring_remove(r, "pad-owner", 9);  // four runs, one wrapping to the last chunk
    }, update_fixture_ring);
    countdown_both_modes(s);
}

void test_update_path_set_weight(void **) {
    auto s = update("chr_ring_set_weight", [](chr_ring *r) {
        return chr_ring_set_weight(r, "pad-owner", 9, 1);  // its runs at 2^63, 2^61 and 0 go
    }, update_fixture_ring);
    countdown_both_modes(s);
}

void test_update_path_raise_weight(void **) {
    auto s = update("chr_ring_set_weight", [](chr_ring *r) {
        std::string id = member_id(4);  // weight 2 -> 4: tokens added, none removed
        return chr_ring_set_weight(r, id.data(), id.size(), 4);
    }, update_fixture_ring);
    countdown_both_modes(s);
}

void test_update_path_apply_batch(void **) {
    auto s = update("chr_ring_apply", [](chr_ring *r) {
        std::string gone = member_id(9), heavier = member_id(10), drained = member_id(12);
        const chr_change changes[] = {
            {CHR_OP_ADD, 1, "pad-newcomer", 12, "east", 4, 100},
            {CHR_OP_REMOVE, 0, gone.data(), gone.size(), nullptr, 0, 0},
            {CHR_OP_SET_WEIGHT, 3, heavier.data(), heavier.size(), nullptr, 0, 0},  // 2 -> 3
            {CHR_OP_SET_WEIGHT, 0, drained.data(), drained.size(), nullptr, 0, 0},
            {CHR_OP_SET_WEIGHT, 2, "pad-owner", 9, nullptr, 0, 0},
        };
        size_t failed_index = 0;
        chr_status st = chr_ring_apply(r, changes, 5, &failed_index);
        return st == CHR_ENOMEM && failed_index != 5 ? CHR_EINTERNAL : st;
    }, update_fixture_ring);
    countdown_both_modes(s);
}

// The replicas of one key, as node tags in order.
struct Replicas {
    size_t count = 0;
    uint64_t tags[kMembers] = {};
    bool operator==(const Replicas &o) const {
        return count == o.count && std::memcmp(tags, o.tags, sizeof tags) == 0;
    }
    // The tags of what a replicas call with status st wrote (refs or views).
    template <class Node>
    chr_status take(chr_status st, const Node *nodes, size_t n) {
        if (st != CHR_OK) return st;
        count = n;
        for (size_t i = 0; i < n; ++i) tags[i] = nodes[i].tag;
        return st;
    }
};

// chr_ring_replicas(key, kMembers) on `ring`, as node tags in order.
auto replicas_reading(const chr_ring *ring) {
    return reading<Replicas>("chr_ring_replicas", ring, [](const chr_ring *r, Replicas *out) {
        static chr_node_ref refs[kMembers];  // caller memory: nothing here may allocate
        size_t count = 0;
        chr_status st = chr_ring_replicas(r, "object/1", 8, kMembers, refs, &count);
        return out->take(st, refs, count);
    });
}

void test_replicas_many(void **) {
    chr_ring *ring = fixture_ring();
    auto s = replicas_reading(ring);
    // This thread has its reader slot and whatever the reference read left
    // it: it need not allocate at all. A new thread must take a slot.
    countdown_both_modes(s, Where::this_thread, Allocates::may_not);
    countdown_both_modes(s, Where::new_thread);
    chr_ring_free(ring);
}

// A ring past 65,536 members (tokens_per_weight 1), where replicas and
// bounded spills mark the nodes they met in a per-thread table
// (snapshot.hpp), sized on a thread's first such call.
chr_ring *huge_ring() {
    constexpr unsigned kHuge = 65536 + 64;
    chr_options opts = fixture_options();
    opts.tokens_per_weight = 1;
    chr_ring *ring = nullptr;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    std::vector<std::string> ids(kHuge);
    std::vector<chr_change> adds(kHuge);
    for (unsigned n = 0; n < kHuge; ++n) {
        char id[16];
        std::snprintf(id, sizeof id, "m%06u", n);  // in id order: each add appends
        ids[n] = id;
        adds[n] = chr_change{CHR_OP_ADD, 1, ids[n].data(), ids[n].size(), nullptr, 0, n};
    }
    assert_chr_ok(chr_ring_apply(ring, adds.data(), adds.size(), nullptr));
    return ring;
}

void test_replicas_in_a_huge_ring(void **) {
    chr_ring *ring = huge_ring();
    auto s = replicas_reading(ring);
    countdown_both_modes(s, Where::new_thread);
    chr_ring_free(ring);
}

// Each reader entry point of a snapshot and a tracker as a thread's first
// call: CHR_ENOMEM or the result a call without failures gives, never an
// abort. In the huge ring the key's home is loaded, so the bounded calls
// spill along the replica walk (the per-thread table).
void test_snapshot_readers_first_call_on_a_thread(void **) {
    chr_ring *ring = huge_ring();
    chr_snapshot *snap = nullptr;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    size_t nodes = 0;
    assert_chr_ok(chr_snapshot_node_count(snap, &nodes));
    chr_node_view home;
    assert_chr_ok(chr_snapshot_lookup(snap, "object/7", 8, &home));
    std::vector<uint64_t> loads(nodes, 0);
    loads[home.index] = 1000;
    chr_tracker *tracker = nullptr;
    assert_chr_ok(chr_tracker_new(nodes, &tracker));
    chr_ticket held;  // the home's load in the tracker
    for (int i = 0; i < 1000; ++i) assert_chr_ok(chr_tracker_acquire(tracker, snap, "object/7", 8, nullptr, nullptr, nullptr, &held));
    const chr_bound_options bound = CHR_BOUND_OPTIONS_INIT;

    auto lookup = reading<uint64_t>("chr_snapshot_lookup", ring, [&](const chr_ring *, uint64_t *tag) {
        chr_node_view v;
        chr_status st = chr_snapshot_lookup(snap, "object/7", 8, &v);
        if (st == CHR_OK) *tag = v.tag + 1;  // + 1: 0 means "nothing written"
        return st;
    });
    countdown_both_modes(lookup, Where::new_thread, Allocates::may_not);

    auto replicas = reading<Replicas>("chr_snapshot_replicas", ring, [&](const chr_ring *, Replicas *out) {
        static chr_node_view views[kMembers];
        size_t count = 0;
        chr_status st = chr_snapshot_replicas(snap, "object/1", 8, kMembers, views, &count);
        return out->take(st, views, count);
    });
    countdown_both_modes(replicas, Where::new_thread);

    auto bounded = reading<uint64_t>("chr_snapshot_lookup_bounded", ring, [&](const chr_ring *, uint64_t *tag) {
        chr_node_view v;
        chr_status st = chr_snapshot_lookup_bounded(snap, "object/7", 8, loads.data(), nullptr, nodes,
                                                    &bound, &v, nullptr);
        if (st == CHR_OK) *tag = v.tag + 1;
        return st;
    });
    countdown_both_modes(bounded, Where::new_thread);

    // Acquired and released in the call, so every run sees the same loads.
    auto acquire = reading<uint64_t>("chr_tracker_acquire", ring, [&](const chr_ring *, uint64_t *tag) {
        chr_node_view v;
        chr_ticket t;
        chr_status st = chr_tracker_acquire(tracker, snap, "object/7", 8, &bound, &v, nullptr, &t);
        if (st != CHR_OK) return st;
        *tag = v.tag + 1;
        return chr_tracker_release(tracker, &t);
    });
    countdown_both_modes(acquire, Where::new_thread);

    auto counts = reading<uint64_t>("chr_tracker_load", ring, [&](const chr_ring *, uint64_t *sum) {
        uint64_t load = 0, total = 0;
        chr_status st = chr_tracker_load(tracker, home.id, home.id_len, &load);
        if (st == CHR_OK) st = chr_tracker_total(tracker, &total);
        if (st == CHR_OK) *sum = load + total;
        return st;
    });
    countdown_both_modes(counts, Where::new_thread, Allocates::may_not);

    for (int i = 0; i < 1000; ++i) assert_chr_ok(chr_tracker_release(tracker, &held));
    chr_tracker_free(tracker);
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

// chr_tracker_acquire as the first tracker call on a snapshot: it hashes
// the members' ids once for the snapshot (one allocation the snapshot
// keeps). A fresh ring per run, so that every run is such a first call; a
// failed one counts no request and keeps no block.
struct FirstAcquireOnSnapshot : Scenario {
    chr_tracker *tracker = nullptr;
    chr_ring *ring = nullptr;
    chr_snapshot *snap = nullptr;
    uint64_t expected = 0, got = 0;  // the chosen node's tag + 1 (0: nothing written)

    FirstAcquireOnSnapshot() : Scenario("chr_tracker_acquire") {
        assert_chr_ok(chr_tracker_new(0, &tracker));
        FirstAcquireOnSnapshot::prepare();
        assert_chr_ok(FirstAcquireOnSnapshot::call());
        expected = got;
        FirstAcquireOnSnapshot::finish();
    }
    ~FirstAcquireOnSnapshot() override { chr_tracker_free(tracker); }
    void prepare() override {
        ring = fixture_ring();
        assert_chr_ok(chr_ring_snapshot(ring, &snap));
        got = 0;
    }
    chr_status call() override {
        const chr_bound_options bound = CHR_BOUND_OPTIONS_INIT;
        chr_node_view v;
        chr_ticket t;
        chr_status st = chr_tracker_acquire(tracker, snap, "object/7", 8, &bound, &v, nullptr, &t);
        if (st != CHR_OK) return st;
        got = v.tag + 1;
        return chr_tracker_release(tracker, &t);
    }
    void check_nothing_in_flight() {
        uint64_t total = 1;
        assert_chr_ok(chr_tracker_total(tracker, &total));
        assert_int_equal(total, 0);
    }
    void check_failed() override {
        assert_int_equal(got, 0);
        check_nothing_in_flight();
    }
    void check_succeeded() override {
        assert_int_equal(got, expected);
        check_nothing_in_flight();
    }
    void finish() override {
        chr_snapshot_release(snap);
        chr_ring_free(ring);
        snap = nullptr;
        ring = nullptr;
    }
};

void test_tracker_first_acquire_on_a_snapshot(void **) {
    FirstAcquireOnSnapshot s;
    countdown_both_modes(s);
    countdown_both_modes(s, Where::new_thread);
}

void test_lookup_first_read_on_a_thread(void **) {
    chr_ring *ring = fixture_ring();
    auto s = reading<uint64_t>("chr_ring_lookup", ring, [](const chr_ring *r, uint64_t *tag) {
        chr_node_ref owner;
        chr_status st = chr_ring_lookup(r, "object/7", 8, &owner);
        if (st == CHR_OK) *tag = owner.tag + 1;  // + 1: 0 means "nothing written"
        return st;
    });
    countdown_both_modes(s, Where::new_thread);
    chr_ring_free(ring);
}

void test_snapshot_first_read_on_a_thread(void **) {
    chr_ring *ring = fixture_ring();
    auto s = reading<uint64_t>("chr_ring_snapshot", ring, [](const chr_ring *r, uint64_t *fp) {
        chr_snapshot *snap = reinterpret_cast<chr_snapshot *>(fp);  // must be overwritten
        chr_status st = chr_ring_snapshot(r, &snap);
        if (st != CHR_OK) return snap == nullptr ? st : CHR_EINTERNAL;
        st = chr_snapshot_fingerprint(snap, fp);
        chr_snapshot_release(snap);
        return st;
    });
    countdown_both_modes(s, Where::new_thread);
    chr_ring_free(ring);
}

// chr_diff_new / chr_plan_new between the fixture and the fixture after a
// batch: on failure *out is NULL and every block is given back (the
// snapshots' references too: a leaked one keeps its snapshot's blocks); on
// success the diff (or plan) a run without failures makes.
struct NewDiff : Scenario {
    chr_snapshot *old_snap = nullptr, *new_snap = nullptr;
    chr_diff *diff = nullptr;        // for the plan: made once, not armed
    size_t replicas;                 // 0: test chr_diff_new, else chr_plan_new
    void *made = nullptr;
    uint64_t expected_count = 0;
    double expected_share = 0.0;

    explicit NewDiff(size_t n) : Scenario(n ? "chr_plan_new" : "chr_diff_new"), replicas(n) {
        chr_ring *ring = fixture_ring();
        assert_chr_ok(chr_ring_snapshot(ring, &old_snap));
        std::string gone = member_id(9);
        const chr_change changes[] = {
            {CHR_OP_ADD, 2, "newcomer", 8, "south", 5, 99},
            {CHR_OP_REMOVE, 0, gone.data(), gone.size(), nullptr, 0, 0},
        };
        assert_chr_ok(chr_ring_apply(ring, changes, 2, nullptr));
        assert_chr_ok(chr_ring_snapshot(ring, &new_snap));
        chr_ring_free(ring);
        assert_chr_ok(chr_diff_new(old_snap, new_snap, &diff));
        assert_chr_ok(call());
        measure(&expected_count, &expected_share);
        assert_true(expected_count > 0);
        free_made();
    }
    ~NewDiff() override {
        chr_diff_free(diff);
        chr_snapshot_release(old_snap);
        chr_snapshot_release(new_snap);
    }
    void measure(uint64_t *count, double *share) {
        if (replicas) {
            chr_plan_info info = CHR_PLAN_INFO_INIT;
            assert_chr_ok(chr_plan_describe(static_cast<chr_plan *>(made), &info));
            *count = info.entries;
            *share = info.copies;
        } else {
            chr_diff_info info = CHR_DIFF_INFO_INIT;
            assert_chr_ok(chr_diff_describe(static_cast<chr_diff *>(made), &info));
            *count = info.ranges;
            *share = info.moved;
        }
    }
    void free_made() {
        if (made == this) return;
        if (replicas) chr_plan_free(static_cast<chr_plan *>(made));
        else chr_diff_free(static_cast<chr_diff *>(made));
        made = nullptr;
    }
    void prepare() override { made = this; }  // must be overwritten
    chr_status call() override {
        if (replicas) {
            chr_plan *p = reinterpret_cast<chr_plan *>(made);
            chr_status st = chr_plan_new(diff, 0, replicas, &p);
            made = p;
            return st;
        }
        chr_diff *d = reinterpret_cast<chr_diff *>(made);
        chr_status st = chr_diff_new(old_snap, new_snap, &d);
        made = d;
        return st;
    }
    void check_failed() override { assert_null(made); }
    void check_succeeded() override {
        assert_non_null(made);
        uint64_t count = 0;
        double share = 0.0;
        measure(&count, &share);
        assert_true(count == expected_count && share == expected_share);
    }
    void finish() override { free_made(); }
};

void test_diff_new(void **) {
    NewDiff s(0);
    countdown_both_modes(s);
}

void test_plan_new(void **) {
    NewDiff s(3);
    countdown_both_modes(s);
}

// chr_follower_check of a file that changes the fixture ring: on failure
// the ring is unchanged and the file's stamp is not kept, so the next check
// (without failures) applies the file.
struct FollowerCheck : Scenario {
    std::string dir, path;
    RingState expected, before;
    chr_ring *ring = nullptr;
    chr_follower *follower = nullptr;

    FollowerCheck() : Scenario("chr_follower_check") {
        char name[] = "/tmp/chring-alloc-follower-XXXXXX";
        assert_non_null(mkdtemp(name));
        dir = name;
        path = dir + "/ring";
        // Drops member-0, reweights member-1, adds two members.
        std::string text;
        for (unsigned n = 1; n <= kMembers; ++n) {
            const uint32_t weight = n == 1 ? 7 : n == kMembers ? 0 : 1 + n % 3;
            static const char *zones[] = {"east", "west", "north"};
            text += member_id(n) + " " + std::to_string(weight) + " " + zones[n % 3] + "\n";
        }
        text += "added-1 2 east\nadded-2 1\n";
        FILE *f = std::fopen(path.c_str(), "wb");
        assert_non_null(f);
        assert_int_equal(std::fwrite(text.data(), 1, text.size(), f), text.size());
        assert_int_equal(std::fclose(f), 0);
        chr_ring *reference = fixture_ring();
        assert_chr_ok(chr_ring_apply_file(reference, path.c_str(), nullptr));
        expected = capture(reference);
        chr_ring_free(reference);
    }
    ~FollowerCheck() override {
        unlink(path.c_str());
        rmdir(dir.c_str());
    }
    void prepare() override {
        ring = fixture_ring();
        before = capture(ring);
        assert_false(before == expected);
        assert_chr_ok(chr_follower_new(ring, path.c_str(), 0, &follower));
    }
    chr_status call() override { return chr_follower_check(follower, nullptr, nullptr); }
    void check_failed() override {
        assert_true(capture(ring) == before);
        int32_t outcome = -1;
        assert_chr_ok(chr_follower_check(follower, &outcome, nullptr));
        assert_int_equal(outcome, CHR_FOLLOW_APPLIED);
        check_succeeded();
    }
    void check_succeeded() override { assert_true(capture(ring) == expected); }
    void finish() override {
        chr_follower_free(follower);
        follower = nullptr;
        chr_ring_free(ring);
        ring = nullptr;
    }
};

void test_follower_check(void **) {
    FollowerCheck s;
    countdown_both_modes(s);
}

}  // namespace

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_new_discovering_plugins),  // first: the cold start
        cmocka_unit_test(test_ring_new),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_set_weight),
        cmocka_unit_test(test_apply_batch),
        cmocka_unit_test(test_set_availability),
        cmocka_unit_test(test_set_availability_sharing_the_index),
        cmocka_unit_test(test_set_down),
        cmocka_unit_test(test_update_path_add),
        cmocka_unit_test(test_update_path_remove),
        cmocka_unit_test(test_update_path_set_weight),
        cmocka_unit_test(test_update_path_raise_weight),
        cmocka_unit_test(test_update_path_apply_batch),
        cmocka_unit_test(test_replicas_many),
        cmocka_unit_test(test_replicas_in_a_huge_ring),
        cmocka_unit_test(test_snapshot_readers_first_call_on_a_thread),
        cmocka_unit_test(test_tracker_first_acquire_on_a_snapshot),
        cmocka_unit_test(test_lookup_first_read_on_a_thread),
        cmocka_unit_test(test_snapshot_first_read_on_a_thread),
        cmocka_unit_test(test_diff_new),
        cmocka_unit_test(test_plan_new),
        cmocka_unit_test(test_follower_check),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
