/*
 * CRC-32 plugin: hasher "crc32".
 *
 * The CRC is the IEEE 802.3 one as zlib's crc32(), nginx's ngx_crc32_long()
 * and libhashkit compute it: reflected polynomial 0xEDB88320, initial value
 * and final XOR 0xFFFFFFFF ("123456789" -> 0xCBF43926). Implemented here
 * with slicing-by-8 tables (no library), built once when the plugin loads.
 *
 * Digest (4 bytes): the CRC value, big-endian, so crc32("123456789") is
 * cb f4 39 26. This is the exact value nginx's `hash ... consistent` uses.
 *
 * Ring value (hash64): with c the 32-bit CRC below,
 *     ring = fmix64(c)
 * where fmix64 is MurmurHash3's 64-bit finalizer (x ^= x >> 33;
 * x *= 0xff51afd7ed558ccd; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53;
 * x ^= x >> 33), a bijection that spreads the value over the circle. CRC is
 * linear: token names "node-7#1", "node-7#2" ... that differ in their last
 * bytes get CRCs that cluster, and a ring placed with them is measurably
 * unbalanced (tests/plugins). The digest keeps the plain CRC for systems
 * that need it (nginx's placement uses the digest, not this value).
 *
 * Seed: CRC-32 has no seed.
 *   seed == 0: c = CRC-32(data), the plain value any CRC-32 tool gives;
 *   seed != 0: c = CRC-32(seed as 8 little-endian bytes || data), i.e. the
 *              CRC continued over the data: zlib's
 *              crc32(crc32(0, seed_le8, 8), data, len).
 * A 32-bit hash places at most 2^32 distinct points; tokens that collide
 * are ordered by the ring's (value, node id, index) rule.
 */
#include <chring_plugin.h>

#include "fmix64.h"

#include <pthread.h>

/* slice[k][b]: the CRC of byte b followed by k zero bytes. */
static uint32_t slice[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t c = b;
        for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        slice[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
        for (int k = 1; k < 8; ++k)
            slice[k][b] = (slice[k - 1][b] >> 8) ^ slice[0][slice[k - 1][b] & 0xFFu];
}

/* Continues a CRC register (pre-inverted) over `len` bytes. */
static uint32_t crc_update(uint32_t reg, const unsigned char *p, size_t len)
{
    for (; len >= 8; p += 8, len -= 8) {
        /* Little-endian assembly: the result does not depend on the host. */
        uint32_t lo = reg ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        reg = slice[7][lo & 0xFFu] ^ slice[6][(lo >> 8) & 0xFFu] ^ slice[5][(lo >> 16) & 0xFFu] ^
              slice[4][lo >> 24] ^ slice[3][p[4]] ^ slice[2][p[5]] ^ slice[1][p[6]] ^
              slice[0][p[7]];
    }
    while (len--) reg = (reg >> 8) ^ slice[0][(reg ^ *p++) & 0xFFu];
    return reg;
}

static uint32_t crc32_seeded(const void *data, size_t len, uint64_t seed)
{
    uint32_t reg = 0xFFFFFFFFu;
    if (seed != 0) {
        unsigned char seed_le[8];
        for (int i = 0; i < 8; ++i) seed_le[i] = (unsigned char)(seed >> (8 * i));
        reg = crc_update(reg, seed_le, sizeof seed_le);
    }
    return crc_update(reg, (const unsigned char *)data, len) ^ 0xFFFFFFFFu;
}

static uint64_t crc32_hash64(const void *data, size_t len, uint64_t seed)
{
    return fmix64(crc32_seeded(data, len, seed));
}

static void crc32_digest(const void *data, size_t len, unsigned char *out)
{
    uint32_t c = crc32_seeded(data, len, 0);
    out[0] = (unsigned char)(c >> 24);
    out[1] = (unsigned char)(c >> 16);
    out[2] = (unsigned char)(c >> 8);
    out[3] = (unsigned char)c;
}

static const chr_hasher crc32_hasher = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "crc32",
    "CRC-32 (IEEE, as zlib/nginx); ring = fmix64(crc); seed != 0 prefixes its 8 LE bytes; "
    "digest = 4 bytes big-endian",
    crc32_hash64, 4, crc32_digest, 0,
};

static const chr_hasher *const hashers[] = {&crc32_hasher};

/* Not CHR_PLUGIN_DEFINE: the tables must exist before the first hash, and
 * the loader calls the entry point before it registers any hasher. */
CHR_PLUGIN_EXPORT const chr_hasher *const *chr_plugin_hashers(uint32_t *count);
CHR_PLUGIN_EXPORT const chr_hasher *const *chr_plugin_hashers(uint32_t *count)
{
    pthread_once(&tables_once, build_tables);
    *count = (uint32_t)(sizeof hashers / sizeof hashers[0]);
    return hashers;
}
