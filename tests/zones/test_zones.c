/*
 * Zone-aware replicas (chring.h, "Zone-aware replicas").
 *
 * Random topologies: 2-5 zones (one of them the empty label in every other
 * topology), 1-20 nodes a zone, weights 0-8. Checked, with zero violations
 * allowed:
 *  - properties, 10^6 keys, n = 1..6: every zones-first and NTS list has
 *    min(n, nodes with tokens) distinct nodes with tokens, its first
 *    min(n, live zones) in distinct zones, replica 0 = chr_snapshot_lookup;
 *    zones-first lists are prefixes of the n = 6 list;
 *  - an independent transcription of Cassandra's NetworkTopologyStrategy
 *    endpoint walk for one data centre (DatacenterEndpoints of Cassandra
 *    4.0, racks = zones) over the same token array: the NTS policy gives its
 *    lists element by element, zones-first the same sets, ordered firsts of
 *    their zone first; 10^5 keys x 50 topologies, n = 1..6 in turn;
 *  - adding or removing one node changes only the lists that contain it
 *    (before or after), under every policy;
 *  - replica shares equal, as doubles, the arcs summed in 128 bits from
 *    the same transcription started at each token; they sum to
 *    min(n, nodes with tokens);
 *  - more than 32 replicas (the bitmap walk) and more than 65,536 members
 *    plus zones (the per-thread table) against the transcription.
 * CHR_ZONES_SCALE_DOWN=k divides the key and topology counts by k (the
 * sanitizer builds set it: their walks are ~10x slower).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

__extension__ typedef unsigned __int128 u128;

enum {
    MAX_ZONES = 5,
    MAX_PER_ZONE = 20,
    MAX_NODES = MAX_ZONES * MAX_PER_ZONE + 1, /* + one added by the disruption test */
    MAX_N = 6,
    BIG_N = 80,
};

static size_t scale_down(void) {
    const char *s = getenv("CHR_ZONES_SCALE_DOWN");
    long v = s ? strtol(s, NULL, 10) : 1;
    return v > 1 ? (size_t)v : 1;
}

/* ---- a topology and the model of its snapshot ---------------------------- */

typedef struct topology {
    unsigned count;
    unsigned zone[MAX_NODES]; /* zone number of node (tag) i */
    uint32_t weight[MAX_NODES];
    int empty_zone0;          /* zone 0 is labelled "" */
} topology;

static size_t zone_label(const topology *t, unsigned z, char *buf) {
    if (z == 0 && t->empty_zone0) return 0;
    return (size_t)sprintf(buf, "zone-%u", z);
}

static void random_topology(test_rng *rng, topology *t, int empty_zone0) {
    memset(t, 0, sizeof *t);
    t->empty_zone0 = empty_zone0;
    const unsigned zones = 2 + (unsigned)rng_below(rng, 4);
    for (unsigned z = 0; z < zones; ++z) {
        const unsigned members = 1 + (unsigned)rng_below(rng, MAX_PER_ZONE);
        for (unsigned m = 0; m < members; ++m) {
            t->zone[t->count] = z;
            t->weight[t->count] = (uint32_t)rng_below(rng, 9);
            ++t->count;
        }
    }
    /* at least one node with tokens, so the ring is not empty */
    if (t->weight[0] == 0) t->weight[0] = 1;
}

static void add_member(chr_ring *ring, const topology *t, unsigned i) {
    char id[TEST_ID_BUF], zone[16];
    size_t id_len = node_id(i, id), zone_len = zone_label(t, t->zone[i], zone);
    assert_chr_ok(chr_ring_add(ring, id, id_len, t->weight[i], zone, zone_len, i));
}

static chr_ring *ring_of(const topology *t) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    for (unsigned i = 0; i < t->count; ++i) add_member(ring, t, i);
    return ring;
}

/* What the reference walks read: the token array, and per node index the
 * zone number and tag, from the topology (not from the library's zones). */
typedef struct model {
    chr_snapshot *snap;
    token_dump dump;
    size_t nodes;
    unsigned zone_of[MAX_NODES * 1000];
    uint64_t tag_of[MAX_NODES * 1000];
    size_t zones; /* zone numbers are below this */
    size_t live_nodes, live_zones;
} model;

static model *model_new(const chr_ring *ring, const unsigned *zone_of_tag, size_t zones) {
    model *m = calloc(1, sizeof *m);
    assert_non_null(m);
    assert_chr_ok(chr_ring_snapshot(ring, &m->snap));
    token_dump_take(m->snap, &m->dump);
    assert_chr_ok(chr_snapshot_node_count(m->snap, &m->nodes));
    assert_true(m->nodes <= sizeof m->zone_of / sizeof m->zone_of[0]);
    m->zones = zones;
    unsigned char *live = calloc(zones, 1);
    assert_non_null(live);
    for (size_t i = 0; i < m->nodes; ++i) {
        chr_node_view v;
        assert_chr_ok(chr_snapshot_node(m->snap, i, &v));
        m->tag_of[i] = v.tag;
        m->zone_of[i] = zone_of_tag[v.tag];
        if (v.tokens) {
            ++m->live_nodes;
            if (!live[m->zone_of[i]]) ++m->live_zones;
            live[m->zone_of[i]] = 1;
        }
    }
    free(live);
    return m;
}

static model *model_of(const chr_ring *ring, const topology *t) {
    return model_new(ring, t->zone, MAX_ZONES);
}

static void model_free(model *m) {
    chr_snapshot_release(m->snap);
    token_dump_free(&m->dump);
    free(m);
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/*
 * The transcription: Cassandra 4.0 NetworkTopologyStrategy
 * .calculateNaturalReplicas for one data centre, whose
 * DatacenterEndpoints.addEndpointAndCheckIfDone reads
 *
 *     if (done()) return false;
 *     if (replicas.endpoints().contains(ep)) return false;
 *     if (racks.add(location)) { --rfLeft; replicas.add(replica); return done(); }
 *     if (acceptableRackRepeats <= 0) return false;
 *     replicas.add(replica); --acceptableRackRepeats; --rfLeft; return done();
 *
 * with rfLeft = min(rf, nodeCount) and acceptableRackRepeats = rf -
 * rackCount, over the ring iterator from the first token >= the key's
 * token (wrapping). Endpoints are the nodes with tokens; racks their zones.
 * Fills out[] in the order endpoints are added; returns how many.
 */
static size_t nts_from_token(const model *m, size_t start, size_t rf, uint32_t *out) {
    size_t rf_left = min_size(rf, m->live_nodes);
    long acceptable_rack_repeats = (long)rf - (long)m->live_zones;
    unsigned char racks[MAX_ZONES * 1000];
    assert_true(m->zones <= sizeof racks);
    memset(racks, 0, m->zones);
    size_t added = 0;
    for (size_t step = 0; step < m->dump.count && rf_left > 0; ++step) {
        const uint32_t ep = m->dump.owners[(start + step) % m->dump.count];
        int contained = 0;
        for (size_t j = 0; j < added; ++j) contained |= out[j] == ep;
        if (contained) continue;
        if (!racks[m->zone_of[ep]]) {
            racks[m->zone_of[ep]] = 1;
            --rf_left;
            out[added++] = ep;
            continue;
        }
        if (acceptable_rack_repeats <= 0) continue;
        out[added++] = ep;
        --acceptable_rack_repeats;
        --rf_left;
    }
    return added;
}

static size_t nts_reference(const model *m, uint64_t h, size_t rf, uint32_t *out) {
    return nts_from_token(m, reference_successor(m->dump.values, m->dump.count, h), rf, out);
}

/* Zones-first from a walk-ordered list: the firsts of their zone in the
 * list, then the others, each in list order (the NTS list holds every
 * zone's first node it reaches, so its firsts are the walk's). */
static void firsts_first(const model *m, const uint32_t *list, size_t count, uint32_t *out) {
    size_t k = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (size_t i = 0; i < count; ++i) {
            int first = 1;
            for (size_t j = 0; j < i; ++j) first &= m->zone_of[list[j]] != m->zone_of[list[i]];
            if (first == (pass == 0)) out[k++] = list[i];
        }
}

static uint64_t key_position(const void *key, size_t len) {
    uint64_t h;
    assert_chr_ok(chr_hasher_hash(CHR_DEFAULT_HASHER, key, len, 0, &h));
    return h;
}

static size_t policy_list(const model *m, int32_t policy, const void *key, size_t len, size_t n,
                          uint32_t *out) {
    chr_node_view views[BIG_N];
    size_t count = 0;
    assert_true(n <= BIG_N);
    assert_chr_ok(chr_snapshot_replicas_policy(m->snap, key, len, policy, n, views, &count));
    for (size_t i = 0; i < count; ++i) out[i] = views[i].index;
    return count;
}

static int lists_equal(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
    return na == nb && memcmp(a, b, na * sizeof *a) == 0;
}

static int list_has(const model *m, const uint32_t *list, size_t count, uint64_t tag) {
    for (size_t i = 0; i < count; ++i)
        if (m->tag_of[list[i]] == tag) return 1;
    return 0;
}

/* ---- properties ---------------------------------------------------------- */

/* Violations of one list of n: its length, distinct nodes with tokens,
 * distinct zones in its first min(n, live zones), the coordinator. */
static size_t list_violations(const model *m, const uint32_t *list, size_t count, size_t n,
                              uint32_t owner) {
    size_t bad = count != min_size(n, m->live_nodes);
    const size_t zoned = min_size(n, m->live_zones);
    for (size_t i = 0; i < count; ++i) {
        chr_node_view v;
        assert_chr_ok(chr_snapshot_node(m->snap, list[i], &v));
        bad += v.tokens == 0;
        for (size_t j = 0; j < i; ++j) {
            bad += list[j] == list[i];
            bad += i < zoned && m->zone_of[list[j]] == m->zone_of[list[i]];
        }
    }
    bad += count == 0 || list[0] != owner;
    return bad;
}

/* Checks `keys` against one topology's model; returns its violations and
 * adds the lists it compared to *lists. */
typedef size_t (*topology_check)(const model *m, const key_set *keys, size_t *lists);

/* Runs `check` over `topologies` random topologies (every other one with
 * an empty zone label), `keys_each` keys each; returns the violations. */
static size_t over_topologies(uint64_t seed, size_t topologies, size_t keys_each,
                              topology_check check, size_t *lists) {
    test_rng rng = rng_seeded(seed);
    size_t violations = 0;
    for (size_t t = 0; t < topologies; ++t) {
        topology top;
        random_topology(&rng, &top, (int)(t & 1));
        chr_ring *ring = ring_of(&top);
        model *m = model_of(ring, &top);
        key_set *keys = key_set_new(keys_each, seed + t);
        violations += check(m, keys, lists);
        key_set_free(keys);
        model_free(m);
        chr_ring_free(ring);
    }
    return violations;
}

static size_t check_properties(const model *m, const key_set *keys, size_t *lists) {
    size_t violations = 0;
    for (size_t k = 0; k < keys->count; ++k) {
        chr_node_view owner;
        assert_chr_ok(chr_snapshot_lookup(m->snap, keys->keys[k], keys->lens[k], &owner));
        uint32_t full[MAX_N];
        const size_t full_count =
            policy_list(m, CHR_REPLICAS_ZONES_FIRST, keys->keys[k], keys->lens[k], MAX_N, full);
        for (size_t n = 1; n <= MAX_N; ++n) {
            uint32_t zf[MAX_N], nts[MAX_N];
            size_t zc = policy_list(m, CHR_REPLICAS_ZONES_FIRST, keys->keys[k], keys->lens[k], n, zf);
            size_t nc = policy_list(m, CHR_REPLICAS_NTS, keys->keys[k], keys->lens[k], n, nts);
            violations += list_violations(m, zf, zc, n, owner.index);
            violations += !(zc <= full_count && memcmp(zf, full, zc * sizeof *zf) == 0);
            /* NTS: same set, so the same length and every node in zf */
            violations += nc != zc;
            for (size_t i = 0; i < nc; ++i) {
                int in = 0;
                for (size_t j = 0; j < zc; ++j) in |= nts[i] == zf[j];
                violations += !in;
            }
            *lists += 2;
        }
    }
    return violations;
}

static void test_zone_properties(void **state) {
    (void)state;
    const size_t topologies = 20, keys_each = 1000000 / 20 / scale_down();
    size_t lists = 0;
    const size_t violations = over_topologies(0x20E5, topologies, keys_each, check_properties, &lists);
    printf("# properties: %zu lists over %zu topologies, %zu violations\n", lists, topologies,
           violations);
    assert_int_equal(violations, 0);
}

/* ---- the NTS transcription ----------------------------------------------- */

static size_t check_transcription(const model *m, const key_set *keys, size_t *lists) {
    size_t violations = 0;
    for (size_t k = 0; k < keys->count; ++k) {
        const size_t n = 1 + k % MAX_N;
        uint32_t ref[MAX_N], ref_zf[MAX_N], nts[MAX_N], zf[MAX_N];
        const size_t rc = nts_reference(m, key_position(keys->keys[k], keys->lens[k]), n, ref);
        firsts_first(m, ref, rc, ref_zf);
        size_t nc = policy_list(m, CHR_REPLICAS_NTS, keys->keys[k], keys->lens[k], n, nts);
        size_t zc = policy_list(m, CHR_REPLICAS_ZONES_FIRST, keys->keys[k], keys->lens[k], n, zf);
        violations += !lists_equal(nts, nc, ref, rc);
        violations += !lists_equal(zf, zc, ref_zf, rc);
        *lists += 2;
    }
    return violations;
}

static void test_nts_transcription(void **state) {
    (void)state;
    const size_t topologies = 50 / (scale_down() > 5 ? 5 : 1), keys_each = 100000 / scale_down();
    size_t lists = 0;
    const size_t violations = over_topologies(0xCA55, topologies, keys_each, check_transcription, &lists);
    printf("# transcription: %zu lists over %zu topologies, %zu differ\n", lists, topologies,
           violations);
    assert_int_equal(violations, 0);
}

/* ---- one node added or removed ------------------------------------------- */

/* Keys whose list under `policy` differs between `before` and `after` must
 * have `tag` in the list of the side that holds that node. */
static size_t changed_without(const model *before, const model *after, const key_set *keys,
                              int32_t policy, uint64_t tag, int tag_after) {
    size_t bad = 0;
    for (size_t k = 0; k < keys->count; ++k) {
        const size_t n = 1 + k % MAX_N;
        uint32_t a[MAX_N], b[MAX_N];
        size_t na = policy_list(before, policy, keys->keys[k], keys->lens[k], n, a);
        size_t nb = policy_list(after, policy, keys->keys[k], keys->lens[k], n, b);
        int same = na == nb;
        for (size_t i = 0; same && i < na; ++i) same = before->tag_of[a[i]] == after->tag_of[b[i]];
        if (same) continue;
        bad += tag_after ? !list_has(after, b, nb, tag) : !list_has(before, a, na, tag);
    }
    return bad;
}

static void test_add_remove_one(void **state) {
    (void)state;
    const size_t topologies = 10, keys_each = 50000 / scale_down();
    test_rng rng = rng_seeded(0xADD1);
    size_t violations = 0, checks = 0;
    for (size_t t = 0; t < topologies; ++t) {
        topology top;
        random_topology(&rng, &top, (int)(t & 1));
        chr_ring *ring = ring_of(&top);
        model *m0 = model_of(ring, &top);
        key_set *keys = key_set_new(keys_each, 0xD15C + t);

        /* remove one node of weight > 0 (the node the lists can contain) */
        unsigned x;
        do x = (unsigned)rng_below(&rng, top.count);
        while (top.weight[x] == 0);
        assert_chr_ok(remove_node(ring, x));
        model *m1 = model_of(ring, &top);
        /* add a new node: into an existing zone, or (every third) a new one */
        const unsigned y = top.count;
        top.zone[y] = t % 3 == 0 ? MAX_ZONES - 1 : (unsigned)rng_below(&rng, top.zone[top.count - 1] + 1);
        top.weight[y] = 1 + (uint32_t)rng_below(&rng, 8);
        top.count++;
        add_member(ring, &top, y);
        model *m2 = model_of(ring, &top);
        for (int32_t policy = 0; policy <= CHR_REPLICAS_NTS; ++policy) {
            violations += changed_without(m0, m1, keys, policy, x, 0);
            violations += changed_without(m1, m2, keys, policy, y, 1);
            checks += 2 * keys->count;
        }
        model_free(m0);
        model_free(m1);
        model_free(m2);
        key_set_free(keys);
        chr_ring_free(ring);
    }
    printf("# add/remove: %zu lists compared, %zu changed without the node\n", checks, violations);
    assert_int_equal(violations, 0);
}

/* ---- replica shares ------------------------------------------------------ */

/* The plain distinct walk of chr_ring_replicas. */
static size_t nodes_from_token(const model *m, size_t start, size_t n, uint32_t *out) {
    size_t found = 0;
    for (size_t step = 0; step < m->dump.count && found < n; ++step) {
        const uint32_t o = m->dump.owners[(start + step) % m->dump.count];
        int dup = 0;
        for (size_t j = 0; j < found; ++j) dup |= out[j] == o;
        if (!dup) out[found++] = o;
    }
    return found;
}

static void test_replica_shares(void **state) {
    (void)state;
    test_rng rng = rng_seeded(0x5A4E);
    size_t compared = 0;
    for (size_t t = 0; t < 4; ++t) {
        topology top;
        random_topology(&rng, &top, (int)(t & 1));
        chr_ring *ring = ring_of(&top);
        model *m = model_of(ring, &top);
        double shares[MAX_NODES];
        size_t count = 0;
        assert_chr_ok(chr_snapshot_replica_shares(m->snap, CHR_REPLICAS_NODES, 1, shares,
                                                  MAX_NODES, &count));
        assert_int_equal(count, m->nodes);
        for (size_t i = 0; i < m->nodes; ++i) {
            chr_node_view v;
            assert_chr_ok(chr_snapshot_node(m->snap, i, &v));
            assert_true(shares[i] == v.ownership);
        }
        for (int32_t policy = 0; policy <= CHR_REPLICAS_NTS; ++policy)
            for (size_t n = 1; n <= MAX_N; ++n) {
                u128 sums[MAX_NODES] = {0};
                const size_t T = m->dump.count;
                for (size_t k = 0; k < T; ++k) {
                    const u128 arc = k == 0 ? ((u128)1 << 64) - m->dump.values[T - 1] + m->dump.values[0]
                                            : (u128)(m->dump.values[k] - m->dump.values[k - 1]);
                    uint32_t list[MAX_N];
                    size_t c = policy == CHR_REPLICAS_NODES ? nodes_from_token(m, k, n, list)
                                                            : nts_from_token(m, k, n, list);
                    for (size_t i = 0; i < c; ++i) sums[list[i]] += arc;
                }
                assert_chr_ok(chr_snapshot_replica_shares(m->snap, policy, n, shares, MAX_NODES, &count));
                double total = 0;
                for (size_t i = 0; i < m->nodes; ++i) {
                    assert_true(shares[i] == (double)sums[i] * 0x1p-64);
                    total += shares[i];
                }
                assert_true(total > (double)min_size(n, m->live_nodes) - 1e-12 &&
                            total < (double)min_size(n, m->live_nodes) + 1e-12);
                ++compared;
            }
        model_free(m);
        chr_ring_free(ring);
    }
    printf("# shares: %zu (policy, n, topology) share tables equal the transcription\n", compared);
}

/* ---- long walks ---------------------------------------------------------- */

/* n > 32 (bitmaps on the stack) and members + zones > 65,536 (the
 * per-thread table), against the transcription. */
static void check_big(const chr_ring *ring, const unsigned *zone_of_tag, size_t zones,
                      size_t key_count, const size_t *ns, size_t n_count) {
    model *m = model_new(ring, zone_of_tag, zones);
    key_set *keys = key_set_new(key_count, 0xB16);
    size_t differ = 0;
    for (size_t k = 0; k < keys->count; ++k) {
        const size_t n = ns[k % n_count];
        uint32_t ref[BIG_N], ref_zf[BIG_N], got[BIG_N];
        const size_t rc = nts_reference(m, key_position(keys->keys[k], keys->lens[k]), n, ref);
        firsts_first(m, ref, rc, ref_zf);
        size_t c = policy_list(m, CHR_REPLICAS_NTS, keys->keys[k], keys->lens[k], n, got);
        differ += !lists_equal(got, c, ref, rc);
        c = policy_list(m, CHR_REPLICAS_ZONES_FIRST, keys->keys[k], keys->lens[k], n, got);
        differ += !lists_equal(got, c, ref_zf, rc);
    }
    key_set_free(keys);
    model_free(m);
    assert_int_equal(differ, 0);
}

static void test_long_walks(void **state) {
    (void)state;
    /* 90 nodes in 7 zones, some drained: n = 33..80 */
    static unsigned zone_of_tag[70000];
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    for (unsigned i = 0; i < 90; ++i) {
        char id[TEST_ID_BUF], zone[16];
        zone_of_tag[i] = i % 7;
        size_t zl = (size_t)sprintf(zone, "z%u", i % 7);
        assert_chr_ok(chr_ring_add(ring, id, node_id(i, id), i % 11 == 0 ? 0 : 1 + i % 4, zone, zl, i));
    }
    const size_t ns[] = {33, 40, 64, 80};
    check_big(ring, zone_of_tag, 7, 2000, ns, 4);
    chr_ring_free(ring);

    /* 65,000 members in 1,000 zones: 66,000 bits, past the stack bitmap */
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = 1;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    chr_change *changes = calloc(65000, sizeof *changes);
    char (*ids)[TEST_ID_BUF] = calloc(65000, TEST_ID_BUF);
    char (*zones)[8] = calloc(65000, 8);
    assert_non_null(changes);
    assert_non_null(ids);
    assert_non_null(zones);
    for (unsigned i = 0; i < 65000; ++i) {
        zone_of_tag[i] = i % 1000;
        changes[i] = (chr_change){CHR_OP_ADD, 1, ids[i], node_id(i, ids[i]), zones[i],
                                  (size_t)sprintf(zones[i], "z%u", i % 1000), i};
    }
    assert_chr_ok(chr_ring_apply(ring, changes, 65000, NULL));
    const size_t big_ns[] = {3, 40};
    check_big(ring, zone_of_tag, 1000, 200 / (scale_down() > 1 ? 4 : 1), big_ns, 2);
    free(changes);
    free(ids);
    free(zones);
    chr_ring_free(ring);
}

/* ---- the API ------------------------------------------------------------- */

static void test_policy_names(void **state) {
    (void)state;
    const char *expected[] = {"nodes", "zones-first", "nts"};
    for (int32_t p = 0; p < 3; ++p) {
        const char *name = NULL;
        int32_t back = -1;
        assert_chr_ok(chr_replica_policy_name(p, &name));
        assert_string_equal(name, expected[p]);
        assert_chr_ok(chr_replica_policy_find(name, &back));
        assert_int_equal(back, p);
    }
    const char *name;
    int32_t policy;
    assert_chr_error(chr_replica_policy_name(3, &name), CHR_ENOTSUP, "chr_replica_policy_name");
    assert_chr_error(chr_replica_policy_name(-1, &name), CHR_ENOTSUP, "chr_replica_policy_name");
    assert_chr_error(chr_replica_policy_name(0, NULL), CHR_EINVAL, "chr_replica_policy_name");
    assert_chr_error(chr_replica_policy_find("zones", &policy), CHR_ENOTSUP, "chr_replica_policy_find");
    assert_chr_error(chr_replica_policy_find(NULL, &policy), CHR_EINVAL, "chr_replica_policy_find");
    assert_chr_error(chr_replica_policy_find("nts", NULL), CHR_EINVAL, "chr_replica_policy_find");
}

static void test_errors(void **state) {
    (void)state;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    chr_snapshot *snap = NULL;
    chr_node_ref refs[4];
    chr_node_view views[4];
    double shares[4];
    size_t count = 99;
    assert_chr_error(chr_ring_replicas_policy(ring, "k", 1, CHR_REPLICAS_ZONES_FIRST, 2, refs, &count),
                     CHR_EEMPTY, "chr_ring_replicas_policy");
    assert_chr_ok(chr_ring_add(ring, "a", 1, 1, "z1", 2, 0));
    assert_chr_error(chr_ring_replicas_policy(NULL, "k", 1, 1, 2, refs, &count), CHR_EINVAL,
                     "chr_ring_replicas_policy");
    assert_chr_error(chr_ring_replicas_policy(ring, "k", 1, 3, 2, refs, &count), CHR_ENOTSUP,
                     "chr_ring_replicas_policy");
    assert_chr_error(chr_ring_replicas_policy(ring, "k", 1, 1, 0, refs, &count), CHR_EINVAL,
                     "chr_ring_replicas_policy");
    assert_chr_error(chr_ring_replicas_policy(ring, NULL, 1, 1, 2, refs, &count), CHR_EINVAL,
                     "chr_ring_replicas_policy");
    assert_chr_error(chr_ring_replicas_policy(ring, "k", 1, 1, 2, NULL, &count), CHR_EINVAL,
                     "chr_ring_replicas_policy");
    assert_chr_error(chr_ring_replicas_policy(ring, "k", 1, 1, 2, refs, NULL), CHR_EINVAL,
                     "chr_ring_replicas_policy");
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    assert_chr_error(chr_snapshot_replicas_policy(NULL, "k", 1, 1, 2, views, &count), CHR_EINVAL,
                     "chr_snapshot_replicas_policy");
    assert_chr_error(chr_snapshot_replicas_policy(snap, "k", 1, -1, 2, views, &count), CHR_ENOTSUP,
                     "chr_snapshot_replicas_policy");
    assert_chr_error(chr_snapshot_replica_shares(snap, 1, 0, shares, 4, &count), CHR_EINVAL,
                     "chr_snapshot_replica_shares");
    assert_chr_error(chr_snapshot_replica_shares(snap, 7, 1, shares, 4, &count), CHR_ENOTSUP,
                     "chr_snapshot_replica_shares");
    assert_chr_error(chr_snapshot_replica_shares(snap, 1, 1, shares, 4, NULL), CHR_EINVAL,
                     "chr_snapshot_replica_shares");
    assert_chr_error(chr_snapshot_replica_shares(snap, 1, 1, NULL, 4, &count), CHR_EINVAL,
                     "chr_snapshot_replica_shares");
    assert_chr_error(chr_snapshot_replica_shares(snap, 1, 1, shares, 0, &count), CHR_ERANGE,
                     "chr_snapshot_replica_shares");
    assert_int_equal(count, 1);
    /* a size query is not a failure: the message stays */
    prime_last_error("chr_snapshot_replica_shares");
    char before[256];
    snprintf(before, sizeof before, "%s", chr_last_error());
    assert_chr_status(chr_snapshot_replica_shares(snap, 1, 1, NULL, 0, &count), CHR_ERANGE);
    assert_string_equal(chr_last_error(), before);
    assert_chr_ok(chr_snapshot_replica_shares(snap, 1, 3, shares, 4, &count));
    assert_true(shares[0] == 1.0);
    chr_snapshot_release(snap);

    /* an empty ring has shares of 0 */
    assert_chr_ok(chr_ring_set_weight(ring, "a", 1, 0));
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    shares[0] = 5;
    assert_chr_ok(chr_snapshot_replica_shares(snap, 2, 2, shares, 4, &count));
    assert_true(shares[0] == 0.0);
    assert_chr_error(chr_snapshot_replicas_policy(snap, "k", 1, 1, 2, views, &count), CHR_EEMPTY,
                     "chr_snapshot_replicas_policy");
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

/* srv-1, srv-2 in zone a, srv-3, srv-4 in b, srv-5 in c: a key whose plain
 * walk meets two a's first gets one node of each zone under zones-first;
 * the ring and snapshot calls agree; a ring without zones gets the plain
 * lists under every policy. */
static void test_by_hand(void **state) {
    (void)state;
    const char *zone_of_node = "aabbc";
    chr_ring *ring = NULL, *plain = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    assert_chr_ok(chr_ring_new(NULL, &plain));
    for (unsigned i = 0; i < 5; ++i) {
        char id[8];
        size_t len = (size_t)sprintf(id, "srv-%u", i + 1);
        assert_chr_ok(chr_ring_add(ring, id, len, 1, &zone_of_node[i], 1, i));
        assert_chr_ok(chr_ring_add(plain, id, len, 1, NULL, 0, i));
    }
    size_t found_same_zone = 0;
    for (unsigned k = 0; k < 2000; ++k) {
        char key[16];
        size_t len = (size_t)sprintf(key, "user:%u", k);
        chr_node_ref nodes[3], zf[3], nts[3], p[3];
        chr_node_view zv[3];
        size_t c;
        assert_chr_ok(chr_ring_replicas(ring, key, len, 3, nodes, &c));
        assert_chr_ok(chr_ring_replicas_policy(ring, key, len, CHR_REPLICAS_ZONES_FIRST, 3, zf, &c));
        assert_int_equal(c, 3);
        assert_chr_ok(chr_ring_replicas_policy(ring, key, len, CHR_REPLICAS_NTS, 3, nts, &c));
        chr_snapshot *snap;
        assert_chr_ok(chr_ring_snapshot(ring, &snap));
        assert_chr_ok(chr_snapshot_replicas_policy(snap, key, len, CHR_REPLICAS_ZONES_FIRST, 3, zv, &c));
        chr_snapshot_release(snap);
        found_same_zone += nodes[0].zone[0] == nodes[1].zone[0] || nodes[1].zone[0] == nodes[2].zone[0] ||
                           nodes[0].zone[0] == nodes[2].zone[0];
        assert_int_equal(zf[0].tag, nodes[0].tag);
        assert_true(zf[0].zone[0] != zf[1].zone[0] && zf[1].zone[0] != zf[2].zone[0] &&
                    zf[0].zone[0] != zf[2].zone[0]);
        for (int i = 0; i < 3; ++i) {
            assert_int_equal(zv[i].tag, zf[i].tag);
            assert_int_equal(zf[i].zone_len, 1);
            assert_memory_equal(zf[i].zone, &zone_of_node[zf[i].tag], 1);
        }
        /* n = 3 = zones: NTS takes no repeat either, and lists in walk order */
        for (int32_t policy = 0; policy <= CHR_REPLICAS_NTS; ++policy) {
            assert_chr_ok(chr_ring_replicas_policy(plain, key, len, policy, 3, p, &c));
            assert_chr_ok(chr_ring_replicas(plain, key, len, 3, nodes, &c));
            for (int i = 0; i < 3; ++i) assert_int_equal(p[i].tag, nodes[i].tag);
        }
    }
    assert_true(found_same_zone > 0); /* the case the policy exists for does occur */
    chr_ring_free(ring);
    chr_ring_free(plain);
}

/* Zones enter the fingerprint (version 2) only when a member has one;
 * the result is still independent of the order of the calls. */
static void test_fingerprint_zones(void **state) {
    (void)state;
    assert_int_equal(CHR_FINGERPRINT_VERSION, 2);
    chr_ring *a = NULL, *b = NULL, *c = NULL;
    assert_chr_ok(chr_ring_new(NULL, &a));
    assert_chr_ok(chr_ring_new(NULL, &b));
    assert_chr_ok(chr_ring_new(NULL, &c));
    assert_chr_ok(chr_ring_add(a, "x", 1, 1, NULL, 0, 0));
    assert_chr_ok(chr_ring_add(a, "y", 1, 2, NULL, 0, 0));
    assert_chr_ok(chr_ring_add(b, "y", 1, 2, "", 0, 7)); /* an empty zone is no zone */
    assert_chr_ok(chr_ring_add(b, "x", 1, 1, NULL, 0, 9));
    assert_int_equal(ring_fingerprint(a), ring_fingerprint(b));
    assert_chr_ok(chr_ring_add(c, "y", 1, 2, "z2", 2, 0));
    assert_chr_ok(chr_ring_add(c, "x", 1, 1, "z1", 2, 0));
    const uint64_t zoned = ring_fingerprint(c);
    assert_true(zoned != ring_fingerprint(a));
    /* the same zones in another order of calls: the same fingerprint */
    chr_ring_free(b);
    assert_chr_ok(chr_ring_new(NULL, &b));
    chr_change batch[2] = {{CHR_OP_ADD, 1, "x", 1, "z1", 2, 0}, {CHR_OP_ADD, 2, "y", 1, "z2", 2, 0}};
    assert_chr_ok(chr_ring_apply(b, batch, 2, NULL));
    assert_int_equal(ring_fingerprint(b), zoned);
    /* a different partition into zones, and a different label, differ */
    chr_ring_free(b);
    assert_chr_ok(chr_ring_new(NULL, &b));
    batch[1].zone = "z1";
    assert_chr_ok(chr_ring_apply(b, batch, 2, NULL));
    assert_true(ring_fingerprint(b) != zoned);
    chr_ring_free(b);
    assert_chr_ok(chr_ring_new(NULL, &b));
    batch[1].zone = "z3";
    assert_chr_ok(chr_ring_apply(b, batch, 2, NULL));
    assert_true(ring_fingerprint(b) != zoned);
    chr_ring_free(a);
    chr_ring_free(b);
    chr_ring_free(c);
}

int main(int argc, char **argv) {
    const struct CMUnitTest zones_tests[] = {
        cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_by_hand),
        cmocka_unit_test(test_fingerprint_zones),
        cmocka_unit_test(test_replica_shares),
        cmocka_unit_test(test_long_walks),
        cmocka_unit_test(test_zone_properties),
        cmocka_unit_test(test_nts_transcription),
        cmocka_unit_test(test_add_remove_one),
    };
    select_cases(argc, argv, zones_tests);
    return run_core_tests(zones_tests);
}
