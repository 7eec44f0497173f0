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
 * Exits 77 (meson: skipped) unless run as root, and when the temporary
 * directory's file system ignores the setuid bit (mounted nosuid).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child_process.h"
#include "test_util.h"

#ifndef SETUID_PROBE
#error "SETUID_PROBE and FIXTURE_DIR come from meson"
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

int main(void) {
    if (geteuid() != 0) {
        printf("not root: cannot make a setuid-root program (skipped)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setuid_program_ignores_plugin_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
