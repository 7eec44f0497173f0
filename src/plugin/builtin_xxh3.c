/*
 * The default hasher, "xxh3", compiled into the library: a default ring
 * (chr_ring_new(NULL, ...)) never needs dlopen, so it works from a static
 * build, in a sandbox without /proc or file access, and from a moved
 * install. xxHash in its header-only mode: no link to libxxhash.
 *
 * The values are the ones plugins/xxhash shipped for "xxh3" before it moved
 * here (tests/core/test_determinism.c and tests/plugins/test_hasher_kat.c
 * pin them): ring value XXH3_64bits_withSeed(data, len, seed), digest the
 * canonical big-endian form of the unseeded XXH3_64bits.
 */
#include <chring_plugin.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Keys past 32 bytes take their own function: inlined together, the longer
 * paths' register needs made every key save and restore three registers,
 * and a ring lookup's key is usually short. Same function, same values. */
static __attribute__((noinline)) uint64_t xxh3_longer(const void *data, size_t len, uint64_t seed)
{
    return XXH3_64bits_withSeed(data, len, seed);
}

static uint64_t xxh3_hash64(const void *data, size_t len, uint64_t seed)
{
    if (len <= 32) return XXH3_64bits_withSeed(data, len, seed);
    return xxh3_longer(data, len, seed);
}

static void xxh3_digest(const void *data, size_t len, unsigned char *out)
{
    XXH64_canonicalFromHash((XXH64_canonical_t *)out, XXH3_64bits(data, len));
}

/* Declared in registry.cpp; hidden like the rest of the core. */
extern const chr_hasher chr_builtin_xxh3;
const chr_hasher chr_builtin_xxh3 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "xxh3",
    "XXH3 64-bit (xxHash), seeded; ring value = the hash; digest = canonical big-endian",
    xxh3_hash64, 8, xxh3_digest, 0,
};
