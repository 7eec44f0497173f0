/*
 * xxHash plugin (libxxhash): hashers "xxh3" (the ring default) and "xxh64".
 *
 * Ring value: the seeded 64-bit hash itself, XXH3_64bits_withSeed(data,
 * len, seed) / XXH64(data, len, seed), so chring tokens equal what any
 * xxHash implementation computes for `id "#" i` with the same seed.
 * Digest: xxHash's canonical form of the unseeded hash (8 bytes,
 * big-endian), as `xxhsum` prints it.
 */
#include <chring_plugin.h>

#define XXH_INLINE_ALL /* the hash inlined into the plugin: no call through libxxhash's PLT */
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

static uint64_t xxh64_hash64(const void *data, size_t len, uint64_t seed)
{
    return XXH64(data, len, seed);
}

static void xxh64_digest(const void *data, size_t len, unsigned char *out)
{
    XXH64_canonicalFromHash((XXH64_canonical_t *)out, XXH64(data, len, 0));
}

static const chr_hasher xxh3 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "xxh3",
    "XXH3 64-bit (xxHash), seeded; ring value = the hash; digest = canonical big-endian",
    xxh3_hash64, 8, xxh3_digest, 0,
};

static const chr_hasher xxh64 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "xxh64",
    "XXH64 (xxHash), seeded; ring value = the hash; digest = canonical big-endian",
    xxh64_hash64, 8, xxh64_digest, 0,
};

static const chr_hasher *const hashers[] = {&xxh3, &xxh64};

CHR_PLUGIN_DEFINE(hashers)
