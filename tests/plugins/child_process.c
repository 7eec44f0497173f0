#define _GNU_SOURCE
#include "child_process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

/* Whether "NAME=value" entry `entry` sets a variable one of `extra` sets. */
static int overridden(const char *entry, const char *const *extra, size_t e) {
    const char *eq = strchr(entry, '=');
    size_t len = eq ? (size_t)(eq - entry) + 1 : strlen(entry);
    for (size_t i = 0; i < e; ++i)
        if (strncmp(entry, extra[i], len) == 0) return 1;
    return 0;
}

/* The parent's environment without the variables the tests control, and
 * with `extra` replacing the parent's value of a variable it names. */
static char **child_environment(const char *const *extra) {
    size_t n = 0, e = 0;
    while (environ[n]) ++n;
    while (extra && extra[e]) ++e;
    char **env = calloc(n + e + 1, sizeof *env);
    assert_non_null(env);
    size_t out = 0;
    for (size_t i = 0; i < n; ++i)
        if (strncmp(environ[i], "CHRING_PLUGIN_PATH=", 19) != 0 &&
            strncmp(environ[i], "LD_LIBRARY_PATH=", 16) != 0 && !overridden(environ[i], extra, e))
            env[out++] = environ[i];
    for (size_t i = 0; i < e; ++i) env[out++] = (char *)extra[i];
    return env;
}

/* In the child: never returns. */
static void exec_child(const child_spec *spec, char **env, int output_fd) {
    dup2(output_fd, STDOUT_FILENO);
    dup2(output_fd, STDERR_FILENO);
    close(output_fd);
    if (spec->drop_to_nobody && geteuid() == 0) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) {
            perror("dropping privileges");
            _exit(CHILD_CANNOT_SETUP);
        }
    }
    if (spec->must_be_unreadable) {
        DIR *dir = opendir(spec->must_be_unreadable);
        if (dir) {
            fprintf(stderr, "%s is readable by uid %d: cannot test an unreadable directory\n",
                    spec->must_be_unreadable, (int)geteuid());
            _exit(CHILD_CANNOT_SETUP);
        }
    }
    execve(spec->argv[0], (char *const *)spec->argv, env);
    perror(spec->argv[0]);
    _exit(127);
}

void run_child(const child_spec *spec, child_result *result) {
    char **env = child_environment(spec->env);
    int pipe_fds[2];
    assert_int_equal(pipe(pipe_fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pipe_fds[0]);
        exec_child(spec, env, pipe_fds[1]);
    }
    close(pipe_fds[1]);
    size_t used = 0;
    ssize_t got;
    char discard[4096];
    while ((got = read(pipe_fds[0], discard, sizeof discard)) != 0) {
        if (got < 0) {
            assert_int_equal(errno, EINTR);
            continue;
        }
        size_t room = sizeof result->output - 1 - used;
        size_t keep = (size_t)got < room ? (size_t)got : room;
        memcpy(result->output + used, discard, keep);
        used += keep;
    }
    result->output[used] = '\0';
    close(pipe_fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) assert_int_equal(errno, EINTR);
    result->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    free(env);
}

void make_temp_dir(char *path) {
    const char *base = getenv("TMPDIR");
    snprintf(path, 4096, "%s/chring-plugins-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(path));
    assert_int_equal(chmod(path, 0755), 0);
}

void copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY);
    assert_true(in >= 0);
    struct stat st;
    assert_int_equal(fstat(in, &st), 0);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, st.st_mode & 07777);
    assert_true(out >= 0);
    char buf[65536];
    ssize_t got;
    while ((got = read(in, buf, sizeof buf)) > 0) assert_int_equal(write(out, buf, (size_t)got), got);
    assert_int_equal(got, 0);
    close(in);
    assert_int_equal(close(out), 0);
}

void remove_tree(const char *path) {
    const char *argv[] = {"/bin/rm", "-rf", path, NULL};
    child_spec spec = {argv, NULL, 0, NULL};
    child_result result;
    run_child(&spec, &result);
    assert_int_equal(result.exit_code, 0);
}
