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
    // Requires token_count() > 0.
    uint32_t successor(uint64_t h) const noexcept {
        const uint32_t i = position(h);
        return i == tokens_ ? 0 : i;
    }
    uint32_t owner_of(const void *key, size_t len) const noexcept {
        return owner_at(position(hash_key(key, len)));  // the pad record at T owns the wrap
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
    static constexpr uint32_t kWindow = 4;  // position() compares exactly this many records
    static constexpr size_t kLinearScanReplicas = 32;
    static constexpr size_t kStackBitmapNodes = 65536;  // an 8 KiB bitmap on the stack

    // Walks tokens clockwise from `start`, emitting owners that `first_time`
    // accepts, until n are found or every token was seen.
    template <class Emit, class FirstTime>
    size_t walk_distinct(size_t k, size_t n, Emit &emit, FirstTime &&first_time) const {
        size_t found = 0;
        for (size_t steps = 0; found < n && steps < tokens_; ++steps) {
            const uint32_t o = owner_at(k);
            if (first_time(o, found)) emit(found++, o);
            if (++k == tokens_) k = 0;
        }
        return found;
    }
    static uint64_t *thread_bitmap(size_t nodes);

    // The token array is one 8-byte record per token, (value << P) | owner,
    // P = prefix_bits_: the prefix index already says a token's top P value
    // bits (its bucket), so the record keeps the other 64 - P bits and uses
    // the freed low bits for the owner (P >= log2 of the node count, by
    // construction). A window's cache line then also holds the answer's
    // owner: one memory access fewer per lookup than separate value and
    // owner arrays, and 8 bytes per token instead of 12.
    //
    // Index in [0, T] of the first token >= h in the total order, T if h is
    // above every token. Within bucket b, record < (h << P) exactly when the
    // token's value < h (the low P bits of h << P are 0), so the count of
    // such records in the bucket is the answer; the window is counted without
    // branches and masked to the bucket's n records (records past it belong
    // to later buckets and compare meaninglessly).
    uint32_t position(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        const uint32_t lo = prefix_[b];
        const uint32_t n = prefix_[b + 1] - lo;
        const uint64_t key = h << prefix_bits_;
        const uint64_t *r = records_.data() + lo;
        if (__builtin_expect(n > kWindow, 0)) return lo + scan_bucket(r, n, key);
        return lo + (uint32_t(0 < n) & uint32_t(r[0] < key)) + (uint32_t(1 < n) & uint32_t(r[1] < key)) +
               (uint32_t(2 < n) & uint32_t(r[2] < key)) + (uint32_t(3 < n) & uint32_t(r[3] < key));
    }
    // Owner of token i; i == T is a pad record holding the owner of token 0.
    uint32_t owner_at(size_t i) const noexcept { return uint32_t(records_[i] & owner_mask_); }
    // position() for a bucket bigger than the window: first of n records >= key.
    static uint32_t scan_bucket(const uint64_t *r, uint32_t n, uint64_t key) noexcept;
    // Calls f(value, owner) for every token in order (for the update merge).
    template <class F>
    void for_each_token(F &&f) const {
        for (size_t b = 0; b + 1 < prefix_.size(); ++b)
            for (uint32_t i = prefix_[b]; i < prefix_[b + 1]; ++i)
                f((uint64_t(b) << prefix_shift_) | (records_[i] >> prefix_bits_), owner_at(i));
    }
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
    // From the sorted token array: ownership, eligible count, fingerprint,
    // prefix index and records.
    void finish(const std::vector<uint64_t> &values, const std::vector<uint32_t> &owners);

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
    size_t tokens_ = 0;              // T
    // T records sorted by (value, owner) (owner order is id order), then
    // kWindow pads holding the owner of token 0.
    std::vector<uint64_t> records_;
    std::vector<uint32_t> prefix_;   // prefix_[b] = first token whose top P bits are >= b
    unsigned prefix_bits_ = 1;       // P
    unsigned prefix_shift_ = 63;     // 64 - P
    uint64_t owner_mask_ = 1;        // 2^P - 1
    size_t eligible_ = 0;
    uint64_t fingerprint_ = 0;
};

}  // namespace chring
