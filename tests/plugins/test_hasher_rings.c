/*
 * A ring built with each shipped hasher (chr_options.hasher) keeps the
 * core's guarantees: exact minimal disruption, and balance within a bound
 * derived for an ideal hash.
 *
 * Minimal disruption (exact): 20 nodes of weight 1 (160 tokens each),
 * 50,000 keys. Adding X moves keys only onto X; removing X moves only X's
 * keys; raising X's weight moves keys only onto X, lowering it only away
 * from X; undoing a change restores every owner. Zero collateral moves.
 *
 * Balance, under the ideal-hash model (the T = 20 x 160 = 3,200 token
 * positions independent and uniform on the circle):
 *  - ownership: a node's share is the sum of k = 160 of the T spacings of
 *    T uniform points, which is Beta(k, T - k): mean k/T = 1/20, variance
 *    s2 = k (T - k) / (T^2 (T + 1)), sd ~ 0.00385 (7.7% of the mean). The
 *    20 shares sum to 1, so D = (n - 1) / (n s2) * sum (share - 1/n)^2 is
 *    about chi-square with n - 1 = 19 degrees of freedom;
 *  - key counts: given the ring, where 50,000 keys land is multinomial with
 *    the nodes' shares, so X2 = sum (count - K share)^2 / (K share) is
 *    chi-square(19) when the hasher spreads keys uniformly. Checked with
 *    random binary keys and with sequential text keys "key:<n>", the case
 *    where weak hashers show it.
 * Bounds, per hasher (balance_bounds below):
 *  - derived: chi-square(19)'s 1 - 1e-4 quantile, 50.80, for D and for
 *    both X2. An ideal hash fails one of the 30 checks of the ten hashers
 *    with probability 3e-3. Every shipped hasher is held to it: crc32 and
 *    fnv1a place their value through MurmurHash3's fmix64, without which
 *    they measured D of 67, 379 and 1409 (CRC is linear, and FNV's last
 *    bytes barely reach the high bits that order the ring: token names
 *    differ only at the end). balance_bounds is where a hasher that could
 *    not meet the derived bound would carry measured bounds instead.
 * Ids and keys are fixed, so each run is deterministic. The measured
 * values are printed (plugins/README.md records them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hasher_catalog.h"
#include "test_util.h"

enum { NODES = 20, KEYS = 50000, TOKENS_PER_WEIGHT = 160 };
#define CHI2_19_QUANTILE_1E4 50.80 /* chi-square, 19 degrees of freedom, upper 1e-4 tail */
#define NEW_NODE NODES             /* the node number added by the tests */

/* ---- fixtures ----------------------------------------------------------- */

/* `count` keys "key:<n>" laid out as key_set_new() lays out random ones. */
static key_set *sequential_keys(size_t count) {
    enum { SLOT = 16 };
    key_set *set = calloc(1, sizeof *set);
    assert_non_null(set);
    set->count = count;
    set->keys = calloc(count, sizeof *set->keys);
    set->lens = calloc(count, sizeof *set->lens);
    set->bytes = malloc(count * SLOT);
    assert_non_null(set->keys);
    assert_non_null(set->lens);
    assert_non_null(set->bytes);
    for (size_t i = 0; i < count; ++i) {
        char *slot = (char *)set->bytes + i * SLOT;
        set->lens[i] = (size_t)snprintf(slot, SLOT, "key:%zu", i);
        set->keys[i] = slot;
    }
    return set;
}

typedef struct rings_fixture {
    key_set *random_keys;
    key_set *text_keys;
    uint64_t *original; /* owners before any change */
    uint64_t *before;
    uint64_t *after;
} rings_fixture;

static int setup(void **state) {
    rings_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->random_keys = key_set_new(KEYS, 0x5EED0F4A5ull);
    f->text_keys = sequential_keys(KEYS);
    f->original = calloc(KEYS, sizeof *f->original);
    f->before = calloc(KEYS, sizeof *f->before);
    f->after = calloc(KEYS, sizeof *f->after);
    assert_non_null(f->original);
    assert_non_null(f->before);
    assert_non_null(f->after);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    rings_fixture *f = *state;
    key_set_free(f->random_keys);
    key_set_free(f->text_keys);
    free(f->original);
    free(f->before);
    free(f->after);
    free(f);
    return 0;
}

static chr_ring *ring_for(const char *hasher) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = hasher;
    opts.tokens_per_weight = TOKENS_PER_WEIGHT;
    return ring_with_nodes(&opts, NODES, 1);
}

/* ---- minimal disruption -------------------------------------------------- */

typedef enum { ONTO_NODE, FROM_NODE } move_direction;

/* Fails on any key that moved other than onto `node` (ONTO_NODE) or away
 * from it (FROM_NODE); returns how many moved. */
static size_t moves_only(const char *hasher, const char *change, const uint64_t *before,
                         const uint64_t *after, uint64_t node, move_direction dir) {
    size_t moved = 0, collateral = 0;
    for (size_t k = 0; k < KEYS; ++k) {
        if (before[k] == after[k]) continue;
        ++moved;
        if ((dir == ONTO_NODE ? after[k] : before[k]) != node) ++collateral;
    }
    if (collateral)
        fail_msg("%s, %s: %zu of %zu moved keys are collateral", hasher, change, collateral, moved);
    return moved;
}

static size_t keys_owned_by(const uint64_t *owners, uint64_t node) {
    size_t n = 0;
    for (size_t k = 0; k < KEYS; ++k) n += owners[k] == node;
    return n;
}

static void check_restored(const char *hasher, const char *change, const rings_fixture *f) {
    if (memcmp(f->after, f->original, KEYS * sizeof *f->after) != 0)
        fail_msg("%s: undoing '%s' did not restore every owner", hasher, change);
}

static void minimal_disruption_with(rings_fixture *f, const char *hasher) {
    const key_set *keys = f->random_keys;
    chr_ring *ring = ring_for(hasher);
    owner_tags(ring, keys, f->original);

    /* add X: keys move only onto X, and X gets some */
    assert_chr_ok(add_node(ring, NEW_NODE, 1));
    owner_tags(ring, keys, f->after);
    size_t moved = moves_only(hasher, "add", f->original, f->after, NEW_NODE, ONTO_NODE);
    assert_true(moved > 0 && moved == keys_owned_by(f->after, NEW_NODE));
    /* remove X again: exactly the original owners */
    assert_chr_ok(remove_node(ring, NEW_NODE));
    owner_tags(ring, keys, f->after);
    check_restored(hasher, "add", f);

    /* remove node 7: only its keys move, all of them */
    assert_chr_ok(remove_node(ring, 7));
    owner_tags(ring, keys, f->after);
    moved = moves_only(hasher, "remove", f->original, f->after, 7, FROM_NODE);
    assert_int_equal(moved, keys_owned_by(f->original, 7));
    assert_true(moved > 0);
    assert_chr_ok(add_node(ring, 7, 1));
    owner_tags(ring, keys, f->after);
    check_restored(hasher, "remove", f);

    /* weight 1 -> 3: keys move only onto node 3; 3 -> 0: only away, all of them */
    assert_chr_ok(set_node_weight(ring, 3, 3));
    owner_tags(ring, keys, f->before);
    assert_true(moves_only(hasher, "raise weight", f->original, f->before, 3, ONTO_NODE) > 0);
    assert_chr_ok(set_node_weight(ring, 3, 0));
    owner_tags(ring, keys, f->after);
    moved = moves_only(hasher, "drain", f->before, f->after, 3, FROM_NODE);
    assert_int_equal(moved, keys_owned_by(f->before, 3));
    assert_int_equal(keys_owned_by(f->after, 3), 0);
    assert_chr_ok(set_node_weight(ring, 3, 1));
    owner_tags(ring, keys, f->after);
    check_restored(hasher, "reweight", f);

    chr_ring_free(ring);
}

/* ---- balance ------------------------------------------------------------- */

/* D of the header: the ownership dispersion, chi-square(19) for an ideal hash. */
static double ownership_statistic(const chr_ring *ring, double *min_share, double *max_share) {
    const double n = NODES, tokens = NODES * TOKENS_PER_WEIGHT, k = TOKENS_PER_WEIGHT;
    const double variance = k * (tokens - k) / (tokens * tokens * (tokens + 1));
    double sum_sq = 0;
    *min_share = 1;
    *max_share = 0;
    for (unsigned i = 0; i < NODES; ++i) {
        double share = node_ownership(ring, i);
        sum_sq += (share - 1 / n) * (share - 1 / n);
        if (share < *min_share) *min_share = share;
        if (share > *max_share) *max_share = share;
    }
    return (n - 1) / (n * variance) * sum_sq;
}

/* X2 of the header: key counts against the nodes' exact shares. */
static double key_count_statistic(const chr_ring *ring, const key_set *keys, uint64_t *owners) {
    owner_tags(ring, keys, owners);
    double x2 = 0;
    for (unsigned i = 0; i < NODES; ++i) {
        double expected = KEYS * node_ownership(ring, i);
        double diff = (double)keys_owned_by(owners, i) - expected;
        x2 += diff * diff / expected;
    }
    return x2;
}

typedef struct balance_bound {
    const char *hasher;
    double ownership_max;  /* bound on D */
    double text_keys_max;  /* bound on X2 for "key:<n>" keys */
    int exceeds_ideal;     /* documented: D is over the ideal-hash bound */
} balance_bound;

/* Every shipped hasher now meets the ideal-hash bounds (crc32 and fnv1a
 * once their ring value goes through fmix64: before, they measured D of
 * 67, 379 and 1409 against 50.80). A hasher that cannot would be listed here
 * with its measured bounds and exceeds_ideal = 1. */
static const balance_bound balance_bounds[] = {
    {"(none)", 0, 0, 0},
};

/* The hasher's bounds: the derived ones unless balance_bounds lists it. */
static balance_bound bound_for(const char *hasher) {
    for (size_t i = 0; i < sizeof balance_bounds / sizeof balance_bounds[0]; ++i)
        if (strcmp(balance_bounds[i].hasher, hasher) == 0) return balance_bounds[i];
    balance_bound ideal = {hasher, CHI2_19_QUANTILE_1E4, CHI2_19_QUANTILE_1E4, 0};
    return ideal;
}

static void balance_with(rings_fixture *f, const char *hasher) {
    const balance_bound bound = bound_for(hasher);
    chr_ring *ring = ring_for(hasher);
    double min_share, max_share;
    double d = ownership_statistic(ring, &min_share, &max_share);
    double x2_random = key_count_statistic(ring, f->random_keys, f->before);
    double x2_text = key_count_statistic(ring, f->text_keys, f->after);
    print_message("%-12s ownership D = %6.2f (shares %.4f..%.4f, %+5.1f%%..%+5.1f%% of 1/20); "
                  "keys X2 random = %6.2f, text = %6.2f\n",
                  hasher, d, min_share, max_share, (min_share * NODES - 1) * 100,
                  (max_share * NODES - 1) * 100, x2_random, x2_text);
    if (d > bound.ownership_max)
        fail_msg("%s: token ownership dispersion D = %.2f is over %.2f", hasher, d,
                 bound.ownership_max);
    if (bound.exceeds_ideal && d <= CHI2_19_QUANTILE_1E4)
        fail_msg("%s: D = %.2f now meets the ideal-hash bound: update plugins/README.md and "
                 "balance_bounds", hasher, d);
    if (x2_random > CHI2_19_QUANTILE_1E4)
        fail_msg("%s: random keys do not follow ownership (X2 %.2f, bound %.2f)", hasher, x2_random,
                 CHI2_19_QUANTILE_1E4);
    if (x2_text > bound.text_keys_max)
        fail_msg("%s: text keys do not follow ownership (X2 %.2f, bound %.2f)", hasher, x2_text,
                 bound.text_keys_max);
    chr_ring_free(ring);
}

/* ---- one test per hasher ---------------------------------------------------- */

#define HASHER_TESTS(name)                                                             \
    static void test_disruption_##name(void **state) { minimal_disruption_with(*state, #name); } \
    static void test_balance_##name(void **state) { balance_with(*state, #name); }

HASHER_TESTS(xxh3)
HASHER_TESTS(xxh64)
HASHER_TESTS(md5)
HASHER_TESTS(sha1)
HASHER_TESTS(murmur3_32)
HASHER_TESTS(murmur3_128)
HASHER_TESTS(fnv1a_32)
HASHER_TESTS(fnv1a_64)
HASHER_TESTS(crc32)
HASHER_TESTS(example_djb2)

#define HASHER_ENTRIES(name)                                                \
    cmocka_unit_test_setup_teardown(test_disruption_##name, setup, teardown), \
        cmocka_unit_test_setup_teardown(test_balance_##name, setup, teardown)

/* The table names every catalog hasher (hasher_catalog.c). */
static void test_every_shipped_hasher_is_covered(void **state) {
    (void)state;
    static const char *const covered[] = {"xxh3",       "xxh64",       "md5",      "sha1",
                                          "murmur3_32", "murmur3_128", "fnv1a_32", "fnv1a_64",
                                          "crc32",      "example_djb2"};
    assert_int_equal(catalog_count, sizeof covered / sizeof covered[0]);
    for (size_t i = 0; i < catalog_count; ++i) assert_string_equal(catalog[i].name, covered[i]);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_shipped_hasher_is_covered),
        HASHER_ENTRIES(xxh3),
        HASHER_ENTRIES(xxh64),
        HASHER_ENTRIES(md5),
        HASHER_ENTRIES(sha1),
        HASHER_ENTRIES(murmur3_32),
        HASHER_ENTRIES(murmur3_128),
        HASHER_ENTRIES(fnv1a_32),
        HASHER_ENTRIES(fnv1a_64),
        HASHER_ENTRIES(crc32),
        HASHER_ENTRIES(example_djb2),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
