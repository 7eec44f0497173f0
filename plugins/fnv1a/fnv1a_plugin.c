/*
 * FNV-1a plugin: hashers "fnv1a_32" and "fnv1a_64".
 *
 * Fowler/Noll/Vo FNV-1a as specified by its authors (for each byte:
 * h ^= byte; h *= prime), 32-bit offset basis 0x811C9DC5 and prime
 * 0x01000193, 64-bit offset basis 0xCBF29CE484222325 and prime
 * 0x100000001B3. No library.
 *
 * Digest: the value, big-endian (4 bytes for fnv1a_32, 8 for fnv1a_64),
 * so fnv1a_32("a") is e4 0c 29 2c.
 *
 * Ring value (hash64), with v the value below: ring = fmix64(v), MurmurHash3's
 * 64-bit finalizer (see the crc32 plugin), for both widths. FNV-1a alone
 * disperses weakly: the last bytes of a key reach only the bits the final
 * multiplications carry them to, so token names that differ at the end
 * ("node-7#1", "node-7#2") cluster on the circle; the finalizer spreads
 * them. The digest keeps the plain published value.
 *
 * Seed: FNV has no seed.
 *   seed == 0: v = FNV-1a(data), the published value;
 *   seed != 0: v = FNV-1a(seed as 8 little-endian bytes || data), i.e. the
 *              hash continued over the data from the state the seed bytes
 *              leave.
 *
 * tests/plugins checks that rings placed with either balance like an
 * ideal hash (plugins/README.md has the numbers).
 */
#include <chring_plugin.h>

#include "fmix64.h"

#define FNV32_OFFSET 0x811C9DC5u
#define FNV32_PRIME 0x01000193u
#define FNV64_OFFSET 0xCBF29CE484222325ull
#define FNV64_PRIME 0x100000001B3ull

static uint32_t fnv1a_32_update(uint32_t h, const unsigned char *p, size_t len)
{
    while (len--) h = (h ^ *p++) * FNV32_PRIME;
    return h;
}

static uint64_t fnv1a_64_update(uint64_t h, const unsigned char *p, size_t len)
{
    while (len--) h = (h ^ *p++) * FNV64_PRIME;
    return h;
}

static void store_le64(unsigned char out[8], uint64_t v)
{
    for (int i = 0; i < 8; ++i) out[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t fnv1a_32_seeded(const void *data, size_t len, uint64_t seed)
{
    uint32_t h = FNV32_OFFSET;
    if (seed != 0) {
        unsigned char seed_le[8];
        store_le64(seed_le, seed);
        h = fnv1a_32_update(h, seed_le, sizeof seed_le);
    }
    return fnv1a_32_update(h, (const unsigned char *)data, len);
}

static uint64_t fnv1a_64_seeded(const void *data, size_t len, uint64_t seed)
{
    uint64_t h = FNV64_OFFSET;
    if (seed != 0) {
        unsigned char seed_le[8];
        store_le64(seed_le, seed);
        h = fnv1a_64_update(h, seed_le, sizeof seed_le);
    }
    return fnv1a_64_update(h, (const unsigned char *)data, len);
}

static uint64_t fnv1a_32_hash64(const void *data, size_t len, uint64_t seed)
{
    return fmix64(fnv1a_32_seeded(data, len, seed));
}

static void fnv1a_32_digest(const void *data, size_t len, unsigned char *out)
{
    uint32_t v = fnv1a_32_seeded(data, len, 0);
    for (int i = 0; i < 4; ++i) out[i] = (unsigned char)(v >> (24 - 8 * i));
}

static uint64_t fnv1a_64_hash64(const void *data, size_t len, uint64_t seed)
{
    return fmix64(fnv1a_64_seeded(data, len, seed));
}

static void fnv1a_64_digest(const void *data, size_t len, unsigned char *out)
{
    uint64_t v = fnv1a_64_seeded(data, len, 0);
    for (int i = 0; i < 8; ++i) out[i] = (unsigned char)(v >> (56 - 8 * i));
}

static const chr_hasher fnv1a_32 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "fnv1a_32",
    "FNV-1a 32-bit; ring = fmix64(v); seed != 0 prefixes its 8 LE bytes; digest = BE value",
    fnv1a_32_hash64, 4, fnv1a_32_digest, 0,
};

static const chr_hasher fnv1a_64 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "fnv1a_64",
    "FNV-1a 64-bit; ring = fmix64(v); seed != 0 prefixes its 8 LE bytes; digest = BE value",
    fnv1a_64_hash64, 8, fnv1a_64_digest, 0,
};

static const chr_hasher *const hashers[] = {&fnv1a_32, &fnv1a_64};

CHR_PLUGIN_DEFINE(hashers)
