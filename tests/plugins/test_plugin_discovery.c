/*
 * Plugin discovery, as a user meets it: each case runs plugin_probe (a
 * program linking libchring) in an environment this test controls, and
 * reads back which libchring it loaded and where each hasher came from.
 *
 *  - the default hasher is compiled in: a default ring works and maps no
 *    plugin with CHRING_PLUGIN_PATH naming an empty directory, or naming a
 *    directory with a plugin in it (nothing is searched for a name that is
 *    already registered);
 *  - build tree: the library never looks at its build tree; with
 *    CHRING_PLUGIN_PATH as `meson test` sets it, every shipped plugin is
 *    found in <build>/plugins/<folder>/, and without it none is;
 *  - isolated library: a copy of libchring alone in a directory (found via
 *    LD_LIBRARY_PATH) finds no plugin by itself, which the next cases
 *    rely on to show that CHRING_PLUGIN_PATH and options.plugin_dir do
 *    the finding;
 *  - missing, unreadable and not-a-directory entries are skipped: a later
 *    entry still supplies the hasher. As root, chmod 000 does not stop
 *    reads, so that child drops to uid 65534 (nobody) first and checks
 *    that opendir() on the directory really fails; the directory holds a
 *    copy of the example plugin, so reading it would show in the origin;
 *  - installed tree: `meson install --destdir` into a temporary root; the
 *    installed libchring, found through LD_LIBRARY_PATH alone, finds the
 *    installed plugins in <libdir>/chring/plugins; and the example plugin
 *    builds out of tree with the command in plugins/example/README.md
 *    against the installed chring.pc, and is found via CHRING_PLUGIN_PATH.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child_process.h"
#include "hasher_catalog.h"
#include "test_util.h"

/* Paths from meson (meson.build beside this file). */
#ifndef BUILD_ROOT
#error "BUILD_ROOT, BUILD_PLUGIN_PATH, PROBE, LIBCHRING, EXAMPLE_PLUGIN, EXAMPLE_SOURCE, MESON, PKG_CONFIG, CC_COMMAND, PREFIX and LIBDIR come from meson"
#endif

enum { PATH_SIZE = 4096, MAX_ARGS = 32 };

typedef struct discovery_fixture {
    char root[PATH_SIZE];       /* temporary directory, removed at the end */
    char isolated_lib[PATH_SIZE]; /* root/lib: a copy of libchring alone */
    char installed_lib[PATH_SIZE]; /* libdir of the `meson install --destdir` tree */
} discovery_fixture;

static void path_join(char *out, const char *a, const char *b) {
    int n = snprintf(out, PATH_SIZE, "%s/%s", a, b);
    assert_true(n > 0 && n < PATH_SIZE);
}

static void make_dir(const char *path, mode_t mode) {
    assert_int_equal(mkdir(path, mode), 0);
    assert_int_equal(chmod(path, mode), 0); /* not narrowed by the umask */
}

/* Copies the build tree's example plugin to dir/chring-example.so, whose
 * path goes to `copy` if not NULL. */
static void copy_example_into(const char *dir, char *copy) {
    char to[PATH_SIZE];
    path_join(to, dir, "chring-example.so");
    copy_file(EXAMPLE_PLUGIN, to);
    if (copy) memcpy(copy, to, strlen(to) + 1);
}

/* ---- running the probe ------------------------------------------------------- */

typedef struct probe_run {
    const char *library_dir;  /* LD_LIBRARY_PATH, or NULL */
    const char *plugin_path;  /* CHRING_PLUGIN_PATH, or NULL */
    const char *plugin_dir;   /* --plugin-dir, or NULL */
    int as_nobody;
    const char *unreadable;
} probe_run;

static void run_probe(const probe_run *run, const char *const *hashers, child_result *result) {
    const char *argv[MAX_ARGS];
    size_t argc = 0;
    argv[argc++] = PROBE;
    if (run->plugin_dir) {
        argv[argc++] = "--plugin-dir";
        argv[argc++] = run->plugin_dir;
    }
    for (size_t i = 0; hashers[i]; ++i) {
        assert_true(argc < MAX_ARGS - 1);
        argv[argc++] = hashers[i];
    }
    argv[argc] = NULL;
    char library_var[PATH_SIZE + 32], plugin_var[PATH_SIZE * 2];
    const char *env[3];
    size_t envc = 0;
    if (run->library_dir) {
        snprintf(library_var, sizeof library_var, "LD_LIBRARY_PATH=%s", run->library_dir);
        env[envc++] = library_var;
    }
    if (run->plugin_path) {
        snprintf(plugin_var, sizeof plugin_var, "CHRING_PLUGIN_PATH=%s", run->plugin_path);
        env[envc++] = plugin_var;
    }
    env[envc] = NULL;
    child_spec spec = {argv, env, run->as_nobody, run->unreadable};
    run_child(&spec, result);
    if (result->exit_code == CHILD_CANNOT_SETUP) {
        print_message("cannot set up this case: %s", result->output);
        skip();
    }
}

/* The value after "<key> " on the line that starts with it, e.g. the origin
 * of "hasher xxh3 /path"; fails if there is no such line. */
static const char *line_value(const child_result *result, const char *key, char *out) {
    size_t key_len = strlen(key);
    for (const char *line = result->output; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > key_len && strncmp(line, key, key_len) == 0 && line[key_len] == ' ') {
            size_t value_len = len - key_len - 1;
            assert_true(value_len < PATH_SIZE);
            memcpy(out, line + key_len + 1, value_len);
            out[value_len] = '\0';
            return out;
        }
        line = end ? end + 1 : NULL;
    }
    fail_msg("no '%s' line in the probe's output:\n%s", key, result->output);
    return NULL;
}

static void expect_success(const child_result *result) {
    if (result->exit_code != 0)
        fail_msg("probe exited %d:\n%s", result->exit_code, result->output);
}

static void expect_origin(const child_result *result, const char *hasher, const char *origin) {
    char key[128], got[PATH_SIZE];
    snprintf(key, sizeof key, "hasher %s", hasher);
    assert_string_equal(line_value(result, key, got), origin);
}

static void expect_library_in(const child_result *result, const char *dir) {
    char got[PATH_SIZE];
    line_value(result, "library", got);
    if (strncmp(got, dir, strlen(dir)) != 0 || got[strlen(dir)] != '/')
        fail_msg("the probe loaded %s, not a libchring from %s", got, dir);
}

/* The probe finds example_djb2 in the plugin file `origin`. */
static void expect_example_from(const probe_run *run, const char *origin) {
    const char *hashers[] = {"example_djb2", NULL};
    child_result result;
    run_probe(run, hashers, &result);
    expect_success(&result);
    expect_origin(&result, "example_djb2", origin);
}

/* ---- fixtures ------------------------------------------------------------------ */

static void install_into(discovery_fixture *f) {
    char destdir[PATH_SIZE];
    path_join(destdir, f->root, "installed");
    const char *argv[] = {MESON, "install", "--no-rebuild", "--quiet", "--destdir", destdir,
                          "--tags", "runtime,devel", "-C", BUILD_ROOT, NULL};
    child_spec spec = {argv, NULL, 0, NULL};
    child_result result;
    run_child(&spec, &result);
    if (result.exit_code != 0) fail_msg("meson install failed:\n%s", result.output);
    int n = snprintf(f->installed_lib, PATH_SIZE, "%s%s/%s", destdir, PREFIX, LIBDIR);
    assert_true(n > 0 && n < PATH_SIZE);
}

static int group_setup(void **state) {
    discovery_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    make_temp_dir(f->root);
    path_join(f->isolated_lib, f->root, "lib");
    make_dir(f->isolated_lib, 0755);
    char copy[PATH_SIZE];
    path_join(copy, f->isolated_lib, "libchring.so.1");
    copy_file(LIBCHRING, copy);
    install_into(f);
    *state = f;
    return 0;
}

static int group_teardown(void **state) {
    discovery_fixture *f = *state;
    remove_tree(f->root);
    free(f);
    return 0;
}

/* ---- the built-in default ---------------------------------------------------- */

static int loaded_count(const child_result *result, const char *hasher) {
    char key[128], value[PATH_SIZE];
    snprintf(key, sizeof key, "loaded %s", hasher);
    return atoi(line_value(result, key, value));
}

/* A default ring, with `plugin_path` as CHRING_PLUGIN_PATH: works, hashes
 * with the built-in xxh3, and maps no plugin. */
static void expect_default_ring_loads_nothing(const char *library_dir, const char *plugin_path) {
    /* one process each: the probe lists every hasher after the lookup */
    const char *const cases[] = {"-", CHR_DEFAULT_HASHER};
    for (size_t i = 0; i < 2; ++i) {
        const char *hashers[] = {cases[i], NULL};
        probe_run run = {library_dir, plugin_path, NULL, 0, NULL};
        child_result result;
        run_probe(&run, hashers, &result);
        expect_success(&result);
        assert_int_equal(loaded_count(&result, cases[i]), 0);
        expect_origin(&result, cases[i], "builtin");
    }
}

static void test_default_ring_loads_no_plugin(void **state) {
    discovery_fixture *f = *state;
    char empty[PATH_SIZE], full[PATH_SIZE];
    path_join(empty, f->root, "default-empty");
    path_join(full, f->root, "default-full");
    make_dir(empty, 0755);
    make_dir(full, 0755);
    copy_example_into(full, NULL);
    expect_default_ring_loads_nothing(f->isolated_lib, empty);  /* discovery finds nothing */
    expect_default_ring_loads_nothing(f->isolated_lib, full);   /* it would find a plugin */
    expect_default_ring_loads_nothing(NULL, BUILD_PLUGIN_PATH); /* every shipped plugin */
}

/* ---- build tree ------------------------------------------------------------------ */

static void test_build_tree_with_meson_plugin_path(void **state) {
    (void)state;
    const char *hashers[16] = {"-"}; /* the default options first */
    for (size_t i = 0; i < catalog_count; ++i) hashers[i + 1] = catalog[i].name;
    probe_run run = {NULL, BUILD_PLUGIN_PATH, NULL, 0, NULL};
    child_result result;
    run_probe(&run, hashers, &result);
    expect_success(&result);
    expect_library_in(&result, BUILD_ROOT "/src");
    expect_origin(&result, "-", "builtin");
    for (size_t i = 0; i < catalog_count; ++i) {
        char key[128], origin[PATH_SIZE];
        snprintf(key, sizeof key, "hasher %s", catalog[i].name);
        line_value(&result, key, origin);
        if (strcmp(catalog[i].name, CHR_DEFAULT_HASHER) == 0) {
            assert_string_equal(origin, "builtin");
            continue;
        }
        if (strncmp(origin, BUILD_ROOT "/plugins/", strlen(BUILD_ROOT "/plugins/")) != 0 ||
            !strstr(origin, "/chring-"))
            fail_msg("%s came from %s, not from the build tree's plugins", catalog[i].name, origin);
    }
}

/* The build tree's own libchring, with no CHRING_PLUGIN_PATH: the default
 * ring works, and no plugin is found (<build>/meson-info is not looked at). */
static void test_build_tree_is_not_searched(void **state) {
    (void)state;
    const char *hashers[] = {"-", "xxh64", NULL};
    probe_run run = {0};
    child_result result;
    run_probe(&run, hashers, &result);
    expect_library_in(&result, BUILD_ROOT "/src");
    assert_int_equal(result.exit_code, 1);
    expect_origin(&result, "-", "builtin");
    char status[PATH_SIZE];
    line_value(&result, "error xxh64", status);
    assert_int_equal(atoi(status), CHR_ENOHASHER);
}

/* ---- an isolated copy of the library ------------------------------------------- */

static void test_isolated_library_finds_no_plugin(void **state) {
    discovery_fixture *f = *state;
    const char *hashers[] = {"xxh64", NULL};
    probe_run run = {f->isolated_lib, NULL, NULL, 0, NULL};
    child_result result;
    run_probe(&run, hashers, &result);
    expect_library_in(&result, f->isolated_lib);
    assert_int_equal(result.exit_code, 1);
    char status[PATH_SIZE];
    line_value(&result, "error xxh64", status);
    assert_int_equal(atoi(status), CHR_ENOHASHER);
}

static void test_plugin_path_finds_a_copied_plugin(void **state) {
    discovery_fixture *f = *state;
    char empty[PATH_SIZE], dir[PATH_SIZE], path[PATH_SIZE * 2 + 1], origin[PATH_SIZE];
    path_join(empty, f->root, "env-empty");
    path_join(dir, f->root, "env-plugins");
    make_dir(empty, 0755);
    make_dir(dir, 0755);
    copy_example_into(dir, origin);
    snprintf(path, sizeof path, "%s:%s", empty, dir);
    probe_run run = {f->isolated_lib, path, NULL, 0, NULL};
    expect_example_from(&run, origin);
}

static void test_plugin_dir_option_finds_a_copied_plugin(void **state) {
    discovery_fixture *f = *state;
    char dir[PATH_SIZE], origin[PATH_SIZE];
    path_join(dir, f->root, "option-plugins");
    make_dir(dir, 0755);
    copy_example_into(dir, origin);
    probe_run run = {f->isolated_lib, NULL, dir, 0, NULL};
    expect_example_from(&run, origin);
}

/* ---- bad directories ---------------------------------------------------------------- */

typedef struct bad_dirs {
    char path[PATH_SIZE * 5]; /* missing:file:unreadable:good */
    char missing_too[PATH_SIZE];
    char unreadable[PATH_SIZE];
    char good_origin[PATH_SIZE];
} bad_dirs;

static void make_bad_dirs(const discovery_fixture *f, const char *tag, bad_dirs *b) {
    char base[PATH_SIZE], missing[PATH_SIZE], file[PATH_SIZE], good[PATH_SIZE];
    path_join(base, f->root, tag);
    make_dir(base, 0755);
    path_join(missing, base, "missing");
    path_join(b->missing_too, base, "missing-too");
    path_join(file, base, "a-file");
    path_join(b->unreadable, base, "unreadable");
    path_join(good, base, "good");
    FILE *plain = fopen(file, "w");
    assert_non_null(plain);
    fclose(plain);
    make_dir(b->unreadable, 0755);
    copy_example_into(b->unreadable, NULL);
    assert_int_equal(chmod(b->unreadable, 0), 0);
    make_dir(good, 0755);
    copy_example_into(good, b->good_origin);
    snprintf(b->path, sizeof b->path, "%s:%s:%s:%s", missing, file, b->unreadable, good);
}

/* Every kind of bad entry is skipped and the search goes on to the next. */
static void test_bad_directories_are_skipped(void **state) {
    discovery_fixture *f = *state;
    bad_dirs b;
    make_bad_dirs(f, "bad-isolated", &b);
    probe_run run = {f->isolated_lib, b.path, b.missing_too, 1, b.unreadable};
    expect_example_from(&run, b.good_origin);
}

/* With an installed library: the built-in default and the plugins next to
 * the library still work when CHRING_PLUGIN_PATH and plugin_dir hold only
 * bad entries. */
static void test_bad_directories_do_not_stop_the_library_dir(void **state) {
    discovery_fixture *f = *state;
    bad_dirs b;
    make_bad_dirs(f, "bad-installed", &b);
    const char *hashers[] = {"-", "crc32", NULL};
    probe_run run = {f->installed_lib, b.path, b.missing_too, 1, b.unreadable};
    child_result result;
    run_probe(&run, hashers, &result);
    expect_success(&result);
    expect_library_in(&result, f->installed_lib);
    expect_origin(&result, "-", "builtin");
    char origin[PATH_SIZE], want[PATH_SIZE];
    path_join(want, f->installed_lib, "chring/plugins/chring-crc32.so");
    assert_string_equal(line_value(&result, "hasher crc32", origin), want);
}

/* ---- the installed tree ----------------------------------------------------------------- */

static void test_installed_tree_needs_no_configuration(void **state) {
    discovery_fixture *f = *state;
    const char *hashers[16] = {"-"}; /* the default options first */
    size_t n = 1;
    for (size_t i = 0; i < catalog_count; ++i)
        if (strcmp(catalog[i].name, "example_djb2") != 0) hashers[n++] = catalog[i].name;
    hashers[n] = NULL;
    probe_run run = {f->installed_lib, NULL, NULL, 0, NULL};
    child_result result;
    run_probe(&run, hashers, &result);
    expect_success(&result);
    expect_library_in(&result, f->installed_lib);
    char plugin_dir[PATH_SIZE];
    path_join(plugin_dir, f->installed_lib, "chring/plugins/");
    for (size_t i = 0; i < n; ++i) {
        char key[128], origin[PATH_SIZE];
        snprintf(key, sizeof key, "hasher %s", hashers[i]);
        line_value(&result, key, origin);
        if (strcmp(hashers[i], "-") == 0 || strcmp(hashers[i], CHR_DEFAULT_HASHER) == 0) {
            assert_string_equal(origin, "builtin");
            continue;
        }
        if (strncmp(origin, plugin_dir, strlen(plugin_dir)) != 0)
            fail_msg("%s came from %s, not from %s", hashers[i], origin, plugin_dir);
    }
    /* the example is built in the tree but not installed */
    const char *example[] = {"example_djb2", NULL};
    run_probe(&run, example, &result);
    assert_int_equal(result.exit_code, 1);
}

/* plugins/example/README.md's command, against the installed chring.pc. */
static void test_example_builds_out_of_tree(void **state) {
    discovery_fixture *f = *state;
    char out_dir[PATH_SIZE], output[PATH_SIZE], destdir[PATH_SIZE];
    path_join(out_dir, f->root, "my-plugins");
    make_dir(out_dir, 0755);
    path_join(output, out_dir, "chring-example.so");
    path_join(destdir, f->root, "installed");

    char pc_path[PATH_SIZE + 32], sysroot[PATH_SIZE + 32], out_var[PATH_SIZE + 8];
    snprintf(pc_path, sizeof pc_path, "PKG_CONFIG_PATH=%s/pkgconfig", f->installed_lib);
    snprintf(sysroot, sizeof sysroot, "PKG_CONFIG_SYSROOT_DIR=%s", destdir);
    snprintf(out_var, sizeof out_var, "OUT=%s", output);
    const char *env[] = {pc_path, sysroot, out_var, "SRC=" EXAMPLE_SOURCE,
                         "PKG_CONFIG=" PKG_CONFIG, NULL};
    const char *argv[] = {"/bin/sh", "-c",
                          "set -e; flags=$(\"$PKG_CONFIG\" --cflags chring); echo \"cflags $flags\"; "
                          CC_COMMAND " -shared -fPIC -O2 $flags -o \"$OUT\" \"$SRC\"",
                          NULL};
    child_spec spec = {argv, env, 0, NULL};
    child_result built;
    run_child(&spec, &built);
    if (built.exit_code != 0) fail_msg("building the example failed:\n%s", built.output);
    char cflags[PATH_SIZE];
    line_value(&built, "cflags", cflags);
    if (!strstr(cflags, destdir)) fail_msg("pkg-config gave '%s', not the installed headers", cflags);

    probe_run run = {f->installed_lib, out_dir, NULL, 0, NULL};
    expect_example_from(&run, output);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_ring_loads_no_plugin),
        cmocka_unit_test(test_build_tree_with_meson_plugin_path),
        cmocka_unit_test(test_build_tree_is_not_searched),
        cmocka_unit_test(test_isolated_library_finds_no_plugin),
        cmocka_unit_test(test_plugin_path_finds_a_copied_plugin),
        cmocka_unit_test(test_plugin_dir_option_finds_a_copied_plugin),
        cmocka_unit_test(test_bad_directories_are_skipped),
        cmocka_unit_test(test_bad_directories_do_not_stop_the_library_dir),
        cmocka_unit_test(test_installed_tree_needs_no_configuration),
        cmocka_unit_test(test_example_builds_out_of_tree),
    };
    select_cases(argc, argv, tests);
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    printf("%zu passed, %d failed\n", sizeof tests / sizeof tests[0] - (size_t)failed, failed);
    return failed;
}
