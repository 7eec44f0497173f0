/*
 * Bad plugins get a clear error, never a crash: each real fixture
 * (tests/plugins/fixtures) is refused by chr_plugin_load with its own
 * status and a message naming the file and the fault, and a refused load
 * leaves the hasher registry (chr_hasher_list) exactly as it was. Names
 * already taken are refused with CHR_EEXIST while the first owner keeps
 * answering. And a plugin's hasher outlives every ring that used it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#ifndef FIXTURE_DIR
#error "FIXTURE_DIR must name the build directory of tests/plugins/fixtures"
#endif

/* The fixtures' file names and what the file checks call a foreign file:
 * the same suite runs in the Windows build (tests/windows), where plugins
 * are DLLs and the checks are PE checks. not-a-plugin.so keeps its name
 * there (a text file: the name does not matter). */
#if defined(_WIN32)
#define PLUGIN_EXT ".dll"
#define PROGRAM_EXT ".exe"
#define NOT_A_PLUGIN_REASON "no MZ signature"
#define NOT_LOADABLE_REASON "not a DLL image"
#define MAPPED_EXAMPLE "chring-example.dll"
#else
#define PLUGIN_EXT ".so"
#define PROGRAM_EXT ""
#define NOT_A_PLUGIN_REASON "no ELF header"
#define NOT_LOADABLE_REASON "not a loadable shared object"
#define MAPPED_EXAMPLE "/chring-example.so"
#endif

static const char *fixture(const char *file) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", FIXTURE_DIR, file);
#if defined(_WIN32) /* Z:/dir/file as messages spell it, Z:\dir\file */
    for (char *c = path; *c; ++c)
        if (*c == '/') *c = '\\';
#endif
    return path;
}

/* ---- the registry as chr_hasher_list shows it ----------------------------- */

typedef struct registry_view {
    size_t count;
    char *text; /* "name|origin|digest_size\n" per hasher, in listed order */
} registry_view;

static registry_view registry_now(void) {
    registry_view view = {0, NULL};
    assert_chr_status(chr_hasher_list(NULL, NULL, 0, &view.count), CHR_ERANGE);
    chr_hasher_info *infos = calloc(view.count, sizeof *infos);
    assert_non_null(infos);
    assert_chr_ok(chr_hasher_list(NULL, infos, view.count, &view.count));
    size_t size = 1;
    for (size_t i = 0; i < view.count; ++i)
        size += strlen(infos[i].name) + strlen(infos[i].origin) + 16;
    view.text = calloc(size, 1);
    assert_non_null(view.text);
    for (size_t i = 0; i < view.count; ++i) {
        size_t used = strlen(view.text);
        snprintf(view.text + used, size - used, "%s|%s|%u\n", infos[i].name, infos[i].origin,
                 infos[i].digest_size);
    }
    free(infos);
    return view;
}

static void assert_registry_unchanged(const registry_view *before) {
    registry_view after = registry_now();
    assert_int_equal(after.count, before->count);
    assert_string_equal(after.text, before->text);
    free(after.text);
}

static int lists_hasher(const char *name) {
    registry_view view = registry_now();
    char needle[128];
    snprintf(needle, sizeof needle, "%s|", name);
    int found = strncmp(view.text, needle, strlen(needle)) == 0;
    for (const char *line = strchr(view.text, '\n'); !found && line; line = strchr(line + 1, '\n'))
        found = strncmp(line + 1, needle, strlen(needle)) == 0;
    free(view.text);
    return found;
}

/* ---- one refused load ------------------------------------------------------ */

/* Loading `path` fails with `expected`; the message names the function, the
 * file and `reason`; nothing is registered. */
static void expect_refused(const char *path, chr_status expected, const char *reason) {
    registry_view before = registry_now();
    size_t loaded = 99;
    assert_chr_error(chr_plugin_load(path, &loaded), expected, "chr_plugin_load");
    assert_int_equal(loaded, 0);
    const char *message = chr_last_error();
    if (!strstr(message, path) || !strstr(message, reason))
        fail_msg("chr_plugin_load(%s): message \"%s\" should name the file and \"%s\"", path,
                 message, reason);
    assert_registry_unchanged(&before);
    free(before.text);
}

static uint8_t tag_of(const char *hasher) {
    uint64_t value = 0;
    assert_chr_ok(chr_hasher_hash(hasher, "key", 3, 0, &value));
    return (uint8_t)(value >> 56);
}

/* ---- file-level faults ------------------------------------------------------- */

static void test_missing_file(void **state) {
    (void)state;
    expect_refused(fixture("no-such-plugin" PLUGIN_EXT), CHR_EPLUGIN_NOFILE, "does not exist");
}

static void test_directory_is_not_a_plugin(void **state) {
    (void)state;
    expect_refused(FIXTURE_DIR, CHR_EPLUGIN_NOFILE, "not a regular file");
}

static void test_text_file(void **state) {
    (void)state;
    expect_refused(fixture("not-a-plugin.so"), CHR_EPLUGIN_NOTSO, NOT_A_PLUGIN_REASON);
}

static void test_executable_is_not_loadable(void **state) {
    (void)state;
    expect_refused(fixture("fixture-program" PROGRAM_EXT), CHR_EPLUGIN_NOTSO, NOT_LOADABLE_REASON);
}

#if !defined(_WIN32)
/* The dynamic loader's own reason, not a generic one. */
static void test_undefined_symbol(void **state) {
    (void)state;
    expect_refused(fixture("broken-undefined" PLUGIN_EXT), CHR_EPLUGIN_NOTSO,
                   "undefined symbol: chring_fixture_never_defined");
}
#endif

static void test_no_entry_point(void **state) {
    (void)state;
    expect_refused(fixture("broken-no-entry" PLUGIN_EXT), CHR_EPLUGIN_SYMBOL, CHR_PLUGIN_ENTRY_SYMBOL);
}

static void test_empty_table(void **state) {
    (void)state;
    expect_refused(fixture("broken-empty" PLUGIN_EXT), CHR_EPLUGIN_DESC, "exports no hashers");
}

/* ---- descriptor faults --------------------------------------------------------- */

static void test_abi_too_new(void **state) {
    (void)state;
    expect_refused(fixture("broken-abi-new" PLUGIN_EXT), CHR_EPLUGIN_ABI, "ABI version 2 is not supported");
}

static void test_abi_zero(void **state) {
    (void)state;
    expect_refused(fixture("broken-abi-zero" PLUGIN_EXT), CHR_EPLUGIN_ABI, "ABI version 0 is not supported");
}

static void test_descriptor_too_small(void **state) {
    (void)state;
    expect_refused(fixture("broken-desc-small" PLUGIN_EXT), CHR_EPLUGIN_DESC, "descriptor size");
}

static void test_null_name(void **state) {
    (void)state;
    expect_refused(fixture("broken-null-name" PLUGIN_EXT), CHR_EPLUGIN_DESC, "NULL name");
}

static void test_null_hash_function(void **state) {
    (void)state;
    expect_refused(fixture("broken-null-hash" PLUGIN_EXT), CHR_EPLUGIN_DESC, "NULL hash64");
}

static void test_bad_name_characters(void **state) {
    (void)state;
    expect_refused(fixture("broken-bad-name" PLUGIN_EXT), CHR_EPLUGIN_DESC, "outside [a-z0-9_.-]");
}

static void test_digest_size_without_function(void **state) {
    (void)state;
    expect_refused(fixture("broken-digest-mismatch" PLUGIN_EXT), CHR_EPLUGIN_DESC, "digest_size and digest");
}

static void test_reserved_flags(void **state) {
    (void)state;
    expect_refused(fixture("broken-flags" PLUGIN_EXT), CHR_EPLUGIN_DESC, "reserved flags");
}

/* Pointers a valid shared object gets wrong: each would be read (or called)
 * by a loader that trusted it; each is checked against the plugin's own
 * segments instead. */
static void test_wild_name_pointer(void **state) {
    (void)state;
    expect_refused(fixture("broken-wild-name" PLUGIN_EXT), CHR_EPLUGIN_DESC,
                   "name pointer 0x1000 is outside the plugin's readable segments");
}

static void test_wild_description_pointer(void **state) {
    (void)state;
    expect_refused(fixture("broken-wild-desc" PLUGIN_EXT), CHR_EPLUGIN_DESC,
                   "description pointer 0x1000 is outside the plugin's readable segments");
}

static void test_wild_hash_function(void **state) {
    (void)state;
    expect_refused(fixture("broken-wild-hash" PLUGIN_EXT), CHR_EPLUGIN_DESC,
                   "hash64 function 0x1000 is outside the plugin's executable segments");
}

#if !defined(_WIN32)
static void test_name_running_off_its_segment(void **state) {
    (void)state;
    expect_refused(fixture("broken-name-at-end" PLUGIN_EXT), CHR_EPLUGIN_DESC,
                   "runs off the end of its segment");
}
#endif

/* The table pointer the entry point returns is checked before a single
 * entry is read: against the plugin's readable segments, for its whole
 * length, and for alignment. Each fixture's descriptor is valid, so only
 * the table itself can be what is refused, and its hasher must not appear. */
static void expect_table_refused(const char *file, const char *hasher) {
    expect_refused(fixture(file), CHR_EPLUGIN_DESC, "is not inside the plugin's readable segments");
    assert_false(lists_hasher(hasher));
}

static void test_wild_table_pointer(void **state) {
    (void)state;
    expect_table_refused("broken-wild-table" PLUGIN_EXT, "fixture_wild_table");
    assert_non_null(strstr(chr_last_error(), "at 0x1000"));
}

static void test_table_outside_the_plugin(void **state) {
    (void)state;
    expect_table_refused("broken-foreign-table" PLUGIN_EXT, "fixture_foreign_table");
}

#if !defined(_WIN32)
static void test_table_running_off_its_segment(void **state) {
    (void)state;
    expect_table_refused("broken-table-at-end" PLUGIN_EXT, "fixture_table_at_end");
    assert_non_null(strstr(chr_last_error(), "table of 2 hashers"));
}
#endif

static void test_misaligned_table(void **state) {
    (void)state;
    expect_table_refused("broken-misaligned-table" PLUGIN_EXT, "fixture_misaligned_table");
}

/* ---- duplicate names ------------------------------------------------------------ */

/* Two descriptors with one name in one plugin: all or nothing, so neither. */
static void test_duplicate_within_one_plugin(void **state) {
    (void)state;
    expect_refused(fixture("broken-dup-within" PLUGIN_EXT), CHR_EEXIST, "two hashers named 'fixture_twin'");
    uint64_t value;
    assert_chr_status(chr_hasher_hash("fixture_twin", "k", 1, 0, &value), CHR_ENOHASHER);
}

/* A second plugin exporting a taken name is refused whole; the first keeps
 * answering for the name, and the second's other hasher is not registered. */
static void test_duplicate_across_plugins(void **state) {
    (void)state;
    size_t loaded = 0;
    assert_chr_ok(chr_plugin_load(fixture("fixture-first" PLUGIN_EXT), &loaded));
    assert_int_equal(loaded, 1);
    assert_int_equal(tag_of("fixture_first"), 0xA1);

    expect_refused(fixture("broken-dup-across" PLUGIN_EXT), CHR_EEXIST, "'fixture_first' is already registered");
    assert_int_equal(tag_of("fixture_first"), 0xA1);
    assert_false(lists_hasher("fixture_second"));

    /* the same file again: its name is now its own, still refused */
    expect_refused(fixture("fixture-first" PLUGIN_EXT), CHR_EEXIST, "'fixture_first' is already registered");
    assert_int_equal(tag_of("fixture_first"), 0xA1);
}

/* A plugin claiming a shipped hasher's name cannot replace it. */
static void test_duplicate_of_a_shipped_name(void **state) {
    (void)state;
    assert_true(lists_hasher("md5")); /* discovered from the build tree */
    expect_refused(fixture("broken-dup-shipped" PLUGIN_EXT), CHR_EEXIST, "'md5' is already registered");
    unsigned char digest[16];
    size_t size = 0;
    assert_chr_ok(chr_hasher_digest("md5", "abc", 3, digest, sizeof digest, &size));
    static const unsigned char md5_abc[16] = {0x90, 0x01, 0x50, 0x98, 0x3c, 0xd2, 0x4f, 0xb0,
                                              0xd6, 0x96, 0x3f, 0x7d, 0x28, 0xe1, 0x7f, 0x72};
    assert_memory_equal(digest, md5_abc, sizeof md5_abc);
    assert_false(lists_hasher("fixture_beside_md5"));
}

/* ---- lifetime ---------------------------------------------------------------------- */

#if defined(_WIN32)
#include <windows.h>
static int plugin_is_mapped(const char *file_name) {
    return GetModuleHandleA(file_name) != NULL;
}
#else
static int plugin_is_mapped(const char *file_name) {
    FILE *maps = fopen("/proc/self/maps", "r");
    assert_non_null(maps);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) found = strstr(line, file_name) != NULL;
    fclose(maps);
    return found;
}
#endif

/* The library keeps a plugin loaded for the life of the process: after the
 * last ring using its hasher is freed, lookups through a snapshot taken
 * before still hash with it, it is still listed, still callable, still
 * mapped, and a new ring can use it. */
static void test_hasher_outlives_every_ring(void **state) {
    (void)state;
    enum { KEYS = 1000 };
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = "example_djb2";
    chr_ring *ring = ring_with_nodes(&opts, 8, 1);
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    uint64_t tags_before[KEYS];
    for (unsigned k = 0; k < KEYS; ++k) {
        chr_node_view view;
        assert_chr_ok(chr_snapshot_lookup(snap, &k, sizeof k, &view));
        tags_before[k] = view.tag;
    }
    chr_ring_free(ring);

    for (unsigned k = 0; k < KEYS; ++k) {
        chr_node_view view;
        assert_chr_ok(chr_snapshot_lookup(snap, &k, sizeof k, &view));
        assert_int_equal(view.tag, tags_before[k]);
    }
    chr_snapshot_release(snap);

    assert_true(lists_hasher("example_djb2"));
    assert_true(plugin_is_mapped(MAPPED_EXAMPLE));
    uint64_t value = 0;
    assert_chr_ok(chr_hasher_hash("example_djb2", "", 0, 0, &value));
    assert_int_equal(value, 0xF3595DA016FFDFDEull);
    ring = ring_with_nodes(&opts, 8, 1);
    chr_node_ref owner;
    assert_chr_ok(chr_ring_lookup(ring, "k", 1, &owner));
    chr_ring_free(ring);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_directory_is_not_a_plugin),
        cmocka_unit_test(test_text_file),
        cmocka_unit_test(test_executable_is_not_loadable),
#if !defined(_WIN32)
        cmocka_unit_test(test_undefined_symbol),
#endif
        cmocka_unit_test(test_no_entry_point),
        cmocka_unit_test(test_empty_table),
        cmocka_unit_test(test_abi_too_new),
        cmocka_unit_test(test_abi_zero),
        cmocka_unit_test(test_descriptor_too_small),
        cmocka_unit_test(test_null_name),
        cmocka_unit_test(test_null_hash_function),
        cmocka_unit_test(test_bad_name_characters),
        cmocka_unit_test(test_digest_size_without_function),
        cmocka_unit_test(test_reserved_flags),
        cmocka_unit_test(test_wild_name_pointer),
        cmocka_unit_test(test_wild_description_pointer),
        cmocka_unit_test(test_wild_hash_function),
#if !defined(_WIN32) /* its fixture needs the ELF linker's _end */
        cmocka_unit_test(test_name_running_off_its_segment),
#endif
        cmocka_unit_test(test_wild_table_pointer),
        cmocka_unit_test(test_table_outside_the_plugin),
#if !defined(_WIN32)
        cmocka_unit_test(test_table_running_off_its_segment),
#endif
        cmocka_unit_test(test_misaligned_table),
        cmocka_unit_test(test_duplicate_within_one_plugin),
        cmocka_unit_test(test_duplicate_across_plugins),
        cmocka_unit_test(test_duplicate_of_a_shipped_name),
        cmocka_unit_test(test_hasher_outlives_every_ring),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
