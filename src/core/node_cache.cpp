#include "node_cache.hpp"

#include <cstring>

namespace chring {

void NodeCache::build(const std::vector<Node> &nodes, const std::vector<uint32_t> &slot_node) {
    const size_t slots = slot_node.size();
    std::unique_ptr<ViewLine[]> views(new ViewLine[slots]);
    std::unique_ptr<RefLine[]> refs(new RefLine[slots]);
    for (size_t s = 0; s < slots; ++s) {
        const size_t i = slot_node[s];
        if (i >= nodes.size()) {  // a free slot
            views[s] = ViewLine{};
            refs[s] = RefLine{};
            continue;
        }
        const Node &n = nodes[i];
        views[s].view = {reinterpret_cast<const unsigned char *>(n.id.data()), n.id.size(),
                         reinterpret_cast<const unsigned char *>(n.zone.data()), n.zone.size(),
                         n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), 0};
        RefFields &ref = refs[s].ref;
        ref = {n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), uint32_t(n.id.size()),
               uint32_t(n.zone.size()), 0, {}};
        if (n.id.size() <= kShortId) std::memcpy(ref.short_id, n.id.data(), n.id.size());
    }
    views_ = std::move(views);
    ref_lines_ = std::move(refs);
    slots_ = slots;
}

}  // namespace chring
