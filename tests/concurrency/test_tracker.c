/*
 * The tracker under contention (chring.h, "Bounded loads and
 * availability"): 16 threads acquire and release on one chr_tracker, each
 * on the snapshot current when it acquires, while a writer removes and adds
 * nodes and masks some. Tickets are held across membership changes and
 * released after their node is gone; each new snapshot's first acquires
 * race to keep its members' hashed ids. Afterwards every node's counter and
 * the total are 0, no acquire failed except with CHR_EEMPTY (all nodes
 * masked or removed at once cannot happen here: the writer keeps node 0),
 * and no release failed. Run under TSan too (the concurrency suite).
 *
 * The amount of work is fixed (THREADS x OPS acquires), not a duration, so
 * every build does the same interleavings' worth of work.
 */
#include <stdatomic.h>
#include <string.h>

#include "conc_test.h"

enum {
    THREADS = 16,
    OPS = 4000,       /* acquires per thread */
    HELD = 8,         /* tickets a thread holds at most */
    NODES = 12,       /* node ids "n00".."n11" */
    WRITER_STEPS = 400,
};

typedef struct shared {
    chr_ring *ring;
    chr_tracker *tracker;
    atomic_int readers_done;
    thread_failures failures;
} shared;

static size_t id_of(unsigned n, char buf[8]) { return (size_t)snprintf(buf, 8, "n%02u", n); }

static void *worker_main(void *arg) {
    shared *s = arg;
    static _Thread_local chr_ticket held[HELD];
    size_t live = 0;
    chr_bound_options o = CHR_BOUND_OPTIONS_INIT;
    uint64_t r = (uint64_t)(uintptr_t)&live;
    for (int op = 0; op < OPS; ++op) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        chr_snapshot *snap = NULL;
        if (chr_ring_snapshot(s->ring, &snap) != CHR_OK) {
            thread_failure(&s->failures, "chr_ring_snapshot: %s", chr_last_error());
            break;
        }
        char key[24];
        int len = snprintf(key, sizeof key, "k%llu", (unsigned long long)(r >> 20));
        o.spill = (r >> 7) & 1;
        chr_bound_result res;
        chr_status st = chr_tracker_acquire(s->tracker, snap, key, (size_t)len, &o, NULL, &res,
                                            &held[live]);
        chr_snapshot_release(snap); /* the ticket outlives the snapshot */
        if (st == CHR_OK) {
            if (res.load >= res.capacity)
                thread_failure(&s->failures, "acquired at load %llu, capacity %llu",
                               (unsigned long long)res.load, (unsigned long long)res.capacity);
            ++live;
        } else if (st != CHR_EEMPTY) {
            thread_failure(&s->failures, "chr_tracker_acquire: %s", chr_last_error());
        }
        while (live == HELD || (live && ((r >> 33) & 3) == 0)) {
            size_t k = (size_t)((r >> 40) % live);
            if (chr_tracker_release(s->tracker, &held[k]) != CHR_OK)
                thread_failure(&s->failures, "chr_tracker_release: %s", chr_last_error());
            held[k] = held[--live];
            r = r * 6364136223846793005ull + 1442695040888963407ull;
        }
    }
    while (live)
        if (chr_tracker_release(s->tracker, &held[--live]) != CHR_OK)
            thread_failure(&s->failures, "chr_tracker_release: %s", chr_last_error());
    atomic_fetch_add(&s->readers_done, 1);
    return NULL;
}

/* Removes and adds nodes 1..NODES-1, masks and unmasks some, until the
 * workers are done (at least WRITER_STEPS steps). */
static void *writer_main(void *arg) {
    shared *s = arg;
    uint64_t r = 20;
    int present[NODES];
    for (int i = 0; i < NODES; ++i) present[i] = 1;
    for (int step = 0; step < WRITER_STEPS || atomic_load(&s->readers_done) < THREADS; ++step) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        unsigned n = 1 + (unsigned)((r >> 33) % (NODES - 1));
        char id[8];
        size_t len = id_of(n, id);
        chr_status st;
        if ((r >> 50) % 4 == 0) {
            st = chr_tracker_set_available(s->tracker, id, len, (uint32_t)((r >> 55) & 1));
        } else if (present[n]) {
            st = chr_ring_remove(s->ring, id, len);
            present[n] = 0;
        } else {
            st = chr_ring_add(s->ring, id, len, 1 + (uint32_t)((r >> 60) & 3), NULL, 0, n);
            present[n] = 1;
        }
        if (st != CHR_OK) thread_failure(&s->failures, "writer: %s", chr_last_error());
        if (step > 100000) break; /* workers are stuck: the join below reports it */
    }
    return NULL;
}

static void test_counters_return_to_zero(void **state) {
    (void)state;
    shared s = {.failures = THREAD_FAILURES_INIT};
    atomic_init(&s.readers_done, 0);
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = 16;
    assert_chr_ok(chr_ring_new(&opts, &s.ring));
    for (unsigned i = 0; i < NODES; ++i) {
        char id[8];
        size_t len = id_of(i, id);
        assert_chr_ok(chr_ring_add(s.ring, id, len, 2, NULL, 0, i));
    }
    assert_chr_ok(chr_tracker_new(64, &s.tracker));
    pthread_t workers[THREADS], writer;
    for (int i = 0; i < THREADS; ++i)
        assert_int_equal(pthread_create(&workers[i], NULL, worker_main, &s), 0);
    assert_int_equal(pthread_create(&writer, NULL, writer_main, &s), 0);
    for (int i = 0; i < THREADS; ++i) assert_int_equal(pthread_join(workers[i], NULL), 0);
    assert_int_equal(pthread_join(writer, NULL), 0);
    assert_no_thread_failures(&s.failures);
    uint64_t total = 1;
    assert_chr_ok(chr_tracker_total(s.tracker, &total));
    assert_int_equal(total, 0);
    for (unsigned i = 0; i < NODES; ++i) {
        char id[8];
        size_t len = id_of(i, id);
        uint64_t load = 1;
        assert_chr_ok(chr_tracker_load(s.tracker, id, len, &load));
        assert_int_equal(load, 0);
    }
    chr_tracker_free(s.tracker);
    chr_ring_free(s.ring);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_return_to_zero),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
