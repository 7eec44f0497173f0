// The built-in default hasher ("xxh3", plugin/builtin_xxh3.c) inlined into
// the lookups of rings that use it. Through the hasher's function pointer a
// lookup is a call the CPU cannot schedule around: inlined, the hash of
// one key overlaps the memory reads of the keys before it (1.6M tokens:
// 4.4-4.6x std::lower_bound before, 5.35-5.65x after; tests/bench/HISTORY.md,
// "Inline key hash, replica walk without a step count, build memory
// traffic"). The same xxHash function on the same bytes: identical values,
// which tests/core/test_determinism.c and tests/plugins/test_hasher_kat.c pin.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/registry.hpp"  // chr_builtin_xxh3

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace chring {

// Whether a hasher's function is the built-in xxh3's.
inline bool is_builtin_xxh3(chr_hash64_fn f) noexcept { return f == chr_builtin_xxh3.hash64; }

// Keys up to this length hash inline; longer ones through the built-in's
// function, which keeps its longer paths out of line (builtin_xxh3.c).
constexpr size_t kInlineXxh3MaxKey = 32;

// The built-in xxh3 of a key of at most kInlineXxh3MaxKey bytes.
inline uint64_t xxh3_short_key(const void *key, size_t len, uint64_t seed) noexcept {
    return XXH3_64bits_withSeed(key, len, seed);
}

// The built-in xxh3 of any key.
inline uint64_t builtin_xxh3(const void *key, size_t len, uint64_t seed) noexcept {
    if (__builtin_expect(len <= kInlineXxh3MaxKey, 1)) return xxh3_short_key(key, len, seed);
    return chr_builtin_xxh3.hash64(key, len, seed);
}

}  // namespace chring
