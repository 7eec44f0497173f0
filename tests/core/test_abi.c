/*
 * The ABI as the header promises it: struct layouts pinned and identical
 * in C99 and C++17, CHR_OPTIONS_INIT equal to chr_options_init() byte for
 * byte (and every other versioned struct's X_INIT to its chr_x_init()),
 * version numbers consistent, and C linkage where the headers need
 * it (including CHR_PLUGIN_DEFINE in a C++ plugin). The exported symbol
 * set is checked by check_exports.py, a separate test of this suite.
 */
#include <stdio.h>
#include <string.h>

#include "test_util.h"

#include "abi_layout.h"

static const char *const layout_names[] = {CHR_ABI_LAYOUT(CHR_ABI_NAME_SIZE, CHR_ABI_NAME_FIELD)};
static const size_t pinned[] = {CHR_ABI_LAYOUT(CHR_ABI_PINNED_SIZE, CHR_ABI_PINNED_FIELD)};
#define LAYOUT_COUNT (sizeof pinned / sizeof pinned[0])

static void check_layout(const char *language, const size_t *measured, size_t count) {
    assert_int_equal(count, LAYOUT_COUNT);
    for (size_t i = 0; i < count; ++i) {
        if (measured[i] != pinned[i])
            print_error("%s: %s is %zu, pinned %zu\n", language, layout_names[i], measured[i],
                        pinned[i]);
        assert_int_equal(measured[i], pinned[i]);
    }
}

static void test_struct_layout_pinned(void **state) {
    (void)state;
#if UINTPTR_MAX != UINT64_MAX || SIZE_MAX != UINT64_MAX
    skip(); /* the pins are the LP64 values */
#endif
    size_t count = 0;
    const size_t *c99 = abi_layout_c99(&count);
    check_layout("C99", c99, count);
    const size_t *cxx = abi_layout_cxx(&count);
    check_layout("C++17", cxx, count);
}

/* Every versioned struct's X_INIT equals chr_x_init(&x, CHR_X_VERSION) byte
 * for byte (both start from the same bytes, so padding cannot differ by
 * chance), and chr_x_init() refuses version 0 and current + 1.
 * check_exports.py checks that every versioned struct has the pair. */
#define CHECK_INIT_PAIR(type, init_fn, INIT, VERSION)                          \
    do {                                                                       \
        type from_function, from_macro;                                        \
        memset(&from_function, 0, sizeof from_function);                       \
        memset(&from_macro, 0, sizeof from_macro);                             \
        const type macro_value = INIT;                                         \
        from_macro = macro_value;                                              \
        assert_chr_ok(init_fn(&from_function, VERSION));                       \
        assert_memory_equal(&from_function, &from_macro, sizeof(type));        \
        assert_int_equal(from_macro.version, VERSION);                         \
        assert_chr_error(init_fn(&from_function, 0), CHR_EVERSION, #init_fn);  \
        assert_chr_error(init_fn(&from_function, (VERSION) + 1), CHR_EVERSION, \
                         #init_fn);                                            \
        assert_chr_error(init_fn(NULL, VERSION), CHR_EINVAL, #init_fn);        \
    } while (0)

static void check_every_init_pair(void) {
    CHECK_INIT_PAIR(chr_options, chr_options_init, CHR_OPTIONS_INIT, CHR_OPTIONS_VERSION);
    CHECK_INIT_PAIR(chr_placement_info, chr_placement_info_init, CHR_PLACEMENT_INFO_INIT,
                    CHR_PLACEMENT_INFO_VERSION);
    CHECK_INIT_PAIR(chr_bound_options, chr_bound_options_init, CHR_BOUND_OPTIONS_INIT,
                    CHR_BOUND_OPTIONS_VERSION);
    CHECK_INIT_PAIR(chr_ringfile_info, chr_ringfile_info_init, CHR_RINGFILE_INFO_INIT,
                    CHR_RINGFILE_INFO_VERSION);
    CHECK_INIT_PAIR(chr_diff_info, chr_diff_info_init, CHR_DIFF_INFO_INIT,
                    CHR_DIFF_INFO_VERSION);
    CHECK_INIT_PAIR(chr_plan_info, chr_plan_info_init, CHR_PLAN_INFO_INIT,
                    CHR_PLAN_INFO_VERSION);
    CHECK_INIT_PAIR(chr_follow_state, chr_follow_state_init, CHR_FOLLOW_STATE_INIT,
                    CHR_FOLLOW_STATE_VERSION);
    CHECK_INIT_PAIR(chr_availability_info, chr_availability_info_init, CHR_AVAILABILITY_INFO_INIT,
                    CHR_AVAILABILITY_INFO_VERSION);
    CHECK_INIT_PAIR(chr_error_info, chr_error_info_init, CHR_ERROR_INFO_INIT,
                    CHR_ERROR_INFO_VERSION);
    CHECK_INIT_PAIR(chr_ringfile_member, chr_ringfile_member_init, CHR_RINGFILE_MEMBER_INIT,
                    CHR_RINGFILE_MEMBER_VERSION);
    /* The placement description starts empty: describe() fills it. */
    chr_placement_info info = CHR_PLACEMENT_INFO_INIT;
    assert_null(info.name);
    assert_chr_ok(chr_placement_describe(CHR_PLACEMENT_NATIVE, &info));
    assert_string_equal(info.name, "native");
}

static void test_options_init_macro_equals_function(void **state) {
    (void)state;
    chr_options from_function, from_c_macro, from_cxx_macro, here = CHR_OPTIONS_INIT;
    memset(&from_function, 0xA5, sizeof from_function);
    memset(&from_c_macro, 0x5A, sizeof from_c_macro);
    memset(&from_cxx_macro, 0x3C, sizeof from_cxx_macro);
    assert_chr_ok(chr_options_init(&from_function, CHR_OPTIONS_VERSION));
    abi_options_init_c99(&from_c_macro);
    abi_options_init_cxx(&from_cxx_macro);
    assert_memory_equal(&from_function, &from_c_macro, sizeof(chr_options));
    assert_memory_equal(&from_function, &from_cxx_macro, sizeof(chr_options));
    assert_memory_equal(&from_function, &here, sizeof(chr_options));
    /* And they are the documented defaults. */
    assert_int_equal(here.version, CHR_OPTIONS_VERSION);
    assert_int_equal(here.tokens_per_weight, CHR_DEFAULT_TOKENS_PER_WEIGHT);
    assert_int_equal(here.seed, 0);
    assert_null(here.hasher);
    assert_int_equal(here.placement, CHR_PLACEMENT_NATIVE);
    assert_int_equal(here.reserved0, 0);
    assert_null(here.plugin_dir);
    /* The same pairing for every other versioned struct. */
    check_every_init_pair();
}

static void test_versions_agree(void **state) {
    (void)state;
    assert_int_equal(chr_version(), CHR_VERSION_NUMBER);
    assert_int_equal(abi_version_from_cxx(), CHR_VERSION_NUMBER);
    assert_int_equal(CHR_VERSION_NUMBER,
                     CHR_VERSION_MAJOR * 10000 + CHR_VERSION_MINOR * 100 + CHR_VERSION_PATCH);
    /* The header's version is the project's (meson.build). */
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", CHR_VERSION_MAJOR, CHR_VERSION_MINOR,
             CHR_VERSION_PATCH);
    assert_string_equal(version, CHR_PROJECT_VERSION);
}

/* The C99 unit defines a plugin entry point with CHR_PLUGIN_DEFINE. */
const chr_hasher *const *chr_plugin_hashers(uint32_t *count);

static void test_plugin_entry_point_c(void **state) {
    (void)state;
    uint32_t count = 0;
    const chr_hasher *const *table = chr_plugin_hashers(&count);
    assert_int_equal(count, 1);
    assert_string_equal(table[0]->name, "abi-c99");
    assert_int_equal(table[0]->struct_size, sizeof(chr_hasher));
}

/* A plugin written in C++ with CHR_PLUGIN_DEFINE loads: its entry point
 * has C linkage, not a mangled C++ name. */
static void test_plugin_entry_point_cxx(void **state) {
    (void)state;
    size_t loaded = 0;
    assert_chr_ok(chr_plugin_load(ABI_CXX_PLUGIN_PATH, &loaded));
    assert_int_equal(loaded, 1);
    uint64_t value = 0;
    assert_chr_ok(chr_hasher_hash("abi-cxx-plugin", "abc", 3, 5, &value));
    assert_int_equal(value, 3 * 31 + 5);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_struct_layout_pinned),
        cmocka_unit_test(test_options_init_macro_equals_function),
        cmocka_unit_test(test_versions_agree),
        cmocka_unit_test(test_plugin_entry_point_c),
        cmocka_unit_test(test_plugin_entry_point_cxx),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
