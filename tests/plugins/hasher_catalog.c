#include "hasher_catalog.h"

#include <string.h>

const catalog_hasher catalog[] = {
    {"xxh3", 8, RING_BE64, SEED_NATIVE},
    {"xxh64", 8, RING_BE64, SEED_NATIVE},
    {"md5", 16, RING_LE64, SEED_PREFIX_LE64},
    {"sha1", 20, RING_BE64, SEED_PREFIX_LE64},
    {"murmur3_32", 4, RING_BE32_SPREAD, SEED_NATIVE},
    {"murmur3_128", 16, RING_LE64, SEED_NATIVE},
    {"fnv1a_32", 4, RING_BE32_FMIX, SEED_PREFIX_LE64},
    {"fnv1a_64", 8, RING_BE64_FMIX, SEED_PREFIX_LE64},
    {"crc32", 4, RING_BE32_FMIX, SEED_PREFIX_LE64},
    {"example_djb2", 0, RING_NO_DIGEST, SEED_NATIVE},
};
const size_t catalog_count = sizeof catalog / sizeof catalog[0];

/* MurmurHash3's 64-bit finalizer, written out here from its definition. */
static uint64_t fmix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

uint64_t ring_value_from_digest(ring_rule rule, const unsigned char *d) {
    uint64_t v = 0;
    switch (rule) {
    case RING_BE32_FMIX:
        for (int i = 0; i < 4; ++i) v = v << 8 | d[i];
        return fmix64(v);
    case RING_BE64_FMIX:
        for (int i = 0; i < 8; ++i) v = v << 8 | d[i];
        return fmix64(v);
    case RING_BE64:
        for (int i = 0; i < 8; ++i) v = v << 8 | d[i];
        return v;
    case RING_LE64:
        for (int i = 7; i >= 0; --i) v = v << 8 | d[i];
        return v;
    case RING_BE32_SPREAD:
        for (int i = 0; i < 4; ++i) v = v << 8 | d[i];
        return v * 0x100000001ull;
    case RING_NO_DIGEST:
        break;
    }
    return 0;
}

void seed_prefixed(uint64_t seed, const void *data, size_t len, unsigned char *out) {
    for (int i = 0; i < 8; ++i) out[i] = (unsigned char)(seed >> (8 * i));
    if (len) memcpy(out + 8, data, len);
}
