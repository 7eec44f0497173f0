#include "moves.hpp"

#include <algorithm>

namespace chring::cli {

size_t Universe::intern(const std::string &id) {
    auto [it, fresh] = index.emplace(id, ids.size());
    if (fresh) {
        ids.push_back(id);
        weight_before.push_back(-1);
        weight_after.push_back(-1);
    }
    return it->second;
}

void Universe::record(const Snapshot &before, const Snapshot &after) {
    for (const NodeInfo &n : before.nodes()) {
        size_t i = intern(n.id);
        weight_before[i] = n.weight;
        total_before += n.weight;
        from_before.push_back(i);
    }
    for (const NodeInfo &n : after.nodes()) {
        size_t i = intern(n.id);
        weight_after[i] = n.weight;
        total_after += n.weight;
        from_after.push_back(i);
    }
}

double Universe::ideal_fraction() const {
    double gained = 0;
    for (size_t i = 0; i < ids.size(); ++i) gained += std::max(0.0, fair_after(i) - fair_before(i));
    return gained;
}

void Movement::count(size_t from, size_t to, const Universe &u) {
    ++keys_before[from];
    ++keys_after[to];
    if (from == to) return;
    ++moved;
    if (!u.grew(to) && !u.shrank(from)) ++collateral;
    ++flows[uint64_t(from) * u.ids.size() + to];
}

void Movement::count_owners(const uint32_t *before, const uint32_t *after, size_t n, const Universe &u) {
    for (size_t i = 0; i < n; ++i) count(u.from_before[before[i]], u.from_after[after[i]], u);
}

}  // namespace chring::cli
