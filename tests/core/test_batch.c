/*
 * chr_ring_apply is all or nothing: one bad change, wherever it sits in
 * the batch, refuses the whole batch with that change's status and index
 * and leaves the ring exactly as it was; later changes see earlier ones;
 * the token limit is enforced over the batch; an empty batch is a no-op;
 * a batch costs the same in any id order and equals its changes one by one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { BASE_NODES = 5 };

typedef struct batch_fixture {
    chr_ring *ring; /* nodes 0..4, weight 1 */
    uint64_t fingerprint;
    size_t node_count;
    token_dump tokens;
    char ids[20][TEST_ID_BUF]; /* storage for the ids the changes point to */
} batch_fixture;

static int setup(void **state) {
    batch_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->ring = ring_with_nodes(NULL, BASE_NODES, 1);
    f->fingerprint = ring_fingerprint(f->ring);
    f->node_count = ring_node_count(f->ring);
    token_dump_of_ring(f->ring, &f->tokens);
    for (unsigned n = 0; n < 20; ++n) node_id(n, f->ids[n]);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    batch_fixture *f = *state;
    chr_ring_free(f->ring);
    token_dump_free(&f->tokens);
    free(f);
    return 0;
}

static void assert_ring_unchanged(const batch_fixture *f) {
    assert_int_equal(ring_fingerprint(f->ring), f->fingerprint);
    assert_int_equal(ring_node_count(f->ring), f->node_count);
    token_dump now;
    token_dump_of_ring(f->ring, &now);
    assert_true(token_dumps_equal(&now, &f->tokens));
    token_dump_free(&now);
}

static chr_change change(uint32_t op, const char *id, uint32_t weight) {
    chr_change c = {op, weight, id, id ? strlen(id) : 0, NULL, 0, 0};
    return c;
}

/* ---- one bad change ------------------------------------------------------ */

enum { VALID_COUNT = 5 };

/* Valid on the fixture's ring, in this order. */
static void valid_changes(const batch_fixture *f, chr_change out[VALID_COUNT]) {
    out[0] = change(CHR_OP_ADD, f->ids[10], 1);
    out[1] = change(CHR_OP_SET_WEIGHT, f->ids[1], 3);
    out[2] = change(CHR_OP_REMOVE, f->ids[2], 0);
    out[3] = change(CHR_OP_ADD, f->ids[11], 2);
    out[4] = change(CHR_OP_SET_WEIGHT, f->ids[10], 2);
}

typedef struct bad_change {
    const char *what; /* for the reader; the failure message shows the status */
    chr_change change;
    chr_status status;
} bad_change;

static void test_bad_change_anywhere_refuses_batch(void **state) {
    batch_fixture *f = *state;
    static unsigned char long_id[CHR_NODE_ID_MAX + 1];
    static char long_zone[CHR_ZONE_MAX + 1];
    memset(long_id, 'i', sizeof long_id);
    memset(long_zone, 'z', sizeof long_zone);

    bad_change bad[] = {
        {"remove of an unknown id", change(CHR_OP_REMOVE, f->ids[19], 0), CHR_ENOENT},
        {"weight of an unknown id", change(CHR_OP_SET_WEIGHT, f->ids[19], 2), CHR_ENOENT},
        {"duplicate add", change(CHR_OP_ADD, f->ids[0], 1), CHR_EEXIST},
        {"weight over the limit", change(CHR_OP_SET_WEIGHT, f->ids[3], CHR_WEIGHT_MAX + 1),
         CHR_ERANGE},
        {"unknown op", change(CHR_OP_SET_WEIGHT + 7, f->ids[3], 1), CHR_EINVAL},
        {"empty id", change(CHR_OP_ADD, "", 1), CHR_EINVAL},
        {"id over the limit", {CHR_OP_ADD, 1, long_id, sizeof long_id, NULL, 0, 0}, CHR_ERANGE},
        {"zone over the limit", {CHR_OP_ADD, 1, "zoned", 5, long_zone, sizeof long_zone, 0},
         CHR_ERANGE},
    };
    chr_change batch[VALID_COUNT + 1];

    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
        const size_t positions[] = {0, VALID_COUNT / 2, VALID_COUNT};
        for (size_t p = 0; p < 3; ++p) {
            const size_t at = positions[p];
            chr_change valid[VALID_COUNT];
            valid_changes(f, valid);
            for (size_t i = 0, v = 0; i <= VALID_COUNT; ++i)
                batch[i] = i == at ? bad[b].change : valid[v++];

            size_t failed_index = 1234;
            assert_chr_error(chr_ring_apply(f->ring, batch, VALID_COUNT + 1, &failed_index),
                             bad[b].status, "chr_ring_apply");
            assert_int_equal(failed_index, at);
            assert_ring_unchanged(f);
            /* Spot checks in terms of members: nothing before `at` happened. */
            double fraction = 0;
            assert_chr_status(chr_ring_ownership(f->ring, f->ids[10], strlen(f->ids[10]), &fraction),
                              CHR_ENOENT);
            assert_chr_ok(chr_ring_ownership(f->ring, f->ids[2], strlen(f->ids[2]), &fraction));
        }
    }

    /* The same batch without its bad change goes through, and failed_index
     * says so (count). */
    size_t failed_index = 0;
    valid_changes(f, batch);
    assert_chr_ok(chr_ring_apply(f->ring, batch, VALID_COUNT, &failed_index));
    assert_int_equal(failed_index, VALID_COUNT);
    assert_int_equal(ring_node_count(f->ring), BASE_NODES + 1);
}

/* ---- changes that see earlier ones -------------------------------------- */

static chr_node_ref member(const chr_ring *ring, const char *id) {
    chr_node_ref refs[BASE_NODES + 4];
    size_t count = 0;
    assert_chr_ok(chr_ring_nodes(ring, refs, BASE_NODES + 4, &count));
    for (size_t i = 0; i < count; ++i)
        if (refs[i].id_len == strlen(id) && memcmp(refs[i].id, id, refs[i].id_len) == 0)
            return refs[i];
    print_error("%s is not a member\n", id);
    fail();
    return refs[0];
}

static void test_add_then_remove_in_one_batch(void **state) {
    batch_fixture *f = *state;
    chr_change add_remove[2] = {change(CHR_OP_ADD, f->ids[12], 4),
                                change(CHR_OP_REMOVE, f->ids[12], 0)};
    assert_chr_ok(chr_ring_apply(f->ring, add_remove, 2, NULL));
    assert_ring_unchanged(f); /* same membership as before */

    chr_change remove_add[2] = {change(CHR_OP_REMOVE, f->ids[0], 0),
                                change(CHR_OP_ADD, f->ids[0], 2)};
    assert_chr_ok(chr_ring_apply(f->ring, remove_add, 2, NULL));
    assert_int_equal(member(f->ring, f->ids[0]).weight, 2);

    chr_change add_weigh_add[3] = {change(CHR_OP_ADD, f->ids[13], 1),
                                   change(CHR_OP_SET_WEIGHT, f->ids[13], 3),
                                   change(CHR_OP_ADD, f->ids[14], 0)};
    assert_chr_ok(chr_ring_apply(f->ring, add_weigh_add, 3, NULL));
    assert_int_equal(member(f->ring, f->ids[13]).weight, 3);
    assert_int_equal(member(f->ring, f->ids[13]).tokens, 3 * CHR_DEFAULT_TOKENS_PER_WEIGHT);
    assert_int_equal(member(f->ring, f->ids[14]).tokens, 0);

    /* Removing twice: the second sees the first and fails; nothing applies. */
    const uint64_t before = ring_fingerprint(f->ring);
    chr_change twice[2] = {change(CHR_OP_REMOVE, f->ids[13], 0), change(CHR_OP_REMOVE, f->ids[13], 0)};
    size_t failed_index = 0;
    assert_chr_error(chr_ring_apply(f->ring, twice, 2, &failed_index), CHR_ENOENT, "chr_ring_apply");
    assert_int_equal(failed_index, 1);
    assert_int_equal(ring_fingerprint(f->ring), before);

    /* Adding twice likewise. */
    chr_change add_twice[2] = {change(CHR_OP_ADD, f->ids[15], 1), change(CHR_OP_ADD, f->ids[15], 1)};
    assert_chr_error(chr_ring_apply(f->ring, add_twice, 2, &failed_index), CHR_EEXIST,
                     "chr_ring_apply");
    assert_int_equal(failed_index, 1);
    assert_int_equal(ring_fingerprint(f->ring), before);
}

/* ---- the token limit ----------------------------------------------------- */

/* With 65536 tokens per weight, 256 weight units are CHR_TOKENS_MAX. */
static void test_token_overflow_refuses_batch(void **state) {
    batch_fixture *f = *state;
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = CHR_TOKENS_PER_WEIGHT_MAX;
    chr_ring_free(f->ring);
    f->ring = ring_with_nodes(&opts, 1, 1); /* node-000: 65536 tokens */
    const uint64_t before = ring_fingerprint(f->ring);

    /* 1 + 1 + 1 + 254 = 257 units: refused at the change that crosses. */
    chr_change over[3] = {change(CHR_OP_ADD, f->ids[1], 1), change(CHR_OP_ADD, f->ids[2], 1),
                          change(CHR_OP_ADD, f->ids[3], 254)};
    size_t failed_index = 0;
    assert_chr_error(chr_ring_apply(f->ring, over, 3, &failed_index), CHR_ERANGE, "chr_ring_apply");
    assert_int_equal(failed_index, 2);
    assert_int_equal(ring_fingerprint(f->ring), before);
    assert_int_equal(ring_node_count(f->ring), 1);

    /* Raising an existing node over the limit, too. */
    chr_change raise[2] = {change(CHR_OP_ADD, f->ids[1], 0), change(CHR_OP_SET_WEIGHT, f->ids[0], 257)};
    assert_chr_error(chr_ring_apply(f->ring, raise, 2, &failed_index), CHR_ERANGE, "chr_ring_apply");
    assert_int_equal(failed_index, 1);
    assert_int_equal(ring_fingerprint(f->ring), before);

    /* The limit itself is allowed: reaching exactly 256 units, then
     * draining both nodes so that no 16M-token ring is built. */
    chr_change at_limit[3] = {change(CHR_OP_ADD, f->ids[1], 255),
                              change(CHR_OP_SET_WEIGHT, f->ids[1], 0),
                              change(CHR_OP_SET_WEIGHT, f->ids[0], 0)};
    assert_chr_ok(chr_ring_apply(f->ring, at_limit, 3, &failed_index));
    assert_int_equal(failed_index, 3);
    assert_int_equal(ring_node_count(f->ring), 2);
}

/* ---- empty batches ------------------------------------------------------- */

static void test_empty_batch(void **state) {
    batch_fixture *f = *state;
    size_t failed_index = 99;
    assert_chr_ok(chr_ring_apply(f->ring, NULL, 0, &failed_index));
    assert_int_equal(failed_index, 0);
    assert_ring_unchanged(f);

    chr_change unused = change(CHR_OP_REMOVE, f->ids[19], 0); /* would fail if read */
    assert_chr_ok(chr_ring_apply(f->ring, &unused, 0, NULL));
    assert_ring_unchanged(f);
}

/* ---- batches in any id order, and the same as change by change ----------- */

/* Every node of two rings, compared by id, zone, tag, weight and tokens. */
static void assert_same_members(chr_ring *a, chr_ring *b) {
    assert_int_equal(ring_fingerprint(a), ring_fingerprint(b));
    chr_snapshot *sa = NULL, *sb = NULL;
    assert_chr_ok(chr_ring_snapshot(a, &sa));
    assert_chr_ok(chr_ring_snapshot(b, &sb));
    size_t na = 0, nb = 0;
    assert_chr_ok(chr_snapshot_node_count(sa, &na));
    assert_chr_ok(chr_snapshot_node_count(sb, &nb));
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; ++i) {
        chr_node_view va, vb;
        assert_chr_ok(chr_snapshot_node(sa, i, &va));
        assert_chr_ok(chr_snapshot_node(sb, i, &vb));
        assert_int_equal(va.id_len, vb.id_len);
        assert_memory_equal(va.id, vb.id, va.id_len);
        assert_int_equal(va.zone_len, vb.zone_len);
        if (va.zone_len) assert_memory_equal(va.zone, vb.zone, va.zone_len);
        assert_int_equal(va.tag, vb.tag);
        assert_int_equal(va.weight, vb.weight);
        assert_int_equal(va.tokens, vb.tokens);
    }
    chr_snapshot_release(sa);
    chr_snapshot_release(sb);
}

/* Changes `op` of `weight` to members "m<number[i]>" (7 digits), the
 * bytes in `ids` (8 per id); an add's tag is its number. */
static void fill_batch(chr_change *batch, char *ids, const size_t *number, size_t count, uint32_t op,
                       uint32_t weight) {
    for (size_t i = 0; i < count; ++i) {
        char buf[16];
        snprintf(buf, sizeof buf, "m%07zu", number[i]);
        memcpy(ids + 8 * i, buf, 8);
        batch[i] = (chr_change){op, weight, ids + 8 * i, 8, NULL, 0, op == CHR_OP_ADD ? number[i] : 0};
    }
}

/* An empty ring of one token per weight. */
static chr_ring *ring_one_token_per_weight(void) {
    chr_options opts;
    assert_chr_ok(chr_options_init(&opts, CHR_OPTIONS_VERSION));
    opts.tokens_per_weight = 1;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    return ring;
}

/* A batch of `count` changes `op` to members 0..count-1 in ascending (0),
 * descending (1) or shuffled (2) order, as fill_batch. */
static chr_change *batch_in_order(uint32_t op, uint32_t weight, size_t count, int order, char *ids,
                                  test_rng *rng) {
    size_t *number = malloc(count * sizeof *number);
    chr_change *batch = malloc(count * sizeof *batch);
    assert_non_null(number);
    assert_non_null(batch);
    for (size_t i = 0; i < count; ++i) number[i] = order == 1 ? count - 1 - i : i;
    if (order == 2) rng_shuffle(rng, number, count);
    fill_batch(batch, ids, number, count, op, weight);
    free(number);
    return batch;
}

/* One batch of `count` adds in that order into an empty ring; returns the
 * ring. */
static chr_ring *ring_from_batch(size_t count, int order, uint32_t weight, test_rng *rng) {
    chr_ring *ring = ring_one_token_per_weight();
    char *ids = malloc(count * 8);
    assert_non_null(ids);
    chr_change *batch = batch_in_order(CHR_OP_ADD, weight, count, order, ids, rng);
    size_t failed = 0;
    assert_chr_ok(chr_ring_apply(ring, batch, count, &failed));
    assert_int_equal(failed, count);
    free(batch);
    free(ids);
    return ring;
}

/* Adds whose ids come in descending or random order cost no more than
 * ascending ones: a batch at the node limit (2^20) in descending order
 * finishes inside the suite's timeout (inserting each into the middle of a
 * sorted table took about an hour) and builds the same ring as ascending. */
static void test_large_batch_in_any_order(void **state) {
    (void)state;
    test_rng rng = rng_seeded(15);
    const size_t big = CHR_NODES_MAX;
    chr_ring *descending = ring_from_batch(big, 1, 0, &rng);
    assert_int_equal(ring_node_count(descending), big);
    chr_ring *ascending = ring_from_batch(big, 0, 0, &rng);
    assert_same_members(ascending, descending);
    chr_ring_free(ascending);
    chr_ring_free(descending);

    const size_t count = 100000; /* with tokens: weight 1 */
    chr_ring *sorted = ring_from_batch(count, 0, 1, &rng);
    for (int order = 1; order <= 2; ++order) {
        chr_ring *other = ring_from_batch(count, order, 1, &rng);
        assert_same_members(sorted, other);
        chr_ring_free(other);
    }
    chr_ring_free(sorted);
}

/* Removes and weight changes cost what adds cost: batches of 200,000 of
 * each, and one failing on its last change, finish inside the suite's
 * timeout (each change copied the batch's working entries so far, about
 * 5 minutes a batch at this size) with exactly the expected ring; the
 * failed one leaves the ring as it was. */
static void test_large_batch_of_every_kind(void **state) {
    (void)state;
    test_rng rng = rng_seeded(39);
    const size_t count = 200000;
    char *ids = malloc(count * 8);
    assert_non_null(ids);
    chr_ring *ring = ring_from_batch(count, 0, 1, &rng);
    const uint64_t before = ring_fingerprint(ring);

    /* Every member removed but the last change, which removes the first
     * again: refused at that index, nothing changed. */
    chr_change *batch = batch_in_order(CHR_OP_REMOVE, 0, count, 2, ids, &rng);
    batch[count - 1] = batch[0];
    size_t failed = 0;
    assert_chr_error(chr_ring_apply(ring, batch, count, &failed), CHR_ENOENT, "chr_ring_apply");
    assert_int_equal(failed, count - 1);
    assert_int_equal(ring_fingerprint(ring), before);
    assert_int_equal(ring_node_count(ring), count);
    free(batch);

    /* Every weight 1 -> 2: the ring built with weight 2. */
    batch = batch_in_order(CHR_OP_SET_WEIGHT, 2, count, 2, ids, &rng);
    assert_chr_ok(chr_ring_apply(ring, batch, count, &failed));
    assert_int_equal(failed, count);
    chr_ring *heavier = ring_from_batch(count, 0, 2, &rng);
    assert_same_members(ring, heavier);
    chr_ring_free(heavier);
    free(batch);

    /* Every member removed: an empty ring of the same options. */
    batch = batch_in_order(CHR_OP_REMOVE, 0, count, 2, ids, &rng);
    assert_chr_ok(chr_ring_apply(ring, batch, count, &failed));
    assert_int_equal(ring_node_count(ring), 0);
    chr_ring *empty = ring_one_token_per_weight();
    assert_int_equal(ring_fingerprint(ring), ring_fingerprint(empty));
    chr_ring_free(empty);
    free(batch);
    chr_ring_free(ring);
    free(ids);
}

enum { POOL = 40, ROUNDS = 400, BATCH_MAX = 24 };

/* Random batches over a small pool of ids (adds, removes, reweights, some
 * invalid) give exactly what applying their changes one by one gives: the
 * same members, or the same failing index and status with the ring left as
 * it was. */
static void test_batch_matches_one_by_one(void **state) {
    (void)state;
    test_rng rng = rng_seeded(1515);
    chr_ring *batched = ring_with_nodes(NULL, 10, 1);
    chr_ring *stepped = ring_with_nodes(NULL, 10, 1);
    char ids[POOL][TEST_ID_BUF];
    static const char *zones[] = {"", "z1", "z2"};
    int present[POOL] = {0};
    for (unsigned n = 0; n < POOL; ++n) {
        node_id(n, ids[n]);
        present[n] = n < 10;
    }
    size_t failures = 0, successes = 0;
    for (unsigned round = 0; round < ROUNDS; ++round) {
        chr_change batch[BATCH_MAX];
        size_t count = 1 + rng_below(&rng, BATCH_MAX);
        /* Mostly changes that are valid where they sit (the model follows the
         * batch), now and then one that is not. */
        int model[POOL];
        memcpy(model, present, sizeof model);
        for (size_t i = 0; i < count; ++i) {
            unsigned n = (unsigned)rng_below(&rng, POOL);
            uint32_t op = model[n] ? CHR_OP_REMOVE + (uint32_t)rng_below(&rng, 2) : CHR_OP_ADD;
            if (rng_below(&rng, 60) == 0) op = 1 + (uint32_t)rng_below(&rng, 3);
            uint32_t weight = (uint32_t)rng_below(&rng, 4);
            if (rng_below(&rng, 200) == 0) weight = CHR_WEIGHT_MAX + 1;
            if (op == CHR_OP_ADD) model[n] = 1;
            if (op == CHR_OP_REMOVE) model[n] = 0;
            const char *zone = zones[rng_below(&rng, 3)];
            batch[i] = (chr_change){op, weight, ids[n], strlen(ids[n]), zone, strlen(zone), n + 100u * round};
        }
        /* The reference: one change at a time, up to the first that fails. */
        size_t first_bad = count;
        chr_status bad_status = CHR_OK;
        for (size_t i = 0; i < count && first_bad == count; ++i) {
            chr_status st = chr_ring_apply(stepped, &batch[i], 1, NULL);
            if (st != CHR_OK) {
                first_bad = i;
                bad_status = st;
            } else if (batch[i].op != CHR_OP_SET_WEIGHT) {
                present[batch[i].tag % 100] = batch[i].op == CHR_OP_ADD;
            }
        }
        uint64_t before = ring_fingerprint(batched);
        size_t before_nodes = ring_node_count(batched);
        size_t failed = 99;
        chr_status st = chr_ring_apply(batched, batch, count, &failed);
        assert_int_equal(st, bad_status);
        assert_int_equal(failed, first_bad);
        if (st != CHR_OK) {
            ++failures;
            assert_int_equal(ring_fingerprint(batched), before);
            assert_int_equal(ring_node_count(batched), before_nodes);
            /* Catch up with the reference: the prefix before the bad change. */
            assert_chr_ok(chr_ring_apply(batched, batch, first_bad, &failed));
        } else {
            ++successes;
        }
        assert_same_members(batched, stepped);
    }
    /* Both paths taken many times. */
    assert_true(failures > ROUNDS / 10);
    assert_true(successes > ROUNDS / 10);
    chr_ring_free(batched);
    chr_ring_free(stepped);
}

/* chr_ring_apply2: the same batch at sizeof(chr_change) and at a larger
 * stride with zeroed tail bytes gives the same ring as chr_ring_apply; a
 * set tail byte (a field this library lacks) refuses the batch at that
 * change; a stride below version 0.1's struct is refused outright. */
typedef struct wide_change {
    chr_change change;
    uint64_t later_field; /* what a later chr_change might append */
} wide_change;

static void test_apply2_strides(void **state) {
    batch_fixture *f = *state;
    chr_change plain[2] = {
        {CHR_OP_ADD, 2, f->ids[10], strlen(f->ids[10]), NULL, 0, 10},
        {CHR_OP_REMOVE, 0, f->ids[0], strlen(f->ids[0]), NULL, 0, 0},
    };
    wide_change wide[2];
    memset(wide, 0, sizeof wide);
    wide[0].change = plain[0];
    wide[1].change = plain[1];

    chr_ring *a = ring_with_nodes(NULL, BASE_NODES, 1);
    chr_ring *b = ring_with_nodes(NULL, BASE_NODES, 1);
    chr_ring *c = ring_with_nodes(NULL, BASE_NODES, 1);
    size_t failed = 99;
    assert_chr_ok(chr_ring_apply(a, plain, 2, &failed));
    assert_int_equal(failed, 2);
    assert_chr_ok(chr_ring_apply2(b, plain, 2, sizeof plain[0], &failed));
    assert_int_equal(failed, 2);
    assert_chr_ok(chr_ring_apply2(c, wide, 2, sizeof wide[0], &failed));
    assert_int_equal(failed, 2);
    assert_int_equal(ring_fingerprint(a), ring_fingerprint(b));
    assert_int_equal(ring_fingerprint(a), ring_fingerprint(c));
    assert_int_not_equal(ring_fingerprint(a), f->fingerprint);

    /* A later field set: refused at that change, nothing applied. */
    wide[1].later_field = 1;
    assert_chr_error(chr_ring_apply2(f->ring, wide, 2, sizeof wide[0], &failed), CHR_ENOTSUP,
                     "chr_ring_apply2");
    assert_int_equal(failed, 1);
    assert_int_equal(ring_fingerprint(f->ring), f->fingerprint);

    assert_chr_error(chr_ring_apply2(f->ring, plain, 2, sizeof plain[0] - 8, &failed), CHR_EINVAL,
                     "chr_ring_apply2");
    assert_int_equal(failed, 2);
    assert_chr_error(chr_ring_apply2(NULL, plain, 2, sizeof plain[0], &failed), CHR_EINVAL,
                     "chr_ring_apply2");
    assert_chr_error(chr_ring_apply2(f->ring, NULL, 1, sizeof plain[0], &failed), CHR_EINVAL,
                     "chr_ring_apply2");
    assert_chr_ok(chr_ring_apply2(f->ring, NULL, 0, sizeof plain[0], NULL));
    assert_int_equal(ring_fingerprint(f->ring), f->fingerprint);
    chr_ring_free(a);
    chr_ring_free(b);
    chr_ring_free(c);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bad_change_anywhere_refuses_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_then_remove_in_one_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_overflow_refuses_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_batch, setup, teardown),
        cmocka_unit_test(test_large_batch_in_any_order),
        cmocka_unit_test(test_large_batch_of_every_kind),
        cmocka_unit_test(test_batch_matches_one_by_one),
        cmocka_unit_test_setup_teardown(test_apply2_strides, setup, teardown),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
