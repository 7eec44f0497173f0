/* Chains of random updates against fresh builds. Updates rewrite only the
 * chunks of the token index they touch and share the rest with earlier
 * snapshots, so every snapshot of a chain is kept alive to the end, and
 * each checked one must answer exactly as a ring built afresh with its
 * membership: the same tokens and owners, node counts and ownerships, the
 * same owner and replicas for sampled keys, the same fingerprint. Snapshots
 * between the checked ones are released along the way, in random order, so
 * that a chunk's holders come and go out of order while the chain grows;
 * the rest are released in random order at the end, which must free
 * everything (the ASan build checks for leaks and for reads of freed
 * chunks). */
#include <chring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDS 3000
#define STEPS 600
#define CHECK_EVERY 40

typedef struct {
    unsigned char present[IDS];
    uint32_t weight[IDS];
    unsigned char zone[IDS];
} membership;

static const char *zones[] = {"", "a", "b", "c"};
static int failures = 0;

static void must(chr_status st, const char *what) {
    if (st != CHR_OK) {
        fprintf(stderr, "%s: %s\n", what, chr_last_error());
        exit(1);
    }
}

static chr_snapshot *fresh(const membership *m) {
    chr_ring *r;
    must(chr_ring_new(NULL, &r), "chr_ring_new");
    static chr_change c[IDS];
    static char ids[IDS][16];
    size_t k = 0;
    for (int i = 0; i < IDS; i++)
        if (m->present[i]) {
            snprintf(ids[k], sizeof ids[k], "n%d", i);
            c[k] = (chr_change){CHR_OP_ADD, m->weight[i], ids[k], strlen(ids[k]), zones[m->zone[i]],
                                strlen(zones[m->zone[i]]), (uint64_t)i};
            k++;
        }
    must(chr_ring_apply(r, c, k, NULL), "chr_ring_apply (fresh)");
    chr_snapshot *s;
    must(chr_ring_snapshot(r, &s), "chr_ring_snapshot");
    chr_ring_free(r);
    return s;
}

static int same(const chr_snapshot *x, const chr_snapshot *y, int step) {
    size_t tx, ty, nx, ny;
    must(chr_snapshot_token_count(x, &tx), "tokens");
    must(chr_snapshot_token_count(y, &ty), "tokens");
    must(chr_snapshot_node_count(x, &nx), "nodes");
    must(chr_snapshot_node_count(y, &ny), "nodes");
    if (tx != ty || nx != ny) {
        fprintf(stderr, "step %d: %zu tokens %zu nodes, fresh %zu tokens %zu nodes\n", step, tx, nx, ty, ny);
        return 0;
    }
    for (size_t i = 0; i < tx; i++) {
        uint64_t v1, v2;
        uint32_t o1, o2;
        must(chr_snapshot_token(x, i, &v1, &o1), "token");
        must(chr_snapshot_token(y, i, &v2, &o2), "token");
        if (v1 != v2 || o1 != o2) {
            fprintf(stderr, "step %d: token %zu differs\n", step, i);
            return 0;
        }
    }
    for (size_t i = 0; i < nx; i++) {
        chr_node_view a, b;
        must(chr_snapshot_node(x, i, &a), "node");
        must(chr_snapshot_node(y, i, &b), "node");
        if (a.tokens != b.tokens || a.ownership != b.ownership || a.tag != b.tag || a.index != i) {
            fprintf(stderr, "step %d: node %zu: tokens %u/%u ownership %.17g/%.17g\n", step, i, a.tokens,
                    b.tokens, a.ownership, b.ownership);
            return 0;
        }
    }
    if (tx > 0)
        for (int i = 0; i < 2000; i++) {
            char key[32];
            snprintf(key, sizeof key, "key:%d:%d", step, i);
            chr_node_view a, b, ra[3], rb[3];
            size_t ca, cb;
            must(chr_snapshot_lookup(x, key, strlen(key), &a), "lookup");
            must(chr_snapshot_lookup(y, key, strlen(key), &b), "lookup");
            must(chr_snapshot_replicas_policy(x, key, strlen(key), CHR_REPLICAS_ZONES_FIRST, 3, ra, &ca), "replicas");
            must(chr_snapshot_replicas_policy(y, key, strlen(key), CHR_REPLICAS_ZONES_FIRST, 3, rb, &cb), "replicas");
            int differ = a.index != b.index || ca != cb;
            for (size_t j = 0; !differ && j < ca; j++) differ = ra[j].index != rb[j].index;
            if (differ) {
                fprintf(stderr, "step %d: key %s routes differently\n", step, key);
                return 0;
            }
        }
    uint64_t f1, f2;
    must(chr_snapshot_fingerprint(x, &f1), "fingerprint");
    must(chr_snapshot_fingerprint(y, &f2), "fingerprint");
    if (f1 != f2) {
        fprintf(stderr, "step %d: fingerprint differs\n", step);
        return 0;
    }
    return 1;
}

static void chain(unsigned seed) {
    srand(seed);
    static membership m;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < IDS / 3; i++) {
        m.present[i] = 1;
        m.weight[i] = 1 + (uint32_t)(rand() % 3);
        m.zone[i] = (unsigned char)(rand() % 4);
    }
    chr_ring *ring;
    must(chr_ring_new(NULL, &ring), "chr_ring_new");
    {
        chr_snapshot *s = fresh(&m);  /* the same membership, through the ring */
        chr_snapshot_release(s);
        static chr_change c[IDS];
        static char ids[IDS][16];
        size_t k = 0;
        for (int i = 0; i < IDS; i++)
            if (m.present[i]) {
                snprintf(ids[k], sizeof ids[k], "n%d", i);
                c[k] = (chr_change){CHR_OP_ADD, m.weight[i], ids[k], strlen(ids[k]), zones[m.zone[i]],
                                    strlen(zones[m.zone[i]]), (uint64_t)i};
                k++;
            }
        must(chr_ring_apply(ring, c, k, NULL), "chr_ring_apply");
    }
    static chr_snapshot *kept[STEPS];
    static membership at[STEPS / CHECK_EVERY + 1];
    for (int step = 0; step < STEPS; step++) {
        /* A batch of 1-4 changes, each valid given the earlier ones. */
        chr_change c[4];
        char ids[4][16];
        int n = 1 + rand() % 4;
        for (int j = 0; j < n; j++) {
            int i = rand() % IDS;
            snprintf(ids[j], sizeof ids[j], "n%d", i);
            if (!m.present[i]) {
                m.present[i] = 1;
                m.weight[i] = (uint32_t)(rand() % 4); /* weight 0 too */
                m.zone[i] = (unsigned char)(rand() % 4);
                c[j] = (chr_change){CHR_OP_ADD, m.weight[i], ids[j], strlen(ids[j]), zones[m.zone[i]],
                                    strlen(zones[m.zone[i]]), (uint64_t)i};
            } else if (rand() % 2) {
                m.present[i] = 0;
                c[j] = (chr_change){CHR_OP_REMOVE, 0, ids[j], strlen(ids[j]), NULL, 0, 0};
            } else {
                m.weight[i] = (uint32_t)(rand() % 5);
                c[j] = (chr_change){CHR_OP_SET_WEIGHT, m.weight[i], ids[j], strlen(ids[j]), NULL, 0, 0};
            }
        }
        must(chr_ring_apply(ring, c, (size_t)n, NULL), "chr_ring_apply (step)");
        must(chr_ring_snapshot(ring, &kept[step]), "chr_ring_snapshot");
        if (step % CHECK_EVERY == 0) at[step / CHECK_EVERY] = m;
        /* An unchecked earlier snapshot goes, now and then (the current
         * one included: the ring still holds it). */
        int gone = rand() % (step + 1);
        if (rand() % 2 && gone % CHECK_EVERY != 0 && kept[gone]) {
            chr_snapshot_release(kept[gone]);
            kept[gone] = NULL;
        }
    }
    chr_ring_free(ring); /* the snapshots outlive it */
    for (int step = 0; step < STEPS; step += CHECK_EVERY) {
        chr_snapshot *f = fresh(&at[step / CHECK_EVERY]);
        if (!same(kept[step], f, step)) failures++;
        chr_snapshot_release(f);
    }
    /* The rest in random order: a random permutation of the steps. */
    static int order[STEPS];
    for (int step = 0; step < STEPS; step++) order[step] = step;
    for (int step = STEPS - 1; step > 0; step--) {
        int j = rand() % (step + 1), t = order[step];
        order[step] = order[j];
        order[j] = t;
    }
    for (int step = 0; step < STEPS; step++)
        if (kept[order[step]]) chr_snapshot_release(kept[order[step]]);
}

int main(void) {
    for (unsigned seed = 1; seed <= 3; seed++) chain(seed);
    if (failures) {
        fprintf(stderr, "%d snapshots differ from a fresh build\n", failures);
        return 1;
    }
    printf("every checked snapshot of 3 chains of %d updates equals a fresh build\n", STEPS);
    return 0;
}
