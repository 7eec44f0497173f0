#include "node_cache.hpp"

#include <cstring>

namespace chring {

void NodeCache::build(const std::vector<Node> &nodes) {
    views_.resize(nodes.size());
    ref_lines_.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        const Node &n = nodes[i];
        views_[i].view = {reinterpret_cast<const unsigned char *>(n.id.data()), n.id.size(),
                          reinterpret_cast<const unsigned char *>(n.zone.data()), n.zone.size(),
                          n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), 0};
        RefFields &ref = ref_lines_[i].ref;
        ref = {n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), uint32_t(n.id.size()),
               uint32_t(n.zone.size()), 0, {}};
        if (n.id.size() <= kShortId) std::memcpy(ref.short_id, n.id.data(), n.id.size());
    }
}

}  // namespace chring
