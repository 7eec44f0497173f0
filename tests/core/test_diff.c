/*
 * Migration plans (chr_diff, chr_plan) against plain reference answers.
 *
 * The reference owner of a key position is read off a dump of each
 * snapshot's sorted token array (reference_successor: the first token >= h,
 * wrapping), and nodes are matched across the two snapshots by comparing
 * their ids here, not through the library. Then, for every case:
 *
 *   - a position changes owner iff it lies in an emitted range, and the
 *     range's (from, to) are its reference owners. Checked for every token
 *     value of both sides, each token +- 1, positions 0 and 2^64 - 1, and
 *     the positions of 10^6 random keys (chr_diff_lookup reports a key's
 *     position; its owners there must be those chr_snapshot_lookup_batch
 *     finds for the key). A wrong boundary, a missed duplicate token or a
 *     bad merge shows up at a token or next to one;
 *   - ranges are sorted, disjoint, never wrap, and touching ranges with the
 *     same pair do not exist (they are merged);
 *   - their total is chr_diff_info.moved; the matrix's cells cover the key
 *     space (sum 1), a row sums to the old owner's share and a column to the
 *     new owner's, and each moving cell is the sum of its ranges (all to
 *     1e-12: shares are sums of at most 2 x 10^4 doubles near 1);
 *   - for a change of one node in a placement with minimal disruption, the
 *     total equals half the sum of |ownership change| over all nodes (each
 *     moved position leaves one node and enters another), adding X gives
 *     only ranges with to == X, removing X only from == X.
 *
 * Cases: add, remove, reweight and 10-change batches, in every placement.
 * Weighted ketama is not minimal-disruption (a change recomputes every
 * server's point count), so it is checked for the exact range property
 * only. The replica plan is checked the same way, against a replica walk
 * over the token dumps (n = 3) and against chr_snapshot_replicas for keys;
 * with n = 1 it must be the diff's ranges exactly.
 *
 * CHR_TEST_DIFF_KEYS sets the number of random keys (default 1,000,000;
 * the sanitizer builds run 100,000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

__extension__ typedef unsigned __int128 u128;

#define NONE CHR_DIFF_NONE
#define TOLERANCE 1e-12
enum { PLAN_REPLICAS = 3, PLAN_KEYS = 100000 };

static size_t key_count(void) {
    const char *env = getenv("CHR_TEST_DIFF_KEYS");
    if (env && *env) return (size_t)strtoull(env, NULL, 10);
    return 1000000;
}

static double share_of(u128 width) { return (double)width * 0x1p-64; }

/* ---- what the test knows of one side, independently of the diff ---------- */

typedef struct side {
    const chr_snapshot *snap;
    token_dump dump;
    size_t nodes;
    size_t eligible; /* nodes with tokens */
} side;

static void side_take(side *s, const chr_snapshot *snap) {
    s->snap = snap;
    token_dump_take(snap, &s->dump);
    assert_chr_ok(chr_snapshot_node_count(snap, &s->nodes));
    s->eligible = 0;
    for (size_t i = 0; i < s->nodes; ++i) {
        chr_node_view v;
        assert_chr_ok(chr_snapshot_node(snap, i, &v));
        s->eligible += v.tokens > 0;
    }
}

static uint32_t reference_owner(const side *s, uint64_t h) {
    if (s->dump.count == 0) return NONE;
    return s->dump.owners[reference_successor(s->dump.values, s->dump.count, h)];
}

static chr_node_view node_of(const side *s, uint32_t index) {
    chr_node_view v;
    assert_chr_ok(chr_snapshot_node(s->snap, index, &v));
    return v;
}

/* Up to n distinct owners walking the dump from h's successor: the replica
 * rule of chr_snapshot_replicas, transcribed. */
static size_t reference_replicas(const side *s, uint64_t h, size_t n, uint32_t *out) {
    if (s->dump.count == 0) return 0;
    if (n > s->eligible) n = s->eligible;
    size_t found = 0, k = reference_successor(s->dump.values, s->dump.count, h);
    for (size_t steps = 0; found < n && steps < s->dump.count; ++steps) {
        const uint32_t o = s->dump.owners[k];
        int seen = 0;
        for (size_t j = 0; j < found; ++j) seen |= out[j] == o;
        if (!seen) out[found++] = o;
        if (++k == s->dump.count) k = 0;
    }
    return found;
}

/* ---- the diff under test, read whole ------------------------------------- */

typedef struct diff_case {
    side old_side, new_side;
    uint32_t *old_to_new; /* by comparing ids here */
    uint32_t *new_to_old;
    chr_diff *diff;
    chr_diff_info info;
    chr_diff_range *ranges;
    size_t range_count;
    chr_diff_cell *cells;
    size_t cell_count;
    unsigned long violations;
} diff_case;

static int same_id(const chr_node_view *a, const chr_node_view *b) {
    return a->id_len == b->id_len && memcmp(a->id, b->id, a->id_len) == 0;
}

/* Reads everything through the cursors, `step` items a call, so the cursor
 * arithmetic is exercised. */
static void *read_all(const chr_diff *diff, int cells, size_t total, size_t step) {
    const size_t size = cells ? sizeof(chr_diff_cell) : sizeof(chr_diff_range);
    unsigned char *all = malloc(total * size + 1);
    assert_non_null(all);
    size_t at = 0, written = 1;
    while (written) {
        chr_status st = cells ? chr_diff_matrix(diff, at, (chr_diff_cell *)(all + at * size), step, &written)
                              : chr_diff_ranges(diff, at, (chr_diff_range *)(all + at * size), step, &written);
        assert_chr_ok(st);
        assert_true(written <= step);
        at += written;
        assert_true(at <= total);
    }
    assert_int_equal(at, total);
    return all;
}

static void diff_case_open(diff_case *c, const chr_snapshot *old_snap, const chr_snapshot *new_snap) {
    memset(c, 0, sizeof *c);
    side_take(&c->old_side, old_snap);
    side_take(&c->new_side, new_snap);
    c->old_to_new = malloc((c->old_side.nodes + 1) * sizeof *c->old_to_new);
    c->new_to_old = malloc((c->new_side.nodes + 1) * sizeof *c->new_to_old);
    assert_non_null(c->old_to_new);
    assert_non_null(c->new_to_old);
    for (size_t j = 0; j < c->new_side.nodes; ++j) c->new_to_old[j] = NONE;
    for (size_t i = 0; i < c->old_side.nodes; ++i) {
        c->old_to_new[i] = NONE;
        chr_node_view a = node_of(&c->old_side, (uint32_t)i);
        for (size_t j = 0; j < c->new_side.nodes; ++j) {
            chr_node_view b = node_of(&c->new_side, (uint32_t)j);
            if (same_id(&a, &b)) {
                c->old_to_new[i] = (uint32_t)j;
                c->new_to_old[j] = (uint32_t)i;
            }
        }
    }
    assert_chr_ok(chr_diff_new(old_snap, new_snap, &c->diff));
    c->info = (chr_diff_info)CHR_DIFF_INFO_INIT;
    assert_chr_ok(chr_diff_describe(c->diff, &c->info));
    c->range_count = (size_t)c->info.ranges;
    c->cell_count = (size_t)c->info.cells;
    c->ranges = read_all(c->diff, 0, c->range_count, 7);
    c->cells = read_all(c->diff, 1, c->cell_count, 5);
}

static void diff_case_close(diff_case *c) {
    chr_diff_free(c->diff);
    token_dump_free(&c->old_side.dump);
    token_dump_free(&c->new_side.dump);
    free(c->old_to_new);
    free(c->new_to_old);
    free(c->ranges);
    free(c->cells);
}

static int moves(const diff_case *c, uint32_t from, uint32_t to) {
    if (from == NONE || to == NONE) return from != to;
    return c->old_to_new[from] != to;
}

/* The range holding position h, or NULL. */
static const chr_diff_range *range_at(const diff_case *c, uint64_t h) {
    size_t lo = 0, hi = c->range_count; /* first range whose first > h */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->ranges[mid].first <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || c->ranges[lo - 1].last < h) return NULL;
    return &c->ranges[lo - 1];
}

static void violation(diff_case *c, const char *what, uint64_t h, uint32_t from, uint32_t to) {
    if (c->violations++ < 5)
        print_error("violation: %s at position 0x%016llx (reference owners %u -> %u)\n", what,
                    (unsigned long long)h, from, to);
}

/* The central property at one position. */
static void check_position(diff_case *c, uint64_t h) {
    const uint32_t from = reference_owner(&c->old_side, h), to = reference_owner(&c->new_side, h);
    const chr_diff_range *r = range_at(c, h);
    if (moves(c, from, to)) {
        if (!r)
            violation(c, "a moving position is in no range", h, from, to);
        else if (r->from != from || r->to != to)
            violation(c, "a moving position is in a range of another pair", h, from, to);
    } else if (r) {
        violation(c, "a position that stays is in a range", h, from, to);
    }
}

static void check_positions_at_tokens(diff_case *c, const side *s) {
    for (size_t t = 0; t < s->dump.count; ++t) {
        const uint64_t v = s->dump.values[t];
        check_position(c, v);
        check_position(c, v - 1); /* wraps at 0: 2^64 - 1, which is fine */
        check_position(c, v + 1);
    }
}

static void check_keys(diff_case *c, const key_set *keys) {
    uint32_t *old_idx = malloc(keys->count * sizeof *old_idx + 1);
    uint32_t *new_idx = malloc(keys->count * sizeof *new_idx + 1);
    uint32_t *batch_old = malloc(keys->count * sizeof *batch_old + 1);
    uint32_t *batch_new = malloc(keys->count * sizeof *batch_new + 1);
    assert_non_null(old_idx);
    assert_non_null(new_idx);
    assert_non_null(batch_old);
    assert_non_null(batch_new);
    if (c->old_side.dump.count)
        assert_chr_ok(chr_snapshot_lookup_batch(c->old_side.snap, keys->keys, keys->lens, keys->count, old_idx));
    if (c->new_side.dump.count)
        assert_chr_ok(chr_snapshot_lookup_batch(c->new_side.snap, keys->keys, keys->lens, keys->count, new_idx));
    assert_chr_ok(chr_diff_lookup_batch(c->diff, keys->keys, keys->lens, keys->count, batch_old, batch_new));
    for (size_t k = 0; k < keys->count; ++k) {
        chr_transition t;
        assert_chr_ok(chr_diff_lookup(c->diff, keys->keys[k], keys->lens[k], &t));
        const uint32_t from = reference_owner(&c->old_side, t.position);
        const uint32_t to = reference_owner(&c->new_side, t.position);
        const uint32_t looked_old = c->old_side.dump.count ? old_idx[k] : NONE;
        const uint32_t looked_new = c->new_side.dump.count ? new_idx[k] : NONE;
        if (t.old_index != from || t.new_index != to || looked_old != from || looked_new != to ||
            batch_old[k] != from || batch_new[k] != to)
            violation(c, "a key's owners differ from its position's", t.position, from, to);
        if (t.moved != (uint32_t)moves(c, from, to))
            violation(c, "chr_transition.moved is wrong", t.position, from, to);
        if (t.old_owner.index != from || t.new_owner.index != to)
            violation(c, "a transition's views are not its indices", t.position, from, to);
        check_position(c, t.position);
    }
    free(old_idx);
    free(new_idx);
    free(batch_old);
    free(batch_new);
}

static void check_structure(diff_case *c);

/* The central property at every position of interest: each token of both
 * sides, next to it, both ends of the circle, and (keys != NULL) the keys;
 * and the shape of what the diff holds. */
static void check_everywhere(diff_case *c, const key_set *keys) {
    check_structure(c);
    check_positions_at_tokens(c, &c->old_side);
    check_positions_at_tokens(c, &c->new_side);
    check_position(c, 0);
    check_position(c, UINT64_MAX);
    if (keys) check_keys(c, keys);
}

static double ownership(const side *s, uint32_t index) {
    return index == NONE ? 0.0 : node_of(s, index).ownership;
}

/* Shape of the ranges, their total, the matrix, the correspondence. */
static void check_structure(diff_case *c) {
    u128 total = 0;
    for (size_t i = 0; i < c->range_count; ++i) {
        const chr_diff_range *r = &c->ranges[i];
        assert_true(r->first <= r->last);
        assert_true(r->from == NONE || r->from < c->old_side.nodes);
        assert_true(r->to == NONE || r->to < c->new_side.nodes);
        assert_true(moves(c, r->from, r->to));
        if (i > 0) {
            const chr_diff_range *p = &c->ranges[i - 1];
            assert_true(p->last < r->first); /* sorted, disjoint */
            if (p->last + 1 == r->first)      /* touching: merged unless the pair differs */
                assert_false(p->from == r->from && p->to == r->to);
        }
        total += (u128)(r->last - r->first) + 1;
    }
    assert_float_equal(share_of(total), c->info.moved, TOLERANCE);

    double sum = 0.0;
    double *row = calloc(c->old_side.nodes + 1, sizeof *row);
    double *column = calloc(c->new_side.nodes + 1, sizeof *column);
    assert_non_null(row);
    assert_non_null(column);
    for (size_t i = 0; i < c->cell_count; ++i) {
        const chr_diff_cell *cell = &c->cells[i];
        assert_true(cell->fraction > 0.0);
        if (i > 0) { /* sorted by (from, to), NONE last, each pair once */
            const chr_diff_cell *p = &c->cells[i - 1];
            assert_true(p->from < cell->from || (p->from == cell->from && p->to < cell->to));
        }
        sum += cell->fraction;
        row[cell->from == NONE ? c->old_side.nodes : cell->from] += cell->fraction;
        column[cell->to == NONE ? c->new_side.nodes : cell->to] += cell->fraction;
        if (moves(c, cell->from, cell->to)) {
            u128 of_pair = 0;
            for (size_t k = 0; k < c->range_count; ++k)
                if (c->ranges[k].from == cell->from && c->ranges[k].to == cell->to)
                    of_pair += (u128)(c->ranges[k].last - c->ranges[k].first) + 1;
            assert_float_equal(cell->fraction, share_of(of_pair), TOLERANCE);
        }
    }
    assert_float_equal(sum, 1.0, TOLERANCE);
    for (size_t i = 0; i < c->old_side.nodes; ++i)
        assert_float_equal(row[i], ownership(&c->old_side, (uint32_t)i), TOLERANCE);
    for (size_t j = 0; j < c->new_side.nodes; ++j)
        assert_float_equal(column[j], ownership(&c->new_side, (uint32_t)j), TOLERANCE);
    free(row);
    free(column);

    for (size_t i = 0; i < c->old_side.nodes; ++i) {
        uint32_t other = 0;
        assert_chr_ok(chr_diff_counterpart(c->diff, CHR_DIFF_OLD, (uint32_t)i, &other));
        assert_int_equal(other, c->old_to_new[i]);
    }
    for (size_t j = 0; j < c->new_side.nodes; ++j) {
        uint32_t other = 0;
        assert_chr_ok(chr_diff_counterpart(c->diff, CHR_DIFF_NEW, (uint32_t)j, &other));
        assert_int_equal(other, c->new_to_old[j]);
    }
    uint32_t added = 0, removed = 0;
    for (size_t i = 0; i < c->old_side.nodes; ++i) removed += c->old_to_new[i] == NONE;
    for (size_t j = 0; j < c->new_side.nodes; ++j) added += c->new_to_old[j] == NONE;
    assert_int_equal(c->info.added, added);
    assert_int_equal(c->info.removed, removed);
    assert_int_equal(c->info.old_nodes, c->old_side.nodes);
    assert_int_equal(c->info.new_nodes, c->new_side.nodes);
    uint64_t fp = 0;
    assert_chr_ok(chr_snapshot_fingerprint(c->old_side.snap, &fp));
    assert_int_equal(c->info.old_fingerprint, fp);
    assert_chr_ok(chr_snapshot_fingerprint(c->new_side.snap, &fp));
    assert_int_equal(c->info.new_fingerprint, fp);
}

/* Half the sum of |ownership change| over every node of either side. */
static double half_ownership_change(const diff_case *c) {
    double sum = 0.0;
    for (size_t i = 0; i < c->old_side.nodes; ++i) {
        const double before = ownership(&c->old_side, (uint32_t)i);
        const double after = ownership(&c->new_side, c->old_to_new[i]);
        sum += before > after ? before - after : after - before;
    }
    for (size_t j = 0; j < c->new_side.nodes; ++j)
        if (c->new_to_old[j] == NONE) sum += ownership(&c->new_side, (uint32_t)j);
    return sum / 2.0;
}

/* ---- the replica plan ---------------------------------------------------- */

typedef struct plan_case {
    chr_plan *plan;
    chr_plan_range *entries;
    size_t count;
    /* per new node: its entries, in order */
    size_t *group_start; /* new nodes + 1 */
    const chr_plan_range **grouped;
} plan_case;

static void plan_case_open(plan_case *p, const diff_case *c, int32_t policy, size_t replicas) {
    memset(p, 0, sizeof *p);
    assert_chr_ok(chr_plan_new(c->diff, policy, replicas, &p->plan));
    chr_plan_info info = CHR_PLAN_INFO_INIT;
    assert_chr_ok(chr_plan_describe(p->plan, &info));
    assert_int_equal(info.replicas, replicas);
    assert_int_equal(info.policy, policy);
    p->count = (size_t)info.entries;
    p->entries = malloc(p->count * sizeof *p->entries + 1);
    assert_non_null(p->entries);
    size_t at = 0, written = 1;
    while (written) {
        assert_chr_ok(chr_plan_ranges(p->plan, at, p->entries + at, 3, &written));
        at += written;
    }
    assert_int_equal(at, p->count);

    const size_t nodes = c->new_side.nodes;
    p->group_start = calloc(nodes + 1, sizeof *p->group_start);
    p->grouped = malloc(p->count * sizeof *p->grouped + 1);
    assert_non_null(p->group_start);
    assert_non_null(p->grouped);
    u128 copies = 0;
    for (size_t i = 0; i < p->count; ++i) {
        const chr_plan_range *e = &p->entries[i];
        assert_true(e->first <= e->last);
        assert_true(e->to < nodes);
        assert_true(e->source_count <= replicas);
        for (size_t k = e->source_count; k < CHR_PLAN_REPLICAS_MAX; ++k) assert_int_equal(e->sources[k], NONE);
        if (i > 0) {
            const chr_plan_range *q = &p->entries[i - 1];
            assert_true(q->first < e->first || (q->first == e->first && q->to < e->to));
        }
        ++p->group_start[e->to + 1];
        copies += (u128)(e->last - e->first) + 1;
    }
    assert_float_equal(share_of(copies), info.copies, TOLERANCE);
    for (size_t g = 0; g < nodes; ++g) p->group_start[g + 1] += p->group_start[g];
    size_t *fill = calloc(nodes + 1, sizeof *fill);
    assert_non_null(fill);
    for (size_t i = 0; i < p->count; ++i) {
        const uint32_t g = p->entries[i].to;
        p->grouped[p->group_start[g] + fill[g]++] = &p->entries[i];
    }
    free(fill);
    for (size_t g = 0; g < nodes; ++g) /* one node's entries: disjoint, merged */
        for (size_t i = p->group_start[g] + 1; i < p->group_start[g + 1]; ++i) {
            const chr_plan_range *q = p->grouped[i - 1], *e = p->grouped[i];
            assert_true(q->last < e->first);
            if (q->last + 1 == e->first)
                assert_false(q->source_count == e->source_count &&
                             memcmp(q->sources, e->sources, sizeof q->sources) == 0);
        }
}

static void plan_case_close(plan_case *p) {
    chr_plan_free(p->plan);
    free(p->entries);
    free(p->group_start);
    free(p->grouped);
}

static const chr_plan_range *plan_entry_at(const plan_case *p, uint32_t node, uint64_t h) {
    size_t lo = p->group_start[node], hi = p->group_start[node + 1];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->grouped[mid]->first <= h)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == p->group_start[node] || p->grouped[lo - 1]->last < h) return NULL;
    return p->grouped[lo - 1];
}

/* At position h, given both sides' replica lists: every new replica that is
 * not an old one has exactly the entry that covers h with the old list as
 * sources; no other node has an entry covering h. */
static void check_plan_lists(diff_case *c, const plan_case *p, uint64_t h, const uint32_t *old_list,
                             size_t old_count, const uint32_t *new_list, size_t new_count) {
    for (uint32_t g = 0; g < c->new_side.nodes; ++g) {
        int in_new = 0, in_old = 0;
        for (size_t k = 0; k < new_count; ++k) in_new |= new_list[k] == g;
        for (size_t k = 0; k < old_count; ++k) in_old |= c->new_to_old[g] != NONE && old_list[k] == c->new_to_old[g];
        const chr_plan_range *e = plan_entry_at(p, g, h);
        if (in_new && !in_old) {
            if (!e) {
                violation(c, "a gaining replica has no plan entry", h, NONE, g);
            } else {
                int same = e->source_count == old_count;
                for (size_t k = 0; same && k < old_count; ++k) same = e->sources[k] == old_list[k];
                if (!same) violation(c, "a plan entry's sources are not the old replicas", h, NONE, g);
            }
        } else if (e) {
            violation(c, "a node that gains nothing has a plan entry", h, NONE, g);
        }
    }
}

static void check_plan_position(diff_case *c, const plan_case *p, uint64_t h, size_t n) {
    uint32_t old_list[CHR_PLAN_REPLICAS_MAX], new_list[CHR_PLAN_REPLICAS_MAX];
    const size_t old_count = reference_replicas(&c->old_side, h, n, old_list);
    const size_t new_count = reference_replicas(&c->new_side, h, n, new_list);
    check_plan_lists(c, p, h, old_list, old_count, new_list, new_count);
}

/* The plan under `policy`: for n = 1 the diff's ranges; for n = 3, at the
 * positions of keys, the gains chr_snapshot_replicas_policy's lists imply,
 * and under CHR_REPLICAS_NODES also at every token and next to it, against
 * the walk over the dumps. */
static void check_plan(diff_case *c, const key_set *keys, int32_t policy) {
    /* n = 1: the plan is the diff's ranges, but for those that go to no
     * node (the new side has no tokens): nobody gains them. */
    plan_case one;
    plan_case_open(&one, c, policy, 1);
    size_t to_nodes = 0;
    for (size_t i = 0; i < c->range_count; ++i) to_nodes += c->ranges[i].to != NONE;
    assert_int_equal(one.count, to_nodes);
    for (size_t i = 0, j = 0; i < one.count; ++i, ++j) {
        while (c->ranges[j].to == NONE) ++j;
        const chr_plan_range *e = &one.entries[i];
        const chr_diff_range *r = &c->ranges[j];
        assert_true(e->first == r->first && e->last == r->last && e->to == r->to);
        if (r->from == NONE) {
            assert_int_equal(e->source_count, 0);
        } else {
            assert_int_equal(e->source_count, 1);
            assert_int_equal(e->sources[0], r->from);
        }
    }
    plan_case_close(&one);

    plan_case p;
    plan_case_open(&p, c, policy, PLAN_REPLICAS);
    for (int s = 0; s < 2 && policy == CHR_REPLICAS_NODES; ++s) {
        const side *sd = s ? &c->new_side : &c->old_side;
        for (size_t t = 0; t < sd->dump.count; ++t) {
            check_plan_position(c, &p, sd->dump.values[t], PLAN_REPLICAS);
            check_plan_position(c, &p, sd->dump.values[t] + 1, PLAN_REPLICAS);
        }
    }
    if (policy == CHR_REPLICAS_NODES) {
        check_plan_position(c, &p, 0, PLAN_REPLICAS);
        check_plan_position(c, &p, UINT64_MAX, PLAN_REPLICAS);
    }
    /* Keys, against the library's own replica calls. */
    const size_t n_keys = keys->count < PLAN_KEYS ? keys->count : PLAN_KEYS;
    for (size_t k = 0; k < n_keys; ++k) {
        chr_transition t;
        chr_node_view views[PLAN_REPLICAS];
        uint32_t old_list[PLAN_REPLICAS], new_list[PLAN_REPLICAS];
        size_t old_count = 0, new_count = 0;
        assert_chr_ok(chr_diff_lookup(c->diff, keys->keys[k], keys->lens[k], &t));
        if (c->old_side.eligible) {
            assert_chr_ok(chr_snapshot_replicas_policy(c->old_side.snap, keys->keys[k], keys->lens[k], policy, PLAN_REPLICAS, views, &old_count));
            for (size_t i = 0; i < old_count; ++i) old_list[i] = views[i].index;
        }
        if (c->new_side.eligible) {
            assert_chr_ok(chr_snapshot_replicas_policy(c->new_side.snap, keys->keys[k], keys->lens[k], policy, PLAN_REPLICAS, views, &new_count));
            for (size_t i = 0; i < new_count; ++i) new_list[i] = views[i].index;
        }
        check_plan_lists(c, &p, t.position, old_list, old_count, new_list, new_count);
    }
    plan_case_close(&p);
}

/* ---- the cases ----------------------------------------------------------- */

typedef enum { CHANGE_ADD, CHANGE_REMOVE, CHANGE_REWEIGHT, CHANGE_BATCH } change_kind;
static const char *const change_names[] = {"add", "remove", "reweight", "batch of 10"};

typedef struct placement_case {
    int32_t placement;
    const char *name;
    int minimal; /* minimal disruption: one-node checks apply */
    uint32_t max_weight;
} placement_case;

static const placement_case placements[] = {
    {CHR_PLACEMENT_NATIVE, "native", 1, 4},
    {CHR_PLACEMENT_KETAMA, "ketama", 0, 4},
    {CHR_PLACEMENT_KETAMA_UNWEIGHTED, "ketama-unweighted", 1, 1},
    {CHR_PLACEMENT_NGINX, "nginx", 1, 3},
};

enum { NODES = 24 };

static key_set *g_keys;

static int setup_keys(void **state) {
    (void)state;
    g_keys = key_set_new(key_count(), 0xD1FF19ull);
    return 0;
}

static int teardown_keys(void **state) {
    (void)state;
    key_set_free(g_keys);
    return 0;
}

static chr_ring *placement_ring(const placement_case *pc) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.placement = pc->placement;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    for (unsigned n = 0; n < NODES; ++n) assert_chr_ok(add_node(ring, n, 1 + n % pc->max_weight));
    return ring;
}

static chr_snapshot *snapshot_of(const chr_ring *ring) {
    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    return snap;
}

/* Index of test node `number` in a snapshot. */
static uint32_t index_of(const chr_snapshot *snap, unsigned number) {
    char id[TEST_ID_BUF];
    size_t len = node_id(number, id);
    size_t nodes = 0;
    assert_chr_ok(chr_snapshot_node_count(snap, &nodes));
    for (size_t i = 0; i < nodes; ++i) {
        chr_node_view v;
        assert_chr_ok(chr_snapshot_node(snap, i, &v));
        if (v.id_len == len && memcmp(v.id, id, len) == 0) return (uint32_t)i;
    }
    fail_msg("node %u is not in the snapshot", number);
    return NONE;
}

/* Ten changes of every kind on distinct nodes, in one batch. */
static void apply_batch(chr_ring *ring, const placement_case *pc, test_rng *rng) {
    char ids[10][TEST_ID_BUF];
    chr_change changes[10];
    size_t picked[NODES];
    for (size_t i = 0; i < NODES; ++i) picked[i] = i;
    rng_shuffle(rng, picked, NODES);
    for (unsigned k = 0; k < 10; ++k) {
        const unsigned kind = k % 3;
        const unsigned number = kind == 0 ? NODES + k : (unsigned)picked[k];
        size_t len = node_id(number, ids[k]);
        uint32_t weight = (uint32_t)rng_below(rng, pc->max_weight + 1);
        if (kind == 2 && pc->max_weight == 1) weight = 0; /* 0/1 weights: 1 -> 0 */
        changes[k] = (chr_change){kind == 0 ? CHR_OP_ADD : kind == 1 ? CHR_OP_REMOVE : CHR_OP_SET_WEIGHT,
                                  kind == 0 ? 1 : weight, ids[k], len, NULL, 0, number};
    }
    assert_chr_ok(chr_ring_apply(ring, changes, 10, NULL));
}

static void run_case(const placement_case *pc, change_kind kind) {
    chr_ring *ring = placement_ring(pc);
    chr_snapshot *before = snapshot_of(ring);
    const unsigned x = kind == CHANGE_ADD ? NODES : 7; /* node 7 has weight 4 (native), 1, 2 */
    test_rng rng = rng_seeded(0xBA7C4 + (uint64_t)pc->placement);
    switch (kind) {
    case CHANGE_ADD: assert_chr_ok(add_node(ring, x, pc->max_weight > 1 ? 2 : 1)); break;
    case CHANGE_REMOVE: assert_chr_ok(remove_node(ring, x)); break;
    case CHANGE_REWEIGHT: assert_chr_ok(set_node_weight(ring, x, pc->max_weight > 1 ? 1 : 0)); break;
    case CHANGE_BATCH: apply_batch(ring, pc, &rng); break;
    }
    chr_snapshot *after = snapshot_of(ring);
    chr_ring_free(ring); /* the snapshots outlive it */

    diff_case c;
    diff_case_open(&c, before, after);
    chr_snapshot_release(before); /* the diff holds its own references */
    chr_snapshot_release(after);
    check_everywhere(&c, g_keys);
    assert_true(c.range_count > 0);

    if (pc->minimal && kind != CHANGE_BATCH) {
        assert_float_equal(c.info.moved, half_ownership_change(&c), TOLERANCE);
        const uint32_t old_x = kind == CHANGE_ADD ? NONE : index_of(c.old_side.snap, x);
        const uint32_t new_x = kind == CHANGE_REMOVE ? NONE : index_of(c.new_side.snap, x);
        for (size_t i = 0; i < c.range_count; ++i) {
            const chr_diff_range *r = &c.ranges[i];
            if (kind == CHANGE_ADD) assert_int_equal(r->to, new_x);
            if (kind == CHANGE_REMOVE) assert_int_equal(r->from, old_x);
            if (kind == CHANGE_REWEIGHT) assert_true(r->from == old_x || r->to == new_x);
        }
    }
    check_plan(&c, g_keys, CHR_REPLICAS_NODES);
    if (c.violations)
        fail_msg("%s, %s: %lu violations", pc->name, change_names[kind], c.violations);
    diff_case_close(&c);
}

#define PLACEMENT_TESTS(i, var)                                                             \
    static void test_##var##_add(void **state) { (void)state; run_case(&placements[i], CHANGE_ADD); } \
    static void test_##var##_remove(void **state) { (void)state; run_case(&placements[i], CHANGE_REMOVE); } \
    static void test_##var##_reweight(void **state) { (void)state; run_case(&placements[i], CHANGE_REWEIGHT); } \
    static void test_##var##_batch(void **state) { (void)state; run_case(&placements[i], CHANGE_BATCH); }
PLACEMENT_TESTS(0, native)
PLACEMENT_TESTS(1, ketama)
PLACEMENT_TESTS(2, ketama_unweighted)
PLACEMENT_TESTS(3, nginx)

/* tokens_per_weight may differ: keys land at the same positions. Each
 * node keeps its tokens #0..#99 and loses #100..#159, so keys move between
 * the same nodes (none added, none removed). */
static void test_tokens_per_weight_change(void **state) {
    (void)state;
    chr_options opts = CHR_OPTIONS_INIT;
    chr_ring *a = ring_with_nodes(&opts, 10, 1);
    opts.tokens_per_weight = 100;
    chr_ring *b = ring_with_nodes(&opts, 10, 1);
    chr_snapshot *sa = snapshot_of(a), *sb = snapshot_of(b);
    diff_case c;
    diff_case_open(&c, sa, sb);
    check_everywhere(&c, NULL);
    assert_int_equal(c.info.added, 0);
    assert_int_equal(c.info.removed, 0);
    assert_true(c.info.moved > 0.0); /* tokens #100..#159 are gone: their arcs move */
    assert_int_equal(c.violations, 0);
    diff_case_close(&c);
    chr_snapshot_release(sa);
    chr_snapshot_release(sb);
    chr_ring_free(a);
    chr_ring_free(b);
}

/* A side without tokens: no owner anywhere. From an empty ring every
 * position moves from NONE; to a ring whose members all have weight 0,
 * everything moves to NONE; two empty rings differ nowhere, and their one
 * cell is NONE -> NONE. */
static void test_empty_sides(void **state) {
    (void)state;
    chr_ring *empty = NULL, *full = ring_with_nodes(NULL, 5, 1), *drained = ring_with_nodes(NULL, 5, 0);
    assert_chr_ok(chr_ring_new(NULL, &empty));
    chr_snapshot *se = snapshot_of(empty), *sf = snapshot_of(full), *sd = snapshot_of(drained);
    const chr_snapshot *pairs[][2] = {{se, sf}, {sf, se}, {sf, sd}, {sd, sf}, {se, se}, {se, sd}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i) {
        diff_case c;
        diff_case_open(&c, pairs[i][0], pairs[i][1]);
        check_everywhere(&c, g_keys);
        const int old_empty = c.old_side.dump.count == 0, new_empty = c.new_side.dump.count == 0;
        assert_float_equal(c.info.moved, old_empty && new_empty ? 0.0 : 1.0, TOLERANCE);
        if (old_empty && new_empty) {
            assert_int_equal(c.cell_count, 1);
            assert_true(c.cells[0].from == NONE && c.cells[0].to == NONE);
        }
        check_plan(&c, g_keys, CHR_REPLICAS_NODES);
        assert_int_equal(c.violations, 0);
        diff_case_close(&c);
    }
    chr_snapshot_release(se);
    chr_snapshot_release(sf);
    chr_snapshot_release(sd);
    chr_ring_free(empty);
    chr_ring_free(full);
    chr_ring_free(drained);
}

/* The plan under every replica policy, for rings with zones: 24 nodes in
 * zones a, b, c (c has 2 nodes only, so under the zone policies its nodes
 * carry a copy of most keys), then one node added in zone c, one removed,
 * and one moved from zone a to zone b (removed and added again in the
 * batch, as a ring file does for a zone change). */
static chr_ring *zoned_ring(void) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    for (unsigned n = 0; n < NODES; ++n) {
        char id[TEST_ID_BUF];
        size_t len = node_id(n, id);
        const char *zone = n < 2 ? "c" : n % 2 ? "a" : "b";
        assert_chr_ok(chr_ring_add(ring, id, len, 1 + n % 3, zone, 1, n));
    }
    return ring;
}

static void test_plan_zone_policies(void **state) {
    (void)state;
    chr_ring *ring = zoned_ring();
    chr_snapshot *before = snapshot_of(ring);
    char added[TEST_ID_BUF], removed[TEST_ID_BUF], moved[TEST_ID_BUF];
    const size_t added_len = node_id(NODES, added), removed_len = node_id(9, removed),
                 moved_len = node_id(5, moved);
    const chr_change changes[] = {
        {CHR_OP_ADD, 1, added, added_len, "c", 1, NODES},
        {CHR_OP_REMOVE, 0, removed, removed_len, NULL, 0, 0},
        {CHR_OP_REMOVE, 0, moved, moved_len, NULL, 0, 0},
        {CHR_OP_ADD, 3, moved, moved_len, "b", 1, 5},
    };
    assert_chr_ok(chr_ring_apply(ring, changes, 4, NULL));
    chr_snapshot *after = snapshot_of(ring);
    diff_case c;
    diff_case_open(&c, before, after);
    check_structure(&c);
    for (int32_t policy = CHR_REPLICAS_NODES; policy <= CHR_REPLICAS_NTS; ++policy)
        check_plan(&c, g_keys, policy);
    if (c.violations) fail_msg("%lu violations", c.violations);
    diff_case_close(&c);
    chr_snapshot_release(before);
    chr_snapshot_release(after);
    chr_ring_free(ring);
}

/* ---- by hand: tokens at 0 and 2^64 - 1, the wrap, ties ------------------- */

#define U (UINT64_C(1) << 60)

static const struct {
    const char *text;
    uint64_t position;
} hand_positions[] = {
    /* "top": tokens at 0 and at 2^64 - 1, so no arc wraps */
    {"tA#0", 0}, {"tA#1", 8 * U}, {"tB#0", 4 * U}, {"tB#1", UINT64_MAX}, {"tC#0", 2 * U}, {"tC#1", 12 * U},
    /* "wrap": C takes both ends of the wrapping arc */
    {"wA#0", 4 * U}, {"wA#1", 8 * U}, {"wB#0", 2 * U}, {"wB#1", 12 * U}, {"wC#0", 14 * U}, {"wC#1", U},
    /* "tie": dC#0 equals dA#0; the smaller id (dA) owns the value */
    {"dA#0", 4 * U}, {"dA#1", 8 * U}, {"dB#0", 12 * U}, {"dB#1", 2 * U}, {"dC#0", 4 * U}, {"dC#1", 6 * U},
};

static uint64_t hand_hash(const void *data, size_t len, uint64_t seed) {
    (void)seed;
    for (size_t i = 0; i < sizeof hand_positions / sizeof hand_positions[0]; ++i)
        if (strlen(hand_positions[i].text) == len && memcmp(hand_positions[i].text, data, len) == 0)
            return hand_positions[i].position;
    return mix64(len); /* keys: anywhere */
}

static const chr_hasher hand_hasher = {
    CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "diff_by_hand",
    "token positions from the table in tests/core/test_diff.c", hand_hash, 0, NULL, 0,
};

static chr_snapshot *hand_snapshot(const char *ids) {
    static int registered;
    if (!registered) {
        assert_chr_ok(chr_hasher_register(&hand_hasher));
        registered = 1;
    }
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = "diff_by_hand";
    opts.tokens_per_weight = 2;
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    for (const char *p = ids;; p += 3) { /* "tA tB": two-letter ids, one space apart */
        assert_chr_ok(chr_ring_add(ring, p, 2, 1, NULL, 0, 0));
        if (!p[2]) break;
    }
    chr_snapshot *snap = snapshot_of(ring);
    chr_ring_free(ring);
    return snap;
}

typedef struct expected_range {
    uint64_t first, last;
    const char *from, *to;
} expected_range;

static void expect_ranges(const char *old_ids, const char *new_ids, const expected_range *want, size_t n) {
    chr_snapshot *a = hand_snapshot(old_ids), *b = hand_snapshot(new_ids);
    diff_case c;
    diff_case_open(&c, a, b);
    check_everywhere(&c, NULL);
    assert_int_equal(c.violations, 0);
    assert_int_equal(c.range_count, n);
    for (size_t i = 0; i < n; ++i) {
        const chr_diff_range *r = &c.ranges[i];
        chr_node_view from = node_of(&c.old_side, r->from), to = node_of(&c.new_side, r->to);
        if (r->first != want[i].first || r->last != want[i].last || from.id_len != 2 ||
            memcmp(from.id, want[i].from, 2) != 0 || to.id_len != 2 || memcmp(to.id, want[i].to, 2) != 0)
            fail_msg("%s -> %s, range %zu: [0x%016llx, 0x%016llx] %.2s -> %.2s, expected [0x%016llx, "
                     "0x%016llx] %s -> %s",
                     old_ids, new_ids, i, (unsigned long long)r->first, (unsigned long long)r->last,
                     (const char *)from.id, (const char *)to.id, (unsigned long long)want[i].first,
                     (unsigned long long)want[i].last, want[i].from, want[i].to);
    }
    diff_case_close(&c);
    chr_snapshot_release(a);
    chr_snapshot_release(b);
}

/* Old pieces: [0,0] tA, (0,4U] tB, (4U,8U] tA, (8U,max] tB (its token at
 * 2^64 - 1 closes the circle: no wrapping arc). tC#0 at 2U takes (0,2U] and
 * tC#1 at 12U takes (8U,12U], both from tB; position 0 stays with tA. */
static void test_by_hand_top(void **state) {
    (void)state;
    const expected_range want[] = {{1, 2 * U, "tB", "tC"}, {8 * U + 1, 12 * U, "tB", "tC"}};
    expect_ranges("tA tB", "tA tB tC", want, 2);
}

/* wB#0 at 2U owns the wrapping arc (12U, max] + [0, 2U]. wC#1 at U and
 * wC#0 at 14U take [0, U] and (12U, 14U]; the new wrapping arc (14U, max]
 * + [0, U] is wC#1's, so (14U, max] moves from wB to wC too and merges with
 * (12U, 14U]: two ranges, cut at the top of the circle, none wrapping. */
static void test_by_hand_wrap(void **state) {
    (void)state;
    const expected_range want[] = {{0, U, "wB", "wC"}, {12 * U + 1, UINT64_MAX, "wB", "wC"}};
    expect_ranges("wA wB", "wA wB wC", want, 2);
}

/* dC#0 lands on dA#0's value: dA is first in the total order and keeps
 * it, so dC only takes (4U, 6U]. Removing dA then hands its token value to
 * dC ((2U, 4U]) and (6U, 8U] to dB#0 at 12U. */
static void test_by_hand_tie(void **state) {
    (void)state;
    const expected_range add[] = {{4 * U + 1, 6 * U, "dA", "dC"}};
    expect_ranges("dA dB", "dA dB dC", add, 1);
    const expected_range remove[] = {{2 * U + 1, 4 * U, "dA", "dC"}, {6 * U + 1, 8 * U, "dA", "dB"}};
    expect_ranges("dA dB dC", "dB dC", remove, 2);
}

/* ---- contracts ------------------------------------------------------------ */

static void test_incompatible(void **state) {
    (void)state;
    chr_options opts = CHR_OPTIONS_INIT;
    chr_ring *a = ring_with_nodes(&opts, 3, 1);
    opts.seed = 7;
    chr_ring *seeded = ring_with_nodes(&opts, 3, 1);
    opts = (chr_options)CHR_OPTIONS_INIT;
    opts.placement = CHR_PLACEMENT_NGINX;
    chr_ring *nginx = ring_with_nodes(&opts, 3, 1);
    opts.placement = CHR_PLACEMENT_KETAMA;
    chr_ring *ketama = ring_with_nodes(&opts, 3, 1);
    opts.seed = 7; /* ignored by a compatibility placement: the same ring */
    chr_ring *ketama_seeded = ring_with_nodes(&opts, 3, 1);
    chr_snapshot *sa = snapshot_of(a), *ss = snapshot_of(seeded), *sn = snapshot_of(nginx),
                 *sk = snapshot_of(ketama), *sk7 = snapshot_of(ketama_seeded);
    chr_diff *d = (chr_diff *)&d;
    assert_chr_error(chr_diff_new(sa, ss, &d), CHR_EINCOMPATIBLE, "chr_diff_new");
    assert_null(d);
    assert_non_null(strstr(chr_last_error(), "seed 0 and 7"));
    assert_chr_error(chr_diff_new(sa, sn, &d), CHR_EINCOMPATIBLE, "chr_diff_new");
    assert_non_null(strstr(chr_last_error(), "placement 'native' and 'nginx'"));
    assert_chr_error(chr_diff_new(sk, sn, &d), CHR_EINCOMPATIBLE, "chr_diff_new");
    assert_chr_ok(chr_diff_new(sk, sk7, &d));
    chr_diff_info info = CHR_DIFF_INFO_INIT;
    assert_chr_ok(chr_diff_describe(d, &info));
    assert_int_equal(info.ranges, 0);
    assert_float_equal(info.moved, 0.0, 0.0);
    chr_diff_free(d);
    chr_snapshot_release(sa);
    chr_snapshot_release(ss);
    chr_snapshot_release(sn);
    chr_snapshot_release(sk);
    chr_snapshot_release(sk7);
    chr_ring_free(a);
    chr_ring_free(seeded);
    chr_ring_free(nginx);
    chr_ring_free(ketama);
    chr_ring_free(ketama_seeded);
}

static void test_arguments(void **state) {
    (void)state;
    chr_ring *a = ring_with_nodes(NULL, 3, 1);
    chr_snapshot *s = snapshot_of(a);
    chr_diff *d = NULL;
    assert_chr_error(chr_diff_new(NULL, s, &d), CHR_EINVAL, "chr_diff_new");
    assert_chr_error(chr_diff_new(s, NULL, &d), CHR_EINVAL, "chr_diff_new");
    assert_chr_error(chr_diff_new(s, s, NULL), CHR_EINVAL, "chr_diff_new");
    assert_chr_ok(chr_diff_new(s, s, &d));
    chr_diff_free(NULL);
    chr_plan_free(NULL);

    chr_diff_info info = CHR_DIFF_INFO_INIT;
    assert_chr_error(chr_diff_describe(NULL, &info), CHR_EINVAL, "chr_diff_describe");
    assert_chr_error(chr_diff_describe(d, NULL), CHR_EINVAL, "chr_diff_describe");
    info.version = 0;
    assert_chr_error(chr_diff_describe(d, &info), CHR_EVERSION, "chr_diff_describe");
    info.version = CHR_DIFF_INFO_VERSION + 1;
    assert_chr_error(chr_diff_describe(d, &info), CHR_EVERSION, "chr_diff_describe");
    chr_diff_info by_init;
    memset(&by_init, 0xAB, sizeof by_init);
    assert_chr_ok(chr_diff_info_init(&by_init, CHR_DIFF_INFO_VERSION));
    chr_diff_info by_macro = CHR_DIFF_INFO_INIT;
    assert_memory_equal(&by_init, &by_macro, sizeof by_init);
    assert_chr_error(chr_diff_info_init(&by_init, 2), CHR_EVERSION, "chr_diff_info_init");
    assert_chr_error(chr_diff_info_init(NULL, 1), CHR_EINVAL, "chr_diff_info_init");
    chr_plan_info plan_init, plan_macro = CHR_PLAN_INFO_INIT;
    memset(&plan_init, 0xAB, sizeof plan_init);
    assert_chr_ok(chr_plan_info_init(&plan_init, CHR_PLAN_INFO_VERSION));
    assert_memory_equal(&plan_init, &plan_macro, sizeof plan_init);

    /* A diff of a snapshot with itself has no range and one stay per node. */
    info = (chr_diff_info)CHR_DIFF_INFO_INIT;
    assert_chr_ok(chr_diff_describe(d, &info));
    assert_int_equal(info.ranges, 0);
    assert_int_equal(info.cells, 3);
    chr_diff_range r[2];
    size_t written = 9;
    assert_chr_ok(chr_diff_ranges(d, 0, r, 2, &written));
    assert_int_equal(written, 0);
    assert_chr_ok(chr_diff_ranges(d, 0, NULL, 0, &written));
    assert_chr_error(chr_diff_ranges(d, 1, r, 2, &written), CHR_ERANGE, "chr_diff_ranges");
    assert_chr_error(chr_diff_ranges(d, 0, NULL, 2, &written), CHR_EINVAL, "chr_diff_ranges");
    assert_chr_error(chr_diff_ranges(d, 0, r, 2, NULL), CHR_EINVAL, "chr_diff_ranges");
    assert_chr_error(chr_diff_ranges(NULL, 0, r, 2, &written), CHR_EINVAL, "chr_diff_ranges");
    chr_diff_cell cells[3];
    assert_chr_ok(chr_diff_matrix(d, 1, cells, 3, &written));
    assert_int_equal(written, 2);
    assert_chr_error(chr_diff_matrix(d, 4, cells, 3, &written), CHR_ERANGE, "chr_diff_matrix");

    const chr_snapshot *side_snap = NULL;
    assert_chr_ok(chr_diff_snapshot(d, CHR_DIFF_NEW, &side_snap));
    assert_ptr_equal(side_snap, s);
    assert_chr_error(chr_diff_snapshot(d, 2, &side_snap), CHR_EINVAL, "chr_diff_snapshot");
    assert_chr_error(chr_diff_snapshot(d, CHR_DIFF_OLD, NULL), CHR_EINVAL, "chr_diff_snapshot");
    uint32_t other = 0;
    assert_chr_ok(chr_diff_counterpart(d, CHR_DIFF_OLD, NONE, &other));
    assert_int_equal(other, NONE);
    assert_chr_error(chr_diff_counterpart(d, CHR_DIFF_OLD, 3, &other), CHR_ERANGE, "chr_diff_counterpart");
    assert_chr_error(chr_diff_counterpart(d, -1, 0, &other), CHR_EINVAL, "chr_diff_counterpart");

    chr_transition t;
    assert_chr_error(chr_diff_lookup(d, NULL, 3, &t), CHR_EINVAL, "chr_diff_lookup");
    assert_chr_error(chr_diff_lookup(d, "k", 1, NULL), CHR_EINVAL, "chr_diff_lookup");
    assert_chr_ok(chr_diff_lookup(d, NULL, 0, &t)); /* the empty key */
    assert_int_equal(t.moved, 0);
    const void *keys[1] = {NULL};
    size_t lens[1] = {2};
    uint32_t oi[1], ni[1];
    assert_chr_error(chr_diff_lookup_batch(d, keys, lens, 1, oi, ni), CHR_EINVAL, "chr_diff_lookup_batch");
    assert_chr_error(chr_diff_lookup_batch(d, keys, lens, 1, oi, NULL), CHR_EINVAL, "chr_diff_lookup_batch");
    assert_chr_ok(chr_diff_lookup_batch(d, NULL, NULL, 0, NULL, NULL));

    chr_plan *p = (chr_plan *)&p;
    assert_chr_error(chr_plan_new(d, CHR_REPLICAS_NODES, 0, &p), CHR_EINVAL, "chr_plan_new");
    assert_null(p);
    assert_chr_error(chr_plan_new(d, CHR_REPLICAS_NODES, CHR_PLAN_REPLICAS_MAX + 1, &p), CHR_ERANGE, "chr_plan_new");
    assert_chr_error(chr_plan_new(d, 99, 2, &p), CHR_ENOTSUP, "chr_plan_new");
    assert_chr_error(chr_plan_new(d, -1, 2, &p), CHR_ENOTSUP, "chr_plan_new");
    assert_chr_error(chr_plan_new(NULL, CHR_REPLICAS_NODES, 2, &p), CHR_EINVAL, "chr_plan_new");
    assert_chr_ok(chr_plan_new(d, CHR_REPLICAS_NODES, CHR_PLAN_REPLICAS_MAX, &p));
    chr_plan_info pi = CHR_PLAN_INFO_INIT;
    assert_chr_ok(chr_plan_describe(p, &pi));
    assert_int_equal(pi.entries, 0);
    pi.version = 9;
    assert_chr_error(chr_plan_describe(p, &pi), CHR_EVERSION, "chr_plan_describe");
    chr_plan_range e;
    assert_chr_error(chr_plan_ranges(p, 1, &e, 1, &written), CHR_ERANGE, "chr_plan_ranges");

    pi.version = CHR_PLAN_INFO_VERSION;

    /* Lifetimes: the diff and the plan keep their snapshots. */
    chr_snapshot_release(s);
    chr_ring_free(a);
    assert_chr_ok(chr_diff_lookup(d, "k", 1, &t));
    assert_int_equal(t.old_owner.id_len, 8); /* "node-00N", read from the kept snapshot */
    chr_diff_free(d);
    assert_chr_ok(chr_plan_describe(p, &pi));
    chr_plan_free(p);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_add),
        cmocka_unit_test(test_native_remove),
        cmocka_unit_test(test_native_reweight),
        cmocka_unit_test(test_native_batch),
        cmocka_unit_test(test_ketama_add),
        cmocka_unit_test(test_ketama_remove),
        cmocka_unit_test(test_ketama_reweight),
        cmocka_unit_test(test_ketama_batch),
        cmocka_unit_test(test_ketama_unweighted_add),
        cmocka_unit_test(test_ketama_unweighted_remove),
        cmocka_unit_test(test_ketama_unweighted_reweight),
        cmocka_unit_test(test_ketama_unweighted_batch),
        cmocka_unit_test(test_nginx_add),
        cmocka_unit_test(test_nginx_remove),
        cmocka_unit_test(test_nginx_reweight),
        cmocka_unit_test(test_nginx_batch),
        cmocka_unit_test(test_tokens_per_weight_change),
        cmocka_unit_test(test_empty_sides),
        cmocka_unit_test(test_plan_zone_policies),
        cmocka_unit_test(test_by_hand_top),
        cmocka_unit_test(test_by_hand_wrap),
        cmocka_unit_test(test_by_hand_tie),
        cmocka_unit_test(test_incompatible),
        cmocka_unit_test(test_arguments),
    };
    setup_keys(NULL);
    select_cases(argc, argv, tests);
    int failed = run_core_tests(tests);
    teardown_keys(NULL);
    return failed;
}
