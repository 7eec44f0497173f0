/*
 * Readers against a writer that flips availability marks (chring.h,
 * "Availability"): every snapshot a reader takes is exactly one state the
 * writer published, members, tokens and marks together. The writer cycles
 * through a fixed table of down sets (one of them past the panic
 * threshold) on one ring; each state's answers were computed beforehand on
 * a ring of its own. A reader identifies a snapshot's state by its
 * availability digest, then checks its lookups, batch lookups, replicas
 * and CHR_NODE_DOWN flags against that state's answers, and its
 * fingerprint against the one fingerprint every state shares.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "conc_test.h"

enum {
    MEMBERS = 8,
    STATES = 6,
    READERS = 3,
    KEY_COUNT = 64,
    REPLICAS = 3,
};

/* Down sets, a bit per member. 0x1F: five of eight equal members, past the
 * default threshold of 50: panic, marks ignored. */
static const unsigned kDownSets[STATES] = {0x00, 0x01, 0x06, 0x81, 0x30, 0x1F};

static char ids[MEMBERS][8];
static char keys[KEY_COUNT][16];
static size_t key_lens[KEY_COUNT];

typedef struct answers {
    uint64_t digest;
    uint32_t owner[KEY_COUNT];
    uint32_t replicas[KEY_COUNT][REPLICAS];
    uint32_t flags[MEMBERS];
} answers;

static answers expected[STATES];
static uint64_t fingerprint;
static atomic_int stop;
static thread_failures failures = THREAD_FAILURES_INIT;

static chr_ring *members_ring(void) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = 16;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    static const char *const zones[] = {"a", "b", "c"};
    for (unsigned m = 0; m < MEMBERS; ++m)
        assert_chr_ok(chr_ring_add(ring, ids[m], strlen(ids[m]), 1, zones[m % 3], 1, m));
    return ring;
}

static chr_status set_state(chr_ring *ring, unsigned s) {
    const void *down[MEMBERS];
    size_t lens[MEMBERS], count = 0;
    for (unsigned m = 0; m < MEMBERS; ++m)
        if (kDownSets[s] >> m & 1) {
            down[count] = ids[m];
            lens[count++] = strlen(ids[m]);
        }
    return chr_ring_set_availability(ring, down, lens, count, CHR_PANIC_THRESHOLD_DEFAULT);
}

static void compute_expected(void) {
    for (unsigned s = 0; s < STATES; ++s) {
        chr_ring *ring = members_ring();
        assert_chr_ok(set_state(ring, s));
        chr_snapshot *snap = NULL;
        assert_chr_ok(chr_ring_snapshot(ring, &snap));
        chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
        assert_chr_ok(chr_snapshot_availability(snap, &info));
        expected[s].digest = info.digest;
        assert_int_equal(info.panic, s == STATES - 1);
        for (size_t k = 0; k < KEY_COUNT; ++k) {
            chr_node_view v[REPLICAS];
            size_t count = 0;
            assert_chr_ok(chr_snapshot_replicas_policy(snap, keys[k], key_lens[k], CHR_REPLICAS_ZONES_FIRST,
                                                       REPLICAS, v, &count));
            assert_int_equal(count, REPLICAS);
            for (size_t i = 0; i < REPLICAS; ++i) expected[s].replicas[k][i] = v[i].index;
            assert_chr_ok(chr_snapshot_lookup(snap, keys[k], key_lens[k], v));
            expected[s].owner[k] = v[0].index;
        }
        for (uint32_t m = 0; m < MEMBERS; ++m) {
            chr_node_view v;
            assert_chr_ok(chr_snapshot_node(snap, m, &v));
            expected[s].flags[m] = v.flags;
        }
        uint64_t fp;
        assert_chr_ok(chr_snapshot_fingerprint(snap, &fp));
        if (s == 0) fingerprint = fp;
        assert_int_equal(fp, fingerprint);
        for (unsigned t = 0; t < s; ++t) assert_true(expected[t].digest != expected[s].digest);
        chr_snapshot_release(snap);
        chr_ring_free(ring);
    }
}

/* One snapshot checked against the state its digest names. */
static void check_snapshot(const chr_snapshot *snap) {
    chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
    if (chr_snapshot_availability(snap, &info) != CHR_OK) {
        thread_failure(&failures, "chr_snapshot_availability: %s", chr_last_error());
        return;
    }
    int s = -1;
    for (int t = 0; t < STATES; ++t)
        if (expected[t].digest == info.digest) s = t;
    if (s < 0) {
        thread_failure(&failures, "digest 0x%016llx is no published state's", (unsigned long long)info.digest);
        return;
    }
    const answers *a = &expected[s];
    uint64_t fp = 0;
    if (chr_snapshot_fingerprint(snap, &fp) != CHR_OK || fp != fingerprint)
        thread_failure(&failures, "state %d: fingerprint 0x%016llx", s, (unsigned long long)fp);
    const void *batch_keys[KEY_COUNT];
    uint32_t batch[KEY_COUNT];
    for (size_t k = 0; k < KEY_COUNT; ++k) batch_keys[k] = keys[k];
    if (chr_snapshot_lookup_batch(snap, batch_keys, key_lens, KEY_COUNT, batch) != CHR_OK) {
        thread_failure(&failures, "chr_snapshot_lookup_batch: %s", chr_last_error());
        return;
    }
    for (size_t k = 0; k < KEY_COUNT; ++k) {
        chr_node_view v[REPLICAS];
        size_t count = 0;
        if (chr_snapshot_lookup(snap, keys[k], key_lens[k], v) != CHR_OK || v[0].index != a->owner[k] ||
            v[0].flags != a->flags[v[0].index] || batch[k] != a->owner[k]) {
            thread_failure(&failures, "state %d key %zu: owner %u (batch %u), want %u", s, k, v[0].index,
                           batch[k], a->owner[k]);
            return;
        }
        if (chr_snapshot_replicas_policy(snap, keys[k], key_lens[k], CHR_REPLICAS_ZONES_FIRST, REPLICAS, v,
                                         &count) != CHR_OK || count != REPLICAS) {
            thread_failure(&failures, "state %d key %zu: replicas failed", s, k);
            return;
        }
        for (size_t i = 0; i < REPLICAS; ++i)
            if (v[i].index != a->replicas[k][i]) {
                thread_failure(&failures, "state %d key %zu: replica %zu is %u, want %u", s, k, i, v[i].index,
                               a->replicas[k][i]);
                return;
            }
    }
}

typedef struct reader_arg {
    chr_ring *ring;
    unsigned long snapshots;
} reader_arg;

static void *reader(void *p) {
    reader_arg *arg = p;
    while (!atomic_load(&stop)) {
        chr_snapshot *snap = NULL;
        if (chr_ring_snapshot(arg->ring, &snap) != CHR_OK) {
            thread_failure(&failures, "chr_ring_snapshot: %s", chr_last_error());
            break;
        }
        check_snapshot(snap);
        chr_snapshot_release(snap);
        /* The ring's own lookup: one of the states' answers. */
        chr_node_ref ref;
        if (chr_ring_lookup(arg->ring, keys[0], key_lens[0], &ref) != CHR_OK) {
            thread_failure(&failures, "chr_ring_lookup: %s", chr_last_error());
            break;
        }
        int known = 0;
        for (int s = 0; s < STATES; ++s) known |= expected[s].owner[0] == ref.index;
        if (!known) thread_failure(&failures, "chr_ring_lookup: owner %u is no state's", ref.index);
        ++arg->snapshots;
    }
    return NULL;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_readers_see_one_state(void **state) {
    (void)state;
    for (unsigned m = 0; m < MEMBERS; ++m) snprintf(ids[m], sizeof ids[m], "node-%u", m);
    for (size_t k = 0; k < KEY_COUNT; ++k) key_lens[k] = (size_t)snprintf(keys[k], sizeof keys[k], "key-%zu", k);
    compute_expected();

    chr_ring *ring = members_ring();
    reader_arg args[READERS];
    pthread_t threads[READERS];
    for (int r = 0; r < READERS; ++r) {
        args[r] = (reader_arg){ring, 0};
        assert_int_equal(pthread_create(&threads[r], NULL, reader, &args[r]), 0);
    }
    /* The writer: every state in turn, by whole states and by single
     * marks (chr_ring_set_down from state 1 to state 0 and back). */
    const double end = now_seconds() + stress_seconds();
    unsigned long flips = 0;
    for (unsigned s = 0; now_seconds() < end; s = (s + 1) % STATES, ++flips) {
        assert_chr_ok(set_state(ring, s));
        if (s == 1) {
            assert_chr_ok(chr_ring_set_down(ring, ids[0], strlen(ids[0]), 0));
            assert_chr_ok(chr_ring_set_down(ring, ids[0], strlen(ids[0]), 1));
        }
    }
    atomic_store(&stop, 1);
    unsigned long snapshots = 0;
    for (int r = 0; r < READERS; ++r) {
        assert_int_equal(pthread_join(threads[r], NULL), 0);
        snapshots += args[r].snapshots;
    }
    print_message("%lu flips, %lu snapshots checked\n", flips, snapshots);
    assert_no_thread_failures(&failures);
    assert_true(flips > 0 && snapshots > 0);
    chr_ring_free(ring);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers_see_one_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
