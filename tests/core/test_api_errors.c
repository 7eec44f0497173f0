/*
 * Every public entry point of chring.h, given bad input, returns its
 * specific status and leaves a fresh chr_last_error() message naming the
 * function; nothing crashes, and a failed update changes nothing.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, write, unlink */

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

/* The Windows build runs this suite too (tests/windows): a private
 * directory is made with _mktemp and _mkdir there, in the directory the
 * test runs in (Wine's view of /tmp is writable by everyone, which the
 * trust rules refuse before the file checks are reached). */
#if defined(_WIN32)
#include <direct.h>
#include <io.h>
#define TEMP_DIR_TEMPLATE "chring-not-elf-XXXXXX"
static char *mkdtemp(char *dir) { return _mktemp(dir) && _mkdir(dir) == 0 ? dir : NULL; }
#else
#define TEMP_DIR_TEMPLATE "/tmp/chring-not-elf-XXXXXX"
#endif

static const char key[] = "user:42";
#define KEY_LEN (sizeof key - 1)

typedef struct api_fixture {
    chr_ring *ring;     /* nodes 0..2, weight 1 */
    chr_ring *empty;    /* no member */
    chr_ring *drained;  /* nodes 0..1, weight 0: members without tokens */
    chr_snapshot *snap; /* of ring */
    chr_snapshot *empty_snap;
    chr_snapshot *drained_snap;
    uint64_t fingerprint; /* of ring, at setup */
    size_t node_count;
} api_fixture;

static int setup(void **state) {
    api_fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->ring = ring_with_nodes(NULL, 3, 1);
    f->empty = ring_with_nodes(NULL, 0, 1);
    f->drained = ring_with_nodes(NULL, 2, 0);
    assert_chr_ok(chr_ring_snapshot(f->ring, &f->snap));
    assert_chr_ok(chr_ring_snapshot(f->empty, &f->empty_snap));
    assert_chr_ok(chr_ring_snapshot(f->drained, &f->drained_snap));
    f->fingerprint = ring_fingerprint(f->ring);
    f->node_count = ring_node_count(f->ring);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    api_fixture *f = *state;
    chr_snapshot_release(f->snap);
    chr_snapshot_release(f->empty_snap);
    chr_snapshot_release(f->drained_snap);
    chr_ring_free(f->ring);
    chr_ring_free(f->empty);
    chr_ring_free(f->drained);
    free(f);
    return 0;
}

/* A failed update must leave the ring exactly as setup built it. */
static void assert_ring_unchanged(const api_fixture *f) {
    assert_int_equal(ring_fingerprint(f->ring), f->fingerprint);
    assert_int_equal(ring_node_count(f->ring), f->node_count);
}

static void test_null_ring_or_snapshot(void **state) {
    (void)state;
    chr_node_ref ref;
    chr_node_view view;
    size_t count = 0, failed_index = 0;
    uint64_t value = 0;
    uint32_t index = 0;
    double fraction = 0;
    chr_change change = {CHR_OP_ADD, 1, "a", 1, NULL, 0, 0};
    const void *keys[1] = {key};
    size_t lens[1] = {KEY_LEN};

    assert_chr_error(chr_ring_add(NULL, "a", 1, 1, NULL, 0, 0), CHR_EINVAL, "chr_ring_add");
    assert_chr_error(chr_ring_remove(NULL, "a", 1), CHR_EINVAL, "chr_ring_remove");
    assert_chr_error(chr_ring_set_weight(NULL, "a", 1, 1), CHR_EINVAL, "chr_ring_set_weight");
    assert_chr_error(chr_ring_apply(NULL, &change, 1, &failed_index), CHR_EINVAL, "chr_ring_apply");
    assert_int_equal(failed_index, 1); /* a batch-wide error reports count */
    assert_chr_error(chr_ring_lookup(NULL, key, KEY_LEN, &ref), CHR_EINVAL, "chr_ring_lookup");
    assert_chr_error(chr_ring_replicas(NULL, key, KEY_LEN, 1, &ref, &count), CHR_EINVAL,
                     "chr_ring_replicas");
    assert_chr_error(chr_ring_node_count(NULL, &count), CHR_EINVAL, "chr_ring_node_count");
    assert_chr_error(chr_ring_token_count(NULL, &count), CHR_EINVAL, "chr_ring_token_count");
    assert_chr_error(chr_ring_nodes(NULL, &ref, 1, &count), CHR_EINVAL, "chr_ring_nodes");
    assert_chr_error(chr_ring_ownership(NULL, "a", 1, &fraction), CHR_EINVAL, "chr_ring_ownership");
    assert_chr_error(chr_ring_fingerprint(NULL, &value), CHR_EINVAL, "chr_ring_fingerprint");

    chr_snapshot *snap = (chr_snapshot *)&count; /* must be overwritten with NULL */
    assert_chr_error(chr_ring_snapshot(NULL, &snap), CHR_EINVAL, "chr_ring_snapshot");
    assert_null(snap);

    assert_chr_error(chr_snapshot_lookup(NULL, key, KEY_LEN, &view), CHR_EINVAL,
                     "chr_snapshot_lookup");
    assert_chr_error(chr_snapshot_lookup_batch(NULL, keys, lens, 1, &index), CHR_EINVAL,
                     "chr_snapshot_lookup_batch");
    assert_chr_error(chr_snapshot_replicas(NULL, key, KEY_LEN, 1, &view, &count), CHR_EINVAL,
                     "chr_snapshot_replicas");
    assert_chr_error(chr_snapshot_node(NULL, 0, &view), CHR_EINVAL, "chr_snapshot_node");
    assert_chr_error(chr_snapshot_node_count(NULL, &count), CHR_EINVAL, "chr_snapshot_node_count");
    assert_chr_error(chr_snapshot_token_count(NULL, &count), CHR_EINVAL,
                     "chr_snapshot_token_count");
    assert_chr_error(chr_snapshot_fingerprint(NULL, &value), CHR_EINVAL,
                     "chr_snapshot_fingerprint");
    assert_chr_error(chr_snapshot_token(NULL, 0, &value, &index), CHR_EINVAL, "chr_snapshot_token");

    /* The release functions accept NULL. */
    chr_ring_free(NULL);
    chr_snapshot_release(NULL);
}

static void test_null_out_pointers(void **state) {
    api_fixture *f = *state;
    chr_node_ref ref;
    chr_node_view view;
    size_t count = 0;
    uint64_t value = 0;
    uint32_t index = 0;
    const void *keys[1] = {key};
    size_t lens[1] = {KEY_LEN};

    assert_chr_error(chr_options_init(NULL, CHR_OPTIONS_VERSION), CHR_EINVAL, "chr_options_init");
    assert_chr_error(chr_ring_new(NULL, NULL), CHR_EINVAL, "chr_ring_new");
    assert_chr_error(chr_ring_lookup(f->ring, key, KEY_LEN, NULL), CHR_EINVAL, "chr_ring_lookup");
    assert_chr_error(chr_ring_replicas(f->ring, key, KEY_LEN, 1, NULL, &count), CHR_EINVAL,
                     "chr_ring_replicas");
    assert_chr_error(chr_ring_replicas(f->ring, key, KEY_LEN, 1, &ref, NULL), CHR_EINVAL,
                     "chr_ring_replicas");
    assert_chr_error(chr_ring_node_count(f->ring, NULL), CHR_EINVAL, "chr_ring_node_count");
    assert_chr_error(chr_ring_token_count(f->ring, NULL), CHR_EINVAL, "chr_ring_token_count");
    assert_chr_error(chr_ring_nodes(f->ring, &ref, 1, NULL), CHR_EINVAL, "chr_ring_nodes");
    assert_chr_error(chr_ring_nodes(f->ring, NULL, 5, &count), CHR_EINVAL, "chr_ring_nodes");
    assert_chr_error(chr_ring_ownership(f->ring, "node-000", 8, NULL), CHR_EINVAL,
                     "chr_ring_ownership");
    assert_chr_error(chr_ring_fingerprint(f->ring, NULL), CHR_EINVAL, "chr_ring_fingerprint");
    assert_chr_error(chr_ring_snapshot(f->ring, NULL), CHR_EINVAL, "chr_ring_snapshot");

    assert_chr_error(chr_snapshot_lookup(f->snap, key, KEY_LEN, NULL), CHR_EINVAL,
                     "chr_snapshot_lookup");
    assert_chr_error(chr_snapshot_lookup_batch(f->snap, NULL, lens, 1, &index), CHR_EINVAL,
                     "chr_snapshot_lookup_batch");
    assert_chr_error(chr_snapshot_lookup_batch(f->snap, keys, NULL, 1, &index), CHR_EINVAL,
                     "chr_snapshot_lookup_batch");
    assert_chr_error(chr_snapshot_lookup_batch(f->snap, keys, lens, 1, NULL), CHR_EINVAL,
                     "chr_snapshot_lookup_batch");
    assert_chr_error(chr_snapshot_replicas(f->snap, key, KEY_LEN, 1, NULL, &count), CHR_EINVAL,
                     "chr_snapshot_replicas");
    assert_chr_error(chr_snapshot_replicas(f->snap, key, KEY_LEN, 1, &view, NULL), CHR_EINVAL,
                     "chr_snapshot_replicas");
    assert_chr_error(chr_snapshot_node(f->snap, 0, NULL), CHR_EINVAL, "chr_snapshot_node");
    assert_chr_error(chr_snapshot_node_count(f->snap, NULL), CHR_EINVAL, "chr_snapshot_node_count");
    assert_chr_error(chr_snapshot_token_count(f->snap, NULL), CHR_EINVAL,
                     "chr_snapshot_token_count");
    assert_chr_error(chr_snapshot_fingerprint(f->snap, NULL), CHR_EINVAL,
                     "chr_snapshot_fingerprint");
    assert_chr_error(chr_snapshot_token(f->snap, 0, NULL, &index), CHR_EINVAL, "chr_snapshot_token");
    assert_chr_error(chr_snapshot_token(f->snap, 0, &value, NULL), CHR_EINVAL, "chr_snapshot_token");

    assert_chr_error(chr_hasher_hash(NULL, key, KEY_LEN, 0, &value), CHR_EINVAL, "chr_hasher_hash");
    assert_chr_error(chr_hasher_hash("xxh3", key, KEY_LEN, 0, NULL), CHR_EINVAL, "chr_hasher_hash");
    assert_chr_error(chr_hasher_register(NULL), CHR_EINVAL, "chr_hasher_register");

    /* Zero-length requests with NULL arrays are fine. */
    assert_chr_ok(chr_snapshot_lookup_batch(f->snap, NULL, NULL, 0, NULL));
}

static void test_null_key_with_length(void **state) {
    api_fixture *f = *state;
    chr_node_ref ref, empty_key_ref;
    chr_node_view view, empty_key_view;
    size_t count = 0;
    uint64_t value = 0, empty_value = 0;
    uint32_t indices[2];
    const void *keys[2] = {key, NULL};
    size_t lens[2] = {KEY_LEN, 3};

    assert_chr_error(chr_ring_lookup(f->ring, NULL, 3, &ref), CHR_EINVAL, "chr_ring_lookup");
    assert_chr_error(chr_ring_replicas(f->ring, NULL, 3, 2, &ref, &count), CHR_EINVAL,
                     "chr_ring_replicas");
    assert_chr_error(chr_snapshot_lookup(f->snap, NULL, 3, &view), CHR_EINVAL,
                     "chr_snapshot_lookup");
    assert_chr_error(chr_snapshot_replicas(f->snap, NULL, 3, 2, &view, &count), CHR_EINVAL,
                     "chr_snapshot_replicas");
    assert_chr_error(chr_snapshot_lookup_batch(f->snap, keys, lens, 2, indices), CHR_EINVAL,
                     "chr_snapshot_lookup_batch");
    assert_chr_error(chr_hasher_hash("xxh3", NULL, 3, 0, &value), CHR_EINVAL, "chr_hasher_hash");

    /* NULL with length 0 is the empty key: the same as any pointer with length 0. */
    assert_chr_ok(chr_ring_lookup(f->ring, NULL, 0, &ref));
    assert_chr_ok(chr_ring_lookup(f->ring, key, 0, &empty_key_ref));
    assert_int_equal(ref.index, empty_key_ref.index);
    assert_chr_ok(chr_snapshot_lookup(f->snap, NULL, 0, &view));
    assert_chr_ok(chr_snapshot_lookup(f->snap, key, 0, &empty_key_view));
    assert_int_equal(view.index, empty_key_view.index);
    assert_int_equal(view.index, ref.index);
    assert_chr_ok(chr_ring_replicas(f->ring, NULL, 0, 1, &ref, &count));
    assert_int_equal(count, 1);
    assert_chr_ok(chr_snapshot_replicas(f->snap, NULL, 0, 1, &view, &count));
    assert_int_equal(count, 1);
    lens[1] = 0;
    assert_chr_ok(chr_snapshot_lookup_batch(f->snap, keys, lens, 2, indices));
    assert_int_equal(indices[1], view.index);
    assert_chr_ok(chr_hasher_hash("xxh3", NULL, 0, 7, &value));
    assert_chr_ok(chr_hasher_hash("xxh3", key, 0, 7, &empty_value));
    assert_int_equal(value, empty_value);
}

static void test_node_id_limits(void **state) {
    api_fixture *f = *state;
    unsigned char long_id[CHR_NODE_ID_MAX + 1];
    memset(long_id, 'x', sizeof long_id);
    double fraction = 0;
    size_t failed_index = 0;
    chr_change empty_in_batch = {CHR_OP_ADD, 1, "", 0, NULL, 0, 0};

    /* Empty ids: EINVAL, whether the pointer is NULL or not. */
    assert_chr_error(chr_ring_add(f->ring, NULL, 0, 1, NULL, 0, 0), CHR_EINVAL, "chr_ring_add");
    assert_chr_error(chr_ring_add(f->ring, "abc", 0, 1, NULL, 0, 0), CHR_EINVAL, "chr_ring_add");
    assert_chr_error(chr_ring_remove(f->ring, NULL, 0), CHR_EINVAL, "chr_ring_remove");
    assert_chr_error(chr_ring_set_weight(f->ring, "abc", 0, 1), CHR_EINVAL, "chr_ring_set_weight");
    assert_chr_error(chr_ring_ownership(f->ring, NULL, 0, &fraction), CHR_EINVAL,
                     "chr_ring_ownership");
    assert_chr_error(chr_ring_apply(f->ring, &empty_in_batch, 1, &failed_index), CHR_EINVAL,
                     "chr_ring_apply");
    assert_int_equal(failed_index, 0);

    /* NULL with a length: EINVAL. */
    assert_chr_error(chr_ring_add(f->ring, NULL, 4, 1, NULL, 0, 0), CHR_EINVAL, "chr_ring_add");
    assert_chr_error(chr_ring_remove(f->ring, NULL, 4), CHR_EINVAL, "chr_ring_remove");
    assert_chr_error(chr_ring_set_weight(f->ring, NULL, 4, 1), CHR_EINVAL, "chr_ring_set_weight");
    assert_chr_error(chr_ring_ownership(f->ring, NULL, 4, &fraction), CHR_EINVAL,
                     "chr_ring_ownership");

    /* One byte over CHR_NODE_ID_MAX: ERANGE, and the message gives the length. */
    assert_chr_error(chr_ring_add(f->ring, long_id, sizeof long_id, 1, NULL, 0, 0), CHR_ERANGE,
                     "chr_ring_add");
    assert_non_null(strstr(chr_last_error(), "257"));
    assert_chr_error(chr_ring_remove(f->ring, long_id, sizeof long_id), CHR_ERANGE,
                     "chr_ring_remove");
    assert_chr_error(chr_ring_set_weight(f->ring, long_id, sizeof long_id, 2), CHR_ERANGE,
                     "chr_ring_set_weight");
    assert_chr_error(chr_ring_ownership(f->ring, long_id, sizeof long_id, &fraction), CHR_ERANGE,
                     "chr_ring_ownership");
    assert_ring_unchanged(f);

    /* Exactly CHR_NODE_ID_MAX bytes, and ids with NUL bytes, are fine. */
    assert_chr_ok(chr_ring_add(f->ring, long_id, CHR_NODE_ID_MAX, 1, NULL, 0, 0));
    assert_chr_ok(chr_ring_ownership(f->ring, long_id, CHR_NODE_ID_MAX, &fraction));
    assert_true(fraction > 0.0);
    assert_chr_ok(chr_ring_remove(f->ring, long_id, CHR_NODE_ID_MAX));
    assert_chr_ok(chr_ring_add(f->ring, "a\0b", 3, 1, NULL, 0, 0));
    assert_chr_status(chr_ring_remove(f->ring, "a", 1), CHR_ENOENT);
    assert_chr_ok(chr_ring_remove(f->ring, "a\0b", 3));
    assert_ring_unchanged(f);
}

static void test_zone_limits(void **state) {
    api_fixture *f = *state;
    char zone[CHR_ZONE_MAX + 1];
    memset(zone, 'z', sizeof zone);

    assert_chr_error(chr_ring_add(f->ring, "zoned", 5, 1, zone, sizeof zone, 0), CHR_ERANGE,
                     "chr_ring_add");
    assert_chr_error(chr_ring_add(f->ring, "zoned", 5, 1, NULL, 2, 0), CHR_EINVAL, "chr_ring_add");
    assert_ring_unchanged(f);

    assert_chr_ok(chr_ring_add(f->ring, "zoned", 5, 1, zone, CHR_ZONE_MAX, 0));
    assert_chr_ok(chr_ring_remove(f->ring, "zoned", 5));
    assert_ring_unchanged(f);
}

static void test_weight_limit(void **state) {
    api_fixture *f = *state;
    size_t failed_index = 0;

    assert_chr_error(chr_ring_add(f->ring, "heavy", 5, CHR_WEIGHT_MAX + 1, NULL, 0, 0), CHR_ERANGE,
                     "chr_ring_add");
    assert_non_null(strstr(chr_last_error(), "1000001"));
    assert_chr_error(set_node_weight(f->ring, 0, CHR_WEIGHT_MAX + 1), CHR_ERANGE,
                     "chr_ring_set_weight");
    assert_chr_error(set_node_weight(f->ring, 0, UINT32_MAX), CHR_ERANGE, "chr_ring_set_weight");
    assert_ring_unchanged(f);

    /* CHR_WEIGHT_MAX itself is accepted; tokens_per_weight 1 keeps the
     * total (1e6 tokens) under CHR_TOKENS_MAX, and the batch drains the
     * node again so that no million-token ring has to be built. */
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = 1;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    chr_change heaviest[2] = {{CHR_OP_ADD, CHR_WEIGHT_MAX, "heavy", 5, NULL, 0, 0},
                              {CHR_OP_SET_WEIGHT, 0, "heavy", 5, NULL, 0, 0}};
    assert_chr_ok(chr_ring_apply(ring, heaviest, 2, &failed_index));
    assert_int_equal(failed_index, 2);
    assert_int_equal(ring_node_count(ring), 1);
    chr_ring_free(ring);
}

static void test_total_token_limit(void **state) {
    (void)state;
    /* 65536 tokens per weight: 256 weight units are exactly CHR_TOKENS_MAX. */
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = CHR_TOKENS_PER_WEIGHT_MAX;
    chr_ring *ring = ring_with_nodes(&opts, 1, 1);
    const uint64_t fingerprint = ring_fingerprint(ring);

    assert_chr_error(add_node(ring, 1, 256), CHR_ERANGE, "chr_ring_add");
    assert_chr_error(set_node_weight(ring, 0, 257), CHR_ERANGE, "chr_ring_set_weight");
    assert_int_equal(ring_fingerprint(ring), fingerprint);
    assert_int_equal(ring_node_count(ring), 1);
    chr_ring_free(ring);
}

static void test_duplicate_and_unknown_ids(void **state) {
    api_fixture *f = *state;
    double fraction = 0;

    assert_chr_error(add_node(f->ring, 1, 1), CHR_EEXIST, "chr_ring_add");
    assert_chr_error(add_node(f->ring, 1, 5), CHR_EEXIST, "chr_ring_add");
    assert_chr_error(remove_node(f->ring, 9), CHR_ENOENT, "chr_ring_remove");
    assert_chr_error(set_node_weight(f->ring, 9, 1), CHR_ENOENT, "chr_ring_set_weight");
    assert_chr_error(chr_ring_ownership(f->ring, "node-009", 8, &fraction), CHR_ENOENT,
                     "chr_ring_ownership");
    assert_chr_error(remove_node(f->empty, 0), CHR_ENOENT, "chr_ring_remove");
    assert_ring_unchanged(f);
}

/* Lookups and replicas need a node with tokens: an empty ring and a ring
 * whose members all have weight 0 are both CHR_EEMPTY. */
static void check_no_tokens(chr_ring *ring, chr_snapshot *snap) {
    chr_node_ref refs[2];
    chr_node_view views[2];
    size_t count = 0;
    uint32_t index = 0;
    const void *keys[1] = {key};
    size_t lens[1] = {KEY_LEN};

    assert_chr_error(chr_ring_lookup(ring, key, KEY_LEN, refs), CHR_EEMPTY, "chr_ring_lookup");
    assert_chr_error(chr_ring_replicas(ring, key, KEY_LEN, 2, refs, &count), CHR_EEMPTY,
                     "chr_ring_replicas");
    assert_chr_error(chr_snapshot_lookup(snap, key, KEY_LEN, views), CHR_EEMPTY,
                     "chr_snapshot_lookup");
    assert_chr_error(chr_snapshot_replicas(snap, key, KEY_LEN, 2, views, &count), CHR_EEMPTY,
                     "chr_snapshot_replicas");
    assert_chr_error(chr_snapshot_lookup_batch(snap, keys, lens, 1, &index), CHR_EEMPTY,
                     "chr_snapshot_lookup_batch");

    /* Asking nothing of an empty ring is fine, and so are the counts. */
    assert_chr_ok(chr_snapshot_lookup_batch(snap, keys, lens, 0, &index));
    assert_chr_ok(chr_ring_token_count(ring, &count));
    assert_int_equal(count, 0);
    assert_chr_ok(chr_snapshot_token_count(snap, &count));
    assert_int_equal(count, 0);
}

static void test_reads_without_tokens(void **state) {
    api_fixture *f = *state;
    check_no_tokens(f->empty, f->empty_snap);
    check_no_tokens(f->drained, f->drained_snap);

    /* Drained members are still members, with no tokens and no ownership. */
    chr_node_ref refs[2];
    size_t count = 0;
    assert_chr_ok(chr_ring_nodes(f->drained, refs, 2, &count));
    assert_int_equal(count, 2);
    for (size_t i = 0; i < count; ++i) {
        assert_int_equal(refs[i].tokens, 0);
        assert_true(refs[i].ownership == 0.0);
    }
}

static void test_replicas_n_zero(void **state) {
    api_fixture *f = *state;
    chr_node_ref ref;
    chr_node_view view;
    size_t count = 0;
    assert_chr_error(chr_ring_replicas(f->ring, key, KEY_LEN, 0, &ref, &count), CHR_EINVAL,
                     "chr_ring_replicas");
    assert_chr_error(chr_snapshot_replicas(f->snap, key, KEY_LEN, 0, &view, &count), CHR_EINVAL,
                     "chr_snapshot_replicas");
}

static void test_nodes_capacity(void **state) {
    api_fixture *f = *state;
    chr_node_ref refs[3];
    size_t count = 0;

    assert_chr_error(chr_ring_nodes(f->ring, refs, 2, &count), CHR_ERANGE, "chr_ring_nodes");
    assert_int_equal(count, 3); /* the capacity needed */
    count = 0;
    assert_size_query(chr_ring_nodes(f->ring, NULL, 0, &count));
    assert_int_equal(count, 3);
    assert_chr_ok(chr_ring_nodes(f->ring, refs, 3, &count));
    assert_int_equal(count, 3);
    assert_chr_ok(chr_ring_nodes(f->empty, NULL, 0, &count));
    assert_int_equal(count, 0);
}

static void test_snapshot_index_past_end(void **state) {
    api_fixture *f = *state;
    chr_node_view view;
    size_t nodes = 0, tokens = 0;
    uint64_t value = 0;
    uint32_t owner = 0;
    assert_chr_ok(chr_snapshot_node_count(f->snap, &nodes));
    assert_chr_ok(chr_snapshot_token_count(f->snap, &tokens));
    assert_chr_ok(chr_snapshot_node(f->snap, nodes - 1, &view));
    assert_chr_ok(chr_snapshot_token(f->snap, tokens - 1, &value, &owner));
    assert_chr_error(chr_snapshot_node(f->snap, nodes, &view), CHR_ERANGE, "chr_snapshot_node");
    assert_chr_error(chr_snapshot_node(f->snap, SIZE_MAX, &view), CHR_ERANGE, "chr_snapshot_node");
    assert_chr_error(chr_snapshot_token(f->snap, tokens, &value, &owner), CHR_ERANGE,
                     "chr_snapshot_token");
    assert_chr_error(chr_snapshot_token(f->empty_snap, 0, &value, &owner), CHR_ERANGE,
                     "chr_snapshot_token");
}

/* chr_ring_new must fail with `expected`, set *out to NULL, and say why. */
static void check_bad_options(const chr_options *opts, chr_status expected) {
    chr_ring *ring = (chr_ring *)&ring; /* any non-NULL value: must be overwritten */
    assert_chr_error(chr_ring_new(opts, &ring), expected, "chr_ring_new");
    assert_null(ring);
}

static void test_bad_options(void **state) {
    (void)state;
    chr_options opts;

    assert_chr_error(chr_options_init(&opts, 0), CHR_EVERSION, "chr_options_init");
    assert_chr_error(chr_options_init(&opts, CHR_OPTIONS_VERSION + 1), CHR_EVERSION,
                     "chr_options_init");

    const chr_options defaults = CHR_OPTIONS_INIT;
    opts = defaults, opts.version = 0;
    check_bad_options(&opts, CHR_EVERSION);
    opts = defaults, opts.version = CHR_OPTIONS_VERSION + 1;
    check_bad_options(&opts, CHR_EVERSION);
    opts = defaults, opts.tokens_per_weight = 0;
    check_bad_options(&opts, CHR_ERANGE);
    opts = defaults, opts.tokens_per_weight = CHR_TOKENS_PER_WEIGHT_MAX + 1;
    check_bad_options(&opts, CHR_ERANGE);
    assert_non_null(strstr(chr_last_error(), "65537"));
    opts = defaults, opts.placement = 1000; /* no such mode (0..3 exist today) */
    check_bad_options(&opts, CHR_ENOTSUP);
    opts = defaults, opts.placement = -1;
    check_bad_options(&opts, CHR_ENOTSUP);
    opts = defaults, opts.reserved0 = 1;
    check_bad_options(&opts, CHR_EINVAL);
    opts = defaults, opts.hasher = "no-such-hasher";
    check_bad_options(&opts, CHR_ENOHASHER);
    assert_non_null(strstr(chr_last_error(), "no-such-hasher"));

    /* The limits themselves are accepted. */
    chr_ring *ring = NULL;
    opts = defaults, opts.tokens_per_weight = CHR_TOKENS_PER_WEIGHT_MAX;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    chr_ring_free(ring);
    opts = defaults, opts.tokens_per_weight = 1, opts.hasher = CHR_DEFAULT_HASHER;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    chr_ring_free(ring);

    uint64_t value = 0;
    assert_chr_error(chr_hasher_hash("no-such-hasher", key, KEY_LEN, 0, &value), CHR_ENOHASHER,
                     "chr_hasher_hash");
}

static void test_apply_bad_batches(void **state) {
    api_fixture *f = *state;
    size_t failed_index = 99;
    chr_change changes[3] = {{CHR_OP_ADD, 1, "new", 3, NULL, 0, 0},
                             {0, 1, "node-000", 8, NULL, 0, 0},
                             {CHR_OP_REMOVE, 0, "node-001", 8, NULL, 0, 0}};

    assert_chr_error(chr_ring_apply(f->ring, changes, 3, &failed_index), CHR_EINVAL,
                     "chr_ring_apply");
    assert_int_equal(failed_index, 1);
    changes[1].op = CHR_OP_SET_WEIGHT + 1;
    assert_chr_error(chr_ring_apply(f->ring, changes, 3, &failed_index), CHR_EINVAL,
                     "chr_ring_apply");
    assert_int_equal(failed_index, 1);
    changes[1].op = UINT32_MAX;
    assert_chr_error(chr_ring_apply(f->ring, changes, 3, NULL), CHR_EINVAL, "chr_ring_apply");

    assert_chr_error(chr_ring_apply(f->ring, NULL, 2, &failed_index), CHR_EINVAL, "chr_ring_apply");
    assert_int_equal(failed_index, 2);
    assert_ring_unchanged(f);
}

/* ---- hasher registration ---------------------------------------------- */

static uint64_t hash_first(const void *data, size_t len, uint64_t seed) {
    (void)data;
    return mix64(len ^ seed);
}

static uint64_t hash_second(const void *data, size_t len, uint64_t seed) {
    (void)data;
    return ~mix64(len ^ seed);
}

static void digest_stub(const void *data, size_t len, unsigned char *out) {
    (void)data;
    out[0] = (unsigned char)len;
}

static chr_hasher valid_descriptor(const char *name) {
    chr_hasher h = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), name, "test hasher", hash_first,
                    0, NULL, 0};
    return h;
}

/* Registration must fail with `expected` and leave no hasher behind. */
static void check_bad_descriptor(const chr_hasher *desc, chr_status expected) {
    static chr_hasher stored; /* registration may keep the pointer: give it static storage */
    stored = *desc;
    assert_chr_error(chr_hasher_register(&stored), expected, "chr_hasher_register");
    if (stored.name) {
        uint64_t value = 0;
        assert_chr_status(chr_hasher_hash(stored.name, key, KEY_LEN, 0, &value), CHR_ENOHASHER);
    }
}

static void test_hasher_register_bad_descriptors(void **state) {
    (void)state;
    static char long_name[CHR_HASHER_NAME_MAX + 2];
    memset(long_name, 'n', CHR_HASHER_NAME_MAX + 1);
    chr_hasher h;

    h = valid_descriptor(NULL);
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("");
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor(long_name);
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("Upper-Case");
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("bad-hash64"), h.hash64 = NULL;
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("bad-abi-0"), h.abi_version = 0;
    check_bad_descriptor(&h, CHR_EPLUGIN_ABI);
    h = valid_descriptor("bad-abi-next"), h.abi_version = CHR_PLUGIN_ABI_VERSION + 1;
    check_bad_descriptor(&h, CHR_EPLUGIN_ABI);
    h = valid_descriptor("bad-size"), h.struct_size = sizeof(chr_hasher) - 1;
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("size-without-digest"), h.digest_size = 16;
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("digest-without-size"), h.digest = digest_stub;
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("digest-too-big"), h.digest = digest_stub, h.digest_size = CHR_DIGEST_MAX + 1;
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
    h = valid_descriptor("reserved-flags"), h.flags = 1;
    check_bad_descriptor(&h, CHR_EPLUGIN_DESC);
}

static void test_hasher_register_duplicate_keeps_first(void **state) {
    (void)state;
    static const chr_hasher first = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "test-dup",
                                     "first", hash_first, 0, NULL, 0};
    static const chr_hasher second = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "test-dup",
                                      "second", hash_second, 0, NULL, 0};
    static const chr_hasher fake_xxh3 = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "xxh3",
                                         "impostor", hash_second, 0, NULL, 0};
    uint64_t value = 0, xxh3_before = 0, xxh3_after = 0;

    assert_chr_ok(chr_hasher_register(&first));
    assert_chr_error(chr_hasher_register(&second), CHR_EEXIST, "chr_hasher_register");
    assert_non_null(strstr(chr_last_error(), "test-dup"));
    assert_chr_ok(chr_hasher_hash("test-dup", key, KEY_LEN, 5, &value));
    assert_int_equal(value, hash_first(key, KEY_LEN, 5));

    assert_chr_ok(chr_hasher_hash("xxh3", key, KEY_LEN, 0, &xxh3_before));
    assert_chr_error(chr_hasher_register(&fake_xxh3), CHR_EEXIST, "chr_hasher_register");
    assert_chr_ok(chr_hasher_hash("xxh3", key, KEY_LEN, 0, &xxh3_after));
    assert_int_equal(xxh3_before, xxh3_after);

    /* The first registration stays usable for rings. */
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = "test-dup";
    chr_ring *ring = ring_with_nodes(&opts, 2, 1);
    chr_node_ref owner;
    assert_chr_ok(chr_ring_lookup(ring, key, KEY_LEN, &owner));
    chr_ring_free(ring);
}

static void test_hasher_digest_errors(void **state) {
    (void)state;
    static const chr_hasher no_digest = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher),
                                         "test-no-digest", NULL, hash_first, 0, NULL, 0};
    unsigned char out[CHR_DIGEST_MAX];
    size_t size = 0;

    assert_chr_error(chr_hasher_digest(NULL, key, KEY_LEN, out, sizeof out, &size), CHR_EINVAL,
                     "chr_hasher_digest");
    assert_chr_error(chr_hasher_digest("xxh3", key, KEY_LEN, out, sizeof out, NULL), CHR_EINVAL,
                     "chr_hasher_digest");
    assert_chr_error(chr_hasher_digest("xxh3", key, KEY_LEN, NULL, 8, &size), CHR_EINVAL,
                     "chr_hasher_digest");
    assert_chr_error(chr_hasher_digest("xxh3", NULL, 3, out, sizeof out, &size), CHR_EINVAL,
                     "chr_hasher_digest");
    assert_chr_error(chr_hasher_digest("no-such-hasher", key, KEY_LEN, out, sizeof out, &size),
                     CHR_ENOHASHER, "chr_hasher_digest");

    assert_chr_ok(chr_hasher_register(&no_digest));
    assert_chr_error(chr_hasher_digest("test-no-digest", key, KEY_LEN, out, sizeof out, &size),
                     CHR_ENOTSUP, "chr_hasher_digest");
    assert_int_equal(size, 0);

    /* Too small a buffer reports the size needed. */
    assert_chr_ok(chr_hasher_digest("xxh3", key, KEY_LEN, out, sizeof out, &size));
    const size_t needed = size;
    assert_true(needed >= 1);
    size = 0;
    assert_chr_error(chr_hasher_digest("xxh3", key, KEY_LEN, out, needed - 1, &size), CHR_ERANGE,
                     "chr_hasher_digest");
    assert_int_equal(size, needed);
    assert_size_query(chr_hasher_digest("xxh3", key, KEY_LEN, NULL, 0, &size));
    assert_int_equal(size, needed);
}

static void test_hasher_list_errors(void **state) {
    (void)state;
    chr_hasher_info infos[1];
    size_t count = 0;

    assert_chr_error(chr_hasher_list(NULL, infos, 1, NULL), CHR_EINVAL, "chr_hasher_list");
    assert_chr_error(chr_hasher_list(NULL, NULL, 3, &count), CHR_EINVAL, "chr_hasher_list");

    /* At least xxh3, the default, exists. */
    assert_size_query(chr_hasher_list(NULL, NULL, 0, &count));
    assert_true(count >= 1);
    chr_hasher_info *all = calloc(count, sizeof *all);
    assert_non_null(all);
    const size_t needed = count;
    assert_chr_error(chr_hasher_list(NULL, all, needed - 1, &count), CHR_ERANGE, "chr_hasher_list");
    assert_int_equal(count, needed);
    assert_chr_ok(chr_hasher_list(NULL, all, needed, &count));
    assert_int_equal(count, needed);
    free(all);
}

static void test_plugin_load_errors(void **state) {
    (void)state;
    size_t loaded = 99;

    assert_chr_error(chr_plugin_load(NULL, &loaded), CHR_EINVAL, "chr_plugin_load");
    assert_int_equal(loaded, 0);
    loaded = 99;
    assert_chr_error(chr_plugin_load("/nonexistent/chring-none.so", &loaded), CHR_EPLUGIN_NOFILE,
                     "chr_plugin_load");
    assert_int_equal(loaded, 0);
    assert_chr_error(chr_plugin_load("/", NULL), CHR_EPLUGIN_NOFILE, "chr_plugin_load");

    /* A regular file that is not a shared object, in a directory of our own
     * (the loader refuses files in a world-writable one such as /tmp). */
    char dir[] = TEMP_DIR_TEMPLATE;
    assert_non_null(mkdtemp(dir));
    char path[sizeof dir + 16];
    snprintf(path, sizeof path, "%s/plugin.so", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    loaded = 99;
    assert_chr_error(chr_plugin_load(path, &loaded), CHR_EPLUGIN_NOTSO, "chr_plugin_load");
    assert_int_equal(loaded, 0);
    unlink(path);
    rmdir(dir);
}

/* ---- error texts --------------------------------------------------------- */

static void test_strerror_every_code(void **state) {
    (void)state;
    const chr_status known[] = {CHR_OK,        CHR_EINVAL,         CHR_ENOMEM,
                                CHR_ERANGE,    CHR_EEXIST,         CHR_ENOENT,
                                CHR_EEMPTY,    CHR_EVERSION,       CHR_ENOHASHER,
                                CHR_ENOTSUP,   CHR_EINTERNAL,      CHR_EPLUGIN_NOFILE,
                                CHR_EPLUGIN_NOTSO, CHR_EPLUGIN_SYMBOL, CHR_EPLUGIN_ABI,
                                CHR_EPLUGIN_DESC, CHR_EPLUGIN_UNTRUSTED, CHR_EFORMAT,
                                CHR_EOPTIONS,  CHR_EIO,            CHR_EINCOMPATIBLE};
    const size_t n = sizeof known / sizeof known[0];
    const char *unknown = chr_strerror(CHR_EINCOMPATIBLE - 1);
    assert_non_null(unknown);
    assert_true(unknown[0] != '\0');

    for (size_t i = 0; i < n; ++i) {
        const char *text = chr_strerror(known[i]);
        assert_non_null(text);
        assert_true(text[0] != '\0');
        assert_string_not_equal(text, unknown);
        for (size_t j = 0; j < i; ++j) assert_string_not_equal(text, chr_strerror(known[j]));
    }
    /* Every unknown code gets the same generic text. */
    const chr_status strange[] = {1, 42, -100, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof strange / sizeof strange[0]; ++i)
        assert_string_equal(chr_strerror(strange[i]), unknown);
}

/* A thread that never failed sees "", never NULL, whatever other threads did. */
static void *first_character_of_last_error(void *result) {
    *(int *)result = chr_last_error() != NULL ? chr_last_error()[0] : -1;
    return NULL;
}

static void test_last_error_starts_empty(void **state) {
    (void)state;
    prime_last_error("chr_ring_add");
    pthread_t thread;
    int first = 'x';
    assert_int_equal(pthread_create(&thread, NULL, first_character_of_last_error, &first), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(first, '\0');
}

static void test_last_error_untouched_by_success(void **state) {
    api_fixture *f = *state;
    chr_node_ref refs[3];
    chr_node_view views[3];
    size_t count = 0;
    uint64_t value = 0;
    uint32_t index = 0;
    double fraction = 0;
    const void *keys[1] = {key};
    size_t lens[1] = {KEY_LEN};
    chr_options opts;
    chr_snapshot *snap = NULL;
    chr_ring *ring = NULL;

    assert_chr_error(remove_node(f->ring, 77), CHR_ENOENT, "chr_ring_remove");
    char before[512];
    strncpy(before, chr_last_error(), sizeof before - 1);
    before[sizeof before - 1] = '\0';
    assert_true(before[0] != '\0');

    assert_chr_ok(chr_ring_lookup(f->ring, key, KEY_LEN, refs));
    assert_chr_ok(chr_ring_replicas(f->ring, key, KEY_LEN, 3, refs, &count));
    assert_chr_ok(chr_ring_node_count(f->ring, &count));
    assert_chr_ok(chr_ring_token_count(f->ring, &count));
    assert_chr_ok(chr_ring_nodes(f->ring, refs, 3, &count));
    assert_chr_ok(chr_ring_ownership(f->ring, "node-000", 8, &fraction));
    assert_chr_ok(chr_ring_fingerprint(f->ring, &value));
    assert_chr_ok(chr_ring_snapshot(f->ring, &snap));
    assert_chr_ok(chr_snapshot_lookup(snap, key, KEY_LEN, views));
    assert_chr_ok(chr_snapshot_lookup_batch(snap, keys, lens, 1, &index));
    assert_chr_ok(chr_snapshot_replicas(snap, key, KEY_LEN, 3, views, &count));
    assert_chr_ok(chr_snapshot_node(snap, 0, views));
    assert_chr_ok(chr_snapshot_token(snap, 0, &value, &index));
    assert_chr_ok(chr_snapshot_fingerprint(snap, &value));
    chr_snapshot_release(snap);
    assert_chr_ok(add_node(f->ring, 50, 1));
    assert_chr_ok(set_node_weight(f->ring, 50, 2));
    assert_chr_ok(remove_node(f->ring, 50));
    assert_chr_ok(chr_options_init(&opts, CHR_OPTIONS_VERSION));
    assert_chr_ok(chr_ring_new(&opts, &ring));
    chr_ring_free(ring);
    assert_chr_ok(chr_hasher_hash("xxh3", key, KEY_LEN, 0, &value));

    assert_string_equal(chr_last_error(), before);
}

/* Ids in messages are spelled as the CLI spells them (chr_ringfile_escape
 * with CHR_ESCAPE_HIDDEN): NUL, controls, bidi overrides, '%', a leading
 * '#' and invalid UTF-8 as %XX, valid UTF-8 and a backslash as they are,
 * long ids cut. */
static void test_ids_quoted_in_messages(void **state) {
    api_fixture *f = *state;
    assert_chr_error(chr_ring_remove(f->ring, "\0\0\0", 3), CHR_ENOENT, "chr_ring_remove");
    assert_non_null(strstr(chr_last_error(), "no node '%00%00%00' in the ring"));

    static const char tricky[] = "a\x1b[31m\xe2\x80\xae" "b\xc2\x85%\\\xff\xc3\xa9 z";
    assert_chr_error(chr_ring_ownership(f->ring, tricky, sizeof tricky - 1, &(double){0}),
                     CHR_ENOENT, "chr_ring_ownership");
    assert_non_null(strstr(chr_last_error(), "'a%1B[31m%E2%80%AEb%C2%85%25\\%FF\xc3\xa9%20z'"));
    char spelled[64];
    size_t spelled_len = 0;
    assert_chr_ok(chr_ringfile_escape(tricky, sizeof tricky - 1, CHR_ESCAPE_HIDDEN, spelled,
                                      sizeof spelled, &spelled_len));
    assert_non_null(strstr(chr_last_error(), spelled));

    /* A leading '#' as a ring file spells it, U+FEFF escaped wherever it is. */
    assert_chr_error(chr_ring_remove(f->ring, "#a\xef\xbb\xbf", 5), CHR_ENOENT, "chr_ring_remove");
    assert_non_null(strstr(chr_last_error(), "no node '%23a%EF%BB%BF' in the ring"));

    char long_id[CHR_NODE_ID_MAX];
    memset(long_id, 'q', sizeof long_id);
    assert_chr_error(chr_ring_set_weight(f->ring, long_id, sizeof long_id, 1), CHR_ENOENT,
                     "chr_ring_set_weight");
    const char *quoted = strchr(chr_last_error(), '\'');
    assert_non_null(quoted);
    assert_int_equal(strspn(quoted + 1, "q"), 64);
    assert_memory_equal(quoted + 65, "...'", 4);

    /* An existing id in the EEXIST message, quoted the same way. */
    chr_node_ref ref;
    assert_chr_ok(chr_ring_lookup(f->ring, "k", 1, &ref));
    assert_chr_error(chr_ring_add(f->ring, ref.id, ref.id_len, 1, NULL, 0, 0), CHR_EEXIST,
                     "chr_ring_add");
}

/* chr_node_ref: the id is written zero-padded to 24 bytes when it fits,
 * and nothing past 24 (or past id_len) nor past zone_len is written. */
static void test_node_ref_writes_as_documented(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 0, 1);
    assert_chr_ok(chr_ring_add(ring, "short", 5, 1, "z1", 2, 0));
    chr_node_ref ref;
    memset(&ref, 0xAB, sizeof ref);
    assert_chr_ok(chr_ring_lookup(ring, "k", 1, &ref));
    assert_int_equal(ref.id_len, 5);
    assert_memory_equal(ref.id, "short", 5);
    for (size_t i = 5; i < 24; ++i) assert_int_equal(ref.id[i], 0);
    for (size_t i = 24; i < sizeof ref.id; ++i) assert_int_equal(ref.id[i], 0xAB);
    assert_memory_equal(ref.zone, "z1", 2);
    for (size_t i = 2; i < sizeof ref.zone; ++i) assert_int_equal(ref.zone[i], 0xAB);

    char long_id[40];
    memset(long_id, 'L', sizeof long_id);
    assert_chr_ok(chr_ring_remove(ring, "short", 5));
    assert_chr_ok(chr_ring_add(ring, long_id, sizeof long_id, 1, NULL, 0, 0));
    memset(&ref, 0xAB, sizeof ref);
    assert_chr_ok(chr_ring_lookup(ring, "k", 1, &ref));
    assert_memory_equal(ref.id, long_id, sizeof long_id);
    for (size_t i = sizeof long_id; i < sizeof ref.id; ++i) assert_int_equal(ref.id[i], 0xAB);
    chr_ring_free(ring);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_null_ring_or_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_out_pointers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_key_with_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_id_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zone_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_weight_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_total_token_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_and_unknown_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reads_without_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas_n_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodes_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_index_past_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_bad_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hasher_register_bad_descriptors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hasher_register_duplicate_keeps_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hasher_digest_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hasher_list_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plugin_load_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strerror_every_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_error_starts_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_error_untouched_by_success, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids_quoted_in_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_ref_writes_as_documented, setup, teardown),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
