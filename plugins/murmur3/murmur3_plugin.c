/*
 * MurmurHash3 plugin: hashers "murmur3_32" and "murmur3_128".
 *
 * Austin Appleby's public-domain MurmurHash3_x86_32 and MurmurHash3_x64_128
 * (SMHasher), written here from the algorithm. Blocks are read as
 * little-endian on every host, so the results equal the reference on
 * x86 (SMHasher verification values 0xB0F57EE3 and 0x6384BA69) and do
 * not change on a big-endian machine.
 *
 * murmur3_32
 *   Digest (4 bytes): MurmurHash3_x86_32(data, len, 0), big-endian.
 *   Ring value: v * 0x100000001 = (v << 32) | v with
 *     v = MurmurHash3_x86_32(data, len, native seed): the 32-bit circle
 *     scaled exactly onto the 64-bit one (see the crc32 plugin).
 *   Seed: the native seed is 32 bits, taken as (uint32)(seed ^ (seed >> 32)):
 *     a seed below 2^32 is the reference's seed unchanged; seeds whose two
 *     halves XOR to the same word give the same ring.
 *
 * murmur3_128
 *   Digest (16 bytes): the reference's output for seed 0: h1 then h2, each
 *     8 bytes little-endian (what MurmurHash3_x64_128 stores on x86).
 *   Ring value: h1, i.e. digest bytes 0..7 read little-endian, computed
 *     with the ring's seed.
 *   Seed: native, all 64 bits: h1 = h2 = seed at the start. For a seed
 *     below 2^32 this is the reference's uint32_t seed exactly; larger
 *     seeds extend it the way 64-bit ports do (e.g. Go's twmb/murmur3
 *     SeedSum128(seed, seed, data)).
 */
#include <chring_plugin.h>

#include "fmix64.h"

static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint32_t load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_le64(const unsigned char *p)
{
    return (uint64_t)load_le32(p) | (uint64_t)load_le32(p + 4) << 32;
}

static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    return h ^ (h >> 16);
}

static uint32_t murmur3_x86_32(const void *key, size_t len, uint32_t seed)
{
    const uint32_t c1 = 0xCC9E2D51u, c2 = 0x1B873593u;
    const unsigned char *data = (const unsigned char *)key;
    const size_t nblocks = len / 4;
    uint32_t h1 = seed;

    for (size_t i = 0; i < nblocks; ++i) {
        uint32_t k1 = load_le32(data + 4 * i);
        k1 = rotl32(k1 * c1, 15) * c2;
        h1 ^= k1;
        h1 = rotl32(h1, 13) * 5 + 0xE6546B64u;
    }

    if (len & 3) { /* only then: data may be NULL when len is 0 (NULL + 0 is undefined) */
        const unsigned char *tail = data + 4 * nblocks;
        uint32_t k1 = 0;
        for (size_t i = len & 3; i > 0; --i) k1 ^= (uint32_t)tail[i - 1] << (8 * (i - 1));
        h1 ^= rotl32(k1 * c1, 15) * c2;
    }

    h1 ^= (uint32_t)len; /* the reference's `int len`: equal for any len < 2^31 */
    return fmix32(h1);
}

static void murmur3_x64_128(const void *key, size_t len, uint64_t seed, uint64_t out[2])
{
    const uint64_t c1 = 0x87C37B91114253D5ull, c2 = 0x4CF5AD432745937Full;
    const unsigned char *data = (const unsigned char *)key;
    const size_t nblocks = len / 16;
    uint64_t h1 = seed, h2 = seed;

    for (size_t i = 0; i < nblocks; ++i) {
        uint64_t k1 = load_le64(data + 16 * i);
        uint64_t k2 = load_le64(data + 16 * i + 8);
        h1 ^= rotl64(k1 * c1, 31) * c2;
        h1 = (rotl64(h1, 27) + h2) * 5 + 0x52DCE729u;
        h2 ^= rotl64(k2 * c2, 33) * c1;
        h2 = (rotl64(h2, 31) + h1) * 5 + 0x38495AB5u;
    }

    const size_t rest = len & 15;
    const unsigned char *tail = rest ? data + 16 * nblocks : data; /* data may be NULL when len is 0 */
    uint64_t k1 = 0, k2 = 0;
    for (size_t i = rest; i > 8; --i) k2 ^= (uint64_t)tail[i - 1] << (8 * (i - 9));
    for (size_t i = rest < 8 ? rest : 8; i > 0; --i) k1 ^= (uint64_t)tail[i - 1] << (8 * (i - 1));
    if (rest > 8) h2 ^= rotl64(k2 * c2, 33) * c1;
    if (rest > 0) h1 ^= rotl64(k1 * c1, 31) * c2;

    h1 ^= (uint64_t)len;
    h2 ^= (uint64_t)len;
    h1 += h2;
    h2 += h1;
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[0] = h1;
    out[1] = h2;
}

static uint64_t murmur3_32_hash64(const void *data, size_t len, uint64_t seed)
{
    uint32_t native_seed = (uint32_t)(seed ^ (seed >> 32));
    return (uint64_t)murmur3_x86_32(data, len, native_seed) * 0x100000001ull;
}

static void murmur3_32_digest(const void *data, size_t len, unsigned char *out)
{
    uint32_t v = murmur3_x86_32(data, len, 0);
    for (int i = 0; i < 4; ++i) out[i] = (unsigned char)(v >> (24 - 8 * i));
}

static uint64_t murmur3_128_hash64(const void *data, size_t len, uint64_t seed)
{
    uint64_t h[2];
    murmur3_x64_128(data, len, seed, h);
    return h[0];
}

static void murmur3_128_digest(const void *data, size_t len, unsigned char *out)
{
    uint64_t h[2];
    murmur3_x64_128(data, len, 0, h);
    for (int i = 0; i < 16; ++i) out[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
}

static const chr_hasher murmur3_32 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "murmur3_32",
    "MurmurHash3_x86_32; ring = v * 0x100000001; native seed = low ^ high 32 bits; digest = BE",
    murmur3_32_hash64, 4, murmur3_32_digest, 0,
};

static const chr_hasher murmur3_128 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "murmur3_128",
    "MurmurHash3_x64_128; ring = h1; seed = h1 = h2 (64-bit); digest = h1,h2 little-endian",
    murmur3_128_hash64, 16, murmur3_128_digest, 0,
};

static const chr_hasher *const hashers[] = {&murmur3_32, &murmur3_128};

CHR_PLUGIN_DEFINE(hashers)
