// What the compatibility placements share. Their points live in the top 32
// bits of the 64-bit circle: the systems they reproduce use 32-bit values,
// and shifting keeps both their order and the snapshot's prefix index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/membership.hpp"

namespace chring {
namespace compat {

inline uint32_t le32(const unsigned char *d) noexcept {
    return uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24;
}
inline uint64_t to_circle(uint32_t v) noexcept { return uint64_t(v) << 32; }

// True if s[from..] is one or more decimal digits.
bool all_digits(const std::string &s, size_t from);

// A point as the original system holds it: its value, the configuration
// position of its server (the node's tag) and the node.
struct Point {
    uint64_t value;
    uint64_t tag;
    uint32_t node;
};

// Sorts as the originals do, by value with ties in configuration order
// (libmemcached by server index, glibc's stable qsort in nginx: the tag
// holds that order), keeps only the first point of each value if
// `first_of_each_value`, and writes the result as tokens.
void finish_points(std::vector<Point> &points, bool first_of_each_value, std::vector<Token> &out);

}  // namespace compat
}  // namespace chring
