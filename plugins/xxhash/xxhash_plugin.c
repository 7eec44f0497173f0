/*
 * xxHash plugin (libxxhash): hasher "xxh64". The ring default, "xxh3", is
 * compiled into libchring (src/plugin/builtin_xxh3.c), so a default ring
 * needs no plugin; exporting it here too would clash with that name and
 * make the loader refuse this whole plugin.
 *
 * Ring value: the seeded 64-bit hash itself, XXH64(data, len, seed), so
 * chring tokens equal what any xxHash implementation computes for
 * `id "#" i` with the same seed.
 * Digest: xxHash's canonical form of the unseeded hash (8 bytes,
 * big-endian), as `xxhsum` prints it.
 */
#include <chring_plugin.h>

#define XXH_INLINE_ALL /* the hash inlined into the plugin: no call through libxxhash's PLT */
#include <xxhash.h>

static uint64_t xxh64_hash64(const void *data, size_t len, uint64_t seed)
{
    return XXH64(data, len, seed);
}

static void xxh64_digest(const void *data, size_t len, unsigned char *out)
{
    XXH64_canonicalFromHash((XXH64_canonical_t *)out, XXH64(data, len, 0));
}

static const chr_hasher xxh64 = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "xxh64",
    "XXH64 (xxHash), seeded; ring value = the hash; digest = canonical big-endian",
    xxh64_hash64, 8, xxh64_digest, 0,
};

static const chr_hasher *const hashers[] = {&xxh64};

CHR_PLUGIN_DEFINE(hashers)
