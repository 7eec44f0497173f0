/*
 * Snapshots: an immutable view that keeps seeing the membership it was
 * taken at, whose borrowed pointers stay valid until it is released, and
 * which outlives its ring. Its lookups (single and batch) follow the
 * successor rule exactly: checked against a plain search over its own
 * token dump with a test hasher that lets the test choose key hashes.
 */
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { NODE_COUNT = 12, KEY_COUNT = 5000 };

/* The ring holds nodes 0..11, weights 1..3. */
typedef keyed_snapshot snapshot_fixture;

static uint32_t weight_of(unsigned node) { return 1 + node % 3; }

static int setup(void **state) {
    chr_ring *ring = ring_with_nodes(NULL, 0, 0);
    for (unsigned n = 0; n < NODE_COUNT; ++n) assert_chr_ok(add_node(ring, n, weight_of(n)));
    *state = keyed_snapshot_new(ring, KEY_COUNT, 0x5A4B5407ull);
    return 0;
}

static int teardown(void **state) {
    keyed_snapshot_free(*state);
    return 0;
}

/* Changes every kind of thing about the ring's membership, in several
 * publications, so that the ring retires (and may free) older snapshots. */
static void churn(chr_ring *ring) {
    for (unsigned n = 0; n < NODE_COUNT; n += 2) assert_chr_ok(remove_node(ring, n));
    for (unsigned n = 1; n < NODE_COUNT; n += 2) assert_chr_ok(set_node_weight(ring, n, 5));
    for (unsigned n = 100; n < 104; ++n) assert_chr_ok(add_node(ring, n, 2));
    chr_change batch[2] = {{CHR_OP_ADD, 1, "batch-added", 11, "zone-b", 6, 7},
                           {CHR_OP_REMOVE, 0, "node-001", 8, NULL, 0, 0}};
    assert_chr_ok(chr_ring_apply(ring, batch, 2, NULL));
}

/* Everything a snapshot says, to compare before and after. */
typedef struct snapshot_record {
    uint64_t fingerprint;
    size_t node_count;
    token_dump tokens;
    uint32_t *owners;
} snapshot_record;

static void record(const chr_snapshot *snap, const key_set *keys, snapshot_record *r) {
    assert_chr_ok(chr_snapshot_fingerprint(snap, &r->fingerprint));
    assert_chr_ok(chr_snapshot_node_count(snap, &r->node_count));
    token_dump_take(snap, &r->tokens);
    r->owners = calloc(keys->count, sizeof *r->owners);
    assert_non_null(r->owners);
    assert_chr_ok(chr_snapshot_lookup_batch(snap, keys->keys, keys->lens, keys->count, r->owners));
}

static void assert_records_equal(const snapshot_record *a, const snapshot_record *b, size_t keys) {
    assert_int_equal(a->fingerprint, b->fingerprint);
    assert_int_equal(a->node_count, b->node_count);
    assert_true(token_dumps_equal(&a->tokens, &b->tokens));
    assert_memory_equal(a->owners, b->owners, keys * sizeof *a->owners);
}

static void record_free(snapshot_record *r) {
    token_dump_free(&r->tokens);
    free(r->owners);
}

static void test_keeps_old_membership(void **state) {
    snapshot_fixture *f = *state;
    snapshot_record before, after;
    record(f->snap, f->keys, &before);
    churn(f->ring);
    record(f->snap, f->keys, &after);
    assert_records_equal(&before, &after, KEY_COUNT);

    /* The ring itself has moved on, and a new snapshot shows it. */
    chr_snapshot *now = NULL;
    uint64_t now_fingerprint = 0;
    assert_chr_ok(chr_ring_snapshot(f->ring, &now));
    assert_chr_ok(chr_snapshot_fingerprint(now, &now_fingerprint));
    assert_true(now_fingerprint != before.fingerprint);
    assert_int_equal(now_fingerprint, ring_fingerprint(f->ring));
    chr_snapshot_release(now);
    record_free(&before);
    record_free(&after);
}

/* A deep copy of a view, to compare its borrowed bytes with later. */
typedef struct view_copy {
    chr_node_view view;
    unsigned char id[CHR_NODE_ID_MAX];
    unsigned char zone[CHR_ZONE_MAX];
} view_copy;

static void copy_view(const chr_node_view *view, view_copy *copy) {
    copy->view = *view;
    assert_non_null(view->zone);
    memcpy(copy->id, view->id, view->id_len);
    memcpy(copy->zone, view->zone, view->zone_len);
}

static void assert_view_intact(const view_copy *copy) {
    const chr_node_view *v = &copy->view;
    assert_memory_equal(v->id, copy->id, v->id_len); /* reads the borrowed bytes */
    if (v->zone_len) assert_memory_equal(v->zone, copy->zone, v->zone_len);
}

static void test_borrowed_views_stay_valid(void **state) {
    snapshot_fixture *f = *state;
    /* A member with a zone, so that zone bytes are borrowed too. */
    assert_chr_ok(chr_ring_add(f->ring, "zoned", 5, 1, "eu-west-1a", 10, 42));
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(f->ring, &snap));

    enum { VIEWS = NODE_COUNT + 1 + 20 + 8 };
    view_copy copies[VIEWS];
    size_t n = 0, count = 0;
    for (size_t i = 0; i < NODE_COUNT + 1; ++i) {
        chr_node_view view;
        assert_chr_ok(chr_snapshot_node(snap, i, &view));
        copy_view(&view, &copies[n++]);
    }
    for (size_t k = 0; k < 20; ++k) {
        chr_node_view view;
        assert_chr_ok(chr_snapshot_lookup(snap, f->keys->keys[k], f->keys->lens[k], &view));
        copy_view(&view, &copies[n++]);
    }
    chr_node_view replicas[8];
    assert_chr_ok(chr_snapshot_replicas(snap, "k", 1, 8, replicas, &count));
    assert_int_equal(count, 8);
    for (size_t i = 0; i < count; ++i) copy_view(&replicas[i], &copies[n++]);

    /* Take every member away, in many publications, then read through the
     * old pointers: ASan turns a dangling one into a failure. */
    churn(f->ring);
    chr_change clear[NODE_COUNT + 8];
    chr_node_ref refs[NODE_COUNT + 8];
    assert_chr_ok(chr_ring_nodes(f->ring, refs, NODE_COUNT + 8, &count));
    for (size_t i = 0; i < count; ++i)
        clear[i] = (chr_change){CHR_OP_REMOVE, 0, refs[i].id, refs[i].id_len, NULL, 0, 0};
    assert_chr_ok(chr_ring_apply(f->ring, clear, count, NULL));
    assert_int_equal(ring_node_count(f->ring), 0);

    for (size_t i = 0; i < n; ++i) assert_view_intact(&copies[i]);
    chr_node_view zoned;
    assert_chr_ok(chr_snapshot_node(snap, NODE_COUNT, &zoned)); /* "zoned" sorts after "node-..." */
    assert_int_equal(zoned.zone_len, 10);
    assert_memory_equal(zoned.zone, "eu-west-1a", 10);
    assert_int_equal(zoned.tag, 42);
    chr_snapshot_release(snap);
}

static void test_outlives_ring(void **state) {
    snapshot_fixture *f = *state;
    snapshot_record before, after;
    record(f->snap, f->keys, &before);
    chr_ring_free(f->ring);
    f->ring = NULL;
    record(f->snap, f->keys, &after);
    assert_records_equal(&before, &after, KEY_COUNT);
    chr_node_view views[3];
    size_t count = 0;
    assert_chr_ok(chr_snapshot_replicas(f->snap, "k", 1, 3, views, &count));
    assert_int_equal(count, 3);
    record_free(&before);
    record_free(&after);
}

/* Batch, single snapshot and ring lookups name the same owner. */
static void test_lookup_batch_agrees(void **state) {
    snapshot_fixture *f = *state;
    assert_chr_ok(chr_snapshot_lookup_batch(f->snap, f->keys->keys, f->keys->lens, KEY_COUNT,
                                            f->indices));
    for (size_t k = 0; k < KEY_COUNT; ++k) {
        chr_node_view view;
        chr_node_ref ref;
        assert_chr_ok(chr_snapshot_lookup(f->snap, f->keys->keys[k], f->keys->lens[k], &view));
        assert_chr_ok(chr_ring_lookup(f->ring, f->keys->keys[k], f->keys->lens[k], &ref));
        assert_int_equal(f->indices[k], view.index);
        assert_int_equal(ref.index, view.index);
        assert_int_equal(ref.tag, view.tag);
    }
}

/* A ring of over 2^20 tokens takes the batch's pipelined path: every
 * batch size around its depths (16 keys a stage, two stages ahead) and
 * every offset of the batch in the keys agrees with single lookups. */
static void test_lookup_batch_pipelined_agrees(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 7000, 1); /* 1.12M tokens at 160 a node */
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    size_t tokens = 0;
    assert_chr_ok(chr_snapshot_token_count(snap, &tokens));
    assert_true(tokens > ((size_t)1 << 20));
    key_set *keys = key_set_new(4000, 99);
    uint32_t *single = calloc(keys->count, sizeof *single);
    uint32_t *batch = calloc(keys->count + 1, sizeof *batch);
    assert_non_null(single);
    assert_non_null(batch);
    for (size_t k = 0; k < keys->count; ++k) {
        chr_node_view view;
        assert_chr_ok(chr_snapshot_lookup(snap, keys->keys[k], keys->lens[k], &view));
        single[k] = view.index;
    }
    const size_t sizes[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 49, 64, 65, 1000, 3999};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        const size_t n = sizes[i], first = (i * 37) % (keys->count - n);
        batch[n] = 0xdeadbeef; /* nothing written past the n-th index */
        assert_chr_ok(chr_snapshot_lookup_batch(snap, keys->keys + first, keys->lens + first, n, batch));
        for (size_t k = 0; k < n; ++k)
            if (batch[k] != single[first + k])
                fail_msg("batch of %zu at %zu: key %zu owner %u, single lookup %u", n, first, k,
                         batch[k], single[first + k]);
        assert_int_equal(batch[n], 0xdeadbeef);
    }
    free(single);
    free(batch);
    key_set_free(keys);
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

/* Token order is (value, node index), ties included. */
static void assert_tokens_sorted(const chr_snapshot *snap) {
    token_dump dump;
    token_dump_take(snap, &dump);
    size_t nodes = 0;
    assert_chr_ok(chr_snapshot_node_count(snap, &nodes));
    for (size_t t = 0; t < dump.count; ++t) {
        assert_true(dump.owners[t] < nodes);
        if (t == 0) continue;
        assert_true(dump.values[t - 1] <= dump.values[t]);
        if (dump.values[t - 1] == dump.values[t]) assert_true(dump.owners[t - 1] <= dump.owners[t]);
    }
    token_dump_free(&dump);
}

static void test_tokens_sorted(void **state) {
    snapshot_fixture *f = *state;
    assert_tokens_sorted(f->snap);
}

/* ---- differential successor test ---------------------------------------- */

static void le64_store(unsigned char out[8], uint64_t v) {
    for (int i = 0; i < 8; ++i) out[i] = (unsigned char)(v >> (8 * i));
}

/* An 8-byte key hashes to its own little-endian value, so the test picks
 * key hashes exactly. Other input (the tokens' "id#i") is hashed and then
 * shaped, a quarter each: packed near 0 and near 2^64 (more than 8 tokens
 * in one prefix bucket of the core's index, empty buckets around them),
 * exactly equal values shared by many nodes (ties), and spread evenly. */
static uint64_t identity_hash(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    if (len == 8) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
        return v;
    }
    uint64_t h = 0xCBF29CE484222325ull ^ seed;
    for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
    h = mix64(h);
    switch (h & 3) {
    case 0: return h >> 20;                      /* the bottom 2^-20 of the circle */
    case 1: return h | 0xFFFFF00000000000ull;    /* the top 2^-20 */
    case 2: return ((h >> 8) & 15) << 40;        /* 16 shared values */
    default: return h;
    }
}

enum { RANDOM_HASHES = 3000000, BATCH = 4096, IDENTITY_NODES = 20 };

typedef struct hash_batch {
    unsigned char bytes[BATCH][8];
    const void *keys[BATCH];
    size_t lens[BATCH];
    uint32_t indices[BATCH];
    uint64_t hashes[BATCH];
    size_t count;
} hash_batch;

/* Looks the batch up and compares each owner with the reference. */
static void check_batch(const chr_snapshot *snap, const token_dump *dump, hash_batch *b) {
    for (size_t i = 0; i < b->count; ++i) {
        le64_store(b->bytes[i], b->hashes[i]);
        b->keys[i] = b->bytes[i];
        b->lens[i] = 8;
    }
    assert_chr_ok(chr_snapshot_lookup_batch(snap, b->keys, b->lens, b->count, b->indices));
    for (size_t i = 0; i < b->count; ++i) {
        const uint32_t expected = dump->owners[reference_successor(dump->values, dump->count, b->hashes[i])];
        if (b->indices[i] != expected)
            print_error("hash 0x%016llx: owner %u, reference %u\n", (unsigned long long)b->hashes[i],
                        b->indices[i], expected);
        assert_int_equal(b->indices[i], expected);
    }
    b->count = 0;
}

static void add_hash(const chr_snapshot *snap, const token_dump *dump, hash_batch *b, uint64_t h) {
    b->hashes[b->count++] = h;
    if (b->count == BATCH) check_batch(snap, dump, b);
}

/* Looks up, through the batch and the single-key calls, hashes exactly at,
 * just below and just above every token, at the ends of the circle, around
 * every prefix bucket edge the index may use, and `random` random ones
 * (uniform, and inside the crowded regions the test hashers make), each
 * checked against a plain search over the snapshot's own token array. */
static void check_successors(const chr_snapshot *snap, size_t random) {
    token_dump dump;
    token_dump_take(snap, &dump);
    assert_tokens_sorted(snap);
    hash_batch *b = calloc(1, sizeof *b);
    assert_non_null(b);
    for (size_t t = 0; t < dump.count; ++t) {
        add_hash(snap, &dump, b, dump.values[t]);
        add_hash(snap, &dump, b, dump.values[t] - 1);
        add_hash(snap, &dump, b, dump.values[t] + 1);
    }
    add_hash(snap, &dump, b, 0);
    add_hash(snap, &dump, b, UINT64_MAX);
    for (unsigned bits = 1; bits <= 24; ++bits)
        for (uint64_t k = 0; k < 8; ++k) {
            const uint64_t edge = k << (64 - bits);
            add_hash(snap, &dump, b, edge);
            add_hash(snap, &dump, b, edge - 1);
            add_hash(snap, &dump, b, ~edge);
        }
    test_rng rng = rng_seeded(0x50CCE550ull);
    for (size_t i = 0; i < random; ++i) {
        const uint64_t r = rng_next(&rng);
        add_hash(snap, &dump, b, i % 4 == 1 ? r >> 20 : i % 4 == 2 ? r | 0xFFFFF00000000000ull : i % 4 == 3 ? r >> 40 : r);
    }
    check_batch(snap, &dump, b);

    /* chr_snapshot_lookup agrees on the edges one by one, too. */
    for (size_t t = 0; t < dump.count; t += 7) {
        unsigned char key[8];
        chr_node_view view;
        le64_store(key, dump.values[t]);
        assert_chr_ok(chr_snapshot_lookup(snap, key, 8, &view));
        assert_int_equal(view.index, dump.owners[reference_successor(dump.values, dump.count,
                                                                      dump.values[t])]);
    }
    free(b);
    token_dump_free(&dump);
}

static void test_successor_matches_reference(void **state) {
    (void)state;
    static const chr_hasher identity = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "test-identity",
                                        "8-byte keys hash to themselves", identity_hash, 0, NULL, 0};
    assert_chr_ok(chr_hasher_register(&identity));
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = "test-identity";
    opts.tokens_per_weight = 50;
    chr_ring *ring = ring_with_nodes(&opts, 0, 0);
    for (unsigned n = 0; n < IDENTITY_NODES; ++n) assert_chr_ok(add_node(ring, n, 1 + n % 4));
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    chr_ring_free(ring); /* the snapshot is all this test needs */

    /* The shaped hasher did shape: ties exist, and tokens crowd both ends. */
    token_dump dump;
    token_dump_take(snap, &dump);
    size_t ties = 0, low = 0, high = 0;
    for (size_t t = 0; t < dump.count; ++t) {
        ties += t > 0 && dump.values[t] == dump.values[t - 1] && dump.owners[t] != dump.owners[t - 1];
        low += dump.values[t] < (1ull << 44);
        high += dump.values[t] >= 0xFFFFF00000000000ull;
    }
    assert_true(ties > 10 && low > 100 && high > 100);
    token_dump_free(&dump);

    check_successors(snap, RANDOM_HASHES);
    chr_snapshot_release(snap);
}

/* Tokens of "id#i" land in [0, 2^24): every one in the index's first bucket. */
static uint64_t crowded_hash(const void *data, size_t len, uint64_t seed) {
    return len == 8 ? identity_hash(data, len, seed) : identity_hash(data, len, seed) >> 40;
}

/* 65,538 tokens in one prefix bucket: the two-level index caps a bucket's
 * size at 255 (an 8-bit wrap would say 2, small enough for the window) and
 * the lookup must find the true bounds. */
/* Registers `hasher`, builds a ring of two weight-1 nodes with it and
 * checks lookups on its snapshot against the plain search. */
static void check_two_node_ring(const chr_hasher *hasher, uint32_t tokens_per_weight) {
    assert_chr_ok(chr_hasher_register(hasher));
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = hasher->name;
    opts.tokens_per_weight = tokens_per_weight;
    chr_ring *ring = ring_with_nodes(&opts, 0, 0);
    for (unsigned n = 0; n < 2; ++n) assert_chr_ok(add_node(ring, n, 1));
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    chr_ring_free(ring);
    check_successors(snap, RANDOM_HASHES / 10);
    chr_snapshot_release(snap);
}

static void test_crowded_bucket_matches_reference(void **state) {
    (void)state;
    static const chr_hasher crowded = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "test-crowded",
                                       "8-byte keys hash to themselves, the rest below 2^24",
                                       crowded_hash, 0, NULL, 0};
    check_two_node_ring(&crowded, 32769);
}

/* Token j = 2 i + node of "node-00N#i" (two nodes, 150 tokens each): 250 in
 * the first of 128 prefix buckets, 10 in the 64th, 40 past the middle. With
 * 64 buckets a group, the first group's last bucket starts at offset 250
 * but ends at 260, past a byte: the index must use smaller groups rather
 * than cap that bucket's size at 5 and answer wrongly above its 5th token. */
static uint64_t group_edge_hash(const void *data, size_t len, uint64_t seed) {
    const char *p = data;
    if (len == 8) return identity_hash(data, len, seed);
    const char *hash_sign = memchr(p, '#', len);
    assert_non_null(hash_sign);
    const uint64_t node = (uint64_t)(p[7] - '0');
    uint64_t i = 0;
    for (const char *d = hash_sign + 1; d < p + len; ++d) i = i * 10 + (uint64_t)(*d - '0');
    const uint64_t j = 2 * i + node;
    if (j < 250) return (j + 1) << 40;                              /* bucket 0 */
    if (j < 260) return (63ull << 57) + ((j - 249) << 40);           /* bucket 63 */
    return (1ull << 63) + ((j - 259) << 40);                         /* the second half */
}

static void test_group_end_past_a_byte_matches_reference(void **state) {
    (void)state;
    static const chr_hasher edge = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "test-group-edge",
                                    "8-byte keys hash to themselves; tokens placed by number",
                                    group_edge_hash, 0, NULL, 0};
    check_two_node_ring(&edge, 150);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keeps_old_membership, setup, teardown),
        cmocka_unit_test_setup_teardown(test_borrowed_views_stay_valid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outlives_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_batch_agrees, setup, teardown),
        cmocka_unit_test(test_lookup_batch_pipelined_agrees),
        cmocka_unit_test_setup_teardown(test_tokens_sorted, setup, teardown),
        cmocka_unit_test(test_successor_matches_reference),
        cmocka_unit_test(test_crowded_bucket_matches_reference),
        cmocka_unit_test(test_group_end_past_a_byte_matches_reference),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
