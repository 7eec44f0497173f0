// A ring's members as the core keeps them, a change of membership as the
// snapshot build takes it, and a token as placements produce them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace chring {

__extension__ typedef unsigned __int128 u128;  // arcs: one node may own all 2^64 positions

struct Node {
    std::string id;  // bytes, compared as unsigned bytes (std::string's order)
    std::string zone;
    uint64_t tag = 0;
    uint32_t weight = 0;
    uint32_t tokens = 0;     // filled by the snapshot build
    u128 arc = 0;            // filled by the snapshot build: key positions it owns, exactly
    // The share of the circle it owns, arc / 2^64 (computed, not kept: a
    // node table is copied at every update, and 16 bytes less a node
    // shows there).
    double ownership() const noexcept { return double(arc) * 0x1p-64; }
};

// The new node table plus, for each new node, where it was in the old
// table (-1 if new) and whether its tokens must be generated again.
struct MembershipDelta {
    std::vector<Node> nodes;           // sorted by id
    std::vector<int64_t> old_index;    // per node: index in the old snapshot, or -1
    std::vector<uint8_t> regenerate;   // per node: 1 if added or reweighted
    uint64_t token_bound = 0;          // the placement's point_bound summed over `nodes`
};

// A point on the circle and the node (index in the node table) it belongs
// to, ordered by (value, owner): the order of a ring's token array.
struct Token {
    uint64_t value;
    uint32_t owner;
    bool operator<(const Token &o) const noexcept {
        return value < o.value || (value == o.value && owner < o.owner);
    }
};

}  // namespace chring
