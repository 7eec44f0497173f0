/*
 * test_cases.h — one case of a test program, run alone (C and C++).
 *
 * Every cmocka program of the suites takes an optional case filter, its
 * first argument after those it needs:
 *
 *     build/tests/core/test_batch test_large_batch_in_any_order
 *     build/tests/core/test_batch 'test_large_*'
 *     meson test -C build batch --test-args=test_large_batch_in_any_order
 *
 * cmocka matches the case names against it ('*' and '?' are wildcards) and
 * runs only those. A filter that names no case is an error (exit 1, with the
 * list of the program's cases), not a run of nothing that passes.
 *
 * Each main calls select_cases(argc, argv, tests) before running `tests`.
 * Header-only: the white-box programs link no test library. Include after
 * <setjmp.h>, <stdarg.h>, <stddef.h> (as cmocka.h needs).
 */
#ifndef CHRING_TEST_CASES_H
#define CHRING_TEST_CASES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" { /* cmocka.h declares its functions without linkage */
#include <cmocka.h>
}
#else
#include <cmocka.h>
#endif

/* The filter is argv[1]; `tests` is the program's array of cases. */
#define select_cases(argc, argv, tests)                      \
    chr_select_cases((argc) > 1 ? (argv)[1] : NULL, (tests), \
                     sizeof(tests) / sizeof((tests)[0]))

/* cmocka's wildcard match: '*' any run of characters, '?' any one. */
static inline int chr_case_matches(const char *name, const char *pattern) {
    if (*pattern == '\0') return *name == '\0';
    if (*pattern == '*')
        return chr_case_matches(name, pattern + 1) || (*name && chr_case_matches(name + 1, pattern));
    if (*name == '\0') return 0;
    return (*pattern == '?' || *pattern == *name) && chr_case_matches(name + 1, pattern + 1);
}

/* The filter this program's main set (one per translation unit: the
 * main's, where select_cases and run_core_tests both expand). */
static inline const char **chr_case_filter(void) {
    static const char *pattern = NULL;
    return &pattern;
}

/* How many of `tests` the filter leaves to run. */
static inline size_t chr_selected_cases(const struct CMUnitTest *tests, size_t count) {
    size_t i, selected = 0;
    const char *pattern = *chr_case_filter();
    for (i = 0; i < count; i++)
        if (tests[i].name != NULL && (pattern == NULL || chr_case_matches(tests[i].name, pattern)))
            selected++;
    return selected;
}

/* Sets cmocka's filter to `pattern` (NULL or "": every case runs). Exits
 * with status 1 when no case matches it. */
static inline void chr_select_cases(const char *pattern, const struct CMUnitTest *tests,
                                    size_t count) {
    size_t i;
    if (pattern == NULL || pattern[0] == '\0') return;
    *chr_case_filter() = pattern;
    if (chr_selected_cases(tests, count) > 0) {
        cmocka_set_test_filter(pattern);
        return;
    }
    fprintf(stderr, "no case matches '%s'; the cases are:\n", pattern);
    for (i = 0; i < count; i++)
        if (tests[i].name != NULL) fprintf(stderr, "  %s\n", tests[i].name);
    exit(1);
}

#endif /* CHRING_TEST_CASES_H */
