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

#include "hashers.hpp"

namespace chring {

// What decides where tokens and keys land; fixed for a ring's lifetime.
struct Placement {
    HasherPtr hasher;
    uint64_t seed = 0;
    uint32_t tokens_per_weight = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    int32_t mode = CHR_PLACEMENT_NATIVE;
};
using PlacementPtr = std::shared_ptr<const Placement>;

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

    uint64_t hash_key(const void *key, size_t len) const noexcept {
        if (__builtin_expect(native_, 1)) return hash64_(key, len, placement_->seed);
        return compat_key_position(key, len);
    }
    // Index of the first token >= h in the total order, wrapping to 0.
    // Requires token_count() > 0. The prefix index narrows the search to
    // one bucket of ~1-2 tokens; the bucket is resolved without branches by
    // counting the values below h in a window of kWindow: values past the
    // bucket are >= the next bucket's start > h and count 0, and the array
    // is padded with kWindow UINT64_MAX sentinels so the window never runs off.
    uint32_t successor(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        uint32_t lo = prefix_[b];
        const uint32_t hi = prefix_[b + 1];
        if (__builtin_expect(hi - lo <= kWindow, 1)) {
            const uint64_t *v = values_.data() + lo;
            lo += uint32_t(v[0] < h) + uint32_t(v[1] < h) + uint32_t(v[2] < h) + uint32_t(v[3] < h);
        } else {
            lo = lower_bound(lo, hi, h);
        }
        return lo == tokens_ ? 0 : lo;
    }
    uint32_t owner_of(const void *key, size_t len) const noexcept {
        return owners_[successor(hash_key(key, len))];
    }
    // Owners of n keys (validated by the caller). Hashes a group of keys,
    // prefetches their index buckets, then their token windows, so the cache
    // misses of a group overlap instead of queueing one behind another.
    void owners_of(const void *const *keys, const size_t *lens, size_t n,
                   uint32_t *owners) const noexcept;
    // Up to n distinct owners clockwise from the key's successor, coordinator
    // first: calls emit(i, node_index) for each and returns how many. Never
    // allocates for rings of up to kStackBitmapNodes members; beyond, a
    // per-thread table is sized once per thread (it may throw bad_alloc).
    template <class Emit>
    size_t replicas(const void *key, size_t len, size_t n, Emit &&emit) const {
        n = std::min(n, eligible_);
        if (n == 0) return 0;
        const size_t start = successor(hash_key(key, len));
        if (n <= kLinearScanReplicas) {
            uint32_t chosen[kLinearScanReplicas];
            return walk_distinct(start, n, emit, [&](uint32_t o, size_t found) {
                for (size_t f = 0; f < found; ++f)
                    if (chosen[f] == o) return false;
                chosen[found] = o;
                return true;
            });
        }
        uint64_t stack_bits[kStackBitmapNodes / 64];
        uint64_t *bits = nodes_.size() <= kStackBitmapNodes ? stack_bits : thread_bitmap(nodes_.size());
        std::fill(bits, bits + (nodes_.size() + 63) / 64, 0);
        return walk_distinct(start, n, emit, [&](uint32_t o, size_t) {
            const uint64_t mask = uint64_t(1) << (o & 63);
            if (bits[o >> 6] & mask) return false;
            bits[o >> 6] |= mask;
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
    // Node i's id padded to kShortId bytes; valid when its id_len <= kShortId.
    static constexpr size_t kShortId = 32;
    const unsigned char *short_id(size_t i) const noexcept { return views_[i].short_id; }
    uint64_t token_value(size_t i) const noexcept { return values_[i]; }
    uint32_t token_owner(size_t i) const noexcept { return owners_[i]; }
    uint64_t fingerprint() const noexcept { return fingerprint_; }
    const PlacementPtr &placement() const noexcept { return placement_; }
    // Index of the node with this id, or -1.
    int64_t find(const std::string &id) const noexcept;
    // Bytes of token array plus index (for the memory-per-token report).
    size_t index_bytes() const noexcept;

    // Snapshots alive in this process (white-box tests check reclamation).
    static int64_t live_count() noexcept;

private:
    static constexpr uint32_t kWindow = 4;  // successor() compares exactly this many values
    static constexpr size_t kLinearScanReplicas = 32;
    static constexpr size_t kStackBitmapNodes = 65536;  // an 8 KiB bitmap on the stack

    // Walks tokens clockwise from `start`, emitting owners that `first_time`
    // accepts, until n are found or every token was seen.
    template <class Emit, class FirstTime>
    size_t walk_distinct(size_t k, size_t n, Emit &emit, FirstTime &&first_time) const {
        size_t found = 0;
        for (size_t steps = 0; found < n && steps < tokens_; ++steps) {
            const uint32_t o = owners_[k];
            if (first_time(o, found)) emit(found++, o);
            if (++k == tokens_) k = 0;
        }
        return found;
    }
    static uint64_t *thread_bitmap(size_t nodes);

    uint32_t lower_bound(uint32_t lo, uint32_t hi, uint64_t h) const noexcept;
    uint64_t compat_key_position(const void *key, size_t len) const noexcept;
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
    void finish();  // ownership, eligible count, prefix index, fingerprint

    mutable std::atomic<uint32_t> refs_{1};
    PlacementPtr placement_;
    chr_hash64_fn hash64_;
    bool native_;  // CHR_PLACEMENT_NATIVE: keys hash with hash64_ directly
    std::vector<Node> nodes_;
    struct alignas(64) ViewRecord {
        chr_node_view view;  // borrows nodes_' strings: nodes_ never changes after finish()
        // The id again, zero-padded to kShortId bytes when it fits, so a copy
        // into chr_node_ref can move a constant kShortId bytes (inlined, no
        // memcpy call) without reading past the string.
        unsigned char short_id[kShortId];
    };
    std::vector<ViewRecord> views_;
    size_t tokens_ = 0;              // T; values_ holds T values then kWindow sentinels
    std::vector<uint64_t> values_;   // sorted by (value, owner): owner order is id order
    std::vector<uint32_t> owners_;   // node index per token
    std::vector<uint32_t> prefix_;   // prefix_[b] = first token whose top bits are >= b
    unsigned prefix_shift_ = 63;
    size_t eligible_ = 0;
    uint64_t fingerprint_ = 0;
};

}  // namespace chring
