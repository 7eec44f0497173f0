// An immutable ring state: members, their tokens in the lookup index, and
// the C API's view of each member. Built once by a writer (snapshot_build.cpp),
// then only read, by any number of threads, until its last reference goes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "membership.hpp"
#include "node_cache.hpp"
#include "placement.hpp"
#include "token_index.hpp"

namespace chring {

class Snapshot {
public:
    // The empty ring.
    explicit Snapshot(PlacementPtr placement);
    // `base` plus `delta`. A placement with fresh_tokens (native): tokens of
    // unchanged nodes are filtered from `base` and merged with freshly
    // generated ones in O(T + d log d). Placements with all_points rebuild
    // every point, as the systems they reproduce do.
    Snapshot(const Snapshot &base, MembershipDelta delta);
    ~Snapshot();
    Snapshot(const Snapshot &) = delete;
    Snapshot &operator=(const Snapshot &) = delete;

    // References: the ring holds one while it publishes this snapshot,
    // each chr_snapshot handle one more.
    void retain() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() const noexcept;

    uint64_t hash_key(const void *key, size_t len) const noexcept { return key_hash_(key, len); }
    // Owner of the first token >= h, wrapping. Requires token_count() > 0.
    uint32_t owner_at_hash(uint64_t h) const noexcept { return index_.owner_at_hash(h); }
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
        const size_t start = index_.successor(h);
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

    // Distinct owners clockwise from the successor of hash h, coordinator
    // first, each offered once to visit(node_index) until it returns true
    // or every node with tokens was offered. Allocates as replicas_at_hash.
    template <class Visit>
    void walk_owners(uint64_t h, Visit &&visit) const {
        const size_t tokens = index_.token_count();
        if (tokens == 0) return;
        uint64_t stack_bits[kStackBitmapNodes / 64];
        uint64_t *bits = nodes_.size() <= kStackBitmapNodes ? stack_bits : thread_bitmap(nodes_.size());
        std::fill(bits, bits + (nodes_.size() + 63) / 64, 0);
        size_t k = index_.successor(h), seen = 0;
        for (size_t steps = 0; steps < tokens && seen < eligible_; ++steps) {
            const uint32_t o = index_.owner_at(k);
            const uint64_t mask = uint64_t(1) << (o & 63);
            if (!(bits[o >> 6] & mask)) {
                bits[o >> 6] |= mask;
                ++seen;
                if (visit(o)) return;
            }
            if (++k == tokens) k = 0;
        }
    }

    // Weight of the nodes with tokens below index i (i == node_count(): all
    // of them): the cumulative weights of the bounded-load capacity.
    uint64_t weight_before(size_t i) const noexcept { return weight_before_[i]; }
    // The weight a bounded lookup shares capacity by: 0 for a node without tokens.
    uint32_t candidate_weight(size_t i) const noexcept {
        return nodes_[i].tokens ? nodes_[i].weight : 0;
    }

    size_t token_count() const noexcept { return index_.token_count(); }
    size_t node_count() const noexcept { return nodes_.size(); }
    size_t eligible_count() const noexcept { return eligible_; }
    const std::vector<Node> &nodes() const noexcept { return nodes_; }
    const Node &node(size_t i) const noexcept { return nodes_[i]; }
    // Node i as the C API shows it (node_cache.hpp).
    const chr_node_view &view(size_t i) const noexcept { return cache_.view(i); }
    const NodeCache::RefFields &ref_fields(size_t i) const noexcept { return cache_.ref_fields(i); }
    uint64_t token_value(size_t i) const noexcept { return index_.token_value(i); }
    uint32_t token_owner(size_t i) const noexcept { return index_.owner_at(i); }
    uint64_t fingerprint() const noexcept { return fingerprint_; }
    const PlacementPtr &placement() const noexcept { return placement_; }
    // Index of the node with this id, or -1.
    int64_t find(const std::string &id) const noexcept;
    // Bytes of token array plus index (for the memory-per-token report).
    size_t index_bytes() const noexcept { return index_.index_bytes(); }

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
        const size_t tokens = index_.token_count();
        size_t found = 0;
        for (size_t steps = 0; found < n && steps < tokens; ++steps) {
            found += first_time(index_.owner_at(k), found);
            if (++k == tokens) k = 0;
        }
        return found;
    }
    static uint64_t *thread_bitmap(size_t nodes);

    // Takes the tokens in order and builds everything derived from them
    // (snapshot_build.cpp).
    class Builder;

    mutable std::atomic<uint32_t> refs_{1};
    PlacementPtr placement_;
    KeyHasher key_hash_;  // of *placement_
    std::vector<Node> nodes_;
    NodeCache cache_;   // borrows nodes_' strings: nodes_ never changes after the build
    TokenIndex index_;
    size_t eligible_ = 0;
    std::vector<uint64_t> weight_before_;  // node_count() + 1 prefix sums of candidate_weight
    uint64_t fingerprint_ = 0;
};

}  // namespace chring
