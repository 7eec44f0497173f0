/*
 * Availability (chring.h, "Availability"): members marked down are routed
 * around along each key's own replica walk, without moving a token.
 *
 * Properties, on rings of every placement with zones, for every single
 * member and every pair of members down: a key's lookup is the first
 * available member of its unmarked walk, so no key of an available owner
 * moves; replica lists under every policy are the policy's list over the
 * walk without the down members, then the down members in walk order;
 * CHR_NODE_DOWN marks exactly the down members; marking up restores the
 * exact mapping; the fingerprint never changes. Then panic, a threshold of
 * 100 with every member down, bounded lookups and the tracker, marks
 * across membership changes, the digest's test vector, and the API's
 * refusals.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "test_util.h"

/* The digest of test_digest_vector, pinned (docs/semantics.md gives it too). */
#define DIGEST_VECTOR UINT64_C(0x9b9b651eb0ad4116)

enum {
    MEMBERS = 10,
    ZONES = 3,
    KEYS = 150,
    MAX_LIST = MEMBERS,
};

static const int32_t kPolicies[] = {CHR_REPLICAS_NODES, CHR_REPLICAS_ZONES_FIRST, CHR_REPLICAS_NTS};
enum { POLICIES = sizeof kPolicies / sizeof kPolicies[0] };

static void member_id(unsigned m, char *buf) { snprintf(buf, 16, "m%02u", m); }

/* MEMBERS members in ZONES zones; member 0 in a zone of its own so that
 * marking it down removes a live zone; weights 1 and 2 (nginx: 1), and the
 * last member drained (weight 0: no tokens, never in a walk). */
static chr_ring *zoned_ring(int32_t placement) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.placement = placement;
    if (placement == CHR_PLACEMENT_NATIVE) opts.tokens_per_weight = 40;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    for (unsigned m = 0; m < MEMBERS; ++m) {
        char id[16], zone[8];
        member_id(m, id);
        snprintf(zone, sizeof zone, "z%u", m == 0 ? ZONES : m % ZONES);
        const uint32_t weight = m == MEMBERS - 1 ? 0 : placement != CHR_PLACEMENT_NGINX && m % 3 == 1 ? 2 : 1;
        assert_chr_ok(chr_ring_add(ring, id, strlen(id), weight, zone, strlen(zone), m));
    }
    return ring;
}

/* A policy's list over a walk of distinct members (chring.h, "Zone-aware
 * replicas"): firsts of each zone and repeats, in walk order. */
static size_t policy_list(int32_t policy, const uint32_t *walk, size_t len, const uint32_t *zone_of,
                          size_t n, uint32_t *out) {
    if (n > len) n = len;
    size_t zones = 0;
    int seen[MEMBERS + ZONES + 1] = {0};
    for (size_t i = 0; i < len; ++i)
        if (!seen[zone_of[walk[i]]]++) ++zones;
    if (policy == CHR_REPLICAS_NODES || zones <= 1) {
        memcpy(out, walk, n * sizeof *out);
        return n;
    }
    const size_t want_firsts = n < zones ? n : zones, want_repeats = n - want_firsts;
    int zone_taken[MEMBERS + ZONES + 1] = {0};
    uint32_t firsts[MAX_LIST], repeats[MAX_LIST];
    int chosen[MAX_LIST] = {0};
    size_t f = 0, r = 0;
    for (size_t i = 0; i < len; ++i) {
        const uint32_t z = zone_of[walk[i]];
        if (!zone_taken[z]) {
            zone_taken[z] = 1;
            if (f < want_firsts) {
                firsts[f++] = walk[i];
                chosen[i] = 1;
            }
        } else if (r < want_repeats) {
            repeats[r++] = walk[i];
            chosen[i] = 1;
        }
    }
    size_t k = 0;
    if (policy == CHR_REPLICAS_ZONES_FIRST) {
        for (size_t i = 0; i < f; ++i) out[k++] = firsts[i];
        for (size_t i = 0; i < r; ++i) out[k++] = repeats[i];
    } else {
        for (size_t i = 0; i < len; ++i)
            if (chosen[i]) out[k++] = walk[i];
    }
    return k;
}

typedef struct walks {
    size_t len[KEYS];
    uint32_t walk[KEYS][MAX_LIST]; /* each key's distinct owners, unmarked */
    uint32_t zone_of[MEMBERS];
} walks;

static void take_walks(const chr_snapshot *snap, const key_set *keys, walks *w) {
    chr_node_view views[MAX_LIST];
    for (size_t k = 0; k < KEYS; ++k) {
        assert_chr_ok(chr_snapshot_replicas(snap, keys->keys[k], keys->lens[k], MAX_LIST, views, &w->len[k]));
        for (size_t i = 0; i < w->len[k]; ++i) w->walk[k][i] = views[i].index;
    }
    for (uint32_t i = 0; i < MEMBERS; ++i) {
        chr_node_view v;
        assert_chr_ok(chr_snapshot_node(snap, i, &v));
        w->zone_of[i] = (uint32_t)(v.zone[1] - '0');
    }
}

/* The marked snapshot against the unmarked walks, `down[i]` the marks. */
static void check_routed(const chr_ring *ring, const chr_snapshot *snap, const key_set *keys, const walks *w,
                         const int *down) {
    uint32_t batch[KEYS];
    assert_chr_ok(chr_snapshot_lookup_batch(snap, (const void *const *)keys->keys, keys->lens, KEYS, batch));
    for (size_t k = 0; k < KEYS; ++k) {
        const uint32_t *walk = w->walk[k];
        const size_t len = w->len[k];
        uint32_t up[MAX_LIST], gone[MAX_LIST];
        size_t ups = 0, downs = 0;
        for (size_t i = 0; i < len; ++i) {
            if (down[walk[i]]) gone[downs++] = walk[i];
            else up[ups++] = walk[i];
        }
        const uint32_t want = ups ? up[0] : walk[0];
        chr_node_view v;
        assert_chr_ok(chr_snapshot_lookup(snap, keys->keys[k], keys->lens[k], &v));
        assert_int_equal(v.index, want);
        if (!down[walk[0]]) assert_int_equal(v.index, walk[0]); /* an up owner keeps its keys */
        assert_int_equal(v.flags, down[want] ? CHR_NODE_DOWN : 0);
        assert_int_equal(batch[k], want);
        chr_node_ref ref;
        assert_chr_ok(chr_ring_lookup(ring, keys->keys[k], keys->lens[k], &ref));
        assert_int_equal(ref.index, want);
        assert_int_equal(ref.flags, v.flags);
        for (size_t p = 0; p < POLICIES; ++p)
            for (size_t n = 1; n <= MAX_LIST; n += (n < 4 ? 1 : 3)) {
                uint32_t expect[MAX_LIST];
                size_t e = policy_list(kPolicies[p], up, ups, w->zone_of, n, expect);
                for (size_t i = 0; i < downs && e < n; ++i) expect[e++] = gone[i];
                chr_node_view got[MAX_LIST];
                size_t count = 0;
                assert_chr_ok(chr_snapshot_replicas_policy(snap, keys->keys[k], keys->lens[k], kPolicies[p], n,
                                                           got, &count));
                assert_int_equal(count, e);
                for (size_t i = 0; i < count; ++i) {
                    assert_int_equal(got[i].index, expect[i]);
                    assert_int_equal(got[i].flags, down[expect[i]] ? CHR_NODE_DOWN : 0);
                }
                if (count) assert_int_equal(got[0].index, want);
            }
    }
}

static void set_down_set(chr_ring *ring, const int *down) {
    const void *ids[MEMBERS];
    size_t lens[MEMBERS], count = 0;
    static char names[MEMBERS][16];
    for (unsigned m = 0; m < MEMBERS; ++m)
        if (down[m]) {
            member_id(m, names[m]);
            ids[count] = names[m];
            lens[count++] = strlen(names[m]);
        }
    assert_chr_ok(chr_ring_set_availability(ring, ids, lens, count, CHR_PANIC_THRESHOLD_DEFAULT));
}

static void routes_along_walk(int32_t placement) {
    chr_ring *ring = zoned_ring(placement);
    key_set *keys = key_set_new(KEYS, 0xA5A1 + (uint64_t)placement);
    chr_snapshot *plain = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &plain));
    static walks w;
    take_walks(plain, keys, &w);
    uint64_t fingerprint;
    assert_chr_ok(chr_snapshot_fingerprint(plain, &fingerprint));
    for (unsigned a = 0; a < MEMBERS; ++a)
        for (unsigned b = a; b < MEMBERS; ++b) { /* b == a: a alone */
            int down[MEMBERS] = {0};
            down[a] = down[b] = 1;
            set_down_set(ring, down);
            chr_snapshot *snap = NULL;
            assert_chr_ok(chr_ring_snapshot(ring, &snap));
            uint64_t fp;
            assert_chr_ok(chr_snapshot_fingerprint(snap, &fp));
            assert_int_equal(fp, fingerprint);
            chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
            assert_chr_ok(chr_snapshot_availability(snap, &info));
            assert_int_equal(info.down, a == b ? 1 : 2);
            assert_int_equal(info.panic, 0);
            assert_true(info.digest != 0);
            for (unsigned m = 0; m < MEMBERS; ++m) {
                uint32_t marked = 9;
                assert_chr_ok(chr_snapshot_marked_down(snap, m, &marked));
                assert_int_equal(marked, (uint32_t)down[m]);
                chr_node_view v;
                assert_chr_ok(chr_snapshot_node(snap, m, &v));
                assert_int_equal(v.flags, down[m] ? CHR_NODE_DOWN : 0);
            }
            check_routed(ring, snap, keys, &w, down);
            chr_snapshot_release(snap);
        }
    /* Every mark gone: exactly the old mapping, digest 0. */
    assert_chr_ok(chr_ring_set_availability(ring, NULL, NULL, 0, CHR_PANIC_THRESHOLD_DEFAULT));
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    int none[MEMBERS] = {0};
    check_routed(ring, snap, keys, &w, none);
    chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_snapshot_availability(snap, &info));
    assert_int_equal(info.digest, 0);
    assert_int_equal(info.down, 0);
    chr_snapshot_release(snap);
    chr_snapshot_release(plain);
    key_set_free(keys);
    chr_ring_free(ring);
}

static void test_native_routes_along_walk(void **state) {
    (void)state;
    routes_along_walk(CHR_PLACEMENT_NATIVE);
}
static void test_ketama_routes_along_walk(void **state) {
    (void)state;
    routes_along_walk(CHR_PLACEMENT_KETAMA);
}
static void test_nginx_routes_along_walk(void **state) {
    (void)state;
    routes_along_walk(CHR_PLACEMENT_NGINX);
}

/* Lookups of `keys` into owners[]. */
static void owners(const chr_ring *ring, const key_set *keys, uint32_t *out) {
    for (size_t k = 0; k < keys->count; ++k) {
        chr_node_ref ref;
        assert_chr_ok(chr_ring_lookup(ring, keys->keys[k], keys->lens[k], &ref));
        out[k] = ref.index;
    }
}

static void mark(chr_ring *ring, unsigned m, uint32_t down) {
    char id[16];
    member_id(m, id);
    assert_chr_ok(chr_ring_set_down(ring, id, strlen(id), down));
}

/* Four equal members: two down is honoured, three is panic (marks ignored). */
static void test_panic(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 4, 1);
    key_set *keys = key_set_new(KEYS, 7);
    uint32_t before[KEYS], now[KEYS];
    owners(ring, keys, before);
    /* ring_with_nodes names members with node_id(); mark by that name. */
    char id[TEST_ID_BUF];
    for (unsigned m = 0; m < 3; ++m) {
        size_t len = node_id(m, id);
        assert_chr_ok(chr_ring_set_down(ring, id, len, 1));
        chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
        assert_chr_ok(chr_ring_availability(ring, &info));
        assert_int_equal(info.down, m + 1);
        assert_int_equal(info.down_weight, m + 1);
        assert_int_equal(info.total_weight, 4);
        assert_int_equal(info.panic, m == 2);
        owners(ring, keys, now);
        chr_node_ref ref;
        for (size_t k = 0; k < KEYS; ++k) {
            assert_chr_ok(chr_ring_lookup(ring, keys->keys[k], keys->lens[k], &ref));
            if (m == 2) {
                assert_int_equal(now[k], before[k]); /* panic: as if nothing were marked */
                assert_int_equal(ref.flags, 0);
            } else {
                assert_int_equal(ref.flags, 0); /* answers are up members */
            }
        }
    }
    /* Threshold 100: never panic; every member down: original owners, flagged. */
    const void *ids[4];
    size_t lens[4];
    char names[4][TEST_ID_BUF];
    for (unsigned m = 0; m < 4; ++m) {
        lens[m] = node_id(m, names[m]);
        ids[m] = names[m];
    }
    assert_chr_ok(chr_ring_set_availability(ring, ids, lens, 4, 100));
    chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_ring_availability(ring, &info));
    assert_int_equal(info.panic, 0);
    assert_int_equal(info.panic_threshold, 100);
    owners(ring, keys, now);
    for (size_t k = 0; k < KEYS; ++k) {
        assert_int_equal(now[k], before[k]);
        chr_node_ref ref;
        assert_chr_ok(chr_ring_lookup(ring, keys->keys[k], keys->lens[k], &ref));
        assert_int_equal(ref.flags, CHR_NODE_DOWN);
        size_t count = 0;
        chr_node_ref list[4];
        assert_chr_ok(chr_ring_replicas(ring, keys->keys[k], keys->lens[k], 4, list, &count));
        assert_int_equal(count, 4);
        assert_int_equal(list[0].index, before[k]);
    }
    /* Threshold 0: any down weight is panic. */
    assert_chr_ok(chr_ring_set_availability(ring, ids, lens, 1, 0));
    assert_chr_ok(chr_ring_availability(ring, &info));
    assert_int_equal(info.panic, 1);
    owners(ring, keys, now);
    assert_memory_equal(now, before, sizeof now);
    key_set_free(keys);
    chr_ring_free(ring);
}

/* Bounded lookups and tracker acquires pass over a down member, unless
 * the caller's own mask leaves nothing else. */
static void test_bounded_and_tracker_skip_down(void **state) {
    (void)state;
    chr_ring *ring = zoned_ring(CHR_PLACEMENT_NATIVE);
    key_set *keys = key_set_new(KEYS, 11);
    mark(ring, 3, 1);
    mark(ring, 5, 1);
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    chr_tracker *tracker = NULL;
    assert_chr_ok(chr_tracker_new(64, &tracker));
    chr_bound_options opts = CHR_BOUND_OPTIONS_INIT;
    uint64_t loads[MEMBERS] = {0};
    unsigned char only_down[MEMBERS] = {0};
    only_down[3] = 1;
    for (size_t k = 0; k < KEYS; ++k) {
        chr_node_view plain, v;
        chr_bound_result r;
        assert_chr_ok(chr_snapshot_lookup(snap, keys->keys[k], keys->lens[k], &plain));
        assert_chr_ok(chr_snapshot_lookup_bounded(snap, keys->keys[k], keys->lens[k], NULL, NULL, 0, NULL, &v, &r));
        assert_int_equal(v.index, plain.index); /* no bound: the lookup's answer */
        assert_int_equal(r.home, plain.index);
        assert_chr_ok(chr_snapshot_lookup_bounded(snap, keys->keys[k], keys->lens[k], loads, NULL, MEMBERS, &opts,
                                                  &v, &r));
        assert_true(v.index != 3 && v.index != 5);
        /* The caller allows only a down member: the marks step aside. */
        assert_chr_ok(chr_snapshot_lookup_bounded(snap, keys->keys[k], keys->lens[k], NULL, only_down, MEMBERS,
                                                  NULL, &v, &r));
        assert_int_equal(v.index, 3);
        chr_ticket t;
        assert_chr_ok(chr_tracker_acquire(tracker, snap, keys->keys[k], keys->lens[k], &opts, &v, &r, &t));
        assert_true(v.index != 3 && v.index != 5);
        assert_chr_ok(chr_tracker_release(tracker, &t));
    }
    chr_tracker_free(tracker);
    chr_snapshot_release(snap);
    key_set_free(keys);
    chr_ring_free(ring);
}

/* Marks belong to members: a removed member's mark goes, one added is
 * up, the others' marks stay; set_down to the same state publishes nothing. */
static void test_marks_follow_membership(void **state) {
    (void)state;
    chr_ring *ring = zoned_ring(CHR_PLACEMENT_NATIVE);
    mark(ring, 1, 1);
    mark(ring, 2, 1);
    chr_snapshot *a = NULL, *b = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &a));
    mark(ring, 1, 1); /* no change: the same snapshot */
    assert_chr_ok(chr_ring_snapshot(ring, &b));
    assert_ptr_equal(a, b);
    chr_snapshot_release(b);
    char id[16];
    member_id(1, id);
    assert_chr_ok(chr_ring_remove(ring, id, strlen(id)));
    assert_chr_ok(chr_ring_add(ring, id, strlen(id), 1, "z1", 2, 1));
    assert_chr_ok(chr_ring_add(ring, "new", 3, 1, NULL, 0, 0));
    assert_chr_ok(chr_ring_snapshot(ring, &b));
    size_t n;
    assert_chr_ok(chr_snapshot_node_count(b, &n));
    for (size_t i = 0; i < n; ++i) {
        chr_node_view v;
        uint32_t marked;
        assert_chr_ok(chr_snapshot_node(b, i, &v));
        assert_chr_ok(chr_snapshot_marked_down(b, i, &marked));
        const int is_m02 = v.id_len == 3 && memcmp(v.id, "m02", 3) == 0;
        assert_int_equal(marked, (uint32_t)is_m02);
    }
    chr_availability_info ia = CHR_AVAILABILITY_INFO_INIT, ib = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_snapshot_availability(a, &ia));
    assert_chr_ok(chr_snapshot_availability(b, &ib));
    assert_int_equal(ia.down, 2);
    assert_int_equal(ib.down, 1);
    assert_true(ia.digest != ib.digest);
    chr_snapshot_release(a);
    chr_snapshot_release(b);
    chr_ring_free(ring);
}

/* Diffs compare tokens: a ring and the same ring with members down differ
 * by nothing. */
static void test_diff_ignores_marks(void **state) {
    (void)state;
    chr_ring *ring = zoned_ring(CHR_PLACEMENT_NATIVE);
    chr_snapshot *before = NULL, *after = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &before));
    mark(ring, 2, 1);
    mark(ring, 4, 1);
    assert_chr_ok(chr_ring_snapshot(ring, &after));
    chr_diff *diff = NULL;
    assert_chr_ok(chr_diff_new(before, after, &diff));
    chr_diff_info info = CHR_DIFF_INFO_INIT;
    assert_chr_ok(chr_diff_describe(diff, &info));
    assert_int_equal(info.ranges, 0);
    assert_true(info.moved == 0.0);
    assert_int_equal(info.old_fingerprint, info.new_fingerprint);
    chr_diff_free(diff);
    chr_snapshot_release(after);
    chr_snapshot_release(before);
    chr_ring_free(ring);
}

/* docs/semantics.md, "Availability digest", computed here from its
 * definition, and pinned. */
static void test_digest_vector(void **state) {
    (void)state;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    const char *members[] = {"alpha", "beta", "gamma"};
    for (size_t i = 0; i < 3; ++i)
        assert_chr_ok(chr_ring_add(ring, members[i], strlen(members[i]), 1, NULL, 0, 0));
    const void *ids[] = {"gamma", "alpha", "gamma"}; /* any order, duplicates allowed */
    const size_t lens[] = {5, 5, 5};
    assert_chr_ok(chr_ring_set_availability(ring, ids, lens, 3, 70));
    chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_ring_availability(ring, &info));
    unsigned char bytes[128];
    size_t n = 0;
    memcpy(bytes, "chring availability 1", 21);
    n = 21;
    const uint32_t words[] = {70, 2};
    for (size_t w = 0; w < 2; ++w)
        for (int i = 0; i < 4; ++i) bytes[n++] = (unsigned char)(words[w] >> (8 * i));
    const char *sorted[] = {"alpha", "gamma"};
    for (size_t s = 0; s < 2; ++s) {
        for (int i = 0; i < 4; ++i) bytes[n++] = (unsigned char)(5u >> (8 * i));
        memcpy(bytes + n, sorted[s], 5);
        n += 5;
    }
    assert_int_equal(info.digest, XXH3_64bits(bytes, n));
    assert_int_equal(info.digest, DIGEST_VECTOR);
    assert_int_equal(info.down, 2);
    assert_int_equal(info.panic_threshold, 70);
    chr_ring_free(ring);
}

static void test_api_errors(void **state) {
    (void)state;
    chr_ring *ring = zoned_ring(CHR_PLACEMENT_NATIVE);
    uint64_t fp = ring_fingerprint(ring);
    assert_chr_error(chr_ring_set_down(NULL, "m01", 3, 1), CHR_EINVAL, "chr_ring_set_down");
    assert_chr_error(chr_ring_set_down(ring, NULL, 3, 1), CHR_EINVAL, "chr_ring_set_down");
    assert_chr_error(chr_ring_set_down(ring, "m01", 0, 1), CHR_EINVAL, "chr_ring_set_down");
    static const char long_id[CHR_NODE_ID_MAX + 1] = {0};
    assert_chr_error(chr_ring_set_down(ring, long_id, sizeof long_id, 1), CHR_ERANGE, "chr_ring_set_down");
    assert_chr_error(chr_ring_set_down(ring, "nope", 4, 1), CHR_ENOENT, "chr_ring_set_down");
    chr_error_info e = CHR_ERROR_INFO_INIT;
    assert_chr_ok(chr_last_error_info(&e));
    assert_true(e.flags & CHR_ERROR_HAS_MEMBER);
    assert_memory_equal(e.member, "nope", 4);

    const void *ids[] = {"m01", "m02", "zzz"};
    const size_t lens[] = {3, 3, 3};
    assert_chr_error(chr_ring_set_availability(NULL, ids, lens, 3, 50), CHR_EINVAL, "chr_ring_set_availability");
    assert_chr_error(chr_ring_set_availability(ring, NULL, lens, 3, 50), CHR_EINVAL, "chr_ring_set_availability");
    assert_chr_error(chr_ring_set_availability(ring, ids, NULL, 3, 50), CHR_EINVAL, "chr_ring_set_availability");
    assert_chr_error(chr_ring_set_availability(ring, ids, lens, 2, 101), CHR_ERANGE, "chr_ring_set_availability");
    assert_chr_error(chr_ring_set_availability(ring, ids, lens, 3, 50), CHR_ENOENT, "chr_ring_set_availability");
    assert_chr_ok(chr_last_error_info(&e));
    assert_true(e.flags & CHR_ERROR_HAS_MEMBER);
    assert_true(e.flags & CHR_ERROR_HAS_CHANGE);
    assert_int_equal(e.change_index, 2);
    assert_memory_equal(e.member, "zzz", 3);
    const void *bad_ids[] = {"m01", NULL};
    const size_t bad_lens[] = {3, 2};
    assert_chr_error(chr_ring_set_availability(ring, bad_ids, bad_lens, 2, 50), CHR_EINVAL,
                     "chr_ring_set_availability");
    assert_chr_ok(chr_last_error_info(&e));
    assert_int_equal(e.change_index, 1);
    /* Nothing of the refused calls happened. */
    chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_ring_availability(ring, &info));
    assert_int_equal(info.down, 0);
    assert_int_equal(info.digest, 0);
    assert_int_equal(info.panic_threshold, CHR_PANIC_THRESHOLD_DEFAULT);
    assert_int_equal(ring_fingerprint(ring), fp);

    assert_chr_error(chr_ring_availability(NULL, &info), CHR_EINVAL, "chr_ring_availability");
    assert_chr_error(chr_ring_availability(ring, NULL), CHR_EINVAL, "chr_ring_availability");
    info.version = CHR_AVAILABILITY_INFO_VERSION + 1;
    assert_chr_error(chr_ring_availability(ring, &info), CHR_EVERSION, "chr_ring_availability");
    info.version = 0;
    assert_chr_error(chr_ring_availability(ring, &info), CHR_EVERSION, "chr_ring_availability");
    assert_chr_error(chr_availability_info_init(NULL, 1), CHR_EINVAL, "chr_availability_info_init");
    assert_chr_error(chr_availability_info_init(&info, 2), CHR_EVERSION, "chr_availability_info_init");
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    uint32_t marked;
    assert_chr_error(chr_snapshot_marked_down(NULL, 0, &marked), CHR_EINVAL, "chr_snapshot_marked_down");
    assert_chr_error(chr_snapshot_marked_down(snap, 0, NULL), CHR_EINVAL, "chr_snapshot_marked_down");
    assert_chr_error(chr_snapshot_marked_down(snap, MEMBERS, &marked), CHR_ERANGE, "chr_snapshot_marked_down");
    assert_chr_error(chr_snapshot_availability(NULL, &info), CHR_EINVAL, "chr_snapshot_availability");
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_routes_along_walk),
        cmocka_unit_test(test_ketama_routes_along_walk),
        cmocka_unit_test(test_nginx_routes_along_walk),
        cmocka_unit_test(test_panic),
        cmocka_unit_test(test_bounded_and_tracker_skip_down),
        cmocka_unit_test(test_marks_follow_membership),
        cmocka_unit_test(test_diff_ignores_marks),
        cmocka_unit_test(test_digest_vector),
        cmocka_unit_test(test_api_errors),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
