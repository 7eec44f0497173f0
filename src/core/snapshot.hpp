// An immutable ring state: members, their tokens in the lookup index, and
// the C API's view of each member. Built once by a writer (snapshot_build.cpp),
// then only read, by any number of threads, until its last reference goes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/membership.hpp"
#include "chring.h"
#include "node_cache.hpp"
#include "placement.hpp"
#include "token_index.hpp"

namespace chring {

// chr_replica_policy values (chring.h, "Zone-aware replicas").
enum class ReplicaPolicy : int32_t {
    nodes = CHR_REPLICAS_NODES,
    zones_first = CHR_REPLICAS_ZONES_FIRST,
    nts = CHR_REPLICAS_NTS,
};

// The replica policies this library has, by number: their names
// (chr_replica_policy_name), and the one check of a policy number every
// call taking one makes: CHR_OK, or CHR_ENOTSUP naming the known ones.
constexpr const char *kReplicaPolicyNames[] = {"nodes", "zones-first", "nts"};
constexpr int32_t kReplicaPolicies = int32_t(sizeof kReplicaPolicyNames / sizeof kReplicaPolicyNames[0]);
chr_status check_replica_policy(const char *who, int32_t policy);

// A ring's availability state (chring.h, "Availability"): which members are
// marked down, by node index, and the panic threshold in percent.
struct Marks {
    std::vector<uint8_t> down;  // node_count() entries, or empty: none marked
    uint32_t panic_threshold = CHR_PANIC_THRESHOLD_DEFAULT;
};

class Snapshot {
public:
    // The empty ring.
    explicit Snapshot(PlacementPtr placement);
    // `base` plus `delta`. A placement with fresh_tokens (native): tokens of
    // unchanged nodes are filtered from `base` and merged with freshly
    // generated ones in O(T + d log d). Placements with all_points rebuild
    // every point, as the systems they reproduce do. The marks are `marks`
    // (by the new node table's index) when given, else the base's carried
    // over: a removed member's mark goes, an added member is up.
    Snapshot(const Snapshot &base, MembershipDelta delta, const Marks *marks = nullptr);
    // `base`'s members and tokens with other marks: no token is generated
    // again, the index shares every chunk of the base's (snapshot_build.cpp).
    Snapshot(const Snapshot &base, Marks marks);
    ~Snapshot();
    Snapshot(const Snapshot &) = delete;
    Snapshot &operator=(const Snapshot &) = delete;

    // References: the ring holds one while it publishes this snapshot,
    // each chr_snapshot handle one more.
    void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() const noexcept;

    uint64_t hash_key(const void *key, size_t len) const noexcept { return key_hash_(key, len); }
    // Owner (node index) of the key at hash h: the first token >= h,
    // wrapping, or, while marks are in effect and that owner is down, the
    // first member of its walk that is up. Requires token_count() > 0.
    uint32_t owner_at_hash(uint64_t h) const noexcept { return slot_node_[slot_at_hash(h)]; }
    // The owner of the first token >= h whatever the marks (diffs and plans
    // compare tokens).
    uint32_t token_owner_at_hash(uint64_t h) const noexcept { return slot_node_[index_.slot_at_hash(h)]; }
    uint32_t owner_of(const void *key, size_t len) const noexcept {
        return owner_at_hash(hash_key(key, len));
    }
    // Owners of n keys (validated by the caller). Prefetches each key's
    // index entries, then its token window, ahead of its lookup, so the
    // cache misses of many keys overlap instead of queueing one behind
    // another: a group at a time for rings under kPipelinedBatchTokens,
    // a pipeline over the keys above (where every read misses).
    void owners_of(const void *const *keys, const size_t *lens, size_t n,
                   uint32_t *owners) const noexcept;
    static constexpr size_t kPipelinedBatchTokens = size_t(1) << 20;
    // Up to n distinct owners clockwise from the successor of hash h,
    // coordinator first: calls emit(i, node_index) for each and returns how
    // many. Never allocates for rings of up to kStackBitmapNodes members;
    // beyond, a per-thread table is sized once per thread (it may throw
    // bad_alloc).
    // kSlots: emit(i, slot) instead, for view_of_slot() (the C API's lookups).
    template <bool kSlots = false, class Emit>
    size_t replicas_at_hash(uint64_t h, size_t n, Emit &&emit) const {
        if (std::min(n, eligible_) == 0) return 0;
        return replicas_from_token<kSlots>(index_.locate(h), n, emit);
    }
    using Pos = TokenIndex::Pos;
    // The same under a replica policy (chring.h, "Zone-aware replicas").
    template <bool kSlots = false, class Emit>
    size_t replicas_at_hash(uint64_t h, size_t n, ReplicaPolicy policy, Emit &&emit) const {
        if (std::min(n, eligible_) == 0) return 0;
        return replicas_from_token<kSlots>(index_.locate(h), n, policy, emit);
    }

    // The replica list of every key whose successor is the token at k (or
    // the first after k, when k is its group's end): the keys of its arc.
    // Emits as above. k is a Pos, or what TokenIndex::locate() found (the
    // walk then starts from the record the lookup already read).
    template <bool kSlots = false, class Start, class Emit>
    size_t replicas_from_token(Start k, size_t n, Emit &&emit) const {
        if (__builtin_expect(routing_around_, 0)) return routed_replicas<kSlots>(k, n, ReplicaPolicy::nodes, emit);
        return ring_replicas_from_token<kSlots>(k, n, emit);
    }
    template <bool kSlots = false, class Start, class Emit>
    size_t replicas_from_token(Start k, size_t n, ReplicaPolicy policy, Emit &&emit) const {
        if (__builtin_expect(routing_around_, 0)) return routed_replicas<kSlots>(k, n, policy, emit);
        return ring_replicas_from_token<kSlots>(k, n, policy, emit);
    }
    // The same whatever the marks: the lists of the tokens alone (diffs and
    // migration plans compare tokens).
    template <bool kSlots = false, class Start, class Emit>
    size_t ring_replicas_from_token(Start k, size_t n, Emit &&emit) const {
        n = std::min(n, eligible_);
        if (n == 0) return 0;
        if (__builtin_expect(n > kLinearScanReplicas, 0)) return replicas_by_bitmap<kSlots>(position_of(k), n, emit);
        // Walk first, then emit: the walk stays a tight loop and the
        // results are filled by straight-line, independent copies.
        uint32_t chosen[kLinearScanReplicas];
        const size_t found = walk_distinct(k, n, [&](uint32_t o, size_t f) {
            for (size_t j = 0; j < f; ++j)
                if (chosen[j] == o) return false;
            chosen[f] = o;
            return true;
        });
        for (size_t i = 0; i < found; ++i) emit(i, as_emitted<kSlots>(chosen[i]));
        return found;
    }
    template <bool kSlots = false, class Start, class Emit>
    size_t ring_replicas_from_token(Start k, size_t n, ReplicaPolicy policy, Emit &&emit) const {
        // One live zone: every policy is the plain walk (firsts = the owner,
        // then the rest in walk order).
        if (policy == ReplicaPolicy::nodes || live_zones_ <= 1) return ring_replicas_from_token<kSlots>(k, n, emit);
        return zone_replicas_from_token<kSlots>(k, n, policy == ReplicaPolicy::zones_first, emit);
    }

    // Each node's replica share under a policy (chr_snapshot_replica_shares):
    // out[i] for node i, node_count() entries.
    void replica_shares(ReplicaPolicy policy, size_t n, double *out) const;

    // Distinct owners clockwise from the successor of hash h, coordinator
    // first, each offered once to visit(node_index) until it returns true
    // or every node with tokens was offered. Allocates as replicas_at_hash.
    template <class Visit>
    void walk_owners(uint64_t h, Visit &&visit) const {
        const size_t tokens = index_.token_count();
        if (tokens == 0) return;
        const size_t slots = slot_node_.size();
        uint64_t stack_bits[kStackBitmapNodes / 64];
        uint64_t *bits = slots <= kStackBitmapNodes ? stack_bits : thread_bitmap(slots);
        std::fill(bits, bits + (slots + 63) / 64, 0);
        TokenIndex::Walker w(index_, index_.locate(h));
        size_t seen = 0;
        for (size_t steps = 0; steps < tokens && seen < eligible_; ++steps, w.next()) {
            const uint32_t o = w.slot();
            const uint64_t mask = uint64_t(1) << (o & 63);
            if (!(bits[o >> 6] & mask)) {
                bits[o >> 6] |= mask;
                ++seen;
                if (visit(slot_node_[o])) return;
            }
        }
    }

    // Weight of the nodes with tokens below index i (i == node_count(): all
    // of them): the cumulative weights of the bounded-load capacity.
    uint64_t weight_before(size_t i) const noexcept { return weight_before_[i]; }
    // The weight a bounded lookup shares capacity by: 0 for a node without tokens.
    uint32_t candidate_weight(size_t i) const noexcept {
        return nodes_[i].tokens ? nodes_[i].weight : 0;
    }

    // Availability (chring.h): whether node i is marked (in effect or not),
    // whether marks are in effect now (some mark, no panic), and node i's
    // effective state, which lookups route around.
    bool marked(size_t i) const noexcept { return !marks_.down.empty() && marks_.down[i]; }
    bool routing_around() const noexcept { return routing_around_; }
    bool down_now(size_t i) const noexcept { return routing_around_ && marks_.down[i]; }
    const Marks &marks() const noexcept { return marks_; }
    // chr_availability_info's fields.
    uint32_t panic_threshold() const noexcept { return marks_.panic_threshold; }
    bool panic() const noexcept { return panic_; }
    size_t marked_count() const noexcept { return marked_count_; }
    uint64_t down_weight() const noexcept { return down_weight_; }
    uint64_t total_weight() const noexcept { return weight_before_.back(); }
    uint64_t availability_digest() const noexcept { return availability_digest_; }

    size_t token_count() const noexcept { return index_.token_count(); }
    size_t node_count() const noexcept { return nodes_.size(); }
    size_t eligible_count() const noexcept { return eligible_; }
    // Zones holding a node with tokens; node i's zone number (0..zones-1
    // over every distinct label, the empty one included).
    size_t live_zone_count() const noexcept { return live_zones_; }
    uint32_t zone_of(size_t i) const noexcept { return zone_of_slot_[node_slot_[i]]; }
    const std::vector<Node> &nodes() const noexcept { return nodes_; }
    const Node &node(size_t i) const noexcept { return nodes_[i]; }
    // Node i as the C API shows it (node_cache.hpp).
    const chr_node_view &view(size_t i) const noexcept { return cache_.view(node_slot_[i]); }
    const NodeCache::RefFields &ref_fields(size_t i) const noexcept { return cache_.ref_fields(node_slot_[i]); }
    // The same by slot, which lookups read straight from the index.
    const chr_node_view &view_of_slot(uint32_t s) const noexcept { return cache_.view(s); }
    const NodeCache::RefFields &ref_fields_of_slot(uint32_t s) const noexcept { return cache_.ref_fields(s); }
    uint32_t slot_at_hash(uint64_t h) const noexcept {
        const uint32_t s = index_.slot_at_hash(h);
        if (__builtin_expect(routing_around_, 0)) return routed_slot(h, s);
        return s;
    }
    uint32_t slot_of_node(size_t i) const noexcept { return node_slot_[i]; }
    // Token of rank i (< token_count()): its value and owner (node index).
    uint64_t token_value(size_t i) const noexcept { return index_.token_value(index_.at_rank(i)); }
    uint32_t token_owner(size_t i) const noexcept { return slot_node_[index_.slot_at(index_.at_rank(i))]; }
    // The token array itself, for walks in token order (diff.cpp); the
    // node index of a slot it holds.
    const TokenIndex &tokens() const noexcept { return index_; }
    uint32_t node_of_slot(uint32_t slot) const noexcept { return slot_node_[slot]; }
    uint32_t owner_at(Pos p) const noexcept { return slot_node_[index_.slot_at(p)]; }
    // Computed on first use (an update does not walk every token); any
    // thread may call it.
    uint64_t fingerprint() const noexcept;
    // key_of(id) of every member, by node index: computed by the first
    // caller (a tracker's first acquire on this snapshot), not by the build,
    // so updates cost the same without a tracker; freed with the snapshot.
    // Lock-free: racing first callers each build a copy, one is installed.
    // Every caller must pass the same key_of (Tracker::id_key). May throw
    // bad_alloc.
    using MemberKeyFn = uint64_t (*)(const void *id, size_t len) noexcept;
    const uint64_t *member_keys(MemberKeyFn key_of) const {
        if (const uint64_t *k = member_keys_.load(std::memory_order_acquire)) return k;
        return build_member_keys(key_of);
    }
    const PlacementPtr &placement() const noexcept { return placement_; }
    // The placement's point_bound summed over the nodes (the ring's token
    // limit is checked against it; kept so a change need not sum it again).
    uint64_t token_bound() const noexcept { return token_bound_; }
    // Index of the node with this id, or -1.
    int64_t find(const std::string &id) const noexcept;
    // Bytes of token array plus index (for the memory-per-token report),
    // and those not shared with `other`.
    size_t index_bytes() const noexcept { return index_.index_bytes(); }
    // Bytes of the per-member tables every snapshot has its own copy of:
    // the node table (ids and zones past the short-string buffer included),
    // the lookups' node records, the slot maps.
    size_t member_bytes() const noexcept;
    size_t index_bytes_not_in(const Snapshot &other) const noexcept { return index_.bytes_not_in(other.index_); }

    // Snapshots alive in this process (white-box tests check reclamation).
    static int64_t live_count() noexcept;

private:
    // The lookup's answer when marks are in effect: slot s itself when it
    // is up, else the first up owner clockwise from h, else s (every owner
    // down). No bitmap: the first up token's owner is the first up member
    // of the walk.
    uint32_t routed_slot(uint64_t h, uint32_t s) const noexcept {
        if (!down_slot_[s]) return s;
        return first_up_slot(h, s);
    }
    __attribute__((noinline)) uint32_t first_up_slot(uint64_t h, uint32_t s) const noexcept {
        TokenIndex::Walker w(index_, index_.locate(h));
        for (size_t steps = index_.token_count(); steps > 0; --steps, w.next())
            if (!down_slot_[w.slot()]) return w.slot();
        return s;
    }
    // Replica lists while marks are in effect: the lists of the ring
    // without the down members' tokens (up to min(n, up members)), then the
    // down members in walk order up to min(n, eligible).
    template <bool kSlots, class Start, class Emit>
    size_t routed_replicas(Start k, size_t n, ReplicaPolicy policy, Emit &emit) const {
        n = std::min(n, eligible_);
        if (n == 0) return 0;
        // Most keys' first n members are all up: their list is the plain
        // walk's (for the nodes policy, and for every policy with one zone).
        if ((policy == ReplicaPolicy::nodes || live_zones_ <= 1) && n <= kLinearScanReplicas) {
            uint32_t chosen[kLinearScanReplicas];
            bool any_down = false;
            const size_t found = walk_distinct(k, n, [&](uint32_t o, size_t f) {
                for (size_t j = 0; j < f; ++j)
                    if (chosen[j] == o) return false;
                chosen[f] = o;
                any_down |= down_slot_[o] != 0;
                return true;
            });
            if (!any_down) {
                for (size_t i = 0; i < found; ++i) emit(i, as_emitted<kSlots>(chosen[i]));
                return found;
            }
        }
        return routed_replicas_walk<kSlots>(position_of(k), n, policy, emit);
    }
    // The lists of a key whose walk meets a down member (n <= eligible_, > 0).
    template <bool kSlots, class Emit>
    __attribute__((noinline)) size_t routed_replicas_walk(Pos k, size_t n, ReplicaPolicy policy, Emit &emit) const {
        const size_t want_up = std::min(n, eligible_up_);
        const size_t tokens = index_.token_count();
        const size_t N = slot_node_.size(), bit_count = N + zone_count_;
        uint64_t stack_bits[kStackBitmapNodes / 64];
        uint64_t *bits = bit_count <= kStackBitmapNodes ? stack_bits : thread_bitmap(bit_count);
        std::fill(bits, bits + (bit_count + 63) / 64, 0);
        size_t found = 0;
        TokenIndex::Walker w(index_, k);
        if (policy == ReplicaPolicy::nodes || live_zones_up_ <= 1) {
            for (size_t steps = 0; steps < tokens && found < want_up; ++steps, w.next()) {
                const uint32_t o = w.slot();
                if (!down_slot_[o] && test_and_set(bits, o)) emit(found++, as_emitted<kSlots>(o));
            }
        } else {
            // The zone policies' walk over the up members.
            const size_t want_firsts = std::min(want_up, live_zones_up_);
            found = zone_walk_bits<kSlots>(w, bits, want_firsts, want_up - want_firsts,
                                           policy == ReplicaPolicy::zones_first,
                                           [this](uint32_t o) { return down_slot_[o] != 0; }, emit);
        }
        TokenIndex::Walker d(index_, k);
        for (size_t steps = 0; steps < tokens && found < n; ++steps, d.next()) {
            const uint32_t o = d.slot();
            if (down_slot_[o] && test_and_set(bits, o)) emit(found++, as_emitted<kSlots>(o));
        }
        return found;
    }

    static constexpr size_t kLinearScanReplicas = 32;
    static constexpr size_t kStackBitmapNodes = 65536;  // an 8 KiB bitmap on the stack

    // Walks tokens clockwise from `k` (a Pos or a Found), offering each owner to
    // first_time(owner, found so far), which records the ones it accepts,
    // until n are accepted; returns n. Requires n <= eligible_: every node
    // with tokens has one on the way round, so the walk ends within one
    // turn and needs no step count.
    template <class Start, class FirstTime>
    size_t walk_distinct(Start k, size_t n, FirstTime &&first_time) const {
        TokenIndex::Walker w(index_, k);
        size_t found = 0;
        for (; found < n; w.next()) found += first_time(w.slot(), found);
        return found;
    }
    // Where a walk starts, as a position.
    static Pos position_of(Pos p) noexcept { return p; }
    static Pos position_of(const TokenIndex::Found &f) noexcept { return f.pos; }
    // replicas_from_token for n > kLinearScanReplicas: a bitmap of the
    // slots seen (on the stack up to kStackBitmapNodes), results emitted as
    // found. Out of line, so the linear path's frame holds no bitmap; it
    // takes a plain position, since a Found passed by value to it was
    // spilled to memory on the linear path too.
    template <bool kSlots, class Emit>
    __attribute__((noinline)) size_t replicas_by_bitmap(Pos k, size_t n, Emit &emit) const {
        const size_t slots = slot_node_.size();
        uint64_t stack_bits[kStackBitmapNodes / 64];
        uint64_t *bits = slots <= kStackBitmapNodes ? stack_bits : thread_bitmap(slots);
        std::fill(bits, bits + (slots + 63) / 64, 0);
        return walk_distinct(k, n, [&](uint32_t o, size_t found) {
            if (!test_and_set(bits, o)) return false;
            emit(found, as_emitted<kSlots>(o));  // n may exceed any fixed buffer: emitted as found
            return true;
        });
    }
    // Sets bit i; false if it was set already.
    static bool test_and_set(uint64_t *bits, uint32_t i) noexcept {
        const uint64_t mask = uint64_t(1) << (i & 63);
        if (bits[i >> 6] & mask) return false;
        bits[i >> 6] |= mask;
        return true;
    }
    static uint64_t *thread_bitmap(size_t bits);
    const uint64_t *build_member_keys(MemberKeyFn key_of) const;
    template <bool kSlots>
    uint32_t as_emitted(uint32_t slot) const noexcept { return kSlots ? slot : slot_node_[slot]; }

    // The zone policies. Of the distinct nodes in walk order, the first of
    // each zone is a "first" and the others "repeats"; a list of n takes the
    // first f = min(n, live zones) firsts and the first n - f repeats (in
    // walk order both), so it is done once it has both. Zones-first places
    // firsts at 0..f-1 and repeats at f.., NTS every node in walk order.
    // A node met again is skipped: its zone is known, so it is either taken
    // or a repeat refused because the repeats were complete.
    template <bool kSlots, class Start, class Emit>
    size_t zone_replicas_from_token(Start k, size_t n, bool firsts_first, Emit &&emit) const {
        n = std::min(n, eligible_);
        if (n == 0) return 0;
        const size_t want_firsts = std::min(n, live_zones_), want_repeats = n - want_firsts;
        const size_t tokens = index_.token_count();
        size_t firsts = 0, repeats = 0;
        TokenIndex::Walker w(index_, k);
        if (n <= kLinearScanReplicas) {
            uint32_t taken[kLinearScanReplicas], zones[kLinearScanReplicas];
            bool is_first[kLinearScanReplicas];
            for (size_t steps = 0; steps < tokens; ++steps) {
                const uint32_t o = w.slot();
                w.next();
                const uint32_t z = zone_of_slot_[o];
                bool seen = false;
                for (size_t j = 0; j < firsts; ++j) seen |= zones[j] == z;
                if (!seen) {
                    zones[firsts] = z;
                } else {
                    if (repeats == want_repeats) continue;
                    bool dup = false;
                    for (size_t j = 0; j < firsts + repeats; ++j) dup |= taken[j] == o;
                    if (dup) continue;
                }
                taken[firsts + repeats] = o;
                is_first[firsts + repeats] = !seen;
                (seen ? repeats : firsts) += 1;
                if (firsts == want_firsts && repeats == want_repeats) break;
            }
            size_t next_first = 0, next_repeat = want_firsts;
            for (size_t i = 0; i < firsts + repeats; ++i)
                emit(!firsts_first ? i : is_first[i] ? next_first++ : next_repeat++, as_emitted<kSlots>(taken[i]));
            return firsts + repeats;
        }
        // Bitmaps: slots at bits 0..S-1, zones at S.. (zone numbers < N <= S).
        const size_t bit_count = slot_node_.size() + zone_count_;
        uint64_t stack_bits[kStackBitmapNodes / 64];
        uint64_t *bits = bit_count <= kStackBitmapNodes ? stack_bits : thread_bitmap(bit_count);
        std::fill(bits, bits + (bit_count + 63) / 64, 0);
        return zone_walk_bits<kSlots>(w, bits, want_firsts, want_repeats, firsts_first,
                                      [](uint32_t) { return false; }, emit);
    }
    // The zone policies' walk with bitmaps (slots at bits 0..S-1, zones at
    // S.., cleared by the caller) from w: the first want_firsts firsts and
    // want_repeats repeats among the slots not refused(), emitted
    // as zone_replicas_from_token places them; returns how many.
    template <bool kSlots, class Refuse, class Emit>
    size_t zone_walk_bits(TokenIndex::Walker &w, uint64_t *bits, size_t want_firsts, size_t want_repeats,
                          bool firsts_first, Refuse &&refused, Emit &emit) const {
        const size_t N = slot_node_.size(), tokens = index_.token_count();
        size_t firsts = 0, repeats = 0;
        for (size_t steps = 0; steps < tokens && (firsts < want_firsts || repeats < want_repeats);
             ++steps, w.next()) {
            const uint32_t o = w.slot();
            if (refused(o)) continue;
            const bool first = test_and_set(bits, uint32_t(N + zone_of_slot_[o]));
            if (!first && (repeats == want_repeats || !test_and_set(bits, o))) continue;
            if (first) test_and_set(bits, o);
            emit(!firsts_first ? firsts + repeats : first ? firsts : want_firsts + repeats, as_emitted<kSlots>(o));
            (first ? firsts : repeats) += 1;
        }
        return firsts + repeats;
    }

    // Takes the tokens in order and builds everything derived from them
    // (snapshot_build.cpp).
    class Builder;
    void build_merged(const Snapshot &base, const MembershipDelta &delta, FreshTokens &fresh,
                      HugeArray<Token> spare);
    bool update(const Snapshot &base, const MembershipDelta &delta, const FreshTokens &fresh);
    void derive_from_nodes();
    void derive_availability();
    void carry_marks(const Snapshot &base, const MembershipDelta &delta, const Marks *marks);
    void number_zones();

    mutable std::atomic<uint32_t> refs_{1};
    PlacementPtr placement_;
    KeyHasher key_hash_;  // of *placement_
    // Some mark in effect (no panic): lookups test it, so it sits by the
    // fields every lookup reads. Set by derive_availability().
    bool routing_around_ = false;
    std::vector<Node> nodes_;
    NodeCache cache_;   // borrows nodes_' strings: nodes_ never changes after the build
    TokenIndex index_;
    // Owners in the index are slots, stable across updates: a slot's node
    // index (UINT32_MAX for a free slot), and each node's slot.
    std::vector<uint32_t> slot_node_, node_slot_;
    size_t eligible_ = 0;
    uint64_t token_bound_ = 0;
    std::vector<uint64_t> weight_before_;  // node_count() + 1 prefix sums of candidate_weight
    std::vector<uint32_t> zone_of_slot_;  // per slot: its node's zone's number (0 when free)
    size_t zone_count_ = 0;          // distinct zone labels among the members
    size_t live_zones_ = 0;          // of those, zones holding a node with tokens
    // Availability: the marks by node index (empty: none) and what follows
    // from them, set by derive_availability(); down_slot_ by slot, filled
    // only while routing_around_.
    Marks marks_;
    std::vector<uint8_t> down_slot_;
    bool panic_ = false;
    size_t marked_count_ = 0, eligible_up_ = 0, live_zones_up_ = 0;
    uint64_t down_weight_ = 0, availability_digest_ = 0;
    mutable std::atomic<uint64_t> fingerprint_{0};
    mutable std::atomic<bool> fingerprint_known_{false};
    mutable std::atomic<const uint64_t *> member_keys_{nullptr};  // new[], see member_keys()
};

}  // namespace chring
