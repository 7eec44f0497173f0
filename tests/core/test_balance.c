/*
 * Load balance of the native placement: how much of the circle each node
 * owns (chr_ring_ownership, chr_ring_nodes().ownership), against what the
 * token count predicts, and against where keys actually land.
 *
 * The bound on one node's share, used throughout:
 *   T tokens at independent uniform positions cut the circle into T arcs
 *   with a Dirichlet(1, ..., 1) law; a node with V of the tokens owns the
 *   V arcs ending at them, a Beta(V, T - V) share with mean p = V/T and
 *       sd = sqrt(p (1 - p) / (T + 1))   (~ p / sqrt(V) when p is small).
 *   At 10 nodes x 160 tokens: p = 0.1, sd = 0.0075, relative sd 7.5%.
 *   We allow 4 sd. For a normal law that is a two-sided tail of 6.3e-5 per
 *   node, so ~6e-4 that any of 10 nodes falls outside; Beta(160, 1440) is
 *   close to normal (skewness 0.16). Ids, hasher and seed are fixed, so
 *   the test is deterministic: the bound justifies the numbers it checks,
 *   and a placement bug that skews shares by tens of percent fails it.
 * Keys against ownership: of K keys hashed independently of the tokens,
 *   the count landing on a node of share q is binomial, sd =
 *   sqrt(q (1 - q) / K) = 0.00067 at q = 0.1, K = 200,000; 4 sd again.
 */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

enum { KEY_COUNT = 200000, TOKENS_PER_WEIGHT = 160, NODE_COUNT = 10 };
#define SIGMAS 4.0
#define SUM_TOLERANCE 1e-9

typedef struct balance_fixture {
    chr_ring *ring;
    key_set *keys;
    uint64_t *owners; /* owner tag per key */
} balance_fixture;

static int setup(void **state) {
    balance_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->keys = key_set_new(KEY_COUNT, 0xBA1A4CEull);
    f->owners = calloc(KEY_COUNT, sizeof *f->owners);
    assert_non_null(f->owners);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    balance_fixture *f = *state;
    chr_ring_free(f->ring);
    key_set_free(f->keys);
    free(f->owners);
    free(f);
    return 0;
}

/* Nodes 0..NODE_COUNT-1 with the given weights, into the fixture. */
static chr_ring *build_ring(balance_fixture *f, const uint32_t weights[NODE_COUNT]) {
    chr_ring_free(f->ring);
    f->ring = ring_with_nodes(NULL, 0, 0);
    for (unsigned n = 0; n < NODE_COUNT; ++n) assert_chr_ok(add_node(f->ring, n, weights[n]));
    return f->ring;
}

static const uint32_t equal_weights[NODE_COUNT] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static const uint32_t two_and_one[NODE_COUNT] = {2, 1, 2, 1, 2, 1, 2, 1, 2, 1};

/* Beta(V, T - V) share bound from the top of this file. */
static double share_tolerance(double expected_share, size_t total_tokens) {
    return SIGMAS * sqrt(expected_share * (1 - expected_share) / (double)(total_tokens + 1));
}

/* Reads every member, checks each node's share against weight/total and
 * returns the sum of the shares. */
static double check_shares(const chr_ring *ring, const uint32_t weights[NODE_COUNT]) {
    chr_node_ref nodes[NODE_COUNT];
    size_t count = 0, total_tokens = 0;
    uint32_t total_weight = 0;
    assert_chr_ok(chr_ring_nodes(ring, nodes, NODE_COUNT, &count));
    assert_int_equal(count, NODE_COUNT);
    assert_chr_ok(chr_ring_token_count(ring, &total_tokens));
    for (unsigned n = 0; n < NODE_COUNT; ++n) total_weight += weights[n];

    double sum = 0;
    for (size_t i = 0; i < count; ++i) {
        const uint32_t weight = weights[nodes[i].tag];
        assert_int_equal(nodes[i].weight, weight);
        assert_int_equal(nodes[i].tokens, weight * TOKENS_PER_WEIGHT);
        const double expected = (double)weight / total_weight;
        const double tolerance = share_tolerance(expected, total_tokens);
        if (fabs(nodes[i].ownership - expected) > tolerance)
            print_error("node %u owns %.5f, expected %.5f +/- %.5f\n", (unsigned)nodes[i].tag,
                        nodes[i].ownership, expected, tolerance);
        assert_true(fabs(nodes[i].ownership - expected) <= tolerance);
        /* chr_ring_ownership reports the same number. */
        assert_true(node_ownership(ring, (unsigned)nodes[i].tag) == nodes[i].ownership);
        sum += nodes[i].ownership;
    }
    return sum;
}

static void test_equal_weights_within_bound(void **state) {
    balance_fixture *f = *state;
    chr_ring *ring = build_ring(f, equal_weights);
    double sum = check_shares(ring, equal_weights);
    assert_true(fabs(sum - 1.0) <= SUM_TOLERANCE);
}

/* Weight 2 nodes own about twice what weight 1 nodes own: each node within
 * its own bound (check_shares), and the ratio of the group means R =
 * S2 / S1 with S2 the weight-2 group's share. S2 is Beta(1600, 800) over
 * T = 2400 tokens: mean 2/3, sd sqrt((2/3)(1/3)/2401) = 0.0096; R = S2 /
 * (1 - S2) has dR/dS2 = 9 there, so sd(R) ~ 0.087 and 4 sd is 0.35. */
static void test_weight_two_owns_twice(void **state) {
    balance_fixture *f = *state;
    chr_ring *ring = build_ring(f, two_and_one);
    double sum = check_shares(ring, two_and_one);
    assert_true(fabs(sum - 1.0) <= SUM_TOLERANCE);

    double heavy = 0, light = 0;
    for (unsigned n = 0; n < NODE_COUNT; ++n)
        *(two_and_one[n] == 2 ? &heavy : &light) += node_ownership(ring, n);
    const double ratio = heavy / light; /* equal group sizes: the ratio of the means */
    assert_true(fabs(ratio - 2.0) <= SIGMAS * 0.087);
}

/* Shares add up to 1 in rings of every shape, weight-0 members own
 * nothing, and a lone node owns the whole circle. */
static void test_ownership_sums_to_one(void **state) {
    balance_fixture *f = *state;
    const uint32_t shapes[][NODE_COUNT] = {
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 0, 3, 0, 7, 1, 0, 2, 5, 1},
        {0, 0, 0, 0, 1, 0, 0, 0, 0, 0},
        {9, 1, 1, 1, 1, 1, 1, 1, 1, 40},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        chr_ring *ring = build_ring(f, shapes[s]);
        chr_node_ref nodes[NODE_COUNT];
        size_t count = 0;
        assert_chr_ok(chr_ring_nodes(ring, nodes, NODE_COUNT, &count));
        double sum = 0;
        size_t with_tokens = 0;
        for (size_t i = 0; i < count; ++i) {
            if (nodes[i].weight == 0)
                assert_true(nodes[i].ownership == 0.0);
            else
                assert_true(nodes[i].ownership > 0.0);
            with_tokens += nodes[i].weight > 0;
            sum += nodes[i].ownership;
        }
        assert_true(fabs(sum - 1.0) <= SUM_TOLERANCE);
        if (with_tokens == 1) assert_true(sum == 1.0); /* exactly: one node owns 2^64 of 2^64 */
    }
}

/* Ownership is the sum of the arcs (previous token, token] ending at a
 * node's tokens, token 0 owning the arc that wraps: recomputed here from
 * the token dump. */
static void test_ownership_is_sum_of_arcs(void **state) {
    balance_fixture *f = *state;
    chr_ring *ring = build_ring(f, two_and_one);
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    token_dump dump;
    token_dump_take(snap, &dump);
    assert_true(dump.count > 1);

    double arcs[NODE_COUNT] = {0};
    for (size_t t = 0; t < dump.count; ++t) {
        /* Unsigned wrap-around gives 2^64 - last + first for t == 0. */
        const uint64_t previous = dump.values[t == 0 ? dump.count - 1 : t - 1];
        arcs[dump.owners[t]] += (double)(uint64_t)(dump.values[t] - previous);
    }
    for (size_t i = 0; i < NODE_COUNT; ++i) {
        chr_node_view view;
        assert_chr_ok(chr_snapshot_node(snap, i, &view));
        const double from_arcs = arcs[i] * 0x1p-64;
        assert_true(fabs(view.ownership - from_arcs) <= 1e-12);
    }
    token_dump_free(&dump);
    chr_snapshot_release(snap);
}

/* Where keys land agrees with the owned fractions (binomial bound above). */
static void check_key_shares(balance_fixture *f, const uint32_t weights[NODE_COUNT]) {
    chr_ring *ring = build_ring(f, weights);
    owner_tags(ring, f->keys, f->owners);
    size_t landed[NODE_COUNT] = {0};
    for (size_t k = 0; k < KEY_COUNT; ++k) {
        assert_true(f->owners[k] < NODE_COUNT);
        ++landed[f->owners[k]];
    }
    for (unsigned n = 0; n < NODE_COUNT; ++n) {
        const double owned = node_ownership(ring, n);
        const double share = (double)landed[n] / KEY_COUNT;
        const double tolerance = SIGMAS * sqrt(owned * (1 - owned) / KEY_COUNT);
        if (fabs(share - owned) > tolerance)
            print_error("node %u: %.5f of the keys, owns %.5f (+/- %.5f)\n", n, share, owned,
                        tolerance);
        assert_true(fabs(share - owned) <= tolerance);
    }
}

static void test_key_share_matches_ownership(void **state) {
    check_key_shares(*state, equal_weights);
    check_key_shares(*state, two_and_one);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_equal_weights_within_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weight_two_owns_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ownership_sums_to_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ownership_is_sum_of_arcs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_share_matches_ownership, setup, teardown),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
