/*
 * OpenSSL plugin (libcrypto 3, EVP): hashers "md5" and "sha1".
 *
 * Cost model (tests/bench/hashers/RESULTS.md): with OpenSSL 3 an implicit
 * fetch per call (EVP_Digest, MD5()) costs 3-4x a digest through a
 * pre-fetched EVP_MD and a reused EVP_MD_CTX. So each algorithm is fetched
 * once, when the plugin is loaded, and each thread keeps one EVP_MD_CTX per
 * algorithm, created on its first hash and freed by a pthread key
 * destructor when the thread exits. No allocation on the hot path after a
 * thread's first call.
 *
 * md5
 *   Digest (16 bytes): MD5(data) exactly (RFC 1321), as ketama reads it.
 *   Ring value: digest bytes 0..7 read little-endian, i.e.
 *     d[0] | d[1] << 8 | ... | d[7] << 56 — MD5's own word order; in
 *     ketama's terms (four little-endian 32-bit words w0..w3) it is
 *     (w1 << 32) | w0.
 * sha1
 *   Digest (20 bytes): SHA-1(data) exactly (FIPS 180-4, RFC 3174).
 *   Ring value: digest bytes 0..7 read big-endian, i.e. (H0 << 32) | H1 —
 *     SHA-1's own word order.
 * Seed (both): neither algorithm has one.
 *   seed == 0: the digest of the data, so any MD5/SHA-1 tool reproduces it;
 *   seed != 0: the digest of (seed as 8 little-endian bytes || data).
 *
 * Failure: an algorithm the OpenSSL configuration does not provide (MD5
 * under a FIPS-only configuration) is left out of the table; if neither is
 * available the plugin exports none and the loader refuses it. A digest
 * call cannot fail by contract: if OpenSSL fails one anyway (out of memory
 * creating a context), the process aborts with a message rather than
 * return a wrong ring position.
 */
#include <chring_plugin.h>

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { ALG_MD5, ALG_SHA1, ALG_COUNT };

static const char *const openssl_names[ALG_COUNT] = {"MD5", "SHA1"};
static EVP_MD *fetched[ALG_COUNT]; /* set once by the entry point, never freed */

/* ---- per-thread contexts ------------------------------------------------ */

typedef struct thread_contexts {
    EVP_MD_CTX *ctx[ALG_COUNT];
} thread_contexts;

static pthread_key_t contexts_key;
static int contexts_key_ok;
static pthread_once_t contexts_key_once = PTHREAD_ONCE_INIT;

static void free_thread_contexts(void *p)
{
    thread_contexts *t = (thread_contexts *)p;
    for (int a = 0; a < ALG_COUNT; ++a) EVP_MD_CTX_free(t->ctx[a]);
    free(t);
}

/* Created on the first hash, not at load: a load the library refuses
 * unloads the file, and a key destructor must never point into it. */
static void create_contexts_key(void)
{
    contexts_key_ok = pthread_key_create(&contexts_key, free_thread_contexts) == 0;
}

/* This thread's context for `alg`, or NULL if one cannot be allocated. */
static EVP_MD_CTX *thread_context(int alg)
{
    pthread_once(&contexts_key_once, create_contexts_key);
    if (!contexts_key_ok) return NULL;
    thread_contexts *t = (thread_contexts *)pthread_getspecific(contexts_key);
    if (!t) {
        t = (thread_contexts *)calloc(1, sizeof *t);
        if (!t) return NULL;
        if (pthread_setspecific(contexts_key, t) != 0) {
            free(t);
            return NULL;
        }
    }
    if (!t->ctx[alg]) t->ctx[alg] = EVP_MD_CTX_new();
    return t->ctx[alg];
}

/* ---- digests ------------------------------------------------------------ */

static void digest_failed(int alg)
{
    fprintf(stderr, "chring openssl plugin: %s digest failed (out of memory?); aborting rather "
                    "than returning a wrong hash\n", openssl_names[alg]);
    abort();
}

/* out receives the algorithm's digest of (seed_le8 || data), or of data
 * alone when seed is 0. */
static void seeded_digest(int alg, const void *data, size_t len, uint64_t seed,
                          unsigned char *out)
{
    EVP_MD_CTX *ctx = thread_context(alg);
    EVP_MD_CTX *temporary = NULL;
    if (!ctx) ctx = temporary = EVP_MD_CTX_new(); /* degraded, still correct */
    int ok = ctx != NULL && EVP_DigestInit_ex2(ctx, fetched[alg], NULL);
    if (ok && seed != 0) {
        unsigned char seed_le[8];
        for (int i = 0; i < 8; ++i) seed_le[i] = (unsigned char)(seed >> (8 * i));
        ok = EVP_DigestUpdate(ctx, seed_le, sizeof seed_le);
    }
    ok = ok && EVP_DigestUpdate(ctx, data, len) && EVP_DigestFinal_ex(ctx, out, NULL);
    EVP_MD_CTX_free(temporary);
    if (!ok) digest_failed(alg);
}

static uint64_t md5_hash64(const void *data, size_t len, uint64_t seed)
{
    unsigned char d[16];
    seeded_digest(ALG_MD5, data, len, seed, d);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | d[i];
    return v;
}

static void md5_digest(const void *data, size_t len, unsigned char *out)
{
    seeded_digest(ALG_MD5, data, len, 0, out);
}

static uint64_t sha1_hash64(const void *data, size_t len, uint64_t seed)
{
    unsigned char d[20];
    seeded_digest(ALG_SHA1, data, len, seed, d);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | d[i];
    return v;
}

static void sha1_digest(const void *data, size_t len, unsigned char *out)
{
    seeded_digest(ALG_SHA1, data, len, 0, out);
}

/* ---- descriptors and entry point --------------------------------------- */

static const chr_hasher descriptors[ALG_COUNT] = {
    {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "md5",
     "MD5 (OpenSSL EVP); ring = digest bytes 0..7 little-endian; seed != 0 prefixes its 8 LE "
     "bytes; digest = 16 bytes",
     md5_hash64, 16, md5_digest, 0},
    {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "sha1",
     "SHA-1 (OpenSSL EVP); ring = digest bytes 0..7 big-endian; seed != 0 prefixes its 8 LE "
     "bytes; digest = 20 bytes",
     sha1_hash64, 20, sha1_digest, 0},
};

static const chr_hasher *available[ALG_COUNT];
static uint32_t available_count;
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;

static void fetch_algorithms(void)
{
    for (int a = 0; a < ALG_COUNT; ++a) {
        fetched[a] = EVP_MD_fetch(NULL, openssl_names[a], NULL);
        if (fetched[a]) available[available_count++] = &descriptors[a];
    }
}

/* Not CHR_PLUGIN_DEFINE: the table holds only the algorithms OpenSSL
 * provides here, which is known once they are fetched. */
CHR_PLUGIN_EXPORT const chr_hasher *const *chr_plugin_hashers(uint32_t *count);
CHR_PLUGIN_EXPORT const chr_hasher *const *chr_plugin_hashers(uint32_t *count)
{
    pthread_once(&fetch_once, fetch_algorithms);
    *count = available_count;
    return available_count ? available : NULL;
}
