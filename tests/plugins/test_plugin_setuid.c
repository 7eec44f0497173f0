/*
 * A setuid-root program does not take plugins from CHRING_PLUGIN_PATH: the
 * variable belongs to the unprivileged user who ran it (ld.so ignores
 * LD_PRELOAD there for the same reason). setuid_probe (plugin_probe with
 * the core linked in, so that it needs no library path) is copied into a
 * temporary directory, made setuid root (4755), and run as nobody with
 * CHRING_PLUGIN_PATH naming a directory whose plugin exports the asked-for
 * hasher; that directory passes every trust rule (root's, mode 0755), so
 * only the environment rule can keep the plugin out. The control run, as
 * root without privilege change, finds it.
 *
 * A setgid program runs with its caller's effective uid, so "owned by the
 * effective user" would trust the caller's files there: in a
 * secure-execution process only root's are trusted. The probe, setgid
 * root's group (2755), run as nobody, refuses a plugin file and a
 * plugin_dir nobody owns (CHR_EPLUGIN_UNTRUSTED, the message saying why)
 * and loads root-owned copies; the same files load in a plain copy of the
 * probe run as nobody, so only the secure execution refuses them.
 *
 * Exits 77 (meson: skipped) unless run as root. The temporary directories
 * go where set-id bits are honoured: under $TMPDIR (or /tmp), or the build
 * directory when that is mounted nosuid.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "child_process.h"
#include "test_util.h"

#if !defined(SETUID_PROBE) || !defined(BUILD_DIR)
#error "SETUID_PROBE, FIXTURE_DIR and BUILD_DIR come from meson"
#endif

enum { PATH_SIZE = 4096 };

static int has_line(const child_result *r, const char *line) {
    size_t n = strlen(line);
    for (const char *p = r->output; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0' || p[n] == ' ')) return 1;
    return 0;
}

static void test_setuid_program_ignores_plugin_path(void **state) {
    (void)state;
    char bin[PATH_SIZE], evil[PATH_SIZE], probe[PATH_SIZE + 8], plugin[PATH_SIZE + 32],
        from[PATH_SIZE + 32];
    make_temp_dir(bin);
    make_temp_dir(evil);
    snprintf(probe, sizeof probe, "%s/probe", bin);
    snprintf(plugin, sizeof plugin, "%s/chring-secure.so", evil);
    snprintf(from, sizeof from, "%s/fixture-secure.so", FIXTURE_DIR);
    copy_file(SETUID_PROBE, probe);
    copy_file(from, plugin);
    assert_int_equal(chown(probe, 0, 0), 0);
    assert_int_equal(chmod(probe, 04755), 0);
    assert_int_equal(chmod(plugin, 0755), 0);

    char var[PATH_SIZE + 32];
    snprintf(var, sizeof var, "CHRING_PLUGIN_PATH=%s", evil);
    const char *env[] = {var, NULL};
    const char *argv[] = {probe, "fixture_secure", NULL};
    child_result result;

    /* control: not privileged, so the variable counts and the plugin is chosen */
    child_spec control = {argv, env, 0, NULL};
    run_child(&control, &result);
    if (result.exit_code != 0 || !has_line(&result, "secure 0"))
        fail_msg("control run exited %d:\n%s", result.exit_code, result.output);
    char want[PATH_SIZE + 128];
    snprintf(want, sizeof want, "hasher fixture_secure %s", plugin);
    assert_true(has_line(&result, want));

    /* as nobody through the setuid bit: euid 0, AT_SECURE */
    child_spec as_nobody = {argv, env, 1, NULL};
    run_child(&as_nobody, &result);
    if (result.exit_code == CHILD_CANNOT_SETUP || has_line(&result, "secure 0")) {
        print_message("cannot run setuid here (nosuid mount?):\n%s", result.output);
        remove_tree(bin);
        remove_tree(evil);
        skip();
    }
    assert_true(has_line(&result, "secure 1"));
    char refused[64];
    snprintf(refused, sizeof refused, "error fixture_secure %d", CHR_ENOHASHER);
    if (result.exit_code != 1 || !has_line(&result, refused))
        fail_msg("the setuid probe took a plugin from CHRING_PLUGIN_PATH (exit %d):\n%s",
                 result.exit_code, result.output);
    remove_tree(bin);
    remove_tree(evil);
}

static void copy_owned(const char *from, const char *to, uid_t owner, mode_t mode) {
    copy_file(from, to);
    assert_int_equal(chown(to, owner, owner), 0);
    assert_int_equal(chmod(to, mode), 0);
}

/* The status a probe line "<key> <status> <message>" reports, and its
 * message; fails when there is no such line. */
static int status_of(const child_result *r, const char *key, const char **message) {
    size_t n = strlen(key);
    for (const char *p = r->output; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncmp(p, key, n) != 0 || p[n] != ' ') continue;
        char *end = NULL;
        long st = strtol(p + n + 1, &end, 10);
        *message = end;
        return (int)st;
    }
    fail_msg("no '%s' line in the probe's output:\n%s", key, r->output);
    return 0;
}

/* The message up to its line's end contains `want`. */
static int line_has(const char *message, const char *want) {
    const char *end = strchr(message, '\n');
    size_t len = end ? (size_t)(end - message) : strlen(message);
    const char *at = strstr(message, want);
    return at && at + strlen(want) <= message + len;
}

static void test_setgid_program_trusts_only_root(void **state) {
    (void)state;
    char bin[PATH_SIZE], theirs[PATH_SIZE], ours[PATH_SIZE], setgid_probe[PATH_SIZE + 16],
        plain_probe[PATH_SIZE + 16], their_dir[PATH_SIZE + 16], their_plugin[PATH_SIZE + 48],
        our_plugin[PATH_SIZE + 48], from[PATH_SIZE + 32];
    make_temp_dir(bin);
    make_temp_dir(theirs);
    make_temp_dir(ours);
    snprintf(from, sizeof from, "%s/fixture-secure.so", FIXTURE_DIR);
    snprintf(setgid_probe, sizeof setgid_probe, "%s/setgid", bin);
    snprintf(plain_probe, sizeof plain_probe, "%s/plain", bin);
    copy_owned(SETUID_PROBE, setgid_probe, 0, 02755);
    copy_owned(SETUID_PROBE, plain_probe, 0, 0755);
    /* nobody's directory and plugin, writable by nobody else: every rule but the owner's holds */
    snprintf(their_dir, sizeof their_dir, "%s/mine", theirs);
    assert_int_equal(mkdir(their_dir, 0755), 0);
    assert_int_equal(chown(their_dir, 65534, 65534), 0);
    snprintf(their_plugin, sizeof their_plugin, "%s/chring-secure.so", their_dir);
    copy_owned(from, their_plugin, 65534, 0755);
    snprintf(our_plugin, sizeof our_plugin, "%s/chring-secure.so", ours);
    copy_owned(from, our_plugin, 0, 0755);

    child_result r;
    const char *message = NULL;
    /* control: a plain copy run as nobody loads nobody's own plugin */
    const char *plain_argv[] = {plain_probe, "--load", their_plugin, NULL};
    child_spec plain = {plain_argv, NULL, 1, NULL};
    run_child(&plain, &r);
    if (r.exit_code != 0 || !has_line(&r, "secure 0") || status_of(&r, "load", &message) != CHR_OK)
        fail_msg("control: nobody's plugin should load without secure execution (exit %d):\n%s",
                 r.exit_code, r.output);

    /* setgid: the caller's file refused, root's loaded. LeakSanitizer cannot
     * run in a process made undumpable by its setgid bit (its leak check
     * ptraces the process), so a sanitizer build's probe runs without it. */
    const char *setgid_env[] = {"ASAN_OPTIONS=detect_leaks=0", NULL};
    const char *load_argv[] = {setgid_probe, "--load", their_plugin, "--load", our_plugin, NULL};
    child_spec load = {load_argv, setgid_env, 1, NULL};
    run_child(&load, &r);
    if (r.exit_code == CHILD_CANNOT_SETUP || has_line(&r, "secure 0")) {
        print_message("cannot run setgid here (nosuid mount?):\n%s", r.output);
        remove_tree(bin);
        remove_tree(theirs);
        remove_tree(ours);
        skip();
    }
    /* really secure execution, as nobody, with root's group */
    if (!has_line(&r, "secure 1") || !has_line(&r, "ids 65534 65534 65534 0"))
        fail_msg("the setgid probe did not run as nobody with group root:\n%s", r.output);
    int first = status_of(&r, "load", &message);
    if (first != CHR_EPLUGIN_UNTRUSTED || !line_has(message, "secure-execution process") ||
        !line_has(message, their_dir))
        fail_msg("the setgid probe took (or refused for another reason) nobody's plugin:\n%s", r.output);
    char loaded[PATH_SIZE + 64];
    snprintf(loaded, sizeof loaded, "load 0 %s", our_plugin);
    if (!has_line(&r, loaded)) fail_msg("the setgid probe refused root's plugin:\n%s", r.output);

    /* a plugin_dir of the caller's: skipped, with why */
    const char *dir_argv[] = {setgid_probe, "--plugin-dir", their_dir, "fixture_secure", NULL};
    child_spec dir = {dir_argv, setgid_env, 1, NULL};
    run_child(&dir, &r);
    assert_true(has_line(&r, "secure 1"));
    if (r.exit_code != 1 || status_of(&r, "error fixture_secure", &message) != CHR_ENOHASHER ||
        !line_has(message, "secure-execution process"))
        fail_msg("the setgid probe took a plugin from nobody's plugin_dir:\n%s", r.output);
    /* and root's plugin_dir serves */
    const char *our_dir_argv[] = {setgid_probe, "--plugin-dir", ours, "fixture_secure", NULL};
    child_spec our_dir = {our_dir_argv, setgid_env, 1, NULL};
    run_child(&our_dir, &r);
    char want[PATH_SIZE + 128];
    snprintf(want, sizeof want, "hasher fixture_secure %s", our_plugin);
    if (r.exit_code != 0 || !has_line(&r, want))
        fail_msg("the setgid probe refused root's plugin_dir (exit %d):\n%s", r.exit_code, r.output);
    remove_tree(bin);
    remove_tree(theirs);
    remove_tree(ours);
}

/* Temporary directories on a file system that honours set-id bits. */
static void choose_temp_base(void) {
    const char *base = getenv("TMPDIR");
    struct statvfs fs;
    if (statvfs(base && *base ? base : "/tmp", &fs) == 0 && (fs.f_flag & ST_NOSUID)) {
        printf("%s is mounted nosuid: temporary directories go under %s\n", base && *base ? base : "/tmp",
               BUILD_DIR);
        setenv("TMPDIR", BUILD_DIR, 1);
    }
}

int main(int argc, char **argv) {
    if (geteuid() != 0) {
        printf("not root: cannot make a setuid-root program (skipped)\n");
        return 77;
    }
    choose_temp_base();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setuid_program_ignores_plugin_path),
        cmocka_unit_test(test_setgid_program_trusts_only_root),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
