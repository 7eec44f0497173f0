/*
 * Example plugin: hasher "example_djb2". Copy this file to add your own hash.
 *
 * A plugin is a shared object that includes only <chring_plugin.h>, links
 * nothing from chring, and exports one entry point through
 * CHR_PLUGIN_DEFINE. chring loads files named chring-<something>.so from
 * its plugin directories (plugins/example/README.md says where and how to
 * build one outside the chring tree).
 *
 * The hash: Bernstein's djb2 (h = h * 33 + byte, from h = 5381) in 64 bits,
 * followed by a finalizer. djb2 alone barely changes the high bits for
 * short keys, and the ring orders positions by their high bits first, so
 * keys and tokens would crowd into a few arcs; the finalizer (splitmix64's
 * mixer, a bijection) makes every output bit depend on every input byte.
 *
 * Ring value: fmix(djb2_64(data) with the seed folded into the start).
 * Seed: h starts at 5381 ^ seed, so seed 0 is plain djb2 then the mixer.
 * Digest: none (digest_size 0); the compatibility placements need one only
 * for the hashers they name (md5, crc32).
 *
 * Rules every hasher follows (chring_plugin.h): the same input gives the
 * same output on every platform and for ever; safe to call from many
 * threads at once; never reads past len; never fails or allocates.
 */
#include <chring_plugin.h>

static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static uint64_t djb2_hash64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 5381 ^ seed;
    while (len--) h = h * 33 + *p++;
    return mix64(h);
}

static const chr_hasher djb2 = {
    CHR_PLUGIN_ABI_VERSION, /* the ABI this file was compiled against */
    sizeof(chr_hasher),     /* lets newer chring versions append fields */
    "example_djb2",         /* unique; 1..63 bytes of [a-z0-9_.-] */
    "djb2 64-bit with a splitmix64 finalizer; seed xor-ed into the start (example plugin)",
    djb2_hash64,            /* required */
    0, NULL,                /* no digest */
    0,                      /* flags: reserved, 0 */
};

static const chr_hasher *const hashers[] = {&djb2};

CHR_PLUGIN_DEFINE(hashers)
