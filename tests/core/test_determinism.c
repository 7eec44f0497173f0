/*
 * Determinism of the native placement: the same options and membership
 * give the byte-identical token array and the same fingerprint whatever
 * the order of the calls that built them; anything that changes routing
 * changes the fingerprint; equal token values (forced with a 16-value
 * test hasher) are ordered by node id bytes; and the token values are
 * exactly H(id "#" i) with the ring's seed, H = XXH3 checked against
 * libxxhash itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "test_util.h"

/* ---- membership described as data ------------------------------------- */

typedef struct node_spec {
    const char *id;
    size_t id_len;
    uint32_t weight;
} node_spec;

#define SPEC(literal, weight) {literal, sizeof(literal) - 1, weight}

/* Ids chosen to trip byte order: prefixes, embedded NUL, bytes >= 0x80
 * (which a signed-char comparison would put first), upper case. */
static const node_spec tricky_nodes[] = {
    SPEC("a", 1),          SPEC("a\0", 2),      SPEC("a\0b", 1),   SPEC("ab", 1),
    SPEC("b", 3),          SPEC("\xff", 1),     SPEC("\x80x", 2),  SPEC("\x7f", 1),
    SPEC("A", 1),          SPEC("node-001", 1), SPEC("node-01", 2), SPEC("node-1", 1),
    SPEC("cache:11211", 4), SPEC("z", 0),       SPEC("\x01", 1),   SPEC("zz", 2),
};
#define TRICKY_COUNT (sizeof tricky_nodes / sizeof tricky_nodes[0])

static int compare_ids(const void *a, size_t a_len, const void *b, size_t b_len) {
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    if (c) return c;
    return (a_len > b_len) - (a_len < b_len);
}

/* Every ring a test makes is kept here and freed by teardown, also when
 * an assertion ends the test early. */
typedef struct ring_pool {
    chr_ring *rings[24];
    size_t count;
} ring_pool;

static int setup(void **state) {
    ring_pool *pool = calloc(1, sizeof *pool);
    assert_non_null(pool);
    *state = pool;
    return 0;
}

static int teardown(void **state) {
    ring_pool *pool = *state;
    for (size_t i = 0; i < pool->count; ++i) chr_ring_free(pool->rings[i]);
    free(pool);
    return 0;
}

static chr_ring *pooled(ring_pool *pool, chr_ring *ring) {
    assert_true(pool->count < sizeof pool->rings / sizeof pool->rings[0]);
    pool->rings[pool->count++] = ring;
    return ring;
}

/* A node's zone: a prefix of "zone" that depends on its id alone (zones
 * enter the fingerprint, so a node keeps its zone in every ring here). */
static size_t zone_len_of(const void *id, size_t id_len) {
    (void)id;
    return id_len % 5;
}

/* A ring of `specs`, added in the order given by `order` (NULL = as listed);
 * tags vary with the position, since they are not placement. */
static chr_ring *ring_in_order(ring_pool *pool, const chr_options *opts, const node_spec *specs,
                               size_t count, const size_t *order) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(opts, &ring));
    pooled(pool, ring);
    for (size_t k = 0; k < count; ++k) {
        const node_spec *s = &specs[order ? order[k] : k];
        assert_chr_ok(chr_ring_add(ring, s->id, s->id_len, s->weight, "zone",
                                   zone_len_of(s->id, s->id_len), k));
    }
    return ring;
}

static size_t *identity_order(size_t count) {
    size_t *order = calloc(count, sizeof *order);
    assert_non_null(order);
    for (size_t i = 0; i < count; ++i) order[i] = i;
    return order;
}

/* Same fingerprint, same token array, same node table. */
static void assert_same_placement(const chr_ring *a, const chr_ring *b) {
    assert_int_equal(ring_fingerprint(a), ring_fingerprint(b));
    token_dump da, db;
    token_dump_of_ring(a, &da);
    token_dump_of_ring(b, &db);
    assert_true(token_dumps_equal(&da, &db));
    token_dump_free(&da);
    token_dump_free(&db);

    size_t na = ring_node_count(a), nb = ring_node_count(b), count = 0;
    assert_int_equal(na, nb);
    chr_node_ref *ra = calloc(na + 1, sizeof *ra), *rb = calloc(nb + 1, sizeof *rb);
    assert_non_null(ra);
    assert_non_null(rb);
    assert_chr_ok(chr_ring_nodes(a, ra, na, &count));
    assert_chr_ok(chr_ring_nodes(b, rb, nb, &count));
    for (size_t i = 0; i < na; ++i) {
        assert_int_equal(ra[i].id_len, rb[i].id_len);
        assert_memory_equal(ra[i].id, rb[i].id, ra[i].id_len);
        assert_int_equal(ra[i].weight, rb[i].weight);
        assert_int_equal(ra[i].tokens, rb[i].tokens);
        assert_true(ra[i].ownership == rb[i].ownership);
    }
    free(ra);
    free(rb);
}

/* ---- order independence ------------------------------------------------ */

static void test_insertion_order_irrelevant(void **state) {
    ring_pool *pool = *state;
    chr_ring *reference = ring_in_order(pool, NULL, tricky_nodes, TRICKY_COUNT, NULL);
    size_t *order = identity_order(TRICKY_COUNT);
    test_rng rng = rng_seeded(0x0D3E5ull);
    for (int round = 0; round < 8; ++round) {
        rng_shuffle(&rng, order, TRICKY_COUNT);
        chr_ring *shuffled = ring_in_order(pool, NULL, tricky_nodes, TRICKY_COUNT, order);
        assert_same_placement(reference, shuffled);
    }
    free(order);
}

static void test_remove_then_readd(void **state) {
    ring_pool *pool = *state;
    chr_ring *reference = ring_in_order(pool, NULL, tricky_nodes, TRICKY_COUNT, NULL);
    chr_ring *ring = ring_in_order(pool, NULL, tricky_nodes, TRICKY_COUNT, NULL);
    const uint64_t original = ring_fingerprint(ring);

    for (size_t k = 0; k < TRICKY_COUNT; k += 3) {
        const node_spec *s = &tricky_nodes[k];
        assert_chr_ok(chr_ring_remove(ring, s->id, s->id_len));
        assert_true(ring_fingerprint(ring) != original);
        assert_chr_ok(chr_ring_add(ring, s->id, s->id_len, s->weight, "zone",
                                   zone_len_of(s->id, s->id_len), 99));
        assert_same_placement(reference, ring);

        assert_chr_ok(chr_ring_set_weight(ring, s->id, s->id_len, s->weight + 5));
        assert_true(ring_fingerprint(ring) != original);
        assert_chr_ok(chr_ring_set_weight(ring, s->id, s->id_len, s->weight));
        assert_same_placement(reference, ring);
    }
}

/* One chr_ring_apply of a mixed batch equals the same changes one by one,
 * and both equal a ring built straight to the final membership. */
static void test_batch_equals_one_by_one(void **state) {
    ring_pool *pool = *state;
    chr_change changes[TRICKY_COUNT + 4];
    size_t n = 0;
    for (size_t k = 0; k < TRICKY_COUNT; ++k)
        changes[n++] = (chr_change){CHR_OP_ADD, tricky_nodes[k].weight, tricky_nodes[k].id,
                                    tricky_nodes[k].id_len, "zone",
                                    zone_len_of(tricky_nodes[k].id, tricky_nodes[k].id_len), k};
    changes[n++] = (chr_change){CHR_OP_REMOVE, 0, "ab", 2, NULL, 0, 0};
    changes[n++] = (chr_change){CHR_OP_SET_WEIGHT, 7, "b", 1, NULL, 0, 0};
    changes[n++] = (chr_change){CHR_OP_SET_WEIGHT, 1, "z", 1, NULL, 0, 0};
    changes[n++] = (chr_change){CHR_OP_ADD, 2, "late", 4, "zone", zone_len_of("late", 4), 0};

    chr_ring *batched = pooled(pool, ring_with_nodes(NULL, 0, 0));
    size_t failed_index = 0;
    assert_chr_ok(chr_ring_apply(batched, changes, n, &failed_index));
    assert_int_equal(failed_index, n);

    chr_ring *one_by_one = pooled(pool, ring_with_nodes(NULL, 0, 0));
    for (size_t c = 0; c < n; ++c) assert_chr_ok(chr_ring_apply(one_by_one, &changes[c], 1, NULL));
    assert_same_placement(batched, one_by_one);

    node_spec final_nodes[TRICKY_COUNT + 1];
    size_t count = 0;
    for (size_t k = 0; k < TRICKY_COUNT; ++k) {
        node_spec s = tricky_nodes[k];
        if (compare_ids(s.id, s.id_len, "ab", 2) == 0) continue;
        if (compare_ids(s.id, s.id_len, "b", 1) == 0) s.weight = 7;
        if (compare_ids(s.id, s.id_len, "z", 1) == 0) s.weight = 1;
        final_nodes[count++] = s;
    }
    final_nodes[count++] = (node_spec){"late", 4, 2};
    size_t *reversed = identity_order(count);
    for (size_t i = 0; i < count; ++i) reversed[i] = count - 1 - i;
    chr_ring *direct = ring_in_order(pool, NULL, final_nodes, count, reversed);
    assert_same_placement(batched, direct);

    free(reversed);
}

/* ---- the fingerprint tells placements apart ---------------------------- */

static uint64_t other_hash(const void *data, size_t len, uint64_t seed) {
    return XXH3_64bits_withSeed(data, len, seed) ^ 0x5555555555555555ull;
}

static void test_fingerprint_distinguishes(void **state) {
    ring_pool *pool = *state;
    static const chr_hasher other = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "test-other-xxh3",
                                     "xxh3 with its bits flipped", other_hash, 0, NULL, 0};
    assert_chr_ok(chr_hasher_register(&other));

    const node_spec base[] = {SPEC("alpha", 1), SPEC("beta", 2), SPEC("gamma", 1)};
    const node_spec renamed[] = {SPEC("alpha", 1), SPEC("beta", 2), SPEC("delta", 1)};
    const node_spec reweighted[] = {SPEC("alpha", 1), SPEC("beta", 3), SPEC("gamma", 1)};
    const node_spec drained[] = {SPEC("alpha", 1), SPEC("beta", 2), SPEC("gamma", 0)};
    const node_spec extra[] = {SPEC("alpha", 1), SPEC("beta", 2), SPEC("gamma", 1), SPEC("x", 1)};
    chr_options seeded = CHR_OPTIONS_INIT, denser = CHR_OPTIONS_INIT, hashed = CHR_OPTIONS_INIT;
    seeded.seed = 1;
    denser.tokens_per_weight = CHR_DEFAULT_TOKENS_PER_WEIGHT + 1;
    hashed.hasher = "test-other-xxh3";

    chr_ring *rings[] = {
        ring_in_order(pool, NULL, base, 3, NULL),       ring_in_order(pool, NULL, renamed, 3, NULL),
        ring_in_order(pool, NULL, reweighted, 3, NULL), ring_in_order(pool, NULL, drained, 3, NULL),
        ring_in_order(pool, NULL, extra, 4, NULL),      ring_in_order(pool, NULL, base, 2, NULL),
        ring_in_order(pool, &seeded, base, 3, NULL),    ring_in_order(pool, &denser, base, 3, NULL),
        ring_in_order(pool, &hashed, base, 3, NULL),    ring_in_order(pool, NULL, base, 0, NULL),
    };
    const size_t n = sizeof rings / sizeof rings[0];
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < i; ++j)
            if (ring_fingerprint(rings[i]) == ring_fingerprint(rings[j])) {
                print_error("rings %zu and %zu have the same fingerprint\n", j, i);
                fail();
            }

    /* Tags are metadata: a ring that differs only in them is equal. */
    chr_ring *retagged = pooled(pool, ring_with_nodes(NULL, 0, 0));
    for (size_t k = 3; k-- > 0;)
        assert_chr_ok(chr_ring_add(retagged, base[k].id, base[k].id_len, base[k].weight, "zone",
                                   zone_len_of(base[k].id, base[k].id_len), 1000 + k));
    assert_same_placement(rings[0], retagged);

    /* Zones place no token but steer the zone replica policies: the same
     * token array, another fingerprint (version 2). */
    chr_ring *rezoned = pooled(pool, ring_with_nodes(NULL, 0, 0));
    for (size_t k = 0; k < 3; ++k)
        assert_chr_ok(chr_ring_add(rezoned, base[k].id, base[k].id_len, base[k].weight, "other", 5, k));
    token_dump da, db;
    token_dump_of_ring(rings[0], &da);
    token_dump_of_ring(rezoned, &db);
    assert_true(token_dumps_equal(&da, &db));
    token_dump_free(&da);
    token_dump_free(&db);
    assert_true(ring_fingerprint(rings[0]) != ring_fingerprint(rezoned));
}

/* ---- forced collisions --------------------------------------------------- */

/* 16 possible values (0..15): most tokens collide, with tokens of other
 * nodes and of their own node. */
static uint64_t tiny_hash(const void *data, size_t len, uint64_t seed) {
    uint64_t h = 0xCBF29CE484222325ull ^ seed; /* FNV-1a, then mixed */
    for (size_t i = 0; i < len; ++i) h = (h ^ ((const unsigned char *)data)[i]) * 0x100000001B3ull;
    return mix64(h) & 15;
}

static const chr_hasher tiny_hasher = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "test-tiny16",
                                       "16 output values, to force collisions", tiny_hash, 0,
                                       NULL, 0};

enum { TINY_TOKENS_PER_WEIGHT = 12 };

typedef struct expected_token {
    uint64_t value;
    const node_spec *node;
} expected_token;

static int by_value_then_id(const void *pa, const void *pb) {
    const expected_token *a = pa, *b = pb;
    if (a->value != b->value) return a->value < b->value ? -1 : 1;
    return compare_ids(a->node->id, a->node->id_len, b->node->id, b->node->id_len);
}

/* Every token H(id "#" i) of `specs`, computed here, sorted by (value, id). */
static expected_token *expected_tokens(const node_spec *specs, size_t count, uint32_t per_weight,
                                       uint64_t (*hash)(const void *, size_t, uint64_t),
                                       uint64_t seed, size_t *total) {
    *total = 0;
    for (size_t k = 0; k < count; ++k) *total += (size_t)specs[k].weight * per_weight;
    expected_token *tokens = calloc(*total + 1, sizeof *tokens);
    assert_non_null(tokens);
    size_t t = 0;
    for (size_t k = 0; k < count; ++k) {
        for (uint32_t i = 0; i < specs[k].weight * per_weight; ++i) {
            char buf[CHR_NODE_ID_MAX + 16];
            memcpy(buf, specs[k].id, specs[k].id_len);
            int digits = snprintf(buf + specs[k].id_len, 16, "#%u", i);
            tokens[t].value = hash(buf, specs[k].id_len + (size_t)digits, seed);
            tokens[t++].node = &specs[k];
        }
    }
    qsort(tokens, *total, sizeof *tokens, by_value_then_id);
    return tokens;
}

/* The snapshot's tokens, value for value and owner id for owner id, equal
 * `expected`. */
static void assert_tokens_equal(const chr_ring *ring, const expected_token *expected, size_t total) {
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    token_dump dump;
    token_dump_take(snap, &dump);
    assert_int_equal(dump.count, total);
    for (size_t t = 0; t < total; ++t) {
        chr_node_view owner;
        assert_chr_ok(chr_snapshot_node(snap, dump.owners[t], &owner));
        assert_int_equal(dump.values[t], expected[t].value);
        assert_int_equal(owner.id_len, expected[t].node->id_len);
        assert_memory_equal(owner.id, expected[t].node->id, owner.id_len);
    }
    token_dump_free(&dump);
    chr_snapshot_release(snap);
}

/* The owner by the rules, without the ring: the first token in (value, id)
 * order whose value is >= h, wrapping to the first token. */
static const node_spec *reference_owner(const expected_token *tokens, size_t total, uint64_t h) {
    for (size_t t = 0; t < total; ++t)
        if (tokens[t].value >= h) return tokens[t].node;
    return tokens[0].node;
}

static void test_collisions_ordered_by_value_then_id(void **state) {
    ring_pool *pool = *state;
    assert_chr_ok(chr_hasher_register(&tiny_hasher));
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = "test-tiny16";
    opts.tokens_per_weight = TINY_TOKENS_PER_WEIGHT;
    opts.seed = 3;

    size_t total = 0;
    expected_token *expected = expected_tokens(tricky_nodes, TRICKY_COUNT, TINY_TOKENS_PER_WEIGHT,
                                               tiny_hash, opts.seed, &total);
    size_t *order = identity_order(TRICKY_COUNT);
    test_rng rng = rng_seeded(0xC011DEull);
    key_set *keys = key_set_new(2000, 0x7E57ull);
    chr_ring *first = NULL;

    for (int round = 0; round < 6; ++round) {
        chr_ring *ring = ring_in_order(pool, &opts, tricky_nodes, TRICKY_COUNT, order);
        assert_tokens_equal(ring, expected, total);
        if (!first) {
            first = ring;
        } else {
            assert_same_placement(first, ring);
        }
        for (size_t k = 0; k < keys->count; ++k) {
            chr_node_ref owner;
            assert_chr_ok(chr_ring_lookup(ring, keys->keys[k], keys->lens[k], &owner));
            const node_spec *want =
                reference_owner(expected, total, tiny_hash(keys->keys[k], keys->lens[k], opts.seed));
            assert_int_equal(owner.id_len, want->id_len);
            assert_memory_equal(owner.id, want->id, want->id_len);
        }
        rng_shuffle(&rng, order, TRICKY_COUNT);
    }

    /* Node indices follow id byte order, so (value, node index) order is
     * (value, id) order. */
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(first, &snap));
    for (size_t i = 1; i < TRICKY_COUNT; ++i) {
        chr_node_view prev, cur;
        assert_chr_ok(chr_snapshot_node(snap, i - 1, &prev));
        assert_chr_ok(chr_snapshot_node(snap, i, &cur));
        assert_true(compare_ids(prev.id, prev.id_len, cur.id, cur.id_len) < 0);
    }
    chr_snapshot_release(snap);

    key_set_free(keys);
    free(order);
    free(expected);
}

/* ---- known answers ------------------------------------------------------- */

static uint64_t xxh3(const void *data, size_t len, uint64_t seed) {
    return XXH3_64bits_withSeed(data, len, seed);
}

/* chr_hasher_hash("xxh3") is XXH3_64bits_withSeed, for lengths that take
 * each of XXH3's code paths (0, 1-3, 4-8, 9-16, 17-128, 129-240, > 240). */
static void test_xxh3_known_answers(void **state) {
    (void)state;
    static unsigned char data[5000];
    for (size_t i = 0; i < sizeof data; ++i) data[i] = (unsigned char)(i * 131 + 7);
    const size_t lengths[] = {0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1000, 5000};
    const uint64_t seeds[] = {0, 1, 0x5EEDull, UINT64_MAX};
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; ++l)
        for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; ++s) {
            uint64_t got = 0;
            assert_chr_ok(chr_hasher_hash("xxh3", data, lengths[l], seeds[s], &got));
            assert_int_equal(got, XXH3_64bits_withSeed(data, lengths[l], seeds[s]));
        }

    /* Pinned, so that a change of xxHash itself would show: the empty input
     * (xxHash's own sanity value) and two ring-shaped inputs. */
    uint64_t got = 0;
    assert_chr_ok(chr_hasher_hash("xxh3", "", 0, 0, &got));
    assert_int_equal(got, 0x2D06800538D394C2ull);
    assert_chr_ok(chr_hasher_hash("xxh3", "node-000#0", 10, 0, &got));
    assert_int_equal(got, 0xC193044A0C5B6205ull);
    assert_chr_ok(chr_hasher_hash("xxh3", "user:42", 7, 0x5EED, &got));
    assert_int_equal(got, 0x80D2E667F070DF67ull);
}

/* The default ring's tokens are XXH3(id "#" i, seed) for i = 0 ..
 * weight * tokens_per_weight - 1, decimal i without padding (up to three
 * digits here), sorted by (value, id). */
static void test_tokens_are_xxh3_of_id_and_index(void **state) {
    ring_pool *pool = *state;
    chr_options opts = CHR_OPTIONS_INIT;
    opts.seed = 0x5EEDull;
    opts.tokens_per_weight = 37;
    size_t total = 0;
    expected_token *expected =
        expected_tokens(tricky_nodes, TRICKY_COUNT, 37, xxh3, opts.seed, &total);
    chr_ring *ring = ring_in_order(pool, &opts, tricky_nodes, TRICKY_COUNT, NULL);
    assert_tokens_equal(ring, expected, total);
    free(expected);
}

/* Token numbers of up to six digits (every carry from 9 to 100000 and the
 * step to a new digit), for an id whose names fit the inline hash's short
 * path and one whose names do not (over 32 bytes). */
static void test_long_token_numbers(void **state) {
    ring_pool *pool = *state;
    static const node_spec wide[] = {
        SPEC("n", 2),
        SPEC("an-id-that-is-longer-than-32-bytes-by-itself", 1),
    };
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = CHR_TOKENS_PER_WEIGHT_MAX;
    size_t total = 0;
    expected_token *expected = expected_tokens(wide, 2, CHR_TOKENS_PER_WEIGHT_MAX, xxh3, opts.seed, &total);
    chr_ring *ring = ring_in_order(pool, &opts, wide, 2, NULL);
    assert_tokens_equal(ring, expected, total);
    free(expected);
}

/* A compatibility placement ignores seed and tokens_per_weight: rings that
 * differ only in those route alike and fingerprint equal; a native ring
 * with the same members does not. */
static void test_compat_fingerprint_ignores_seed(void **state) {
    (void)state;
    static const int32_t compat[] = {CHR_PLACEMENT_KETAMA, CHR_PLACEMENT_KETAMA_UNWEIGHTED,
                                     CHR_PLACEMENT_NGINX};
    for (size_t p = 0; p < sizeof compat / sizeof compat[0]; ++p) {
        uint64_t prints[3];
        for (int v = 0; v < 3; ++v) {
            chr_options opts = CHR_OPTIONS_INIT;
            opts.placement = compat[p];
            opts.seed = v == 1 ? 12345 : 0;
            opts.tokens_per_weight = v == 2 ? 7 : CHR_DEFAULT_TOKENS_PER_WEIGHT;
            chr_ring *ring = ring_with_nodes(&opts, 4, 1);
            prints[v] = ring_fingerprint(ring);
            chr_ring_free(ring);
        }
        assert_int_equal(prints[0], prints[1]);
        assert_int_equal(prints[0], prints[2]);
    }
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_insertion_order_irrelevant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_then_readd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_equals_one_by_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fingerprint_distinguishes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collisions_ordered_by_value_then_id, setup, teardown),
        cmocka_unit_test(test_xxh3_known_answers),
        cmocka_unit_test(test_compat_fingerprint_ignores_seed),
        cmocka_unit_test_setup_teardown(test_tokens_are_xxh3_of_id_and_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_token_numbers, setup, teardown),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
