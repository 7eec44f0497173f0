/*
 * child_process.h — runs a program the way a user would, in an environment
 * the test controls: the test's own environment without CHRING_PLUGIN_PATH
 * and LD_LIBRARY_PATH (the meson test setup sets the first), plus the
 * variables given. Output (stdout and stderr) is captured.
 */
#ifndef CHRING_CHILD_PROCESS_H
#define CHRING_CHILD_PROCESS_H

#include <stddef.h>

/* How the child runs. */
typedef struct child_spec {
    const char *const *argv;  /* argv[0] is the program path; NULL-terminated */
    const char *const *env;   /* "NAME=value" entries to add (replacing the parent's value); NULL-terminated; may be NULL */
    int drop_to_nobody;       /* if running as root: become uid/gid 65534 before exec */
    const char *must_be_unreadable; /* if set: after dropping, exit CHILD_CANNOT_SETUP
                                       unless opendir() on it fails */
} child_spec;

#define CHILD_CANNOT_SETUP 77

typedef struct child_result {
    int exit_code;     /* exit status, or 128 + signal */
    char output[16384];
} child_result;

/* Runs the child to completion. */
void run_child(const child_spec *spec, child_result *result);

/* A new directory under $TMPDIR (or /tmp), mode 0755 so that an
 * unprivileged child can traverse it; written to `path` (room 4096). */
void make_temp_dir(char *path);

/* Copies a file, keeping its mode bits. */
void copy_file(const char *from, const char *to);

/* rm -rf, for teardown. */
void remove_tree(const char *path);

#endif /* CHRING_CHILD_PROCESS_H */
