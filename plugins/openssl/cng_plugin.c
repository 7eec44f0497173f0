/*
 * The md5 and sha1 hashers on Windows, from the system's Cryptography API:
 * Next Generation (bcrypt.dll), since this build has no OpenSSL. Ring
 * values, digests and seeds are exactly those of openssl_plugin.c (its
 * comment defines them; tests/plugins/test_hasher_kat.c pins both builds to
 * the same known answers):
 *   md5:  digest = MD5(data); ring = digest bytes 0..7 little-endian;
 *   sha1: digest = SHA-1(data); ring = digest bytes 0..7 big-endian;
 *   seed != 0: the digest of (seed as 8 little-endian bytes || data).
 *
 * The algorithm providers are opened once, on the first call of the entry
 * point; each digest builds its hash object in a buffer on the stack
 * (no allocation). A provider that cannot be opened leaves its algorithm
 * out of the table; if neither opens the plugin exports none and the
 * loader refuses it. A digest call cannot fail by contract: if CNG fails
 * one anyway the process aborts with a message rather than return a wrong
 * ring position.
 */
#include <chring_plugin.h>

#include <windows.h>
#include <bcrypt.h>
#include <stdio.h>
#include <stdlib.h>

enum { ALG_MD5, ALG_SHA1, ALG_COUNT };
enum { OBJECT_MAX = 1024 }; /* CNG's MD5 and SHA-1 objects are a few hundred bytes */

static BCRYPT_ALG_HANDLE providers[ALG_COUNT];
static DWORD object_size[ALG_COUNT];

static void digest_failed(int alg, NTSTATUS status)
{
    fprintf(stderr, "chring-cng: %s digest failed (NTSTATUS 0x%08lx)\n", alg == ALG_MD5 ? "MD5" : "SHA-1",
            (unsigned long)status);
    abort();
}

static void seeded_digest(int alg, const void *data, size_t len, uint64_t seed, unsigned char *out,
                          ULONG out_len)
{
    unsigned char object[OBJECT_MAX];
    BCRYPT_HASH_HANDLE hash = NULL;
    NTSTATUS st = BCryptCreateHash(providers[alg], &hash, object, object_size[alg], NULL, 0, 0);
    if (BCRYPT_SUCCESS(st) && seed != 0) {
        unsigned char seed_le[8];
        for (int i = 0; i < 8; ++i) seed_le[i] = (unsigned char)(seed >> (8 * i));
        st = BCryptHashData(hash, seed_le, sizeof seed_le, 0);
    }
    /* BCryptHashData takes at most 4 GiB - 1 per call. */
    const unsigned char *p = (const unsigned char *)data;
    while (BCRYPT_SUCCESS(st) && len > 0) {
        ULONG part = len > 0x40000000u ? 0x40000000u : (ULONG)len;
        st = BCryptHashData(hash, (PUCHAR)p, part, 0);
        p += part;
        len -= part;
    }
    if (BCRYPT_SUCCESS(st)) st = BCryptFinishHash(hash, out, out_len, 0);
    if (hash) BCryptDestroyHash(hash);
    if (!BCRYPT_SUCCESS(st)) digest_failed(alg, st);
}

static uint64_t md5_hash64(const void *data, size_t len, uint64_t seed)
{
    unsigned char d[16];
    seeded_digest(ALG_MD5, data, len, seed, d, sizeof d);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | d[i];
    return v;
}

static void md5_digest(const void *data, size_t len, unsigned char *out)
{
    seeded_digest(ALG_MD5, data, len, 0, out, 16);
}

static uint64_t sha1_hash64(const void *data, size_t len, uint64_t seed)
{
    unsigned char d[20];
    seeded_digest(ALG_SHA1, data, len, seed, d, sizeof d);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | d[i];
    return v;
}

static void sha1_digest(const void *data, size_t len, unsigned char *out)
{
    seeded_digest(ALG_SHA1, data, len, 0, out, 20);
}

static const chr_hasher descriptors[ALG_COUNT] = {
    {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "md5",
     "MD5 (Windows CNG); ring = digest bytes 0..7 little-endian; seed != 0 prefixes its 8 LE "
     "bytes; digest = 16 bytes",
     md5_hash64, 16, md5_digest, 0},
    {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "sha1",
     "SHA-1 (Windows CNG); ring = digest bytes 0..7 big-endian; seed != 0 prefixes its 8 LE "
     "bytes; digest = 20 bytes",
     sha1_hash64, 20, sha1_digest, 0},
};

static const chr_hasher *available[ALG_COUNT];
static uint32_t available_count;
static INIT_ONCE open_once = INIT_ONCE_STATIC_INIT;

static BOOL CALLBACK open_providers(PINIT_ONCE once, PVOID param, PVOID *context)
{
    (void)once, (void)param, (void)context;
    static const LPCWSTR ids[ALG_COUNT] = {BCRYPT_MD5_ALGORITHM, BCRYPT_SHA1_ALGORITHM};
    for (int a = 0; a < ALG_COUNT; ++a) {
        DWORD size = 0;
        ULONG got = 0;
        if (!BCRYPT_SUCCESS(BCryptOpenAlgorithmProvider(&providers[a], ids[a], NULL, 0))) continue;
        if (!BCRYPT_SUCCESS(BCryptGetProperty(providers[a], BCRYPT_OBJECT_LENGTH, (PUCHAR)&size,
                                              sizeof size, &got, 0)) ||
            size > OBJECT_MAX) {
            BCryptCloseAlgorithmProvider(providers[a], 0);
            continue;
        }
        object_size[a] = size;
        available[available_count++] = &descriptors[a];
    }
    return TRUE;
}

/* Not CHR_PLUGIN_DEFINE: the table holds only the algorithms CNG opens. */
CHR_PLUGIN_EXPORT const chr_hasher *const *chr_plugin_hashers(uint32_t *count);
CHR_PLUGIN_EXPORT const chr_hasher *const *chr_plugin_hashers(uint32_t *count)
{
    InitOnceExecuteOnce(&open_once, open_providers, NULL, NULL);
    *count = available_count;
    return available_count ? available : NULL;
}
