/*
 * chring.h as a strict C99 compiler sees it: this file is built with
 * -std=c99 -pedantic -Werror and extra warnings (tests/core/meson.build).
 * chring.h comes first, alone, so it must be self-contained.
 */
#include <chring.h>

#include "abi_layout.h"

/* CHR_DEPRECATED is valid where the header tells to put it (unused: no warning). */
CHR_DEPRECATED("a test of the macro")
CHR_API int abi_deprecated_c99(void) CHR_NOEXCEPT;

const size_t *abi_layout_c99(size_t *count) {
    static const size_t measured[] = {CHR_ABI_LAYOUT(CHR_ABI_MEASURE_SIZE, CHR_ABI_MEASURE_FIELD)};
    *count = sizeof measured / sizeof measured[0];
    return measured;
}

void abi_options_init_c99(chr_options *out) {
    const chr_options defaults = CHR_OPTIONS_INIT;
    *out = defaults;
}

/* The plugin macro too, as a C plugin would use it. */
static uint64_t length_hash(const void *data, size_t len, uint64_t seed) {
    (void)data;
    return len ^ seed;
}

static const chr_hasher c99_hasher = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "abi-c99", NULL, length_hash, 0, NULL, 0};
static const chr_hasher *const c99_table[] = {&c99_hasher};

CHR_PLUGIN_DEFINE(c99_table)
