#include "node_cache.hpp"

#include <cstring>

namespace chring {

void NodeCache::build(const std::vector<Node> &nodes, const std::vector<uint32_t> &node_slot, size_t slots) {
    views_.resize(slots);
    ref_lines_.resize(slots);
    for (size_t i = 0; i < nodes.size(); ++i) {
        const Node &n = nodes[i];
        const size_t s = node_slot[i];
        views_[s].view = {reinterpret_cast<const unsigned char *>(n.id.data()), n.id.size(),
                          reinterpret_cast<const unsigned char *>(n.zone.data()), n.zone.size(),
                          n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), 0};
        RefFields &ref = ref_lines_[s].ref;
        ref = {n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), uint32_t(n.id.size()),
               uint32_t(n.zone.size()), 0, {}};
        if (n.id.size() <= kShortId) std::memcpy(ref.short_id, n.id.data(), n.id.size());
    }
}

}  // namespace chring
