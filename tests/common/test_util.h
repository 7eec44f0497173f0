/*
 * test_util.h — helpers shared by the black-box suites (tests/common).
 *
 * The status assertions of chr_assert.h plus error assertions, a
 * deterministic PRNG, node and key generators, and plain reference
 * versions of what the ring computes (successor search over a token dump),
 * so that each suite states its property instead of re-deriving plumbing.
 */
#ifndef CHRING_TEST_UTIL_H
#define CHRING_TEST_UTIL_H

#include <stdio.h> /* snprintf, in assert_size_query */

#include "chr_assert.h" /* assert_chr_ok, assert_chr_status */

/* ---- error assertions --------------------------------------------------- */

/* Expects `expr` to fail with `expected` and to leave in chr_last_error() a
 * fresh message naming `function`. The message is overwritten with a
 * sentinel first, so a stale message from an earlier call cannot pass. */
#define assert_chr_error(expr, expected, function)                                 \
    (prime_last_error(function),                                                   \
     check_chr_error((expr), (expected), (function), #expr, __FILE__, __LINE__))

/* A size query (out NULL, capacity 0, chring.h's SIZE QUERIES): CHR_ERANGE
 * with the size, and chr_last_error() exactly as it was before the call. */
#define assert_size_query(expr)                                    \
    do {                                                           \
        char before_[512];                                         \
        prime_last_error("");                                      \
        snprintf(before_, sizeof before_, "%s", chr_last_error()); \
        assert_chr_status((expr), CHR_ERANGE);                     \
        assert_string_equal(chr_last_error(), before_);            \
    } while (0)

void check_chr_error(chr_status got, chr_status expected, const char *function, const char *expr,
                     const char *file, int line);
/* Makes some function other than `function` fail, so chr_last_error() holds
 * a message that does not name `function`. */
void prime_last_error(const char *function);
/* True if `text` names `function` as a whole word (not as a prefix of a
 * longer name such as chr_snapshot_lookup_batch). */
int names_function(const char *text, const char *function);

/* ---- deterministic PRNG (splitmix64) ------------------------------------ */

typedef struct test_rng {
    uint64_t state;
} test_rng;

test_rng rng_seeded(uint64_t seed);
uint64_t rng_next(test_rng *rng);
/* Uniform in 0..bound-1 (bound > 0), without modulo bias. */
uint64_t rng_below(test_rng *rng, uint64_t bound);
/* Fisher–Yates shuffle of `count` indices. */
void rng_shuffle(test_rng *rng, size_t *items, size_t count);
/* A bijective 64-bit mix (splitmix64's finalizer), for test hashers. */
uint64_t mix64(uint64_t x);

/* ---- nodes -------------------------------------------------------------- */

#define TEST_ID_BUF 32

/* Writes the id of test node `number` ("node-007") and returns its length. */
size_t node_id(unsigned number, char buf[TEST_ID_BUF]);
/* Adds test node `number` with that weight; its tag is `number`, so owners
 * can be compared across snapshots whose node indices differ. */
chr_status add_node(chr_ring *ring, unsigned number, uint32_t weight);
chr_status remove_node(chr_ring *ring, unsigned number);
chr_status set_node_weight(chr_ring *ring, unsigned number, uint32_t weight);
double node_ownership(const chr_ring *ring, unsigned number);
/* A new ring (opts may be NULL) holding nodes 0..count-1 of `weight`. */
chr_ring *ring_with_nodes(const chr_options *opts, unsigned count, uint32_t weight);

/* ---- keys --------------------------------------------------------------- */

/* `count` random keys of 4..20 bytes, reproducible from `seed`, laid out
 * as chr_snapshot_lookup_batch wants them. */
typedef struct key_set {
    size_t count;
    const void **keys;
    size_t *lens;
    unsigned char *bytes;
} key_set;

key_set *key_set_new(size_t count, uint64_t seed);
void key_set_free(key_set *set);

/* A ring, a snapshot of it, `count` keys and room for one owner index per
 * key: the fixture of the suites that read a snapshot many times. Takes the
 * ring; keyed_snapshot_free releases everything. */
typedef struct keyed_snapshot {
    chr_ring *ring;
    chr_snapshot *snap;
    key_set *keys;
    uint32_t *indices;
} keyed_snapshot;

keyed_snapshot *keyed_snapshot_new(chr_ring *ring, size_t count, uint64_t seed);
void keyed_snapshot_free(keyed_snapshot *f);

/* The tag of each key's owner in the ring's current snapshot. */
void owner_tags(const chr_ring *ring, const key_set *keys, uint64_t *tags);

/* ---- tokens ------------------------------------------------------------- */

typedef struct token_dump {
    size_t count;
    uint64_t *values;
    uint32_t *owners; /* node index per token */
} token_dump;

/* Every token of `snap`, in its order, through chr_snapshot_token(). */
void token_dump_take(const chr_snapshot *snap, token_dump *dump);
void token_dump_of_ring(const chr_ring *ring, token_dump *dump);
void token_dump_free(token_dump *dump);
/* Equal counts, values and owners. */
int token_dumps_equal(const token_dump *a, const token_dump *b);
/* The successor rule done plainly: the first index whose value is >= h,
 * wrapping to 0. Requires count > 0. */
size_t reference_successor(const uint64_t *values, size_t count, uint64_t h);

uint64_t ring_fingerprint(const chr_ring *ring);
size_t ring_node_count(const chr_ring *ring);

/* ---- suite runner ------------------------------------------------------- */

/* Runs a test table and ends the output with "N passed, N failed", N
 * counting the cases select_cases() left to run. */
#define run_core_tests(tests)                                   \
    run_test_table(#tests, (tests), sizeof(tests) / sizeof((tests)[0]), \
                   chr_selected_cases((tests), sizeof(tests) / sizeof((tests)[0])))
int run_test_table(const char *name, const struct CMUnitTest *tests, size_t count,
                   size_t selected);

#endif /* CHRING_TEST_UTIL_H */
