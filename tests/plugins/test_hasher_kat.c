/*
 * Known answers for every shipped hasher, through the plugin interface
 * only (chr_hasher_hash / chr_hasher_digest): no test here calls an
 * algorithm directly. Expected values come from each algorithm's
 * reference, and were checked against an independent implementation:
 *   md5       RFC 1321 appendix A.5 test suite (and Python hashlib)
 *   sha1      FIPS 180-2 appendix A / RFC 3174 section 7.3 TEST1..TEST4
 *   crc32     the CRC-32 check value 0xCBF43926 of "123456789" (CRC
 *             catalogue), and zlib.crc32 for the other strings
 *   fnv1a     the FNV authors' reference values (offset bases, "a",
 *             "foobar"), and a Python FNV-1a
 *   murmur3   SMHasher's VerificationTest (0xB0F57EE3 for x86_32) and the
 *             widely published string vectors; all cross-checked with Go's
 *             github.com/twmb/murmur3 (Debian golang-github-twmb-murmur3-dev)
 *   xxh3/64   xxHash's own sanity table (cli/xsum_sanity_check.c, the
 *             generated PRIME32/PRIME64 buffer), cross-checked with Debian's
 *             xxhsum 0.8.1 and python3-xxhash 3.2
 *   example   djb2 + splitmix64 computed in Python from the documented rule
 * Then the documented derivations: hash64(x, 0) from digest(x), how a
 * seed enters, and that different seeds give different values.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hasher_catalog.h"
#include "test_util.h"

#define TEXT(s) (s), (sizeof(s) - 1)

/* ---- helpers ------------------------------------------------------------ */

static uint64_t hash_of(const char *hasher, const void *data, size_t len, uint64_t seed) {
    uint64_t value = 0;
    assert_chr_ok(chr_hasher_hash(hasher, data, len, seed, &value));
    return value;
}

/* Fills `out` (room for CHR_DIGEST_MAX) and checks the size the hasher reports. */
static void digest_of(const char *hasher, const void *data, size_t len, uint32_t expected_size,
                      unsigned char *out) {
    size_t size = 0;
    assert_chr_ok(chr_hasher_digest(hasher, data, len, out, CHR_DIGEST_MAX, &size));
    assert_int_equal(size, expected_size);
}

static void hex_decode(const char *hex, unsigned char *out, size_t *len) {
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; ++i) {
        char byte[3] = {hex[2 * i], hex[2 * i + 1], 0};
        out[i] = (unsigned char)strtoul(byte, NULL, 16);
    }
    *len = n;
}

static const catalog_hasher *catalog_entry(const char *name) {
    for (size_t i = 0; i < catalog_count; ++i)
        if (strcmp(catalog[i].name, name) == 0) return &catalog[i];
    fail_msg("hasher '%s' is not in the catalog", name);
    return NULL;
}

/* One full-digest known answer: `input` repeated `repeat` times. */
typedef struct digest_vector {
    const char *input;
    size_t input_len;
    size_t repeat;
    const char *hex;
} digest_vector;

static void check_digest_vectors(const char *hasher, const digest_vector *v, size_t count) {
    const catalog_hasher *entry = catalog_entry(hasher);
    for (size_t i = 0; i < count; ++i) {
        size_t total = v[i].input_len * v[i].repeat;
        unsigned char *input = malloc(total ? total : 1);
        assert_non_null(input);
        for (size_t r = 0; r < v[i].repeat; ++r)
            memcpy(input + r * v[i].input_len, v[i].input, v[i].input_len);
        unsigned char got[CHR_DIGEST_MAX], want[CHR_DIGEST_MAX];
        size_t want_len = 0;
        hex_decode(v[i].hex, want, &want_len);
        assert_int_equal(want_len, entry->digest_size);
        digest_of(hasher, input, total, entry->digest_size, got);
        if (memcmp(got, want, want_len) != 0)
            fail_msg("%s vector %zu (%zu bytes): digest differs from %s", hasher, i, total,
                     v[i].hex);
        free(input);
    }
}

/* One hash64 known answer. */
typedef struct hash_vector {
    const char *input;
    size_t input_len;
    uint64_t seed;
    uint64_t expected;
} hash_vector;

static void check_hash_vectors(const char *hasher, const hash_vector *v, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        uint64_t got = hash_of(hasher, v[i].input, v[i].input_len, v[i].seed);
        if (got != v[i].expected)
            fail_msg("%s vector %zu seed %#llx: got %#018llx, expected %#018llx", hasher, i,
                     (unsigned long long)v[i].seed, (unsigned long long)got,
                     (unsigned long long)v[i].expected);
    }
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- MD5: RFC 1321 A.5 ---------------------------------------------------- */

static void test_md5_rfc1321_suite(void **state) {
    (void)state;
    static const digest_vector rfc1321[] = {
        {TEXT(""), 1, "d41d8cd98f00b204e9800998ecf8427e"},
        {TEXT("a"), 1, "0cc175b9c0f1b6a831c399e269772661"},
        {TEXT("abc"), 1, "900150983cd24fb0d6963f7d28e17f72"},
        {TEXT("message digest"), 1, "f96b697d7cb7938d525a2f31aaf161d0"},
        {TEXT("abcdefghijklmnopqrstuvwxyz"), 1, "c3fcd3d76192e4007dfb496cca67e13b"},
        {TEXT("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"), 1,
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {TEXT("1234567890"), 8, "57edf4a22be3c955ac49da2e2107b67a"},
    };
    check_digest_vectors("md5", rfc1321, COUNT(rfc1321));
}

/* ---- SHA-1: FIPS 180-2 A.1-A.3, RFC 3174 TEST1-4 ---------------------------- */

static void test_sha1_fips180_rfc3174(void **state) {
    (void)state;
    static const digest_vector fips180[] = {
        {TEXT(""), 1, "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {TEXT("abc"), 1, "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {TEXT("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), 1,
         "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
        {TEXT("a"), 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"},
        {TEXT("0123456701234567012345670123456701234567012345670123456701234567"), 10,
         "dea356a2cddd90c7a7ecedc5ebb563934f460452"},
    };
    check_digest_vectors("sha1", fips180, COUNT(fips180));
}

/* ---- CRC-32 ---------------------------------------------------------------- */

static void test_crc32_check_value(void **state) {
    (void)state;
    static const digest_vector crc[] = {
        {TEXT("123456789"), 1, "cbf43926"}, /* the CRC-32/ISO-HDLC check value */
        {TEXT(""), 1, "00000000"},
        {TEXT("a"), 1, "e8b7be43"},
        {TEXT("The quick brown fox jumps over the lazy dog"), 1, "414fa339"},
        {TEXT("user:42"), 1, "646f0d86"},
    };
    check_digest_vectors("crc32", crc, COUNT(crc));
}

/* ---- FNV-1a ----------------------------------------------------------------- */

static void test_fnv1a_reference_values(void **state) {
    (void)state;
    static const digest_vector fnv32[] = {
        {TEXT(""), 1, "811c9dc5"}, /* the 32-bit offset basis */
        {TEXT("a"), 1, "e40c292c"},
        {TEXT("foobar"), 1, "bf9cf968"},
    };
    static const digest_vector fnv64[] = {
        {TEXT(""), 1, "cbf29ce484222325"}, /* the 64-bit offset basis */
        {TEXT("a"), 1, "af63dc4c8601ec8c"},
        {TEXT("foobar"), 1, "85944171f73967e8"},
    };
    check_digest_vectors("fnv1a_32", fnv32, COUNT(fnv32));
    check_digest_vectors("fnv1a_64", fnv64, COUNT(fnv64));
}

/* ---- MurmurHash3 ------------------------------------------------------------ */

static void test_murmur3_published_vectors(void **state) {
    (void)state;
    static const digest_vector x86_32[] = {
        {TEXT(""), 1, "00000000"},
        {"\0\0\0\0", 4, 1, "2362f9de"},
        {TEXT("Hello, world!"), 1, "c0363e43"},
        {TEXT("The quick brown fox jumps over the lazy dog"), 1, "2e4ff723"},
    };
    static const digest_vector x64_128[] = {
        {TEXT(""), 1, "00000000000000000000000000000000"},
        {TEXT("The quick brown fox jumps over the lazy dog"), 1,
         "6c1b07bc7bbc4be347939ac4a93c437a"},
        {TEXT("Hello, world!"), 1, "df65d6d2d12d51f164c5f3a85066322c"},
    };
    /* Seeded: the ring value is v * 0x100000001 (x86_32) or h1 (x64_128). */
    static const hash_vector x86_32_seeded[] = {
        {TEXT(""), 1, 0x514E28B7ull * 0x100000001ull},
        {TEXT(""), 0xFFFFFFFF, 0x81F16F39ull * 0x100000001ull},
        {TEXT("aaaa"), 0x9747B28C, 0x5A97808Aull * 0x100000001ull},
        {TEXT("Hello, world!"), 0x9747B28C, 0x24884CBAull * 0x100000001ull},
        {TEXT("The quick brown fox jumps over the lazy dog"), 0x9747B28C,
         0x2FA826CDull * 0x100000001ull},
        /* a 64-bit seed folds to 0x12345678 ^ 0x9ABCDEF0 = 0x88888888 */
        {TEXT("abc"), 0x123456789ABCDEF0ull, 0x68960771ull * 0x100000001ull},
    };
    static const hash_vector x64_128_seeded[] = {
        {TEXT("The quick brown fox jumps over the lazy dog"), 0x9747B28C, 0x738A7F3BD2633121ull},
        {TEXT("a"), 1, 0x47EAE1073748CF70ull},
        /* all 64 bits as h1 = h2 = seed (twmb/murmur3 SeedSum128(s, s, data)) */
        {TEXT("abc"), 0x123456789ABCDEF0ull, 0x50D7BA58E72D7CC7ull},
        {TEXT("0123456789abcdefg"), 0xFFFFFFFF, 0x6835C90072202223ull},
    };
    check_digest_vectors("murmur3_32", x86_32, COUNT(x86_32));
    check_digest_vectors("murmur3_128", x64_128, COUNT(x64_128));
    check_hash_vectors("murmur3_32", x86_32_seeded, COUNT(x86_32_seeded));
    check_hash_vectors("murmur3_128", x64_128_seeded, COUNT(x64_128_seeded));
}

/*
 * SMHasher's VerificationTest: hash key[0..i) (key[j] = j) with seed 256 - i
 * for i = 0..255, store the hashes little-endian one after another, hash
 * that buffer with seed 0, and read the first 4 bytes little-endian.
 *
 * murmur3_32 runs the procedure exactly: its ring value's low 32 bits are
 * the x86_32 hash. murmur3_128's interface gives the seeded h1 (hash64)
 * but no seeded h2 (digests are unseeded), so it runs the procedure with
 * 8-byte h1 entries; 0x443D8C6D is that variant's value computed with Go's
 * twmb/murmur3, which yields SMHasher's 0x6384BA69 with the full 16 bytes.
 */
static uint32_t smhasher_verification(const char *hasher, size_t entry_bytes) {
    unsigned char key[256];
    unsigned char *hashes = calloc(256, entry_bytes);
    assert_non_null(hashes);
    for (size_t i = 0; i < 256; ++i) {
        key[i] = (unsigned char)i;
        uint64_t h = hash_of(hasher, key, i, 256 - i);
        for (size_t b = 0; b < entry_bytes; ++b)
            hashes[i * entry_bytes + b] = (unsigned char)(h >> (8 * b));
    }
    uint64_t final = hash_of(hasher, hashes, 256 * entry_bytes, 0);
    free(hashes);
    return (uint32_t)final; /* low 32 bits = the first 4 bytes, little-endian */
}

static void test_murmur3_smhasher_verification(void **state) {
    (void)state;
    assert_int_equal(smhasher_verification("murmur3_32", 4), 0xB0F57EE3u);
    assert_int_equal(smhasher_verification("murmur3_128", 8), 0x443D8C6Du);
}

/* ---- xxHash: xxhsum's sanity table --------------------------------------- */

#define XXH_PRIME32 2654435761ull
#define XXH_PRIME64 11400714785074694797ull
enum { SANITY_BUFFER_SIZE = 2367 };

typedef struct sanity_vector {
    size_t len;
    uint64_t seed;
    uint64_t expected;
} sanity_vector;

static void check_sanity_vectors(const char *hasher, const sanity_vector *v, size_t count) {
    unsigned char buffer[SANITY_BUFFER_SIZE];
    uint64_t generator = XXH_PRIME32;
    for (size_t i = 0; i < SANITY_BUFFER_SIZE; ++i) {
        buffer[i] = (unsigned char)(generator >> 56);
        generator *= XXH_PRIME64;
    }
    for (size_t i = 0; i < count; ++i) {
        uint64_t got = hash_of(hasher, v[i].len ? buffer : NULL, v[i].len, v[i].seed);
        if (got != v[i].expected)
            fail_msg("%s sanity len %zu seed %#llx: got %#018llx, expected %#018llx", hasher,
                     v[i].len, (unsigned long long)v[i].seed, (unsigned long long)got,
                     (unsigned long long)v[i].expected);
    }
}

static void test_xxhash_sanity_table(void **state) {
    (void)state;
    static const sanity_vector xxh64[] = {
        {0, 0, 0xEF46DB3751D8E999ull},   {0, XXH_PRIME32, 0xAC75FDA2929B17EFull},
        {1, 0, 0xE934A84ADB052768ull},   {1, XXH_PRIME32, 0x5014607643A9B4C3ull},
        {4, 0, 0x9136A0DCA57457EEull},   {14, 0, 0x8282DCC4994E35C8ull},
        {14, XXH_PRIME32, 0xC3BD6BF63DEB6DF0ull}, {222, 0, 0xB641AE8CB691C174ull},
        {222, XXH_PRIME32, 0x20CB8AB7AE10C14Aull},
    };
    static const sanity_vector xxh3[] = {
        {0, 0, 0x2D06800538D394C2ull},    {0, XXH_PRIME64, 0xA8A6B918B2F0364Aull},
        {1, 0, 0xC44BDFF4074EECDBull},    {1, XXH_PRIME64, 0x032BE332DD766EF8ull},
        {6, 0, 0x27B56A84CD2D7325ull},    {6, XXH_PRIME64, 0x84589C116AB59AB9ull},
        {12, 0, 0xA713DAF0DFBB77E7ull},   {12, XXH_PRIME64, 0xE7303E1B2336DE0Eull},
        {24, 0, 0xA3FE70BF9D3510EBull},   {24, XXH_PRIME64, 0x850E80FC35BDD690ull},
        {48, 0, 0x397DA259ECBA1F11ull},   {48, XXH_PRIME64, 0xADC2CBAA44ACC616ull},
        {80, 0, 0xBCDEFBBB2C47C90Aull},   {80, XXH_PRIME64, 0xC6DD0CB699532E73ull},
        {195, 0, 0xCD94217EE362EC3Aull},  {195, XXH_PRIME64, 0xBA68003D370CB3D9ull},
        {403, 0, 0xCDEB804D65C6DEA4ull},  {403, XXH_PRIME64, 0x6259F6ECFD6443FDull},
        {512, 0, 0x617E49599013CB6Bull},  {512, XXH_PRIME64, 0x3CE457DE14C27708ull},
        {2048, 0, 0xDD59E2C3A5F038E0ull}, {2048, XXH_PRIME64, 0x66F81670669ABABCull},
        {2240, 0, 0x6E73A90539CF2948ull}, {2240, XXH_PRIME64, 0x757BA8487D1B5247ull},
        {2367, 0, 0xCB37AEB9E5D361EDull}, {2367, XXH_PRIME64, 0xD2DB3415B942B42Aull},
    };
    /* Digests: xxhsum's canonical (big-endian) form of the unseeded hash. */
    static const digest_vector xxh3_digest[] = {
        {TEXT(""), 1, "2d06800538d394c2"},
    };
    static const digest_vector xxh64_digest[] = {
        {TEXT(""), 1, "ef46db3751d8e999"},
    };
    check_sanity_vectors("xxh64", xxh64, COUNT(xxh64));
    check_sanity_vectors("xxh3", xxh3, COUNT(xxh3));
    check_digest_vectors("xxh3", xxh3_digest, COUNT(xxh3_digest));
    check_digest_vectors("xxh64", xxh64_digest, COUNT(xxh64_digest));
}

/* ---- the example plugin ----------------------------------------------------- */

static void test_example_djb2(void **state) {
    (void)state;
    static const hash_vector djb2[] = {
        {TEXT(""), 0, 0xF3595DA016FFDFDEull},
        {TEXT("a"), 0, 0xA270A01B7F2D1824ull},
        {TEXT("hello"), 0, 0x2877CBEB334AAA29ull},
        {TEXT("hello"), 1, 0x6DD72458286038E2ull},
        {TEXT("The quick brown fox jumps over the lazy dog"), 0x9E3779B97F4A7C15ull,
         0xAA73A53AC191C328ull},
    };
    check_hash_vectors("example_djb2", djb2, COUNT(djb2));
    unsigned char out[CHR_DIGEST_MAX];
    size_t size = 99;
    assert_chr_status(chr_hasher_digest("example_djb2", "a", 1, out, sizeof out, &size),
                      CHR_ENOTSUP);
    assert_int_equal(size, 0);
}

/* ---- documented derivations -------------------------------------------------- */

static const char *const sample_inputs[] = {
    "", "a", "node-007#159", "user:42", "0123456789abcdef", "0123456789abcdefg",
    "a somewhat longer key that spans several blocks of every algorithm here, 70+ bytes",
};

/* hash64(x, 0) is the documented function of digest(x), for every hasher with a digest. */
static void test_ring_value_derives_from_digest(void **state) {
    (void)state;
    for (size_t h = 0; h < catalog_count; ++h) {
        const catalog_hasher *c = &catalog[h];
        if (c->ring == RING_NO_DIGEST) continue;
        for (size_t i = 0; i < COUNT(sample_inputs); ++i) {
            const char *x = sample_inputs[i];
            unsigned char d[CHR_DIGEST_MAX];
            digest_of(c->name, x, strlen(x), c->digest_size, d);
            uint64_t want = ring_value_from_digest(c->ring, d);
            uint64_t got = hash_of(c->name, x, strlen(x), 0);
            if (got != want)
                fail_msg("%s(\"%s\", seed 0) = %#018llx, but its digest gives %#018llx", c->name,
                         x, (unsigned long long)got, (unsigned long long)want);
        }
    }
}

/* Hashers without a native seed: hash64(x, s) = ring value of digest(le64(s) || x). */
static void test_seed_prefix_rule(void **state) {
    (void)state;
    static const uint64_t seeds[] = {1, 2, 0xFFFFFFFFull, 0x9E3779B97F4A7C15ull};
    for (size_t h = 0; h < catalog_count; ++h) {
        const catalog_hasher *c = &catalog[h];
        if (c->seed != SEED_PREFIX_LE64) continue;
        for (size_t s = 0; s < COUNT(seeds); ++s)
            for (size_t i = 0; i < COUNT(sample_inputs); ++i) {
                const char *x = sample_inputs[i];
                unsigned char prefixed[128], d[CHR_DIGEST_MAX];
                seed_prefixed(seeds[s], x, strlen(x), prefixed);
                digest_of(c->name, prefixed, strlen(x) + 8, c->digest_size, d);
                uint64_t want = ring_value_from_digest(c->ring, d);
                uint64_t got = hash_of(c->name, x, strlen(x), seeds[s]);
                if (got != want)
                    fail_msg("%s(\"%s\", seed %#llx) = %#018llx, expected %#018llx", c->name, x,
                             (unsigned long long)seeds[s], (unsigned long long)got,
                             (unsigned long long)want);
            }
    }
    /* Pinned values, computed with Python's hashlib / zlib and a Python FNV-1a (crc32 and
     * fnv1a ring values: the plain value through MurmurHash3's fmix64). */
    static const hash_vector seed1_md5[] = {{TEXT("user:42"), 1, 0x81623098110D5427ull}};
    static const hash_vector seed1_sha1[] = {{TEXT("user:42"), 1, 0x8B7E0EE03A93F1F5ull}};
    static const hash_vector seed1_crc[] = {{TEXT("user:42"), 1, 0x37517E37763A48C3ULL}}; /* fmix64(0x972B0AF7) */
    static const hash_vector seed1_fnv32[] = {{TEXT("user:42"), 1, 0x2924A7300701F0FFULL}}; /* fmix64(0xFC20CA61) */
    static const hash_vector golden_fnv64[] = {
        {TEXT("user:42"), 0x9E3779B97F4A7C15ull, 0x604279F07FE4C84AULL}}; /* fmix64(0x400E259059FB0F91) */
    check_hash_vectors("md5", seed1_md5, 1);
    check_hash_vectors("sha1", seed1_sha1, 1);
    check_hash_vectors("crc32", seed1_crc, 1);
    check_hash_vectors("fnv1a_32", seed1_fnv32, 1);
    check_hash_vectors("fnv1a_64", golden_fnv64, 1);
}

/* Every hasher: distinct seeds give distinct values, key by key. murmur3_32's
 * seeds are chosen so that their 32-bit folds differ too. */
static void test_seeds_give_different_values(void **state) {
    (void)state;
    static const uint64_t seeds[] = {0, 1, 2, 0xFFFFFFFFull, 0x9E3779B97F4A7C15ull,
                                     0x8000000000000000ull};
    enum { KEYS = 500 };
    for (size_t h = 0; h < catalog_count; ++h) {
        size_t equal = 0;
        for (unsigned k = 0; k < KEYS; ++k) {
            char key[32];
            int len = snprintf(key, sizeof key, "key:%u", k);
            uint64_t v[COUNT(seeds)];
            for (size_t s = 0; s < COUNT(seeds); ++s)
                v[s] = hash_of(catalog[h].name, key, (size_t)len, seeds[s]);
            for (size_t a = 0; a < COUNT(seeds); ++a)
                for (size_t b = a + 1; b < COUNT(seeds); ++b) equal += v[a] == v[b];
        }
        /* 7,500 pairs; a 32-bit hash collides with probability 2^-32 per pair. */
        if (equal != 0) fail_msg("%s: %zu equal values across different seeds", catalog[h].name, equal);
    }
}

/* The documented fold: murmur3_32's native seed is low ^ high 32 bits. */
static void test_murmur3_32_seed_fold(void **state) {
    (void)state;
    const char *x = "user:42";
    assert_int_equal(hash_of("murmur3_32", x, 7, 0x0000000100000001ull), hash_of("murmur3_32", x, 7, 0));
    assert_int_equal(hash_of("murmur3_32", x, 7, 0x1234567800000000ull),
                     hash_of("murmur3_32", x, 7, 0x12345678ull));
    assert_int_not_equal(hash_of("murmur3_128", x, 7, 0x0000000100000001ull),
                         hash_of("murmur3_128", x, 7, 0));
}

/* chr_hasher_list reports each shipped hasher with its digest size and the
 * plugin file it came from ("builtin" for the default). */
static void test_listed_with_digest_size_and_origin(void **state) {
    (void)state;
    size_t count = 0;
    assert_chr_status(chr_hasher_list(NULL, NULL, 0, &count), CHR_ERANGE);
    chr_hasher_info *infos = calloc(count, sizeof *infos);
    assert_non_null(infos);
    assert_chr_ok(chr_hasher_list(NULL, infos, count, &count));
    for (size_t h = 0; h < catalog_count; ++h) {
        const chr_hasher_info *found = NULL;
        for (size_t i = 0; i < count; ++i)
            if (strcmp(infos[i].name, catalog[h].name) == 0) found = &infos[i];
        if (!found) fail_msg("hasher %s is not listed", catalog[h].name);
        assert_int_equal(found->digest_size, catalog[h].digest_size);
        /* the default is compiled in; every other one is a plugin */
        if (strcmp(catalog[h].name, CHR_DEFAULT_HASHER) == 0)
            assert_string_equal(found->origin, "builtin");
        else
#if defined(_WIN32) /* the canonical Windows path of the plugin file */
            assert_non_null(strstr(found->origin, "\\chring-"));
#else
            assert_non_null(strstr(found->origin, "/chring-"));
#endif
        assert_true(strlen(found->description) > 0);
    }
    free(infos);
}

/* NULL data with length 0 is the empty input, for every hasher. */
static void test_empty_input_may_be_null(void **state) {
    (void)state;
    for (size_t h = 0; h < catalog_count; ++h) {
        const catalog_hasher *c = &catalog[h];
        assert_int_equal(hash_of(c->name, NULL, 0, 7), hash_of(c->name, "", 0, 7));
        if (c->digest_size == 0) continue;
        unsigned char a[CHR_DIGEST_MAX], b[CHR_DIGEST_MAX];
        digest_of(c->name, NULL, 0, c->digest_size, a);
        digest_of(c->name, "", 0, c->digest_size, b);
        assert_memory_equal(a, b, c->digest_size);
    }
}

/* ---- OpenSSL's per-thread contexts ------------------------------------------ */

enum { THREADS = 4, THREAD_KEYS = 2000 };

typedef struct thread_job {
    const char *hasher;
    uint64_t *values;
} thread_job;

static void *hash_keys(void *arg) {
    thread_job *job = arg;
    for (unsigned k = 0; k < THREAD_KEYS; ++k) {
        char key[32];
        int len = snprintf(key, sizeof key, "key:%u", k);
        if (chr_hasher_hash(job->hasher, key, (size_t)len, k, &job->values[k]) != CHR_OK)
            job->values[k] = 0;
    }
    return NULL;
}

/* Threads hashing at once get the single-threaded values; each thread's
 * EVP context is freed when it exits (the ASan build reports a leak
 * otherwise). */
static void test_openssl_hashers_across_threads(void **state) {
    (void)state;
    static const char *const hashers[] = {"md5", "sha1"};
    for (size_t h = 0; h < COUNT(hashers); ++h) {
        uint64_t *expected = calloc(THREAD_KEYS, sizeof *expected);
        uint64_t *got[THREADS];
        thread_job jobs[THREADS];
        pthread_t threads[THREADS];
        assert_non_null(expected);
        thread_job main_job = {hashers[h], expected};
        hash_keys(&main_job);
        for (int t = 0; t < THREADS; ++t) {
            got[t] = calloc(THREAD_KEYS, sizeof *got[t]);
            assert_non_null(got[t]);
            jobs[t].hasher = hashers[h];
            jobs[t].values = got[t];
            assert_int_equal(pthread_create(&threads[t], NULL, hash_keys, &jobs[t]), 0);
        }
        for (int t = 0; t < THREADS; ++t) {
            assert_int_equal(pthread_join(threads[t], NULL), 0);
            assert_memory_equal(got[t], expected, THREAD_KEYS * sizeof *expected);
            free(got[t]);
        }
        free(expected);
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5_rfc1321_suite),
        cmocka_unit_test(test_sha1_fips180_rfc3174),
        cmocka_unit_test(test_crc32_check_value),
        cmocka_unit_test(test_fnv1a_reference_values),
        cmocka_unit_test(test_murmur3_published_vectors),
        cmocka_unit_test(test_murmur3_smhasher_verification),
        cmocka_unit_test(test_xxhash_sanity_table),
        cmocka_unit_test(test_example_djb2),
        cmocka_unit_test(test_ring_value_derives_from_digest),
        cmocka_unit_test(test_seed_prefix_rule),
        cmocka_unit_test(test_seeds_give_different_values),
        cmocka_unit_test(test_murmur3_32_seed_fold),
        cmocka_unit_test(test_listed_with_digest_size_and_origin),
        cmocka_unit_test(test_empty_input_may_be_null),
        cmocka_unit_test(test_openssl_hashers_across_threads),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
