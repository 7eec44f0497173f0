/*
 * Readers against writers on one shared ring (docs/semantics.md): every read sees
 * exactly one state that a writer published, never a mix, never a state
 * half built, and readers fail with nothing but CHR_EEMPTY.
 *
 * How a read is tied to the state it saw. Writers serialize (update,
 * record the membership and fingerprint, bump `newest`) on an application
 * mutex, so the history holds every state the ring ever published, in
 * order. A reader loads `newest` before and after its call. The ring
 * publishes state k (a seq_cst swap) before `newest` becomes k, and k is
 * recorded before writer k+1 can swap, so a call that started after
 * reading b and ended before reading a saw a state in [b, a + 1].
 *
 * Readers keep a uniform sample (reservoir) of their results. After the
 * threads are joined, each sample must equal, field by field, what a fresh
 * ring rebuilt from one of the states in its window returns; a snapshot's
 * fingerprint must be that state's recorded one; and each rebuilt ring must
 * have the recorded fingerprint (same membership, other call order).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "conc_test.h"

enum {
    NODE_POOL = 16,          /* node ids "node-00".."node-15" */
    TOKENS_PER_WEIGHT = 8,   /* small rings: many updates per second */
    MAX_WEIGHT = 3,
    READERS = 4,
    WRITERS = 2,
    KEY_COUNT = 512,
    REPLICAS_ASKED = 3,
    READS_PER_SNAPSHOT = 8,
    RESERVOIR = 4096,        /* samples kept per reader */
    DRAIN_ONE_IN = 256,      /* batches that set every weight to 0: the ring empties */
    BATCH_ONE_IN = 6,
};

static char node_ids[NODE_POOL][8];
static char keys[KEY_COUNT][16];
static size_t key_lens[KEY_COUNT];
static const char *const zones[] = {"zone-a", "zone-b", "zone-c"};

/* ---- published states ----------------------------------------------------- */

typedef struct state {
    int8_t weight[NODE_POOL]; /* -1: not a member */
    uint64_t fingerprint;
} state;

typedef struct history {
    pthread_mutex_t writers; /* the application mutex: update + record */
    state *states;
    size_t count, capacity;
    _Atomic size_t newest; /* index of the last recorded state */
} history;

/* ---- what readers saw ------------------------------------------------------- */

typedef struct seen_node {
    uint8_t node, weight;
    uint16_t tokens, index;
} seen_node;

enum { FROM_SNAPSHOT = 1, FROM_RING = 2 };

typedef struct sample {
    uint32_t first_state, last_state; /* the call saw one of these states */
    uint16_t key;
    uint8_t source;  /* FROM_* */
    uint8_t asked;   /* 1: lookup; more: replicas(key, asked) */
    int8_t status;   /* CHR_OK or CHR_EEMPTY */
    uint8_t count;   /* nodes returned */
    seen_node nodes[REPLICAS_ASKED];
    uint64_t fingerprint; /* FROM_SNAPSHOT: the snapshot's fingerprint */
} sample;

typedef struct reader {
    struct stress *stress;
    uint64_t rng;
    unsigned long reads, empty_reads, offered;
    uint32_t last_offered; /* first_state of the last read offered */
    size_t kept;
    sample *samples;
} reader;

typedef struct writer {
    struct stress *stress;
    uint64_t rng;
    unsigned long updates;
} writer;

typedef struct stress {
    chr_ring *ring;
    history history;
    atomic_int stop_readers;
    struct timespec deadline;
    thread_failures failures;
    reader readers[READERS];
    writer writers[WRITERS];
} stress;

static uint64_t next_random(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static int before_deadline(const struct timespec *deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec < deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec < deadline->tv_nsec);
}

static chr_options ring_options(void) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = TOKENS_PER_WEIGHT;
    return opts;
}

/* ---- writers ------------------------------------------------------------------ */

static void change_for(unsigned n, chr_change *c) {
    memset(c, 0, sizeof *c);
    c->id = node_ids[n];
    c->id_len = strlen(node_ids[n]);
}

/* Plans a random change of node n against membership m, and applies it to m. */
static void plan_change(state *m, unsigned n, uint64_t *rng, chr_change *c) {
    change_for(n, c);
    uint64_t r = next_random(rng);
    if (m->weight[n] < 0) {
        c->op = CHR_OP_ADD;
        c->weight = (uint32_t)(r % (MAX_WEIGHT + 1));
        c->zone = zones[n % 3];
        c->zone_len = strlen(zones[n % 3]);
        c->tag = n;
        m->weight[n] = (int8_t)c->weight;
    } else if (r % 3 == 0) {
        c->op = CHR_OP_REMOVE;
        m->weight[n] = -1;
    } else {
        c->op = CHR_OP_SET_WEIGHT;
        c->weight = (uint32_t)(m->weight[n] + 1 + (r >> 8) % MAX_WEIGHT) % (MAX_WEIGHT + 1);
        m->weight[n] = (int8_t)c->weight;
    }
}

static chr_status apply_single(chr_ring *ring, const chr_change *c) {
    switch (c->op) {
    case CHR_OP_ADD:
        return chr_ring_add(ring, c->id, c->id_len, c->weight, c->zone, c->zone_len, c->tag);
    case CHR_OP_REMOVE:
        return chr_ring_remove(ring, c->id, c->id_len);
    default:
        return chr_ring_set_weight(ring, c->id, c->id_len, c->weight);
    }
}

/* One update of `ring`, planned against membership m (updated to match):
 * a single change, a batch on 2..4 distinct nodes, or a batch that drains
 * every member to weight 0. */
static chr_status update(chr_ring *ring, state *m, uint64_t *rng) {
    chr_change batch[NODE_POOL];
    size_t count = 0;
    uint64_t r = next_random(rng);
    if (r % DRAIN_ONE_IN == 0) {
        for (unsigned n = 0; n < NODE_POOL; ++n)
            if (m->weight[n] > 0) {
                change_for(n, &batch[count]);
                batch[count++].op = CHR_OP_SET_WEIGHT; /* weight 0 */
                m->weight[n] = 0;
            }
    } else if (r % BATCH_ONE_IN == 0) {
        unsigned order[NODE_POOL];
        for (unsigned n = 0; n < NODE_POOL; ++n) order[n] = n;
        count = 2 + (size_t)(next_random(rng) % 3);
        for (size_t i = 0; i < count; ++i) { /* the first `count` of a shuffle: distinct nodes */
            size_t j = i + (size_t)(next_random(rng) % (NODE_POOL - i));
            unsigned t = order[i];
            order[i] = order[j];
            order[j] = t;
            plan_change(m, order[i], rng, &batch[i]);
        }
    } else {
        chr_change c;
        plan_change(m, (unsigned)(next_random(rng) % NODE_POOL), rng, &c);
        return apply_single(ring, &c);
    }
    size_t failed_index = 0;
    chr_status st = chr_ring_apply(ring, batch, count, &failed_index);
    return st == CHR_OK && failed_index != count ? CHR_EINTERNAL : st;
}

/* Appends the ring's current state (writers' mutex held) and announces it. */
static chr_status record_state(stress *s, const state *m) {
    history *h = &s->history;
    if (h->count == h->capacity) {
        size_t capacity = h->capacity ? 2 * h->capacity : 4096;
        state *grown = realloc(h->states, capacity * sizeof *grown);
        if (!grown) return CHR_ENOMEM;
        h->states = grown;
        h->capacity = capacity;
    }
    state *slot = &h->states[h->count];
    *slot = *m;
    chr_status st = chr_ring_fingerprint(s->ring, &slot->fingerprint);
    if (st != CHR_OK) return st;
    atomic_store(&h->newest, h->count);
    h->count++;
    return CHR_OK;
}

static void *writer_main(void *arg) {
    writer *w = arg;
    stress *s = w->stress;
    while (before_deadline(&s->deadline)) {
        pthread_mutex_lock(&s->history.writers);
        state m = s->history.states[s->history.count - 1];
        chr_status st = update(s->ring, &m, &w->rng);
        if (st == CHR_OK) st = record_state(s, &m);
        pthread_mutex_unlock(&s->history.writers);
        if (st != CHR_OK) {
            thread_failure(&s->failures, "writer: update failed with %d: %s", st, chr_last_error());
            break;
        }
        w->updates++;
    }
    return NULL;
}

/* ---- readers ------------------------------------------------------------------ */

/* Copies what the API returned about one node, checking it is a plausible
 * owner: a known id whose tag is its number, weight > 0, tokens = weight x
 * tokens_per_weight. Returns 0 if not. */
static int seen_from(const unsigned char *id, size_t id_len, uint64_t tag, uint32_t weight,
                     uint32_t tokens, uint32_t index, seen_node *out) {
    if (tag >= NODE_POOL || id_len != strlen(node_ids[tag]) || memcmp(id, node_ids[tag], id_len))
        return 0;
    if (weight < 1 || weight > MAX_WEIGHT || tokens != weight * TOKENS_PER_WEIGHT ||
        index >= NODE_POOL)
        return 0;
    out->node = (uint8_t)tag;
    out->weight = (uint8_t)weight;
    out->tokens = (uint16_t)tokens;
    out->index = (uint16_t)index;
    return 1;
}

static int seen_from_ref(const chr_node_ref *r, seen_node *out) {
    return seen_from(r->id, r->id_len, r->tag, r->weight, r->tokens, r->index, out);
}

static int seen_from_view(const chr_node_view *v, seen_node *out) {
    return seen_from(v->id, v->id_len, v->tag, v->weight, v->tokens, v->index, out);
}

/* Checks what a call returned, beyond its window: status, node fields,
 * distinct replicas. Returns 0 (after logging) if something is wrong. */
static int plausible(stress *s, const sample *x, const char *call) {
    if (x->status == CHR_EEMPTY) return 1;
    int ok = x->status == CHR_OK && x->count >= 1 && x->count <= x->asked;
    for (unsigned i = 0; ok && i < x->count; ++i)
        for (unsigned j = 0; j < i; ++j) ok &= x->nodes[i].node != x->nodes[j].node;
    if (!ok)
        thread_failure(&s->failures, "%s(key %u): status %d, %u nodes (%s)", call, x->key,
                       x->status, x->count, chr_last_error());
    return ok;
}

/* Readers outrun writers by far, and mostly while a writer is descheduled:
 * a plain uniform sample would cover few states. So a read is offered only
 * if it started in another state than the last one offered, or if a writer
 * published during it (the racy case this test is about). */
static int worth_offering(reader *r, const sample *x) {
    if (x->first_state == r->last_offered && x->last_state == x->first_state + 1) return 0;
    r->last_offered = x->first_state;
    return 1;
}

static void keep_sample(reader *r, const sample *x) {
    r->offered++;
    if (r->kept < RESERVOIR) {
        r->samples[r->kept++] = *x;
        return;
    }
    uint64_t j = next_random(&r->rng) % r->offered;
    if (j < RESERVOIR) r->samples[j] = *x;
}

static void read_snapshot(reader *r) {
    stress *s = r->stress;
    sample x = {0};
    x.source = FROM_SNAPSHOT;
    chr_snapshot *snap = NULL;
    x.first_state = (uint32_t)atomic_load(&s->history.newest);
    chr_status st = chr_ring_snapshot(s->ring, &snap);
    x.last_state = (uint32_t)atomic_load(&s->history.newest) + 1;
    if (st != CHR_OK || chr_snapshot_fingerprint(snap, &x.fingerprint) != CHR_OK) {
        thread_failure(&s->failures, "chr_ring_snapshot: %d: %s", st, chr_last_error());
        chr_snapshot_release(snap);
        return;
    }
    int offer = worth_offering(r, &x);
    for (int i = 0; i < READS_PER_SNAPSHOT; ++i) {
        x.key = (uint16_t)(next_random(&r->rng) % KEY_COUNT);
        chr_node_view views[REPLICAS_ASKED];

        x.asked = 1;
        x.status = (int8_t)chr_snapshot_lookup(snap, keys[x.key], key_lens[x.key], &views[0]);
        x.count = x.status == CHR_OK && seen_from_view(&views[0], &x.nodes[0]);
        if (!plausible(s, &x, "chr_snapshot_lookup")) continue;
        seen_node owner = x.nodes[0];
        if (offer) keep_sample(r, &x);

        size_t count = 0;
        x.asked = REPLICAS_ASKED;
        x.status = (int8_t)chr_snapshot_replicas(snap, keys[x.key], key_lens[x.key],
                                                  REPLICAS_ASKED, views, &count);
        x.count = 0;
        while (x.status == CHR_OK && x.count < count && seen_from_view(&views[x.count], &x.nodes[x.count]))
            x.count++;
        if (x.count != count) x.count = 0;
        if (!plausible(s, &x, "chr_snapshot_replicas")) continue;
        /* One snapshot: the coordinator is the lookup's owner. */
        if (x.status == CHR_OK && memcmp(&x.nodes[0], &owner, sizeof owner) != 0)
            thread_failure(&s->failures, "key %u: snapshot coordinator %u != owner %u", x.key,
                           x.nodes[0].node, owner.node);
        if (offer) keep_sample(r, &x);
        r->reads += 2;
        r->empty_reads += 2 * (x.status == CHR_EEMPTY);
    }
    chr_snapshot_release(snap);
}

static void read_ring(reader *r) {
    stress *s = r->stress;
    sample x = {0};
    x.source = FROM_RING;
    x.key = (uint16_t)(next_random(&r->rng) % KEY_COUNT);
    x.asked = (next_random(&r->rng) & 1) ? 1 : REPLICAS_ASKED;
    chr_node_ref refs[REPLICAS_ASKED];
    size_t count = 1;
    x.first_state = (uint32_t)atomic_load(&s->history.newest);
    if (x.asked == 1)
        x.status = (int8_t)chr_ring_lookup(s->ring, keys[x.key], key_lens[x.key], &refs[0]);
    else
        x.status = (int8_t)chr_ring_replicas(s->ring, keys[x.key], key_lens[x.key], x.asked,
                                             refs, &count);
    x.last_state = (uint32_t)atomic_load(&s->history.newest) + 1;
    while (x.status == CHR_OK && x.count < count && seen_from_ref(&refs[x.count], &x.nodes[x.count]))
        x.count++;
    if (x.count != count) x.count = 0;
    if (!plausible(s, &x, x.asked == 1 ? "chr_ring_lookup" : "chr_ring_replicas")) return;
    if (worth_offering(r, &x)) keep_sample(r, &x);
    r->reads++;
    r->empty_reads += x.status == CHR_EEMPTY;
}

static void *reader_main(void *arg) {
    reader *r = arg;
    while (!atomic_load(&r->stress->stop_readers)) {
        read_snapshot(r);
        for (int i = 0; i < READS_PER_SNAPSHOT; ++i) read_ring(r);
    }
    return NULL;
}

/* ---- verification ------------------------------------------------------------- */

/* A ring built from scratch with state m's membership, in node order. */
static chr_ring *rebuild(const state *m) {
    chr_options opts = ring_options();
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(&opts, &ring));
    for (unsigned n = 0; n < NODE_POOL; ++n)
        if (m->weight[n] >= 0)
            assert_chr_ok(chr_ring_add(ring, node_ids[n], strlen(node_ids[n]),
                                       (uint32_t)m->weight[n], zones[n % 3],
                                       strlen(zones[n % 3]), n));
    return ring;
}

/* Whether `x` is exactly what `fresh` (rebuilt from state m) answers. */
static int answers_like(const chr_ring *fresh, const state *m, const sample *x) {
    if (x->source == FROM_SNAPSHOT && x->fingerprint != m->fingerprint) return 0;
    chr_node_ref refs[REPLICAS_ASKED];
    size_t count = 1;
    chr_status st;
    if (x->asked == 1)
        st = chr_ring_lookup(fresh, keys[x->key], key_lens[x->key], &refs[0]);
    else
        st = chr_ring_replicas(fresh, keys[x->key], key_lens[x->key], x->asked, refs, &count);
    if (st != x->status) return 0;
    if (st != CHR_OK) return 1;
    if (count != x->count) return 0;
    for (size_t i = 0; i < count; ++i) {
        seen_node n;
        if (!seen_from_ref(&refs[i], &n) || memcmp(&n, &x->nodes[i], sizeof n) != 0) return 0;
    }
    return 1;
}

static int by_first_state(const void *a, const void *b) {
    const sample *x = a, *y = b;
    return (x->first_state > y->first_state) - (x->first_state < y->first_state);
}

static void report_unmatched(const sample *x) {
    print_error("%s %s(key %u) saw status %d, %u nodes, first node %u weight %u index %u, "
                "fingerprint %016llx; no state in [%u, %u] answers that\n",
                x->source == FROM_SNAPSHOT ? "snapshot" : "ring",
                x->asked == 1 ? "lookup" : "replicas", x->key, x->status, x->count,
                x->nodes[0].node, x->nodes[0].weight, x->nodes[0].index,
                (unsigned long long)x->fingerprint, x->first_state, x->last_state);
}

/* Sweeps the states in order, rebuilding a ring only for states some
 * pending sample may have seen; a sample is settled by the first state in
 * its window that answers like it, and fails if none does. Returns the
 * number of rings rebuilt. */
static size_t verify_samples(const history *h, sample *samples, size_t n, size_t *unmatched) {
    qsort(samples, n, sizeof *samples, by_first_state);
    size_t *pending = malloc((n + 1) * sizeof *pending);
    assert_non_null(pending);
    size_t pending_count = 0, next = 0, rebuilt = 0;
    *unmatched = 0;
    for (size_t j = 0; j < h->count && (next < n || pending_count); ++j) {
        while (next < n && samples[next].first_state <= j) {
            if (samples[next].last_state >= h->count) samples[next].last_state = (uint32_t)(h->count - 1);
            pending[pending_count++] = next++;
        }
        if (!pending_count) continue;
        chr_ring *fresh = rebuild(&h->states[j]);
        rebuilt++;
        uint64_t fingerprint = 0;
        assert_chr_ok(chr_ring_fingerprint(fresh, &fingerprint));
        if (fingerprint != h->states[j].fingerprint) {
            print_error("state %zu: rebuilt ring has fingerprint %016llx, published %016llx\n", j,
                        (unsigned long long)fingerprint,
                        (unsigned long long)h->states[j].fingerprint);
            fail();
        }
        size_t still = 0;
        for (size_t p = 0; p < pending_count; ++p) {
            const sample *x = &samples[pending[p]];
            if (answers_like(fresh, &h->states[j], x)) continue;
            if (x->last_state <= j) {
                if (++*unmatched <= 5) report_unmatched(x);
                continue;
            }
            pending[still++] = pending[p];
        }
        pending_count = still;
        chr_ring_free(fresh);
    }
    free(pending);
    return rebuilt;
}

/* ---- the test ------------------------------------------------------------------- */

static void make_names(void) {
    for (unsigned n = 0; n < NODE_POOL; ++n) snprintf(node_ids[n], sizeof node_ids[n], "node-%02u", n);
    for (unsigned k = 0; k < KEY_COUNT; ++k)
        key_lens[k] = (size_t)snprintf(keys[k], sizeof keys[k], "user:%u", k * 7919u);
}

static void start_ring(stress *s) {
    chr_options opts = ring_options();
    assert_chr_ok(chr_ring_new(&opts, &s->ring));
    pthread_mutex_init(&s->history.writers, NULL);
    state initial;
    memset(initial.weight, -1, sizeof initial.weight);
    for (unsigned n = 0; n < NODE_POOL; n += 2) {
        initial.weight[n] = (int8_t)(1 + n % MAX_WEIGHT);
        assert_chr_ok(chr_ring_add(s->ring, node_ids[n], strlen(node_ids[n]),
                                   (uint32_t)initial.weight[n], zones[n % 3], strlen(zones[n % 3]), n));
    }
    assert_chr_ok(record_state(s, &initial));
}

static void test_every_read_sees_a_published_state(void **unused) {
    (void)unused;
    make_names();
    static stress s; /* large: the samples are on the heap, the rest here */
    memset(&s, 0, sizeof s);
    s.failures = (thread_failures)THREAD_FAILURES_INIT;
    start_ring(&s);

    double seconds = stress_seconds();
    clock_gettime(CLOCK_MONOTONIC, &s.deadline);
    s.deadline.tv_sec += (time_t)seconds;
    s.deadline.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (s.deadline.tv_nsec >= 1000000000L) s.deadline.tv_sec++, s.deadline.tv_nsec -= 1000000000L;

    pthread_t readers[READERS], writers[WRITERS];
    for (int i = 0; i < READERS; ++i) {
        s.readers[i] = (reader){.stress = &s, .rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1)};
        s.readers[i].samples = malloc(RESERVOIR * sizeof(sample));
        assert_non_null(s.readers[i].samples);
        assert_int_equal(pthread_create(&readers[i], NULL, reader_main, &s.readers[i]), 0);
    }
    for (int i = 0; i < WRITERS; ++i) {
        s.writers[i] = (writer){.stress = &s, .rng = 0xD1B54A32D192ED03ull * (uint64_t)(i + 1)};
        assert_int_equal(pthread_create(&writers[i], NULL, writer_main, &s.writers[i]), 0);
    }
    for (int i = 0; i < WRITERS; ++i) pthread_join(writers[i], NULL);
    atomic_store(&s.stop_readers, 1);
    for (int i = 0; i < READERS; ++i) pthread_join(readers[i], NULL);
    assert_no_thread_failures(&s.failures);

    /* All samples in one array, then checked against rebuilt rings. */
    size_t total = 0;
    unsigned long reads = 0, empty_reads = 0, raced = 0;
    for (int i = 0; i < READERS; ++i) total += s.readers[i].kept;
    sample *all = malloc((total + 1) * sizeof *all);
    assert_non_null(all);
    total = 0;
    for (int i = 0; i < READERS; ++i) {
        memcpy(all + total, s.readers[i].samples, s.readers[i].kept * sizeof *all);
        total += s.readers[i].kept;
        reads += s.readers[i].reads;
        empty_reads += s.readers[i].empty_reads;
        free(s.readers[i].samples);
    }
    for (size_t i = 0; i < total; ++i) raced += all[i].last_state > all[i].first_state + 1;
    unsigned long updates = 0;
    for (int i = 0; i < WRITERS; ++i) updates += s.writers[i].updates;
    size_t unmatched = 0;
    size_t rebuilt = verify_samples(&s.history, all, total, &unmatched);
    printf("%.1f s: %lu updates by %d writers (%zu states), %lu reads by %d readers "
           "(%lu saw an empty ring); %zu samples (%lu overlapping a publish) checked against %zu "
           "rebuilt rings\n",
           seconds, updates, WRITERS, s.history.count, reads, READERS, empty_reads, total, raced,
           rebuilt);
    assert_int_equal(unmatched, 0);
    assert_true(updates > 0 && reads > 0 && total > 0);

    free(all);
    free(s.history.states);
    pthread_mutex_destroy(&s.history.writers);
    chr_ring_free(s.ring);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_read_sees_a_published_state),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
