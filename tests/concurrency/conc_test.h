/*
 * conc_test.h — helpers of the concurrency tests (C and C++), over the
 * common assertions (tests/common/chr_assert.h): a failure log that worker
 * threads can write to (cmocka assertions must only run on the test's own
 * thread), and the stress duration.
 */
#ifndef CHRING_CONC_TEST_H
#define CHRING_CONC_TEST_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "chr_assert.h"

/* Seconds a stress test runs: CHR_STRESS_SECONDS, default 3 (0.1..3600). */
static inline double stress_seconds(void) {
    const char *env = getenv("CHR_STRESS_SECONDS");
    double s = env ? atof(env) : 3.0;
    if (s < 0.1) s = 0.1;
    if (s > 3600) s = 3600;
    return s;
}

/* What worker threads found wrong: a count and the first few messages,
 * reported by the test's thread after joining them. */
#define THREAD_FAILURES_KEPT 8

typedef struct thread_failures {
    pthread_mutex_t lock;
    unsigned long count;
    char first[THREAD_FAILURES_KEPT][256];
} thread_failures;

#define THREAD_FAILURES_INIT {PTHREAD_MUTEX_INITIALIZER, 0, {{0}}}

static inline void thread_failure(thread_failures *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void thread_failure(thread_failures *log, const char *fmt, ...) {
    pthread_mutex_lock(&log->lock);
    if (log->count < THREAD_FAILURES_KEPT) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(log->first[log->count], sizeof log->first[0], fmt, ap);
        va_end(ap);
    }
    log->count++;
    pthread_mutex_unlock(&log->lock);
}

/* Prints what the workers logged and fails at the caller's line if anything. */
#define assert_no_thread_failures(log) conc_check_failures((log), __FILE__, __LINE__)

static inline void conc_check_failures(thread_failures *log, const char *file, int line) {
    pthread_mutex_lock(&log->lock);
    unsigned long count = log->count;
    for (unsigned long i = 0; i < count && i < THREAD_FAILURES_KEPT; ++i)
        print_error("worker: %s\n", log->first[i]);
    pthread_mutex_unlock(&log->lock);
    if (count == 0) return;
    print_error("%lu failures in worker threads\n", count);
    _fail(file, line);
}

#endif /* CHRING_CONC_TEST_H */
