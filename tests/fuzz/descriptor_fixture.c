/* A plugin whose descriptor table is whatever the plugin_descriptors
 * harness wrote into fuzz_fixture_area before calling chr_plugin_load. */
#include "descriptor_fixture.h"

#include <string.h>

CHR_PLUGIN_EXPORT struct fz_area fuzz_fixture_area;

static uint64_t mix(const void *data, size_t len, uint64_t seed, uint64_t h)
{
    const unsigned char *p = data;
    h ^= seed;
    for (size_t i = 0; i < len; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

CHR_PLUGIN_EXPORT uint64_t fuzz_fixture_hash_a(const void *data, size_t len, uint64_t seed)
{
    return mix(data, len, seed, 0xcbf29ce484222325ull);
}

CHR_PLUGIN_EXPORT uint64_t fuzz_fixture_hash_b(const void *data, size_t len, uint64_t seed)
{
    return mix(data, len, seed, 0x84222325cbf29ce4ull);
}

CHR_PLUGIN_EXPORT void fuzz_fixture_digest4(const void *data, size_t len, unsigned char *out)
{
    uint64_t h = mix(data, len, 0, 1);
    memcpy(out, &h, 4);
}

CHR_PLUGIN_EXPORT void fuzz_fixture_digest16(const void *data, size_t len, unsigned char *out)
{
    uint64_t a = mix(data, len, 0, 2), b = mix(data, len, 0, 3);
    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
}

CHR_PLUGIN_EXPORT const chr_hasher *const *chr_plugin_hashers(uint32_t *count)
{
    *count = fuzz_fixture_area.count;
    if (fuzz_fixture_area.returned) return (const chr_hasher *const *)fuzz_fixture_area.returned;
    return fuzz_fixture_area.null_table ? NULL : fuzz_fixture_area.table;
}
