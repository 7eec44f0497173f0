/*
 * A ring small enough to check by hand. The hasher "by_hand" (registered
 * with chr_hasher_register) does not hash: it looks its input up in the
 * table below, so every token and every key sits where the table says and
 * each expectation of this file follows from reading it.
 *
 * Positions are in units of U = 2^60, one sixteenth of the 2^64 circle.
 * Three nodes A, B, C of weight 1 with 3 tokens each (tokens_per_weight 3),
 * named "<id>#<i>" as the ring derives them:
 *
 *     position  0    1    2    3    4    5    6    7    8    9   ...   16=0
 *     token          A#0  B#0  C#0  A#1  B#1  C#1  A#2  B#2  C#2
 *
 * A key belongs to the first token at or after its position, wrapping from
 * the top of the circle to A#0. The keys:
 *
 *     key          position   owner   3 replicas (walk on, skip seen nodes)
 *     "before"     0.5        A       A B C
 *     "on-a0"      1          A       A B C    (at a token: that token)
 *     "past-a0"    1 + 2^-60  B       B C A
 *     "mid"        5.5        C       C A B    (C#1 at 6)
 *     "past-b1"    4.5        B       B C A    (B#1 at 5)
 *     "top"        9.5        A       A B C    (wraps to A#0)
 *     "late"       11         A       A B C    (wraps to A#0)
 *     "c-side"     2.25       C       C A B    (C#0 at 3)
 *
 * Ownership is the sum of the arcs ending at a node's tokens: A#0's arc
 * runs from C#2 at 9 over the top to 1 (8 U), A#1's and A#2's are 1 U each,
 * so A owns 10/16; B and C own 3 x 1 U = 3/16 each.
 *
 * Adding D with D#0 at 2.5, D#1 at 10, D#2 at 12 takes the keys in (2, 2.5]
 * and in (9, 12]: "c-side" (2.25) and "top" (9.5) and "late" (11) move to D;
 * every other key stays. Then removing B gives B's keys to the next token
 * of another node: "past-a0" (1 + 2^-60) goes on to D#0 at 2.5, "past-b1"
 * (4.5) on to C#1 at 6.
 */
#include <string.h>

#include "test_util.h"

#define U (UINT64_C(1) << 60)

static const struct {
    const char *text;
    uint64_t position;
} positions[] = {
    /* tokens */
    {"A#0", 1 * U}, {"A#1", 4 * U}, {"A#2", 7 * U},
    {"B#0", 2 * U}, {"B#1", 5 * U}, {"B#2", 8 * U},
    {"C#0", 3 * U}, {"C#1", 6 * U}, {"C#2", 9 * U},
    {"D#0", 2 * U + U / 2}, {"D#1", 10 * U}, {"D#2", 12 * U},
    /* keys */
    {"before", U / 2},
    {"on-a0", 1 * U},
    {"past-a0", 1 * U + 1},
    {"mid", 5 * U + U / 2},
    {"past-b1", 4 * U + U / 2},
    {"top", 9 * U + U / 2},
    {"late", 11 * U},
    {"c-side", 2 * U + U / 4},
};
#define POSITION_COUNT (sizeof positions / sizeof positions[0])

/* Inputs the table does not list: the test fails if there is any, since a
 * made-up position would make the expectations above meaningless. */
static unsigned long unlisted_inputs;

/* Ignores the seed, which a real hasher must mix in: this one only serves
 * rings with seed 0. */
static uint64_t by_hand_hash(const void *data, size_t len, uint64_t seed) {
    (void)seed;
    for (size_t i = 0; i < POSITION_COUNT; ++i)
        if (strlen(positions[i].text) == len && memcmp(positions[i].text, data, len) == 0)
            return positions[i].position;
    __atomic_add_fetch(&unlisted_inputs, 1, __ATOMIC_RELAXED);
    return 0;
}

static const chr_hasher by_hand_hasher = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "by_hand",
    "positions from the table in tests/core/test_by_hand.c", by_hand_hash, 0, NULL, 0,
};

/* The keys of the table in the comment above, in its order. */
static const char *const keys[] = {"before", "on-a0", "past-a0", "mid",
                                   "past-b1", "top", "late", "c-side"};
#define KEY_COUNT (sizeof keys / sizeof keys[0])

/* `owners` has one letter per key of `keys`, in order: "AABCBAAC" is the
 * owner column of the table. */
static void expect_owners(const chr_ring *ring, const char *owners) {
    assert_int_equal(strlen(owners), KEY_COUNT);
    for (size_t k = 0; k < KEY_COUNT; ++k) {
        chr_node_ref ref;
        assert_chr_ok(chr_ring_lookup(ring, keys[k], strlen(keys[k]), &ref));
        if (ref.id_len != 1 || ref.id[0] != (unsigned char)owners[k])
            fail_msg("key \"%s\": owner \"%.*s\", the table says \"%c\"", keys[k],
                     (int)ref.id_len, (const char *)ref.id, owners[k]);
    }
}

/* `ids` is the expected replica list, one letter per node ("BCA"). */
static void expect_replicas(const chr_ring *ring, const char *key, const char *ids) {
    chr_node_ref refs[4];
    size_t count = 0;
    assert_chr_ok(chr_ring_replicas(ring, key, strlen(key), strlen(ids), refs, &count));
    assert_int_equal(count, strlen(ids));
    for (size_t i = 0; i < count; ++i)
        if (refs[i].id_len != 1 || refs[i].id[0] != (unsigned char)ids[i])
            fail_msg("key \"%s\": replica %zu is \"%.*s\", the table says \"%c\" (of %s)", key, i,
                     (int)refs[i].id_len, (const char *)refs[i].id, ids[i], ids);
}

static void expect_ownership(const chr_ring *ring, const char *id, double sixteenths) {
    double fraction = -1;
    assert_chr_ok(chr_ring_ownership(ring, id, strlen(id), &fraction));
    assert_float_equal(fraction, sixteenths / 16.0, 1e-12);
}

static int setup(void **state) {
    static int registered;
    if (!registered) {
        if (chr_hasher_register(&by_hand_hasher) != CHR_OK) return -1;
        registered = 1;
    }
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = "by_hand";
    opts.tokens_per_weight = 3;
    chr_ring *ring = NULL;
    if (chr_ring_new(&opts, &ring) != CHR_OK) return -1;
    for (const char *id = "ABC"; *id; ++id)
        if (chr_ring_add(ring, id, 1, 1, NULL, 0, (uint64_t)*id) != CHR_OK) return -1;
    unlisted_inputs = 0;
    *state = ring;
    return 0;
}

static int teardown(void **state) {
    chr_ring_free(*state);
    return 0;
}

static void expect_no_unlisted_input(void) {
    if (unlisted_inputs != 0)
        fail_msg("the hasher was asked for %lu inputs the table does not list", unlisted_inputs);
}

/* The sorted tokens are the table's nine, owned as the picture shows. */
static void test_tokens_are_the_table(void **state) {
    chr_ring *ring = *state;
    static const char owners[] = "ABCABCABC";
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    size_t count = 0;
    assert_chr_ok(chr_snapshot_token_count(snap, &count));
    assert_int_equal(count, 9);
    for (size_t i = 0; i < count; ++i) {
        uint64_t value = 0;
        uint32_t node = 0;
        chr_node_view view;
        assert_chr_ok(chr_snapshot_token(snap, i, &value, &node));
        assert_chr_ok(chr_snapshot_node(snap, node, &view));
        assert_int_equal(value, (i + 1) * U);
        assert_int_equal(view.id_len, 1);
        assert_int_equal(view.id[0], owners[i]);
    }
    chr_snapshot_release(snap);
    expect_no_unlisted_input();
}

static void test_owners(void **state) {
    chr_ring *ring = *state;
    expect_owners(ring, "AABCBAAC");
    expect_no_unlisted_input();
}

static void test_replicas(void **state) {
    chr_ring *ring = *state;
    /* the replica column of the table, key by key */
    static const char *const replicas[KEY_COUNT] = {"ABC", "ABC", "BCA", "CAB",
                                                    "BCA", "ABC", "ABC", "CAB"};
    for (size_t k = 0; k < KEY_COUNT; ++k) expect_replicas(ring, keys[k], replicas[k]);
    expect_replicas(ring, "mid", "CA"); /* fewer than all: the walk's first two */
    expect_no_unlisted_input();
}

static void test_ownership(void **state) {
    chr_ring *ring = *state;
    expect_ownership(ring, "A", 10);
    expect_ownership(ring, "B", 3);
    expect_ownership(ring, "C", 3);
    expect_no_unlisted_input();
}

/* Adding D takes "c-side", "top" and "late"; removing B then sends
 * "past-a0" to D and "past-b1" to C. */
static void test_add_then_remove(void **state) {
    chr_ring *ring = *state;
    assert_chr_ok(chr_ring_add(ring, "D", 1, 1, NULL, 0, 'D'));
    expect_owners(ring, "AABCBDDD");
    expect_replicas(ring, "c-side", "DCA"); /* D#0 2.5, C#0 3, A#1 4 */
    /* A#0's arc now starts at D#2 (12): 5 U; D owns 0.5 + 1 + 2 = 3.5 U. */
    expect_ownership(ring, "A", 7);
    expect_ownership(ring, "D", 3.5);
    expect_ownership(ring, "C", 2.5);

    assert_chr_ok(chr_ring_remove(ring, "B", 1));
    expect_owners(ring, "AADCCDDD");
    expect_replicas(ring, "past-b1", "CAD"); /* C#1 6, A#2 7, D#1 10 */
    expect_no_unlisted_input();
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tokens_are_the_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owners, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ownership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_then_remove, setup, teardown),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
