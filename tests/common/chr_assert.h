/*
 * chr_assert.h — the status assertions of every test suite (C and C++).
 *
 * assert_chr_ok(expr) fails the test at the caller's line unless `expr`
 * returns CHR_OK; the failure names the expression, both statuses and
 * chr_last_error(). Header-only on purpose: a white-box test that links the
 * core statically and a black-box one that links libchring.so each report
 * the chr_last_error() of the library they actually call.
 */
#ifndef CHRING_TEST_CHR_ASSERT_H
#define CHRING_TEST_CHR_ASSERT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* cmocka.h declares its functions without linkage */
#include <cmocka.h>
}
#else
#include <cmocka.h>
#endif

#include <chring.h>

#include "test_cases.h" /* select_cases: one case run alone */

/* Fails the test at the caller's line unless `expr` returns `expected`. */
#define assert_chr_status(expr, expected) \
    chr_check_status((expr), (expected), #expr, __FILE__, __LINE__)
#define assert_chr_ok(expr) assert_chr_status((expr), CHR_OK)

static inline void chr_check_status(chr_status got, chr_status expected, const char *expr,
                                    const char *file, int line) {
    if (got == expected) return;
    print_error("%s:%d: %s returned %d (%s), expected %d (%s); chr_last_error: \"%s\"\n", file,
                line, expr, got, chr_strerror(got), expected, chr_strerror(expected),
                chr_last_error());
    _fail(file, line);
}

#endif /* CHRING_TEST_CHR_ASSERT_H */
