// Keys moved by a membership change, and which of those moves were
// collateral: a key that left a node which did not shrink for a node which
// did not grow. Shared by `sim` and `demo`, so both count the same way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ring_handle.hpp"

namespace chring::cli {

// Every node present before or after a change, and what the change did to it.
struct Universe {
    std::vector<std::string> ids;
    std::vector<int64_t> weight_before, weight_after;  // -1: not a member then
    std::unordered_map<std::string, size_t> index;
    std::vector<size_t> from_before, from_after;  // snapshot node index -> universe index
    uint64_t total_before = 0, total_after = 0;

    // The universe index of `id`, appended when new. Interning ids before
    // record() fixes the order nodes are listed in.
    size_t intern(const std::string &id);
    // Takes the members of both snapshots: weights, totals and index maps.
    void record(const Snapshot &before, const Snapshot &after);

    // Keys may move onto a node that grew, and off a node that shrank.
    bool grew(size_t u) const { return weight_after[u] > std::max<int64_t>(weight_before[u], 0); }
    bool shrank(size_t u) const { return std::max<int64_t>(weight_after[u], 0) < weight_before[u]; }
    double fair_before(size_t u) const { return fair(weight_before[u], total_before); }
    double fair_after(size_t u) const { return fair(weight_after[u], total_after); }
    static double fair(int64_t w, uint64_t total) { return w > 0 && total ? double(w) / double(total) : 0; }

    // The least any weight-proportional scheme must move: the share gained
    // by the nodes that gained share.
    double ideal_fraction() const;
};

// What one scheme did to the keys.
struct Movement {
    std::string scheme;
    bool is_ring = true;
    std::vector<uint64_t> keys_before, keys_after;  // per universe node
    uint64_t moved = 0, collateral = 0;
    std::unordered_map<uint64_t, uint64_t> flows;  // from * nodes + to -> keys

    Movement(std::string name, size_t nodes) : scheme(std::move(name)), keys_before(nodes), keys_after(nodes) {}
    // One key, owned by universe node `from` before and `to` after.
    void count(size_t from, size_t to, const Universe &u);
    // n keys, their owners given as snapshot node indices before and after.
    void count_owners(const uint32_t *before, const uint32_t *after, size_t n, const Universe &u);
};

}  // namespace chring::cli
