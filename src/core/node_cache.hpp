// Each member of a snapshot as the C API returns it, prepared once per
// snapshot so a lookup copies one cache line instead of gathering fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chring.h"
#include "base/huge_pages.hpp"
#include "base/membership.hpp"

namespace chring {

class NodeCache {
public:
    // chr_node_ref's first 64 bytes: the fields, then the id zero-padded to
    // kShortId bytes when it fits. A ring lookup copies this one line as it
    // is (constant size: inlined), and only a longer id or a zone needs a
    // second copy (api/capi_ring.cpp pins the layout against chring.h).
    static constexpr size_t kShortId = 24;
    struct RefFields {
        uint64_t tag;
        double ownership;
        uint32_t weight, tokens, index, id_len, zone_len, flags;
        unsigned char short_id[kShortId];  // valid when id_len <= kShortId
    };

    // Entries by slot: slot s holds node slot_node[s], or no node (all
    // zeros) where that is not an index of `nodes`; none past the last
    // slot that holds a node. `nodes` must not change or move afterwards:
    // the views borrow its strings. Throws bad_alloc (the cache is then
    // left as it was). `down[i]` nonzero: node i gets CHR_NODE_DOWN (empty:
    // no node does).
    void build(const std::vector<Node> &nodes, const std::vector<uint32_t> &slot_node,
               const std::vector<uint8_t> &down);

    const chr_node_view &view(size_t i) const noexcept { return views_.data()[i].view; }
    size_t bytes() const noexcept { return views_.size() * 2 * 64; }
    const RefFields &ref_fields(size_t i) const noexcept { return ref_lines_.data()[i].ref; }

private:
    // One cache line per node in each table: a lookup reads the line its
    // result type needs, and a table holds only lines of its kind, so the
    // adjacent line the L2 prefetcher pairs with a miss is another node's
    // record of the same kind.
    struct alignas(64) ViewLine {
        chr_node_view view;
    };
    struct alignas(64) RefLine {
        RefFields ref;
    };
    static_assert(sizeof(ViewLine) == 64 && sizeof(RefLine) == 64, "one line each");
    // Lines left uninitialized (build() writes every one: an update
    // rebuilds them, and zeroing them first doubled the stores), on huge
    // pages from 2 MiB (32,768 members) up, as the index is: a lookup's
    // node record is then no TLB miss either.
    HugeArray<ViewLine> views_;
    HugeArray<RefLine> ref_lines_;
};

}  // namespace chring
