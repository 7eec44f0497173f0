/*
 * Replicas: up to n distinct nodes, coordinator first, found by walking
 * clockwise from the key's successor and skipping tokens of nodes already
 * chosen; weight-0 nodes never chosen; n clamped to the nodes with tokens.
 * Checked against a plain reference walk over the chr_snapshot_token()
 * dump, on a ring of more than 32 nodes (the core switches strategy above
 * 32 replicas), through both the ring and the snapshot entry points.
 */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum {
    NODE_COUNT = 40,       /* > 32 */
    TOKENS_PER_WEIGHT = 40, /* keeps the reference walk, O(tokens) per key, quick */
    KEY_COUNT = 600,
    MAX_ASK = 1000,        /* far more than the ring has */
};

/* Every 8th node is drained (weight 0); the others weigh 1..3. */
static uint32_t weight_of(unsigned node) { return node % 8 == 0 ? 0 : 1 + node % 3; }

typedef struct replica_fixture {
    chr_ring *ring;
    chr_snapshot *snap;
    token_dump dump;
    size_t node_count;
    size_t with_tokens; /* nodes of weight > 0 */
    key_set *keys;
    chr_node_ref *refs;   /* MAX_ASK */
    chr_node_view *views; /* MAX_ASK */
    uint32_t *expected;   /* MAX_ASK */
} replica_fixture;

static replica_fixture *fixture_with(unsigned node_count, uint32_t tokens_per_weight) {
    replica_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = tokens_per_weight;
    f->ring = ring_with_nodes(&opts, 0, 0);
    for (unsigned n = 0; n < node_count; ++n) {
        assert_chr_ok(add_node(f->ring, n, weight_of(n)));
        f->with_tokens += weight_of(n) > 0;
    }
    f->node_count = node_count;
    assert_chr_ok(chr_ring_snapshot(f->ring, &f->snap));
    token_dump_take(f->snap, &f->dump);
    f->keys = key_set_new(KEY_COUNT, 0x4E91CA5ull + node_count);
    f->refs = calloc(MAX_ASK, sizeof *f->refs);
    f->views = calloc(MAX_ASK, sizeof *f->views);
    f->expected = calloc(MAX_ASK, sizeof *f->expected);
    assert_non_null(f->refs);
    assert_non_null(f->views);
    assert_non_null(f->expected);
    return f;
}

static replica_fixture *fixture_new(unsigned node_count) {
    return fixture_with(node_count, TOKENS_PER_WEIGHT);
}

static void fixture_free(replica_fixture *f) {
    chr_snapshot_release(f->snap);
    chr_ring_free(f->ring);
    token_dump_free(&f->dump);
    key_set_free(f->keys);
    free(f->refs);
    free(f->views);
    free(f->expected);
    free(f);
}

static int setup(void **state) {
    *state = fixture_new(NODE_COUNT);
    return 0;
}

static int teardown(void **state) {
    fixture_free(*state);
    return 0;
}

/* The reference: from the successor of H(key), walk every token once,
 * keeping each owner the first time it is met, until n are found. */
static size_t reference_replicas(const replica_fixture *f, size_t key, size_t n,
                                 uint32_t *out) {
    uint64_t h = 0;
    assert_chr_ok(chr_hasher_hash(CHR_DEFAULT_HASHER, f->keys->keys[key], f->keys->lens[key], 0, &h));
    unsigned char *chosen = calloc(f->node_count, 1);
    assert_non_null(chosen);
    size_t found = 0;
    size_t t = reference_successor(f->dump.values, f->dump.count, h);
    for (size_t steps = 0; steps < f->dump.count && found < n; ++steps, t = (t + 1) % f->dump.count) {
        const uint32_t owner = f->dump.owners[t];
        if (!chosen[owner]) out[found++] = owner;
        chosen[owner] = 1;
    }
    free(chosen);
    return found;
}

/* Snapshot and ring replicas of key `k` for `n`, both equal to the
 * reference walk; returns the count. */
static size_t check_against_reference(replica_fixture *f, size_t k, size_t n) {
    size_t from_snapshot = 0, from_ring = 0;
    const size_t expected = reference_replicas(f, k, n, f->expected);
    assert_chr_ok(chr_snapshot_replicas(f->snap, f->keys->keys[k], f->keys->lens[k], n, f->views,
                                        &from_snapshot));
    assert_chr_ok(chr_ring_replicas(f->ring, f->keys->keys[k], f->keys->lens[k], n, f->refs,
                                    &from_ring));
    assert_int_equal(from_snapshot, expected);
    assert_int_equal(from_ring, expected);
    for (size_t i = 0; i < expected; ++i) {
        assert_int_equal(f->views[i].index, f->expected[i]);
        assert_int_equal(f->refs[i].index, f->expected[i]);
        assert_int_equal(f->refs[i].id_len, f->views[i].id_len);
        assert_memory_equal(f->refs[i].id, f->views[i].id, f->views[i].id_len);
        assert_int_equal(f->refs[i].tag, f->views[i].tag);
    }
    return expected;
}

static void test_distinct_and_coordinator_first(void **state) {
    replica_fixture *f = *state;
    for (size_t k = 0; k < KEY_COUNT; ++k) {
        size_t count = 0;
        chr_node_ref owner;
        assert_chr_ok(chr_ring_lookup(f->ring, f->keys->keys[k], f->keys->lens[k], &owner));
        assert_chr_ok(chr_ring_replicas(f->ring, f->keys->keys[k], f->keys->lens[k], 5, f->refs,
                                        &count));
        assert_int_equal(count, 5);
        assert_int_equal(f->refs[0].index, owner.index);
        assert_int_equal(f->refs[0].tag, owner.tag);
        for (size_t i = 0; i < count; ++i)
            for (size_t j = 0; j < i; ++j) assert_true(f->refs[i].index != f->refs[j].index);
    }
}

/* n beyond the nodes with tokens gives exactly those nodes: every one of
 * them once, none of weight 0. */
static void test_clamped_to_nodes_with_tokens(void **state) {
    replica_fixture *f = *state;
    const size_t asks[] = {f->with_tokens, f->with_tokens + 1, NODE_COUNT, MAX_ASK};
    assert_true(f->with_tokens > 32);
    for (size_t a = 0; a < sizeof asks / sizeof asks[0]; ++a) {
        for (size_t k = 0; k < 20; ++k) {
            size_t count = 0;
            assert_chr_ok(chr_snapshot_replicas(f->snap, f->keys->keys[k], f->keys->lens[k],
                                                asks[a], f->views, &count));
            assert_int_equal(count, f->with_tokens);
            unsigned char chosen[NODE_COUNT] = {0};
            for (size_t i = 0; i < count; ++i) {
                assert_true(f->views[i].weight > 0);
                assert_true(f->views[i].tokens > 0);
                assert_int_equal(chosen[f->views[i].index], 0);
                chosen[f->views[i].index] = 1;
            }
        }
    }
}

static void test_weight_zero_never_chosen(void **state) {
    replica_fixture *f = *state;
    for (size_t k = 0; k < KEY_COUNT; ++k) {
        size_t count = 0;
        assert_chr_ok(chr_ring_replicas(f->ring, f->keys->keys[k], f->keys->lens[k], 3, f->refs,
                                        &count));
        for (size_t i = 0; i < count; ++i) assert_int_not_equal(weight_of((unsigned)f->refs[i].tag), 0);
    }
    /* A ring of one node with tokens and one without: always just the first. */
    chr_ring *ring = ring_with_nodes(NULL, 1, 1);
    assert_chr_ok(add_node(ring, 1, 0));
    size_t count = 0;
    assert_chr_ok(chr_ring_replicas(ring, "k", 1, 2, f->refs, &count));
    assert_int_equal(count, 1);
    assert_int_equal(f->refs[0].tag, 0);
    chr_ring_free(ring);
}

/* Below, at and above 32 replicas, for every key. */
static void test_matches_reference_walk(void **state) {
    replica_fixture *f = *state;
    const size_t asks[] = {1, 2, 3, 7, 31, 32, 33, 34, f->with_tokens, MAX_ASK};
    for (size_t a = 0; a < sizeof asks / sizeof asks[0]; ++a)
        for (size_t k = 0; k < KEY_COUNT; ++k) check_against_reference(f, k, asks[a]);
}

/* The many-replica path keeps per-thread scratch sized by node count:
 * alternating between rings of different sizes must not confuse it. */
static void test_alternating_rings_of_different_sizes(void **state) {
    replica_fixture *small = *state;
    replica_fixture *large = fixture_new(2 * NODE_COUNT + 7);
    for (size_t k = 0; k < 200; ++k) {
        assert_int_equal(check_against_reference(large, k, MAX_ASK), large->with_tokens);
        assert_int_equal(check_against_reference(small, k, MAX_ASK), small->with_tokens);
        check_against_reference(large, k, 33);
        check_against_reference(small, k, 33);
    }
    fixture_free(large);
}

/* Rings of 1 to 40 tokens, where a walk from a key's successor runs past
 * the last token (and round the whole ring) for most keys and n. */
static void test_small_rings_wrap(void **state) {
    (void)state;
    for (unsigned nodes = 1; nodes <= 9; ++nodes)
        for (uint32_t tpw = 1; tpw <= 4; ++tpw) {
            replica_fixture *f = fixture_with(nodes, tpw);
            if (f->with_tokens > 0)
                for (size_t k = 0; k < KEY_COUNT; ++k)
                    for (size_t n = 1; n <= f->with_tokens + 1; ++n) check_against_reference(f, k, n);
            fixture_free(f);
        }
}

/* A ring lookup copies its result out: ids that fit the record's short
 * copy (up to 24 bytes) and longer ones, with and without a zone, must come
 * out byte for byte as the snapshot shows them, through lookup and replicas. */
static void assert_ref_is_view(const chr_node_ref *ref, const chr_node_view *view) {
    assert_int_equal(ref->index, view->index);
    assert_int_equal(ref->tag, view->tag);
    assert_int_equal(ref->weight, view->weight);
    assert_int_equal(ref->tokens, view->tokens);
    assert_true(ref->ownership == view->ownership);
    assert_int_equal(ref->flags, 0);
    assert_int_equal(ref->id_len, view->id_len);
    assert_memory_equal(ref->id, view->id, view->id_len);
    assert_int_equal(ref->zone_len, view->zone_len);
    if (view->zone_len) assert_memory_equal(ref->zone, view->zone, view->zone_len);
}

static void test_refs_carry_long_ids_and_zones(void **state) {
    (void)state;
    static const size_t id_lens[] = {1, 23, 24, 25, 100, CHR_NODE_ID_MAX};
    static const size_t zone_lens[] = {0, 1, CHR_ZONE_MAX};
    chr_ring *ring = ring_with_nodes(NULL, 0, 0);
    unsigned char id[CHR_NODE_ID_MAX], zone[CHR_ZONE_MAX];
    uint64_t tag = 0;
    for (size_t i = 0; i < sizeof id_lens / sizeof id_lens[0]; ++i)
        for (size_t z = 0; z < sizeof zone_lens / sizeof zone_lens[0]; ++z, ++tag) {
            for (size_t b = 0; b < id_lens[i]; ++b) id[b] = (unsigned char)('a' + (b + tag) % 26);
            id[0] = (unsigned char)('A' + tag);  /* distinct ids */
            for (size_t b = 0; b < zone_lens[z]; ++b) zone[b] = (unsigned char)('0' + (b + tag) % 10);
            assert_chr_ok(chr_ring_add(ring, id, id_lens[i], 1 + (uint32_t)tag % 3, zone, zone_lens[z], tag));
        }
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    key_set *keys = key_set_new(KEY_COUNT, 0x10A6ull);
    chr_node_ref refs[3 * 6];
    chr_node_view view;
    for (size_t k = 0; k < keys->count; ++k) {
        assert_chr_ok(chr_ring_lookup(ring, keys->keys[k], keys->lens[k], &refs[0]));
        assert_chr_ok(chr_snapshot_lookup(snap, keys->keys[k], keys->lens[k], &view));
        assert_ref_is_view(&refs[0], &view);
        size_t count = 0;
        assert_chr_ok(chr_ring_replicas(ring, keys->keys[k], keys->lens[k], tag, refs, &count));
        assert_int_equal(count, tag);
        for (size_t i = 0; i < count; ++i) {
            assert_chr_ok(chr_snapshot_node(snap, refs[i].index, &view));
            assert_ref_is_view(&refs[i], &view);
        }
    }
    key_set_free(keys);
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_distinct_and_coordinator_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clamped_to_nodes_with_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weight_zero_never_chosen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matches_reference_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alternating_rings_of_different_sizes, setup, teardown),
        cmocka_unit_test(test_small_rings_wrap),
        cmocka_unit_test(test_refs_carry_long_ids_and_zones),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
