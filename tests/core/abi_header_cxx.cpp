// chring.h as a strict C++17 compiler sees it: this file is built with
// -std=c++17 -pedantic -Werror and extra warnings (tests/core/meson.build).
#include <chring.h>

#include <type_traits>

#include "abi_layout.h"

// CHR_DEPRECATED is valid where the header tells to put it (unused: no warning).
CHR_DEPRECATED("a test of the macro")
CHR_API int abi_deprecated_cxx(void) CHR_NOEXCEPT;

// Public structs must stay plain data for every FFI.
#define CHR_ABI_CHECK_POD(type, bytes)                                       \
    static_assert(std::is_standard_layout<type>::value, #type " layout"); \
    static_assert(std::is_trivially_copyable<type>::value, #type " copy");
#define CHR_ABI_IGNORE_FIELD(type, member, offset)
CHR_ABI_LAYOUT(CHR_ABI_CHECK_POD, CHR_ABI_IGNORE_FIELD)

extern "C" const size_t *abi_layout_cxx(size_t *count) {
    static const size_t measured[] = {CHR_ABI_LAYOUT(CHR_ABI_MEASURE_SIZE, CHR_ABI_MEASURE_FIELD)};
    *count = sizeof measured / sizeof measured[0];
    return measured;
}

extern "C" void abi_options_init_cxx(chr_options *out) {
    const chr_options defaults = CHR_OPTIONS_INIT;
    *out = defaults;
}

extern "C" uint32_t abi_version_from_cxx(void) { return chr_version(); }
