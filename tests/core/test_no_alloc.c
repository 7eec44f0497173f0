/*
 * test_no_alloc.c — lookups allocate nothing.
 *
 * The test executable interposes malloc/calloc/realloc/free (the C++
 * operator new of libchring ends in malloc too) and counts every call made
 * while `counting` is set. After one warm-up read per thread (its first read
 * registers the thread's reclamation slot; replicas beyond 32 size a
 * per-thread table once), every read path must make zero allocations:
 * chr_ring_lookup, chr_ring_replicas, chr_snapshot_lookup,
 * chr_snapshot_lookup_batch, chr_snapshot_replicas (small and large n),
 * chr_ring_fingerprint and the counts. Built only without sanitizers, which
 * bring their own allocator.
 */
#include <stdatomic.h> /* C11 atomics: the counters are bumped from any thread */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Atomic int counting;
static _Atomic long allocations;

void *malloc(size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&allocations, 1);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    if (atomic_load(&counting)) atomic_fetch_add(&allocations, 1);
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&allocations, 1);
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }

enum { NODES = 100, KEYS = 20000, MANY = 40 };

typedef keyed_snapshot fixture;

/* Result buffers, outside the stack frame of the reads (chr_node_ref is large). */
static chr_node_ref refs[MANY];
static chr_node_view views[MANY];

/* Every read path once per key; returns a checksum so nothing is optimised out. */
static uint64_t read_everything(fixture *f) {
    uint64_t sum = 0;
    size_t count = 0;
    for (size_t k = 0; k < f->keys->count; ++k) {
        const void *key = f->keys->keys[k];
        size_t len = f->keys->lens[k];
        assert_chr_ok(chr_ring_lookup(f->ring, key, len, &refs[0]));
        assert_chr_ok(chr_snapshot_lookup(f->snap, key, len, &views[0]));
        assert_chr_ok(chr_ring_replicas(f->ring, key, len, 3, refs, &count));
        assert_chr_ok(chr_snapshot_replicas(f->snap, key, len, 3, views, &count));
        sum += refs[0].tag + views[0].index + count;
    }
    /* More replicas than the inline table holds: the per-thread scratch path. */
    for (size_t k = 0; k < 100; ++k) {
        assert_chr_ok(chr_snapshot_replicas(f->snap, f->keys->keys[k], f->keys->lens[k], MANY,
                                            views, &count));
        assert_int_equal(count, MANY);
    }
    assert_chr_ok(chr_snapshot_lookup_batch(f->snap, f->keys->keys, f->keys->lens, f->keys->count,
                                            f->indices));
    uint64_t fp = 0;
    size_t nodes = 0, tokens = 0;
    assert_chr_ok(chr_ring_fingerprint(f->ring, &fp));
    assert_chr_ok(chr_ring_node_count(f->ring, &nodes));
    assert_chr_ok(chr_ring_token_count(f->ring, &tokens));
    return sum + f->indices[0] + fp + nodes + tokens;
}

static void test_reads_allocate_nothing(void **state) {
    fixture *f = *state;
    (void)read_everything(f); /* warm-up: this thread's slot, scratch table */
    atomic_store(&allocations, 0);
    atomic_store(&counting, 1);
    uint64_t sum = read_everything(f);
    atomic_store(&counting, 0);
    assert_true(sum != 0);
    assert_int_equal(atomic_load(&allocations), 0);
}

/* The counter itself works: an update allocates (a new snapshot). */
static void test_counter_sees_allocations(void **state) {
    fixture *f = *state;
    atomic_store(&allocations, 0);
    atomic_store(&counting, 1);
    assert_chr_ok(add_node(f->ring, NODES + 1, 1));
    atomic_store(&counting, 0);
    assert_true(atomic_load(&allocations) > 0);
}

static int setup(void **state) {
    *state = keyed_snapshot_new(ring_with_nodes(NULL, NODES, 1), KEYS, 99);
    return 0;
}

static int teardown(void **state) {
    keyed_snapshot_free(*state);
    return 0;
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_allocate_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counter_sees_allocations, setup, teardown),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
