/*
 * hasher_catalog.h — what the plugin suites know about each shipped hasher:
 * its name, its digest size, and how its documented 64-bit ring value is
 * derived from the digest at seed 0 (plugins/README.md). Tests compare the
 * plugins against this table, never against the algorithms themselves.
 */
#ifndef CHRING_HASHER_CATALOG_H
#define CHRING_HASHER_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How hash64(data, 0) follows from digest(data). */
typedef enum ring_rule {
    RING_BE64,        /* digest bytes 0..7, big-endian (xxh3, xxh64, sha1) */
    RING_LE64,        /* digest bytes 0..7, little-endian (md5, murmur3_128's h1) */
    RING_BE32_SPREAD, /* the 4-byte big-endian value v, as v * 0x100000001 */
    RING_BE32_FMIX,   /* the 4-byte big-endian value, through MurmurHash3's fmix64 (crc32, fnv1a_32) */
    RING_BE64_FMIX,   /* the 8-byte big-endian value, through fmix64 (fnv1a_64) */
    RING_NO_DIGEST,   /* no digest to derive from (example_djb2) */
} ring_rule;

/* How a non-zero seed enters. */
typedef enum seed_rule {
    SEED_NATIVE,        /* the algorithm's own seed */
    SEED_PREFIX_LE64,   /* hash of (seed as 8 little-endian bytes || data) */
} seed_rule;

typedef struct catalog_hasher {
    const char *name;
    uint32_t digest_size;
    ring_rule ring;
    seed_rule seed;
} catalog_hasher;

/* Every hasher the tree ships (every folder of plugins/), example_djb2 included. */
extern const catalog_hasher catalog[];
extern const size_t catalog_count;

/* The ring value `rule` derives from `digest`. */
uint64_t ring_value_from_digest(ring_rule rule, const unsigned char *digest);

/* Writes `seed` as 8 little-endian bytes followed by the `len` bytes of
 * `data` into `out` (room for len + 8). */
void seed_prefixed(uint64_t seed, const void *data, size_t len, unsigned char *out);

#ifdef __cplusplus
}
#endif

#endif /* CHRING_HASHER_CATALOG_H */
