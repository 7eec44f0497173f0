// The built-in default hasher ("xxh3", plugin/builtin_xxh3.c) inlined into
// the lookups of rings that use it. Through the hasher's function pointer a
// lookup is a call the CPU cannot schedule around: inlined, the hash of
// one key overlaps the memory reads of the keys before it, which at 16M
// tokens makes a loop of lookups about 15% faster (tests/bench/RESULTS.md,
// "Scale"). The same xxHash function on the same bytes: identical values,
// which tests/core/test_determinism.c and tests/plugins/test_hasher_kat.c pin.
#pragma once

#include <cstddef>
#include <cstdint>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace chring {

// Keys past this length go through the function pointer, as the built-in
// keeps its longer paths out of line (builtin_xxh3.c).
constexpr size_t kInlineXxh3MaxKey = 32;

inline uint64_t xxh3_inline(const void *key, size_t len, uint64_t seed) noexcept {
    return XXH3_64bits_withSeed(key, len, seed);
}

}  // namespace chring
