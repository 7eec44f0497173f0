/*
 * test_bounded.c — bounded-load and availability-aware lookups, and the
 * tracker (chring.h, "Bounded loads and availability").
 *
 * Properties and their bounds:
 *  - capacities: chr_bound_capacities equals an independent transcription
 *    of HAProxy's chash_server_is_eligible on random (weights, load)
 *    vectors, 100%;
 *  - invariant: over random acquire/release with random weights, after every
 *    acquire the chosen node's count is <= its capacity, and no acquire
 *    fails (no probe limit): the capacities add up to >= L + 1 > L, so by
 *    pigeonhole some node always has room;
 *  - neutral when idle: all loads 0, nothing masked => the plain lookup;
 *  - hot keys (Zipf 1.1): every node's in-flight count stays within
 *    ceil(1.25 (L + 1) / 10) for 10 equal nodes, where the plain ring
 *    exceeds it;
 *  - availability: a masked node gets no key; every other key stays; the
 *    masked node's keys go to their next available replica and come back.
 *
 * The loops scale down by CHR_BOUNDED_SCALE (a divisor, default 1): the
 * sanitizer builds set it so the suite stays fast there.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static size_t scaled(size_t n) {
    const char *e = getenv("CHR_BOUNDED_SCALE");
    size_t d = e ? (size_t)strtoull(e, NULL, 10) : 1;
    if (d < 1) d = 1;
    return n / d ? n / d : 1;
}

/* ---- HAProxy's formula, transcribed independently (lb_chash.c) ---------- */

/* chash_server_is_eligible: served < slots, with
 *   tot_slots = ((px->served + 1) * px->lbprm.hash_balance_factor + 99) / 100;
 *   slots_per_weight = tot_slots / tot_weight;
 *   remainder = tot_slots % tot_weight;
 *   slots = s->cur_eweight * slots_per_weight;
 *   slots += ((s->cumulative_weight + s->cur_eweight) * remainder) / tot_weight;
 *   slots -= (s->cumulative_weight * remainder) / tot_weight;
 *   if (slots == 0) slots = 1;
 * cumulative_weight is the total weight of the servers before s. */
static uint64_t haproxy_slots(const uint32_t *w, size_t n, size_t s, uint64_t served,
                              uint32_t factor) {
    uint64_t tot_weight = 0, cumulative = 0;
    for (size_t i = 0; i < n; ++i) {
        if (i < s) cumulative += w[i];
        tot_weight += w[i];
    }
    uint64_t tot_slots = ((served + 1) * factor + 99) / 100;
    uint64_t per = tot_slots / tot_weight, rem = tot_slots % tot_weight;
    uint64_t slots = w[s] * per;
    slots += ((cumulative + w[s]) * rem) / tot_weight;
    slots -= (cumulative * rem) / tot_weight;
    if (slots == 0) slots = 1;
    return slots;
}

static chr_bound_options bound(uint32_t factor) {
    chr_bound_options o = CHR_BOUND_OPTIONS_INIT;
    o.factor_pct = factor;
    return o;
}

static void capacities_match_haproxy(void **state) {
    (void)state;
    test_rng rng = rng_seeded(20);
    const uint32_t factors[] = {100, 101, 125, 150, 200, 1000};
    uint32_t w[24], cw[24];
    uint64_t caps[24];
    size_t vectors = scaled(100000), compared = 0;
    for (size_t v = 0; v < vectors; ++v) {
        size_t n = 1 + (size_t)rng_below(&rng, 24);
        size_t m = 0;
        for (size_t i = 0; i < n; ++i) {
            w[i] = (uint32_t)rng_below(&rng, 101); /* 0: not a candidate */
            if (w[i]) cw[m++] = w[i];
        }
        if (m == 0) w[0] = cw[m++] = 1;
        uint64_t load = rng_below(&rng, 4) == 0 ? rng_below(&rng, 8) : rng_below(&rng, 1000000);
        chr_bound_options o = bound(factors[rng_below(&rng, 6)]);
        assert_chr_ok(chr_bound_capacities(w, n, load, &o, caps));
        uint64_t sum = 0;
        for (size_t i = 0, j = 0; i < n; ++i) {
            if (!w[i]) {
                assert_int_equal(caps[i], 0);
                continue;
            }
            assert_int_equal(caps[i], haproxy_slots(cw, m, j++, load, o.factor_pct));
            sum += caps[i];
            ++compared;
        }
        assert_true(sum >= load + 1); /* the room the lookup's termination rests on */
    }
    assert_true(compared > vectors);
}

/* ---- a ring of random weights ------------------------------------------- */

static chr_ring *random_ring(test_rng *rng, unsigned nodes, uint32_t *weights) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    for (unsigned i = 0; i < nodes; ++i) {
        weights[i] = 1 + (uint32_t)rng_below(rng, 100);
        assert_chr_ok(add_node(ring, i, weights[i]));
    }
    return ring;
}

/* ---- the invariant, through the tracker ---------------------------------- */

#define POOL 4096

static void tracker_never_exceeds_capacity(void **state) {
    (void)state;
    const uint32_t factors[] = {101, 125, 200};
    const size_t ops_per_factor = scaled(10000000) / 3;
    test_rng rng = rng_seeded(1608);
    for (size_t f = 0; f < 3; ++f) {
        uint32_t weights[20];
        chr_ring *ring = random_ring(&rng, 20, weights);
        chr_snapshot *snap = NULL;
        assert_chr_ok(chr_ring_snapshot(ring, &snap));
        chr_tracker *t = NULL;
        assert_chr_ok(chr_tracker_new(0, &t));
        chr_bound_options o = bound(factors[f]);
        static chr_ticket pool[POOL];
        size_t live = 0, acquires = 0, spilled = 0;
        uint64_t counts[20] = {0};
        uint32_t owner[POOL];
        /* The live count wanders between 0 and POOL: a random walk that
         * prefers acquires while few are in flight. */
        size_t target = 1 + (size_t)rng_below(&rng, POOL - 1);
        for (size_t op = 0; op < ops_per_factor; ++op) {
            if (op % 100000 == 0) target = 1 + (size_t)rng_below(&rng, POOL - 1);
            int acquire = live == 0 || (live < POOL && rng_below(&rng, 2 * target) >= live);
            if (acquire) {
                char key[24];
                int len = snprintf(key, sizeof key, "k%llu", (unsigned long long)rng_next(&rng));
                chr_bound_result r;
                chr_node_view v;
                uint64_t total_before = 0;
                assert_chr_ok(chr_tracker_total(t, &total_before));
                assert_chr_ok(chr_tracker_acquire(t, snap, key, (size_t)len, &o, &v, &r, &pool[live]));
                assert_int_equal(r.flags & CHR_BOUND_OVER, 0);
                counts[r.index]++;
                /* count after the acquire <= capacity for the total before */
                assert_true(counts[r.index] <= r.capacity);
                assert_int_equal(r.load + 1, counts[r.index]);
                if (op % 64 == 0) { /* the capacity is the formula's */
                    uint64_t caps[20];
                    assert_chr_ok(chr_bound_capacities(weights, 20, total_before, &o, caps));
                    assert_int_equal(caps[r.index], r.capacity);
                    uint64_t tracked = 0;
                    assert_chr_ok(chr_tracker_load(t, v.id, v.id_len, &tracked));
                    assert_int_equal(tracked, counts[r.index]);
                }
                spilled += (r.flags & CHR_BOUND_SPILLED) != 0;
                owner[live++] = r.index;
                ++acquires;
            } else {
                size_t k = (size_t)rng_below(&rng, live);
                assert_chr_ok(chr_tracker_release(t, &pool[k]));
                counts[owner[k]]--;
                pool[k] = pool[--live];
                owner[k] = owner[live];
            }
        }
        while (live) {
            --live;
            assert_chr_ok(chr_tracker_release(t, &pool[live]));
        }
        uint64_t total = 1;
        assert_chr_ok(chr_tracker_total(t, &total));
        assert_int_equal(total, 0);
        print_message("factor %u: %zu acquires, %.2f%% away from home\n", factors[f], acquires,
                      100.0 * (double)spilled / (double)(acquires ? acquires : 1));
        chr_tracker_free(t);
        chr_snapshot_release(snap);
        chr_ring_free(ring);
    }
}

/* ---- the invariant, through the pure lookup (both spill orders, slack) --- */

static void pure_lookup_never_exceeds_capacity(void **state) {
    (void)state;
    test_rng rng = rng_seeded(1908);
    for (uint32_t spill = 0; spill < 2; ++spill) {
        uint32_t weights[20];
        chr_ring *ring = random_ring(&rng, 20, weights);
        chr_snapshot *snap = NULL;
        assert_chr_ok(chr_ring_snapshot(ring, &snap));
        chr_bound_options o = bound(110);
        o.spill = spill;
        o.slack = spill; /* 0, then 1 */
        uint64_t loads[20] = {0}, total = 0;
        static uint32_t owner[POOL];
        size_t live = 0, ops = scaled(1000000);
        for (size_t op = 0; op < ops; ++op) {
            if (live == POOL || (live && rng_below(&rng, 2))) {
                size_t k = (size_t)rng_below(&rng, live);
                loads[owner[k]]--;
                total--;
                owner[k] = owner[--live];
                continue;
            }
            char key[24];
            int len = snprintf(key, sizeof key, "p%llu", (unsigned long long)rng_next(&rng));
            chr_node_view v;
            chr_bound_result r;
            assert_chr_ok(chr_snapshot_lookup_bounded(snap, key, (size_t)len, loads, NULL, 20, &o,
                                                      &v, &r));
            assert_int_equal(r.flags & CHR_BOUND_OVER, 0);
            assert_int_equal(v.index, r.index);
            assert_int_equal(r.load, loads[r.index]);
            assert_true(loads[r.index] + 1 <= r.capacity);
            uint64_t caps[20];
            if (op % 64 == 0) {
                assert_chr_ok(chr_bound_capacities(weights, 20, total, &o, caps));
                assert_int_equal(caps[r.index], r.capacity);
            }
            loads[r.index]++;
            total++;
            owner[live++] = r.index;
        }
        chr_snapshot_release(snap);
        chr_ring_free(ring);
    }
}

/* ---- neutral when idle ---------------------------------------------------- */

static void neutral_when_idle(void **state) {
    (void)state;
    test_rng rng = rng_seeded(7);
    uint32_t weights[20];
    chr_ring *ring = random_ring(&rng, 20, weights);
    keyed_snapshot *f = keyed_snapshot_new(ring, scaled(1000000), 11);
    assert_chr_ok(chr_snapshot_lookup_batch(f->snap, f->keys->keys, f->keys->lens, f->keys->count,
                                            f->indices));
    uint64_t zeros[20] = {0};
    unsigned char all[20];
    memset(all, 1, sizeof all);
    chr_bound_options shuffle = bound(125);
    shuffle.spill = CHR_SPILL_SHUFFLE;
    chr_bound_options tight = bound(100);
    for (size_t i = 0; i < f->keys->count; ++i) {
        chr_node_view v;
        chr_bound_result r;
        const void *k = f->keys->keys[i];
        size_t len = f->keys->lens[i];
        switch (i % 4) {
        case 0: assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, NULL, NULL, 0, &tight, &v, &r)); break;
        case 1: assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, zeros, all, 20, &shuffle, &v, &r)); break;
        case 2: assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, zeros, NULL, 20, &tight, &v, &r)); break;
        default: assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, NULL, all, 20, NULL, &v, &r)); break;
        }
        assert_int_equal(v.index, f->indices[i]);
        assert_int_equal(r.home, f->indices[i]);
        assert_int_equal(r.probes, 1);
        assert_int_equal(r.flags, 0);
    }
    keyed_snapshot_free(f);
}

/* ---- hot keys -------------------------------------------------------------- */

/* Zipf(s) over n ranks: the cumulative distribution, sampled by bisection. */
static double *zipf_cdf(size_t n, double s) {
    double *cdf = malloc(n * sizeof *cdf), sum = 0;
    assert_non_null(cdf);
    for (size_t i = 0; i < n; ++i) cdf[i] = sum += pow((double)(i + 1), -s);
    for (size_t i = 0; i < n; ++i) cdf[i] /= sum;
    return cdf;
}

static size_t zipf_draw(const double *cdf, size_t n, test_rng *rng) {
    double u = (double)(rng_next(rng) >> 11) * 0x1p-53;
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] < u) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* Requests arrive one at a time; each stays in flight until `in_flight`
 * later ones have arrived (a FIFO). Returns the largest count any node had,
 * and counts assignments served at home. bounded 0: the plain ring. */
static uint64_t replay(const chr_snapshot *snap, size_t nodes, const double *cdf, size_t ranks,
                       size_t requests, size_t in_flight, const chr_bound_options *o,
                       size_t *home_hits, int check_cap) {
    test_rng rng = rng_seeded(110);
    uint64_t loads[16] = {0}, total = 0, max = 0;
    uint32_t *fifo = calloc(in_flight, sizeof *fifo);
    assert_non_null(fifo);
    size_t head = 0, live = 0;
    *home_hits = 0;
    for (size_t q = 0; q < requests; ++q) {
        if (live == in_flight) {
            loads[fifo[head]]--;
            total--;
            live--;
            head = (head + 1) % in_flight;
        }
        char key[24];
        int len = snprintf(key, sizeof key, "object-%zu", zipf_draw(cdf, ranks, &rng));
        chr_node_view v;
        chr_bound_result r;
        assert_chr_ok(chr_snapshot_lookup_bounded(snap, key, (size_t)len, loads, NULL, nodes, o, &v, &r));
        *home_hits += r.index == r.home;
        uint64_t after = ++loads[r.index];
        if (check_cap) {
            /* ceil(1.25 (L + 1) / 10) with L the total before, in integers */
            uint64_t cap = ((total + 1) * o->factor_pct + 100 * nodes - 1) / (100 * nodes);
            assert_true(after <= cap);
        }
        if (after > max) max = after;
        total++;
        fifo[(head + live) % in_flight] = r.index;
        live++;
    }
    free(fifo);
    return max;
}

static void hot_keys_stay_within_the_bound(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 10, 1);
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    const size_t ranks = 100000, requests = scaled(1000000), in_flight = 1000;
    double *cdf = zipf_cdf(ranks, 1.1);
    chr_bound_options o = bound(125);
    size_t home_bounded = 0, home_plain = 0;
    uint64_t max_bounded = replay(snap, 10, cdf, ranks, requests, in_flight, &o, &home_bounded, 1);
    uint64_t max_plain = replay(snap, 10, cdf, ranks, requests, in_flight, NULL, &home_plain, 0);
    assert_int_equal(home_plain, requests);
    const uint64_t cap = (1001 * 125 + 999) / 1000; /* ceil(1.25 * 1001 / 10) = 126 */
    assert_true(max_bounded <= cap);
    /* The effect the bound exists for: the plain ring piles the hot key's
     * requests on one node (rank 1 alone is ~9% of requests, over 1/10 of
     * 1000 in flight plus its share of the tail). */
    assert_true(max_plain > cap);
    print_message("zipf 1.1: max in flight %llu bounded (cap %llu), %llu plain; home hits %.2f%%\n",
                  (unsigned long long)max_bounded, (unsigned long long)cap,
                  (unsigned long long)max_plain, 100.0 * (double)home_bounded / (double)requests);
    /* Uniform keys: almost everything is served at home. */
    double *flat = zipf_cdf(ranks, 0.0);
    size_t home_uniform = 0;
    replay(snap, 10, flat, ranks, requests, in_flight, &o, &home_uniform, 1);
    print_message("uniform: home hits %.2f%%\n", 100.0 * (double)home_uniform / (double)requests);
    assert_true((double)home_uniform >= 0.9 * (double)requests);
    free(flat);
    free(cdf);
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

/* ---- availability ----------------------------------------------------------- */

static void masked_node_gets_nothing_and_keys_return(void **state) {
    (void)state;
    keyed_snapshot *f = keyed_snapshot_new(ring_with_nodes(NULL, 8, 1), scaled(100000), 3);
    assert_chr_ok(chr_snapshot_lookup_batch(f->snap, f->keys->keys, f->keys->lens, f->keys->count,
                                            f->indices));
    unsigned char up[8];
    memset(up, 1, sizeof up);
    up[3] = 0;
    up[5] = 0;
    size_t moved = 0;
    for (size_t i = 0; i < f->keys->count; ++i) {
        const void *k = f->keys->keys[i];
        size_t len = f->keys->lens[i];
        chr_node_view v, rep[8];
        chr_bound_result r;
        assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, NULL, up, 8, NULL, &v, &r));
        assert_true(up[v.index]);
        if (up[f->indices[i]]) {
            assert_int_equal(v.index, f->indices[i]); /* every other key stays */
            continue;
        }
        ++moved;
        /* the first available node of the key's replica walk */
        size_t count = 0, j = 0;
        assert_chr_ok(chr_snapshot_replicas(f->snap, k, len, 8, rep, &count));
        while (!up[rep[j].index]) ++j;
        assert_int_equal(v.index, rep[j].index);
        assert_true(r.flags & CHR_BOUND_SPILLED);
        /* unmasked: back home */
        assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, NULL, NULL, 0, NULL, &v, &r));
        assert_int_equal(v.index, f->indices[i]);
    }
    assert_true(moved > 0);
    /* Nothing available: CHR_EEMPTY. */
    memset(up, 0, sizeof up);
    chr_node_view v;
    assert_chr_error(chr_snapshot_lookup_bounded(f->snap, "k", 1, NULL, up, 8, NULL, &v, NULL),
                     CHR_EEMPTY, "chr_snapshot_lookup_bounded");
    keyed_snapshot_free(f);
}

/* ---- spill orders and the probe limit ---------------------------------------- */

/* Keys whose home is full: the replica walk sends them to the home's replicas
 * only; the shuffle spreads them over every other node. */
static void spill_orders(void **state) {
    (void)state;
    keyed_snapshot *f = keyed_snapshot_new(ring_with_nodes(NULL, 10, 1), 20000, 5);
    assert_chr_ok(chr_snapshot_lookup_batch(f->snap, f->keys->keys, f->keys->lens, f->keys->count,
                                            f->indices));
    uint64_t loads[10] = {0};
    loads[0] = 50; /* L = 50: every cap is ceil(51 * 1.25 / 10) = 7 or 6 */
    chr_bound_options o = bound(125);
    unsigned seen_walk[10] = {0}, seen_shuffle[10] = {0};
    for (size_t i = 0; i < f->keys->count; ++i) {
        if (f->indices[i] != 0) continue;
        const void *k = f->keys->keys[i];
        size_t len = f->keys->lens[i];
        chr_node_view v, rep[2];
        chr_bound_result r;
        size_t count = 0;
        o.spill = CHR_SPILL_REPLICAS;
        assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, loads, NULL, 10, &o, &v, &r));
        assert_chr_ok(chr_snapshot_replicas(f->snap, k, len, 2, rep, &count));
        assert_int_equal(v.index, rep[1].index); /* the second replica */
        assert_int_equal(r.probes, 2);
        assert_int_equal(r.flags, CHR_BOUND_SPILLED);
        seen_walk[v.index]++;
        o.spill = CHR_SPILL_SHUFFLE;
        assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, loads, NULL, 10, &o, &v, &r));
        assert_int_not_equal(v.index, 0);
        seen_shuffle[v.index]++;
        /* probe limit 1: the home is full, so it is returned over capacity */
        chr_bound_options one = bound(125);
        one.max_probes = 1;
        assert_chr_ok(chr_snapshot_lookup_bounded(f->snap, k, len, loads, NULL, 10, &one, &v, &r));
        assert_int_equal(v.index, 0);
        assert_int_equal(r.flags, CHR_BOUND_OVER);
        assert_int_equal(r.probes, 1);
    }
    unsigned distinct = 0;
    for (int j = 1; j < 10; ++j) distinct += seen_shuffle[j] > 0;
    assert_int_equal(distinct, 9);
    assert_int_equal(seen_walk[0] + seen_shuffle[0], 0);
    keyed_snapshot_free(f);
}

/* ---- the tracker across snapshots, removal and masks -------------------------- */

static void tracker_survives_removal(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 4, 1);
    chr_tracker *t = NULL;
    assert_chr_ok(chr_tracker_new(16, &t));
    chr_snapshot *old = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &old));
    chr_ticket tickets[40];
    chr_node_view v;
    chr_bound_result r;
    for (int i = 0; i < 40; ++i) {
        char key[16];
        int len = snprintf(key, sizeof key, "r%d", i);
        assert_chr_ok(chr_tracker_acquire(t, old, key, (size_t)len, NULL, &v, &r, &tickets[i]));
    }
    char id[TEST_ID_BUF];
    size_t id_len = node_id(2, id);
    uint64_t on_two = 0, total = 0;
    assert_chr_ok(chr_tracker_load(t, id, id_len, &on_two));
    assert_true(on_two > 0);
    assert_chr_ok(remove_node(ring, 2));
    chr_snapshot *now = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &now));
    for (int i = 0; i < 20; ++i) assert_chr_ok(chr_tracker_release(t, &tickets[i]));
    chr_snapshot_release(old); /* the node is gone from every snapshot */
    for (int i = 20; i < 40; ++i) assert_chr_ok(chr_tracker_release(t, &tickets[i]));
    assert_chr_ok(chr_tracker_total(t, &total));
    assert_int_equal(total, 0);
    assert_chr_ok(chr_tracker_load(t, id, id_len, &on_two));
    assert_int_equal(on_two, 0);
    /* released twice, or a forged ticket: refused, nothing changes */
    assert_chr_error(chr_tracker_release(t, &tickets[0]), CHR_EINVAL, "chr_tracker_release");
    chr_ticket forged = tickets[1];
    forged.check ^= 1;
    assert_chr_error(chr_tracker_release(t, &forged), CHR_EINVAL, "chr_tracker_release");
    /* a masked node gets nothing; unmasked, its keys return */
    size_t zero_len = node_id(0, id);
    assert_chr_ok(chr_tracker_set_available(t, id, zero_len, 0));
    for (int i = 0; i < 200; ++i) {
        char key[16];
        int len = snprintf(key, sizeof key, "m%d", i);
        chr_ticket tk;
        chr_node_view home;
        assert_chr_ok(chr_snapshot_lookup(now, key, (size_t)len, &home));
        assert_chr_ok(chr_tracker_acquire(t, now, key, (size_t)len, NULL, &v, &r, &tk));
        assert_false(v.id_len == zero_len && memcmp(v.id, id, zero_len) == 0);
        assert_chr_ok(chr_tracker_release(t, &tk));
        assert_chr_ok(chr_tracker_set_available(t, id, zero_len, 1));
        assert_chr_ok(chr_tracker_acquire(t, now, key, (size_t)len, NULL, &v, &r, &tk));
        assert_int_equal(v.index, home.index);
        assert_chr_ok(chr_tracker_release(t, &tk));
        assert_chr_ok(chr_tracker_set_available(t, id, zero_len, 0));
    }
    /* every node masked */
    for (unsigned n = 0; n < 4; ++n) {
        size_t l = node_id(n, id);
        assert_chr_ok(chr_tracker_set_available(t, id, l, 0));
    }
    chr_ticket tk;
    assert_chr_error(chr_tracker_acquire(t, now, "k", 1, NULL, &v, &r, &tk), CHR_EEMPTY,
                     "chr_tracker_acquire");
    chr_snapshot_release(now);
    chr_tracker_free(t);
    chr_ring_free(ring);
}

/* chr_tracker_acquire bounds by L summed over the snapshot's members, as
 * chr_snapshot_lookup_bounded does with the same counts: requests in flight
 * on a member that left the snapshot, and on the members of another ring
 * sharing the tracker, are not part of it (they were: the bound was
 * looser than documented). Each acquire's choice and capacity equal the
 * pure lookup's over chr_tracker_load of each member. */
static void tracker_bounds_by_the_snapshots_members(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 8, 1);
    chr_ring *other = ring_with_nodes(NULL, 0, 1);
    for (unsigned n = 100; n < 104; ++n) assert_chr_ok(add_node(other, n, 1));
    chr_tracker *t = NULL;
    assert_chr_ok(chr_tracker_new(64, &t));
    chr_snapshot *before = NULL, *theirs = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &before));
    assert_chr_ok(chr_ring_snapshot(other, &theirs));
    /* 200 requests in flight on node 3 and 300 on the other ring's nodes. */
    enum { ON_THREE = 200, THEIRS = 300 };
    static chr_ticket held[ON_THREE + THEIRS];
    char id[TEST_ID_BUF];
    const size_t three_len = node_id(3, id);
    const chr_bound_options none = bound(CHR_BALANCE_FACTOR_MAX);
    size_t h = 0;
    for (int i = 0; h < ON_THREE; ++i) {
        char key[16];
        const int len = snprintf(key, sizeof key, "t%d", i);
        chr_node_view v;
        assert_chr_ok(chr_snapshot_lookup(before, key, (size_t)len, &v));
        if (v.id_len != three_len || memcmp(v.id, id, three_len) != 0) continue;
        assert_chr_ok(chr_tracker_acquire(t, before, key, (size_t)len, &none, NULL, NULL, &held[h++]));
    }
    for (int i = 0; i < THEIRS; ++i) {
        char key[16];
        const int len = snprintf(key, sizeof key, "o%d", i);
        assert_chr_ok(chr_tracker_acquire(t, theirs, key, (size_t)len, NULL, NULL, NULL, &held[h++]));
    }
    assert_chr_ok(remove_node(ring, 3));
    chr_snapshot *now = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &now));
    size_t nodes = 0;
    assert_chr_ok(chr_snapshot_node_count(now, &nodes));
    uint64_t loads[8] = {0}, sum = 0, total = 0;
    for (size_t i = 0; i < nodes; ++i) {
        chr_node_view v;
        assert_chr_ok(chr_snapshot_node(now, i, &v));
        assert_chr_ok(chr_tracker_load(t, v.id, v.id_len, &loads[i]));
        sum += loads[i];
    }
    assert_chr_ok(chr_tracker_total(t, &total));
    assert_int_equal(sum, 0);
    assert_int_equal(total, ON_THREE + THEIRS);
    /* Acquires on the 7 members left, each checked against the pure lookup
     * over the counts just before it, then kept. */
    const chr_bound_options o = bound(125);
    static chr_ticket mine[400];
    for (int i = 0; i < 400; ++i) {
        char key[16];
        const int len = snprintf(key, sizeof key, "k%d", i % 23);
        chr_node_view want, got;
        chr_bound_result wr, gr;
        assert_chr_ok(chr_snapshot_lookup_bounded(now, key, (size_t)len, loads, NULL, nodes, &o, &want, &wr));
        assert_chr_ok(chr_tracker_acquire(t, now, key, (size_t)len, &o, &got, &gr, &mine[i]));
        assert_int_equal(gr.index, wr.index);
        assert_int_equal(gr.capacity, wr.capacity);
        assert_int_equal(gr.flags, wr.flags);
        assert_int_equal(gr.load, loads[gr.index]);
        assert_true(gr.load < gr.capacity);
        loads[gr.index]++;
    }
    for (int i = 0; i < 400; ++i) assert_chr_ok(chr_tracker_release(t, &mine[i]));
    for (size_t i = 0; i < h; ++i) assert_chr_ok(chr_tracker_release(t, &held[i]));
    assert_chr_ok(chr_tracker_total(t, &total));
    assert_int_equal(total, 0);
    chr_snapshot_release(before);
    chr_snapshot_release(theirs);
    chr_snapshot_release(now);
    chr_tracker_free(t);
    chr_ring_free(ring);
    chr_ring_free(other);
}

/* A tracker with room for 2 ids refuses a third, and counts nothing. */
static void tracker_full(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 3, 1);
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    chr_tracker *t = NULL;
    assert_chr_ok(chr_tracker_new(2, &t));
    int refused = 0;
    for (int i = 0; i < 300 && !refused; ++i) {
        char key[16];
        int len = snprintf(key, sizeof key, "f%d", i);
        chr_ticket tk;
        chr_status st = chr_tracker_acquire(t, snap, key, (size_t)len, NULL, NULL, NULL, &tk);
        if (st == CHR_ERANGE) {
            refused = 1;
            assert_true(names_function(chr_last_error(), "chr_tracker_acquire"));
        } else {
            assert_chr_ok(st);
        }
    }
    assert_true(refused);
    uint64_t total = 0;
    assert_chr_ok(chr_tracker_total(t, &total));
    chr_tracker_free(t);
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

/* ---- argument checks ------------------------------------------------------------ */

static void api_errors(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 3, 1);
    chr_snapshot *snap = NULL, *empty_snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    chr_ring *empty = NULL;
    assert_chr_ok(chr_ring_new(NULL, &empty));
    assert_chr_ok(chr_ring_snapshot(empty, &empty_snap));
    chr_node_view v;
    chr_bound_options o = CHR_BOUND_OPTIONS_INIT, init;
    assert_chr_ok(chr_bound_options_init(&init, CHR_BOUND_OPTIONS_VERSION));
    assert_memory_equal(&o, &init, sizeof o);
    const char *fn = "chr_snapshot_lookup_bounded";
    uint64_t loads[3] = {0};
    assert_chr_error(chr_bound_options_init(NULL, 1), CHR_EINVAL, "chr_bound_options_init");
    assert_chr_error(chr_bound_options_init(&init, 2), CHR_EVERSION, "chr_bound_options_init");
    assert_chr_error(chr_snapshot_lookup_bounded(NULL, "k", 1, NULL, NULL, 0, &o, &v, NULL), CHR_EINVAL, fn);
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, NULL, NULL, 0, &o, NULL, NULL), CHR_EINVAL, fn);
    assert_chr_error(chr_snapshot_lookup_bounded(snap, NULL, 1, NULL, NULL, 0, &o, &v, NULL), CHR_EINVAL, fn);
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, loads, NULL, 2, &o, &v, NULL), CHR_EINVAL, fn);
    assert_chr_error(chr_snapshot_lookup_bounded(empty_snap, "k", 1, NULL, NULL, 0, &o, &v, NULL), CHR_EEMPTY, fn);
    o.version = 0;
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, NULL, NULL, 0, &o, &v, NULL), CHR_EVERSION, fn);
    o = init;
    o.factor_pct = 99;
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, NULL, NULL, 0, &o, &v, NULL), CHR_ERANGE, fn);
    o.factor_pct = CHR_BALANCE_FACTOR_MAX + 1;
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, NULL, NULL, 0, &o, &v, NULL), CHR_ERANGE, fn);
    o = init;
    o.spill = 2;
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, NULL, NULL, 0, &o, &v, NULL), CHR_EINVAL, fn);
    o = init;
    o.slack = CHR_LOAD_MAX + 1;
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, NULL, NULL, 0, &o, &v, NULL), CHR_ERANGE, fn);
    o = init;
    loads[1] = CHR_LOAD_MAX + 1;
    assert_chr_error(chr_snapshot_lookup_bounded(snap, "k", 1, loads, NULL, 3, &o, &v, NULL), CHR_ERANGE, fn);
    loads[1] = CHR_LOAD_MAX; /* the largest load is fine */
    assert_chr_ok(chr_snapshot_lookup_bounded(snap, "k", 1, loads, NULL, 3, &o, &v, NULL));

    uint32_t w[2] = {1, CHR_WEIGHT_MAX + 1};
    uint64_t caps[2];
    fn = "chr_bound_capacities";
    assert_chr_error(chr_bound_capacities(NULL, 2, 0, NULL, caps), CHR_EINVAL, fn);
    assert_chr_error(chr_bound_capacities(w, 2, 0, NULL, NULL), CHR_EINVAL, fn);
    assert_chr_error(chr_bound_capacities(w, 2, 0, NULL, caps), CHR_ERANGE, fn);
    w[1] = 0; /* no candidate but one, and n = 0 */
    assert_chr_ok(chr_bound_capacities(w, 2, 0, NULL, caps));
    assert_int_equal(caps[0], 2); /* ceil(1 * 1.25) */
    assert_int_equal(caps[1], 0);
    assert_chr_ok(chr_bound_capacities(NULL, 0, 0, NULL, NULL));

    chr_tracker *t = NULL;
    chr_ticket tk;
    assert_chr_error(chr_tracker_new(0, NULL), CHR_EINVAL, "chr_tracker_new");
    assert_chr_error(chr_tracker_new((size_t)CHR_NODES_MAX + 1, &t), CHR_ERANGE, "chr_tracker_new");
    assert_null(t);
    assert_chr_ok(chr_tracker_new(0, &t));
    fn = "chr_tracker_acquire";
    assert_chr_error(chr_tracker_acquire(NULL, snap, "k", 1, NULL, NULL, NULL, &tk), CHR_EINVAL, fn);
    assert_chr_error(chr_tracker_acquire(t, NULL, "k", 1, NULL, NULL, NULL, &tk), CHR_EINVAL, fn);
    assert_chr_error(chr_tracker_acquire(t, snap, "k", 1, NULL, NULL, NULL, NULL), CHR_EINVAL, fn);
    assert_chr_error(chr_tracker_acquire(t, snap, NULL, 1, NULL, NULL, NULL, &tk), CHR_EINVAL, fn);
    assert_chr_error(chr_tracker_acquire(t, empty_snap, "k", 1, NULL, NULL, NULL, &tk), CHR_EEMPTY, fn);
    o.factor_pct = 1;
    assert_chr_error(chr_tracker_acquire(t, snap, "k", 1, &o, NULL, NULL, &tk), CHR_ERANGE, fn);
    assert_chr_error(chr_tracker_release(NULL, &tk), CHR_EINVAL, "chr_tracker_release");
    assert_chr_error(chr_tracker_release(t, NULL), CHR_EINVAL, "chr_tracker_release");
    assert_chr_error(chr_tracker_set_available(t, "", 0, 0), CHR_EINVAL, "chr_tracker_set_available");
    assert_chr_error(chr_tracker_set_available(NULL, "a", 1, 0), CHR_EINVAL, "chr_tracker_set_available");
    uint64_t x;
    assert_chr_error(chr_tracker_load(t, "a", 1, NULL), CHR_EINVAL, "chr_tracker_load");
    assert_chr_error(chr_tracker_total(t, NULL), CHR_EINVAL, "chr_tracker_total");
    assert_chr_ok(chr_tracker_load(t, "never", 5, &x));
    assert_int_equal(x, 0);
    chr_tracker_free(t);
    chr_tracker_free(NULL);
    chr_snapshot_release(empty_snap);
    chr_snapshot_release(snap);
    chr_ring_free(empty);
    chr_ring_free(ring);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(capacities_match_haproxy),
        cmocka_unit_test(tracker_never_exceeds_capacity),
        cmocka_unit_test(pure_lookup_never_exceeds_capacity),
        cmocka_unit_test(neutral_when_idle),
        cmocka_unit_test(hot_keys_stay_within_the_bound),
        cmocka_unit_test(masked_node_gets_nothing_and_keys_return),
        cmocka_unit_test(spill_orders),
        cmocka_unit_test(tracker_survives_removal),
        cmocka_unit_test(tracker_bounds_by_the_snapshots_members),
        cmocka_unit_test(tracker_full),
        cmocka_unit_test(api_errors),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
