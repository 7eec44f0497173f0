// Compatibility placements: other systems' point sets and key hashes,
// reproduced bit for bit (see chring.h, "Placement", and the README).
// Points live in the top 32 bits of the 64-bit circle: those systems use
// 32-bit values, and shifting keeps both their order and the prefix index.
#pragma once

#include <vector>

#include "snapshot.hpp"

namespace chring {
namespace compat {

// The hasher a placement is defined with ("md5", "crc32"); nullptr for native.
const char *required_hasher(int32_t mode) noexcept;

// An upper bound on the points a node of this weight adds (for the limits).
uint64_t point_bound(const Placement &p, uint32_t weight) noexcept;

// CHR_OK, or CHR_ERANGE if the placement cannot take this weight.
chr_status check_weight(const Placement &p, uint32_t weight, const char *who);

// Where a key lands on the circle.
uint64_t key_position(const Placement &p, const void *key, size_t len) noexcept;

// Every point of the membership, sorted as the original system sorts them
// (value, then configuration position = tag, then id), duplicates removed
// where the original removes them.
void build_points(const Placement &p, const std::vector<Node> &nodes, std::vector<uint64_t> &values,
                  std::vector<uint32_t> &owners);

}  // namespace compat
}  // namespace chring
