/*
 * Test fixture for the Go, Rust and Lua bindings: a hash plugin built into
 * its own directory, which chring's discovery does not search, so that
 * each binding's tests can prove that its plugin_dir option reaches the
 * library. Hasher "bindtest_fnv1a": 64-bit FNV-1a whose offset basis is
 * XORed with the seed (the tests recompute it in their own language);
 * digest: the seed-0 hash as 8 big-endian bytes.
 */
#include <chring_plugin.h>

static uint64_t fnv1a64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    while (len--) {
        h ^= *p++;
        h *= 0x100000001b3ull;
    }
    return h;
}

static void fnv1a64_digest(const void *data, size_t len, unsigned char *out)
{
    uint64_t h = fnv1a64(data, len, 0);
    for (int i = 7; i >= 0; --i, h >>= 8) out[i] = (unsigned char)h;
}

static const chr_hasher bindtest_hasher = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "bindtest_fnv1a",
    "FNV-1a 64, seed XORed into the basis (binding tests only)",
    fnv1a64, 8, fnv1a64_digest, 0,
};
static const chr_hasher *const bindtest_table[] = {&bindtest_hasher};

CHR_PLUGIN_DEFINE(bindtest_table)
