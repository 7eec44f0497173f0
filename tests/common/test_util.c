#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- error assertions -------------------------------------------------- */

static int is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

int names_function(const char *text, const char *function) {
    const size_t len = strlen(function);
    for (const char *p = strstr(text, function); p; p = strstr(p + 1, function))
        if ((p == text || !is_name_char(p[-1])) && !is_name_char(p[len])) return 1;
    return 0;
}

void prime_last_error(const char *function) {
    uint64_t unused;
    if (strcmp(function, "chr_options_init") != 0)
        (void)chr_options_init(NULL, CHR_OPTIONS_VERSION);
    else
        (void)chr_hasher_hash(NULL, NULL, 0, 0, &unused);
}

void check_chr_error(chr_status got, chr_status expected, const char *function, const char *expr,
                     const char *file, int line) {
    chr_check_status(got, expected, expr, file, line);
    const char *message = chr_last_error();
    if (message == NULL) {
        print_error("%s:%d: %s: chr_last_error() is NULL\n", file, line, expr);
        _fail(file, line);
    }
    if (!names_function(message, function)) {
        print_error("%s:%d: %s failed as expected, but chr_last_error() does not name %s: \"%s\"\n",
                    file, line, expr, function, message);
        _fail(file, line);
    }
}

/* ---- PRNG --------------------------------------------------------------- */

test_rng rng_seeded(uint64_t seed) {
    test_rng rng;
    rng.state = seed;
    return rng;
}

uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t rng_next(test_rng *rng) {
    rng->state += 0x9E3779B97F4A7C15ull;
    return mix64(rng->state);
}

uint64_t rng_below(test_rng *rng, uint64_t bound) {
    const uint64_t reject_below = (0 - bound) % bound; /* 2^64 mod bound */
    uint64_t x;
    do x = rng_next(rng);
    while (x < reject_below);
    return x % bound;
}

void rng_shuffle(test_rng *rng, size_t *items, size_t count) {
    for (size_t i = count; i > 1; --i) {
        size_t j = (size_t)rng_below(rng, i);
        size_t t = items[i - 1];
        items[i - 1] = items[j];
        items[j] = t;
    }
}

/* ---- nodes -------------------------------------------------------------- */

size_t node_id(unsigned number, char buf[TEST_ID_BUF]) {
    return (size_t)snprintf(buf, TEST_ID_BUF, "node-%03u", number);
}

chr_status add_node(chr_ring *ring, unsigned number, uint32_t weight) {
    char id[TEST_ID_BUF];
    size_t len = node_id(number, id);
    return chr_ring_add(ring, id, len, weight, NULL, 0, number);
}

chr_status remove_node(chr_ring *ring, unsigned number) {
    char id[TEST_ID_BUF];
    size_t len = node_id(number, id);
    return chr_ring_remove(ring, id, len);
}

chr_status set_node_weight(chr_ring *ring, unsigned number, uint32_t weight) {
    char id[TEST_ID_BUF];
    size_t len = node_id(number, id);
    return chr_ring_set_weight(ring, id, len, weight);
}

double node_ownership(const chr_ring *ring, unsigned number) {
    char id[TEST_ID_BUF];
    size_t len = node_id(number, id);
    double fraction = -1.0;
    assert_chr_ok(chr_ring_ownership(ring, id, len, &fraction));
    return fraction;
}

chr_ring *ring_with_nodes(const chr_options *opts, unsigned count, uint32_t weight) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(opts, &ring));
    /* One batch, as the library documents building (the same ring as
     * adding them one by one, without a rebuild per node). */
    char (*ids)[TEST_ID_BUF] = malloc((count ? count : 1) * sizeof *ids);
    chr_change *changes = calloc(count ? count : 1, sizeof *changes);
    assert_non_null(ids);
    assert_non_null(changes);
    for (unsigned n = 0; n < count; ++n) {
        chr_change c = {CHR_OP_ADD, weight, ids[n], node_id(n, ids[n]), NULL, 0, n};
        changes[n] = c;
    }
    assert_chr_ok(chr_ring_apply(ring, changes, count, NULL));
    free(changes);
    free(ids);
    return ring;
}

/* ---- keys --------------------------------------------------------------- */

enum { KEY_MIN_LEN = 4, KEY_MAX_LEN = 20 };

key_set *key_set_new(size_t count, uint64_t seed) {
    key_set *set = calloc(1, sizeof *set);
    assert_non_null(set);
    set->count = count;
    set->keys = calloc(count ? count : 1, sizeof *set->keys);
    set->lens = calloc(count ? count : 1, sizeof *set->lens);
    set->bytes = malloc(count * KEY_MAX_LEN + 1);
    assert_non_null(set->keys);
    assert_non_null(set->lens);
    assert_non_null(set->bytes);
    test_rng rng = rng_seeded(seed);
    for (size_t i = 0; i < count; ++i) {
        unsigned char *key = set->bytes + i * KEY_MAX_LEN;
        size_t len = KEY_MIN_LEN + (size_t)rng_below(&rng, KEY_MAX_LEN - KEY_MIN_LEN + 1);
        for (size_t b = 0; b < len; ++b) key[b] = (unsigned char)rng_next(&rng);
        set->keys[i] = key;
        set->lens[i] = len;
    }
    return set;
}

void key_set_free(key_set *set) {
    if (!set) return;
    free(set->keys);
    free(set->lens);
    free(set->bytes);
    free(set);
}

void owner_tags(const chr_ring *ring, const key_set *keys, uint64_t *tags) {
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    size_t nodes = 0;
    assert_chr_ok(chr_snapshot_node_count(snap, &nodes));
    uint64_t *tag_of_index = calloc(nodes ? nodes : 1, sizeof *tag_of_index);
    uint32_t *indices = calloc(keys->count ? keys->count : 1, sizeof *indices);
    assert_non_null(tag_of_index);
    assert_non_null(indices);
    for (size_t i = 0; i < nodes; ++i) {
        chr_node_view view;
        assert_chr_ok(chr_snapshot_node(snap, i, &view));
        tag_of_index[i] = view.tag;
    }
    assert_chr_ok(chr_snapshot_lookup_batch(snap, keys->keys, keys->lens, keys->count, indices));
    for (size_t k = 0; k < keys->count; ++k) {
        assert_true(indices[k] < nodes);
        tags[k] = tag_of_index[indices[k]];
    }
    free(indices);
    free(tag_of_index);
    chr_snapshot_release(snap);
}

/* ---- tokens ------------------------------------------------------------- */

void token_dump_take(const chr_snapshot *snap, token_dump *dump) {
    assert_chr_ok(chr_snapshot_token_count(snap, &dump->count));
    dump->values = calloc(dump->count ? dump->count : 1, sizeof *dump->values);
    dump->owners = calloc(dump->count ? dump->count : 1, sizeof *dump->owners);
    assert_non_null(dump->values);
    assert_non_null(dump->owners);
    for (size_t t = 0; t < dump->count; ++t)
        assert_chr_ok(chr_snapshot_token(snap, t, &dump->values[t], &dump->owners[t]));
}

void token_dump_of_ring(const chr_ring *ring, token_dump *dump) {
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    token_dump_take(snap, dump);
    chr_snapshot_release(snap);
}

void token_dump_free(token_dump *dump) {
    free(dump->values);
    free(dump->owners);
    dump->values = NULL;
    dump->owners = NULL;
    dump->count = 0;
}

int token_dumps_equal(const token_dump *a, const token_dump *b) {
    return a->count == b->count &&
           memcmp(a->values, b->values, a->count * sizeof *a->values) == 0 &&
           memcmp(a->owners, b->owners, a->count * sizeof *a->owners) == 0;
}

size_t reference_successor(const uint64_t *values, size_t count, uint64_t h) {
    size_t lo = 0, hi = count; /* invariant: values[<lo] < h <= values[>=hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (values[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == count ? 0 : lo;
}

uint64_t ring_fingerprint(const chr_ring *ring) {
    uint64_t fingerprint = 0;
    assert_chr_ok(chr_ring_fingerprint(ring, &fingerprint));
    return fingerprint;
}

size_t ring_node_count(const chr_ring *ring) {
    size_t count = 0;
    assert_chr_ok(chr_ring_node_count(ring, &count));
    return count;
}

/* ---- suite runner ------------------------------------------------------- */

int run_test_table(const char *name, const struct CMUnitTest *tests, size_t count,
                   size_t selected) {
    int failed = _cmocka_run_group_tests(name, tests, count, NULL, NULL);
    printf("%zu passed, %d failed\n", selected - (size_t)failed, failed);
    return failed;
}

/* ---- fixtures ------------------------------------------------------------ */

keyed_snapshot *keyed_snapshot_new(chr_ring *ring, size_t count, uint64_t seed) {
    keyed_snapshot *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->ring = ring;
    assert_chr_ok(chr_ring_snapshot(f->ring, &f->snap));
    f->keys = key_set_new(count, seed);
    f->indices = calloc(count, sizeof *f->indices);
    assert_non_null(f->indices);
    return f;
}

void keyed_snapshot_free(keyed_snapshot *f) {
    chr_snapshot_release(f->snap);
    chr_ring_free(f->ring);
    key_set_free(f->keys);
    free(f->indices);
    free(f);
}
