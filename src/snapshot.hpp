// An immutable ring state: members, the sorted token array, and the index
// that makes successor search a few memory reads. Built once by a writer,
// then only read, by any number of threads, until its last reference goes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugin/registry.hpp"
#include "window.hpp"

namespace chring {

// What decides where tokens and keys land; fixed for a ring's lifetime.
struct Placement {
    HasherPtr hasher;
    uint64_t seed = 0;
    uint32_t tokens_per_weight = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    int32_t mode = CHR_PLACEMENT_NATIVE;
};
using PlacementPtr = std::shared_ptr<const Placement>;

// Where a key lands on the circle under a placement. Copied into each ring
// and snapshot (the function pointer and seed one load away); the
// placement it points to must outlive it.
class KeyHasher {
public:
    explicit KeyHasher(const Placement &p) noexcept
        : hash64_(p.hasher->hash64), seed_(p.seed), native_(p.mode == CHR_PLACEMENT_NATIVE),
          placement_(&p) {}
    uint64_t operator()(const void *key, size_t len) const noexcept {
        if (__builtin_expect(native_, 1)) return hash64_(key, len, seed_);
        return compat_position(key, len);
    }

private:
    uint64_t compat_position(const void *key, size_t len) const noexcept;  // snapshot.cpp
    chr_hash64_fn hash64_;
    uint64_t seed_;
    bool native_;  // CHR_PLACEMENT_NATIVE: keys hash with hash64_ directly
    const Placement *placement_;
};

struct Node {
    std::string id;  // bytes, compared as unsigned bytes (std::string's order)
    std::string zone;
    uint64_t tag = 0;
    uint32_t weight = 0;
    uint32_t tokens = 0;     // filled by the snapshot build
    double ownership = 0.0;  // filled by the snapshot build
};

// A change of membership, as the snapshot build needs it: the new node
// table plus, for each new node, where it was in the old table (-1 if new)
// and whether its tokens must be generated again.
struct MembershipDelta {
    std::vector<Node> nodes;           // sorted by id
    std::vector<int64_t> old_index;    // per node: index in the old snapshot, or -1
    std::vector<uint8_t> regenerate;   // per node: 1 if added or reweighted
};

class Snapshot {
public:
    // The empty ring.
    explicit Snapshot(PlacementPtr placement);
    // `base` plus `delta`. Native placement: tokens of unchanged nodes are
    // filtered from `base` and merged with freshly generated ones in
    // O(T + d log d). Compatibility placements rebuild every point, as the
    // systems they reproduce do.
    Snapshot(const Snapshot &base, MembershipDelta delta);
    ~Snapshot();
    Snapshot(const Snapshot &) = delete;
    Snapshot &operator=(const Snapshot &) = delete;

    // References: the ring holds one while it publishes this snapshot,
    // each chr_snapshot handle one more.
    void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() const noexcept;

    uint64_t hash_key(const void *key, size_t len) const noexcept { return key_hash_(key, len); }
    // Index of the first token >= h in the total order, wrapping to 0.
    // Requires token_count() > 0.
    uint32_t successor(uint64_t h) const noexcept {
        const uint32_t i = position(h);
        return i == tokens_ ? 0 : i;
    }
    // Owner of the first token >= h, wrapping (the pad record at T owns the wrap).
    uint32_t owner_at_hash(uint64_t h) const noexcept { return locate(h).record & owner_mask_; }
    uint32_t owner_of(const void *key, size_t len) const noexcept {
        return owner_at_hash(hash_key(key, len));
    }
    // Owners of n keys (validated by the caller). Hashes a group of keys,
    // prefetches their index buckets, then their token windows, so the cache
    // misses of a group overlap instead of queueing one behind another.
    void owners_of(const void *const *keys, const size_t *lens, size_t n,
                   uint32_t *owners) const noexcept;
    // Up to n distinct owners clockwise from the successor of hash h,
    // coordinator first: calls emit(i, node_index) for each and returns how
    // many. Never allocates for rings of up to kStackBitmapNodes members;
    // beyond, a per-thread table is sized once per thread (it may throw
    // bad_alloc).
    template <class Emit>
    size_t replicas_at_hash(uint64_t h, size_t n, Emit &&emit) const {
        n = std::min(n, eligible_);
        if (n == 0) return 0;
        const size_t start = successor(h);
        if (n <= kLinearScanReplicas) {
            // Walk first, then emit: the walk stays a tight loop and the
            // results are filled by straight-line, independent copies.
            uint32_t chosen[kLinearScanReplicas];
            const size_t found = walk_distinct(start, n, [&](uint32_t o, size_t f) {
                for (size_t j = 0; j < f; ++j)
                    if (chosen[j] == o) return false;
                chosen[f] = o;
                return true;
            });
            for (size_t i = 0; i < found; ++i) emit(i, chosen[i]);
            return found;
        }
        uint64_t stack_bits[kStackBitmapNodes / 64];
        uint64_t *bits = nodes_.size() <= kStackBitmapNodes ? stack_bits : thread_bitmap(nodes_.size());
        std::fill(bits, bits + (nodes_.size() + 63) / 64, 0);
        return walk_distinct(start, n, [&](uint32_t o, size_t found) {
            const uint64_t mask = uint64_t(1) << (o & 63);
            if (bits[o >> 6] & mask) return false;
            bits[o >> 6] |= mask;
            emit(found, o);  // n may exceed any fixed buffer: emitted as found
            return true;
        });
    }

    size_t token_count() const noexcept { return tokens_; }
    size_t node_count() const noexcept { return nodes_.size(); }
    size_t eligible_count() const noexcept { return eligible_; }
    const std::vector<Node> &nodes() const noexcept { return nodes_; }
    const Node &node(size_t i) const noexcept { return nodes_[i]; }
    // Node i as the C API shows it, prepared once per snapshot: a lookup
    // copies one cache line instead of gathering fields from a Node.
    const chr_node_view &view(size_t i) const noexcept { return views_[i].view; }
    // Node i's chr_node_ref, its first 64 bytes: the fields, then the id
    // zero-padded to kShortId bytes when it fits. A ring lookup copies this
    // one cache line as it is (constant size: inlined), and only a longer id
    // or a zone needs a second copy.
    static constexpr size_t kShortId = 24;
    struct RefFields {
        uint64_t tag;
        double ownership;
        uint32_t weight, tokens, index, id_len, zone_len, reserved0;
        unsigned char short_id[kShortId];  // valid when id_len <= kShortId
    };
    const RefFields &ref_fields(size_t i) const noexcept { return ref_lines_[i].ref; }
    uint64_t token_value(size_t i) const noexcept;  // O(log T): rebuilt from bucket and record
    uint32_t token_owner(size_t i) const noexcept { return owner_at(i); }
    uint64_t fingerprint() const noexcept { return fingerprint_; }
    const PlacementPtr &placement() const noexcept { return placement_; }
    // Index of the node with this id, or -1.
    int64_t find(const std::string &id) const noexcept;
    // Bytes of token array plus index (for the memory-per-token report).
    size_t index_bytes() const noexcept;

    // Snapshots alive in this process (white-box tests check reclamation).
    static int64_t live_count() noexcept;

private:
    static constexpr size_t kLinearScanReplicas = 32;
    static constexpr size_t kStackBitmapNodes = 65536;  // an 8 KiB bitmap on the stack

    // Walks tokens clockwise from `k`, offering each owner to
    // first_time(owner, found so far), which records the ones it accepts,
    // until n are accepted or every token was seen; returns how many were.
    template <class FirstTime>
    size_t walk_distinct(size_t k, size_t n, FirstTime &&first_time) const {
        size_t found = 0;
        for (size_t steps = 0; found < n && steps < tokens_; ++steps) {
            found += first_time(owner_at(k), found);
            if (++k == tokens_) k = 0;
        }
        return found;
    }
    static uint64_t *thread_bitmap(size_t nodes);

    // The token array, split so the part every lookup reads is 4 bytes per
    // token. The prefix index already says a token's top P value bits (its
    // bucket); of the other 64 - P bits, the top R = 32 - O go in hot_ with
    // the owner in its low O bits (O = bits of the node count, P >= O), the
    // rest in cold_. A lookup compares hot records only: hot < key(h) (key
    // with zero owner bits) proves value < h, and the first record that fails
    // is the answer unless its R bits equal h's (probability 2^-R: 2^-22 at
    // 1,000 nodes), when the cold bits decide, off the fast path. The answer's
    // owner is in the record just compared. At 1,000 nodes the hot part and
    // the index are 0.8 MB, which stays in this machine's L2 (2 MB) where
    // 8- or 12-byte tokens spilled to L3.
    //
    // Index in [0, T] of the first token >= h in the total order, T if h is
    // above every token. Within the bucket the compares hold for a prefix of
    // its n records; records past the bucket belong to later buckets and
    // compare meaninglessly and are masked off (window_rank_x2): no branch
    // on the data.
    uint32_t position(uint64_t h) const noexcept { return locate(h).index; }
    // position() and the record there, whose low O bits are the owner: a
    // lookup takes the owner from the record the window compare just read.
    struct Found {
        uint32_t index;
        uint32_t record;
    };
    Found locate(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        const uint64_t group = h >> group_of_hash_shift_;  // b >> group_shift_, one step sooner
        const BucketOffset *offset = bucket_offset_.data() + b + group;
        const uint32_t lo = group_start_[group] + offset[0];
        const uint32_t n = uint32_t(offset[1] - offset[0]);  // capped at 255: then n > kWindow
        // h's 32 bits below its bucket (P <= 24), owner bits cleared
        const uint32_t key = uint32_t(h >> key_shift_) & ~owner_mask_;
        const uint32_t *r = hot_.data() + lo;
        if (__builtin_expect(n > kWindow, 0)) return locate_exactly(b, h);
        const size_t c2 = window_rank_x2(r, key, n);
        const uint32_t record = record_at_rank_x2(r, c2);
        // A tie: the record's hot bits equal the key's ((r ^ bias) - key ==
        // r - (key ^ bias)), and it is in the bucket. Tested in this order:
        // the first is almost never true, the second often, and unpredictably.
        if (__builtin_expect(record - (key ^ kWindowBias) <= owner_mask_, 0) && c2 < 2 * n)
            return locate_exactly(b, h);
        return {lo + uint32_t(c2 / 2), record};
    }
    Found locate_exactly(uint64_t b, uint64_t h) const noexcept {
        const uint32_t i = exact_position(b, h << prefix_bits_);
        return {i, hot_[i]};
    }
    // First token of bucket b, for b in [0, 2^P] (2^P gives T).
    uint32_t bucket_start(uint64_t b) const noexcept {
        return group_start_[b >> group_shift_] + bucket_offset_[offset_index(b)];
    }
    // Where bucket b's offset is in bucket_offset_: each group before it
    // adds one entry, its end. (locate() computes this from the hash itself.)
    size_t offset_index(uint64_t b) const noexcept { return size_t(b + (b >> group_shift_)); }
    // Owner of token i; i == T is a pad record holding the owner of token 0.
    uint32_t owner_at(size_t i) const noexcept { return hot_[i] & owner_mask_; }
    // Token i's value without its bucket bits: (value << P), exactly.
    uint64_t rest_of(size_t i) const noexcept {
        return uint64_t((hot_[i] ^ kWindowBias) & ~owner_mask_) << 32 | uint64_t(cold_[i]) << owner_bits_;
    }
    // position() by full comparison, for buckets bigger than the window and
    // for ties in the hot bits: the first token of bucket b whose rest_of()
    // is >= rest, or the bucket's end.
    uint32_t exact_position(uint64_t b, uint64_t rest) const noexcept;
    // Calls f(value, owner) for every token in order (for the update merge).
    // A token's top P bits are its bucket's number: the bucket holding token
    // i is the last one starting at or before i, found as a running maximum
    // over bucket numbers marked at their starts (a loop over each bucket's
    // tokens instead costs a mispredicted exit per bucket).
    template <class F>
    void for_each_token(F &&f) const {
        std::vector<uint32_t> bucket_at(tokens_ + 1, 0);  // the largest bucket starting at i
        const uint64_t buckets = uint64_t(1) << prefix_bits_;
        for (uint64_t b = 0; b < buckets; ++b) bucket_at[bucket_start(b)] = uint32_t(b);
        uint64_t b = 0;
        for (size_t i = 0; i < tokens_; ++i) {
            b = std::max<uint64_t>(b, bucket_at[i]);
            f(b << prefix_shift_ | rest_of(i) >> prefix_bits_, owner_at(i));
        }
    }
    struct Token {
        uint64_t value;
        uint32_t owner;
        bool operator<(const Token &o) const noexcept {
            return value < o.value || (value == o.value && owner < o.owner);
        }
    };
    // Tokens of the nodes `delta` marks for regeneration, sorted.
    std::vector<Token> generate_tokens(const MembershipDelta &delta) const;
    static void sort_tokens(std::vector<Token> &tokens);
    // Takes the tokens in order and builds, in the same pass, everything
    // derived from them: records, index, ownership, eligible count and
    // fingerprint (snapshot.cpp).
    class Builder;

    mutable std::atomic<uint32_t> refs_{1};
    PlacementPtr placement_;
    KeyHasher key_hash_;  // of *placement_
    std::vector<Node> nodes_;
    // One cache line per node in each table: a lookup reads the line its
    // result type needs, and a table holds only lines of its kind, so the
    // adjacent line the L2 prefetcher pairs with a miss is another node's
    // record of the same kind.
    struct alignas(64) ViewLine {
        chr_node_view view;  // borrows nodes_' strings: nodes_ never changes after finish()
    };
    struct alignas(64) RefLine {
        RefFields ref;
    };
    static_assert(sizeof(ViewLine) == 64 && sizeof(RefLine) == 64, "one line each");
    std::vector<ViewLine> views_;
    std::vector<RefLine> ref_lines_;
    size_t tokens_ = 0;  // T
    // Tokens sorted by (value, owner) (owner order is id order), as
    // position() describes; hot_ has kWindow pads holding the owner of token 0.
    std::vector<uint32_t> hot_;
    std::vector<uint32_t> cold_;
    // The prefix index, two-level to shrink it to one byte a bucket. Bucket
    // b is in group G = b >> group_shift_ and starts at group_start_[G] +
    // bucket_offset_[b + G]: each group's offsets are followed by one more,
    // its end (the next group's start), so a bucket's start and size come
    // from one group entry and two adjacent offsets. Groups are 64 buckets
    // (~150 tokens) unless a skewed hasher crowds more than 255 tokens into
    // one, then smaller, down to one bucket, whose end alone may be capped
    // at 255: a size that big takes the exact path, which reads the bounds
    // from group_start_.
    using BucketOffset = uint8_t;
    static constexpr unsigned kMaxGroupShift = 6;
    std::vector<uint32_t> group_start_;  // 2^P / group + 1 entries; the last is T
    std::vector<BucketOffset> bucket_offset_;  // 2^P + 2^P / group + 1 entries
    unsigned group_shift_ = 0;         // <= P - 1, so that the next one is < 64
    unsigned group_of_hash_shift_ = 63;  // 64 - P + group_shift_
    unsigned prefix_bits_ = 1;   // P
    unsigned prefix_shift_ = 63; // 64 - P
    unsigned key_shift_ = 31;    // 32 - P
    unsigned owner_bits_ = 1;    // O
    uint32_t owner_mask_ = 1;    // 2^O - 1
    size_t eligible_ = 0;
    uint64_t fingerprint_ = 0;
};

}  // namespace chring
