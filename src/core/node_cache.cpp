#include "node_cache.hpp"

#include <cstring>

namespace chring {

void NodeCache::build(const std::vector<Node> &nodes, const std::vector<uint32_t> &slot_node,
                      const std::vector<uint8_t> &down) {
    // Up to the highest slot a node holds: the owner field has room for
    // 2^O slots, up to twice the members, and the slots past the last
    // member's are never read.
    size_t slots = slot_node.size();
    while (slots > 0 && slot_node[slots - 1] >= nodes.size()) --slots;
    HugeArray<ViewLine> view_buffer(slots);
    HugeArray<RefLine> ref_buffer(slots);
    ViewLine *views = view_buffer.data();
    RefLine *refs = ref_buffer.data();
    for (size_t s = 0; s < slots; ++s) {
        const size_t i = slot_node[s];
        if (i >= nodes.size()) {  // a free slot
            views[s] = ViewLine{};
            refs[s] = RefLine{};
            continue;
        }
        const Node &n = nodes[i];
        const double ownership = n.ownership();
        const uint32_t flags = !down.empty() && down[i] ? CHR_NODE_DOWN : 0u;
        views[s].view = {reinterpret_cast<const unsigned char *>(n.id.data()), n.id.size(),
                         reinterpret_cast<const unsigned char *>(n.zone.data()), n.zone.size(),
                         n.tag, ownership, n.weight, n.tokens, uint32_t(i), flags};
        RefFields &ref = refs[s].ref;
        ref = {n.tag, ownership, n.weight, n.tokens, uint32_t(i), uint32_t(n.id.size()),
               uint32_t(n.zone.size()), flags, {}};
        if (n.id.size() <= kShortId) std::memcpy(ref.short_id, n.id.data(), n.id.size());
    }
    views_ = std::move(view_buffer);
    ref_lines_ = std::move(ref_buffer);
}

}  // namespace chring
