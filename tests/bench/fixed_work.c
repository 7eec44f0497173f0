/* A fixed amount of one kind of work through the public API, for counting
 * instructions (tests/bench/ab_instructions.sh runs it under callgrind).
 * Instruction counts do not depend on what else the machine runs, so an
 * A/B of two builds of libchring.so with this same binary separates a change
 * of a few percent where the timed benchmarks, on a busy host, cannot.
 *
 *   fixed_work OP NODES COUNT
 *
 * OP: ring_lookup, snapshot_lookup, ring_replicas3, snapshot_replicas3
 * (COUNT lookups of distinct keys), add_one_node, remove_one_node (COUNT
 * single-node updates of a ring of NODES), reweight_one_node (COUNT weight
 * changes of node-0000 in a ring of NODES, to 2 and back to 1 in turn),
 * apply_batch (COUNT chr_ring_apply batches of 12 changes on a ring of
 * NODES >= 8, each undoing the one before: 4 members added, 4 removed and 4
 * reweighted from 1 to 2, then the reverse), build_from_scratch (COUNT rings
 * of NODES built with one batch), reload_every_member (COUNT ring-file
 * reloads, chr_ring_apply_text, each changing the weight of all NODES
 * members of a ring of one token per weight; doubling NODES about doubles
 * an O(n log n) reload's count). NODES are "node-0000".. with weight 1 in
 * the default ring (native placement, xxh3, 160 tokens per weight). The
 * setup is the same for COUNT 0, so (count(K) - count(0)) / K is the cost of
 * one operation. Exits 1 with a message on any failed call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chring.h"

static void check(chr_status st, const char *what) {
    if (st != CHR_OK) {
        fprintf(stderr, "fixed_work: %s: %s\n", what, chr_last_error());
        exit(1);
    }
}

static void node_id(char *buf, size_t size, size_t i) { snprintf(buf, size, "node-%04u", (unsigned)i); }

static chr_ring *ring_of(size_t nodes) {
    chr_ring *ring = NULL;
    check(chr_ring_new(NULL, &ring), "chr_ring_new");
    chr_change *changes = calloc(nodes ? nodes : 1, sizeof *changes);
    char(*ids)[16] = calloc(nodes ? nodes : 1, sizeof *ids);
    if (!changes || !ids) {
        fprintf(stderr, "fixed_work: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < nodes; ++i) {
        node_id(ids[i], sizeof ids[i], i);
        changes[i].op = CHR_OP_ADD;
        changes[i].id = ids[i];
        changes[i].id_len = strlen(ids[i]);
        changes[i].weight = 1;
    }
    check(chr_ring_apply(ring, changes, nodes, NULL), "chr_ring_apply");
    free(ids);
    free(changes);
    return ring;
}

/* The ring-file text of members "node-0000".. with `weight`, one a line. */
static char *members_text(size_t nodes, unsigned weight, size_t *len) {
    char *text = malloc(nodes * 32 + 1);
    if (!text) {
        fprintf(stderr, "fixed_work: out of memory\n");
        exit(1);
    }
    size_t at = 0;
    for (size_t i = 0; i < nodes; ++i) at += (size_t)sprintf(text + at, "node-%04u %u\n", (unsigned)i, weight);
    *len = at;
    return text;
}

static int reload_every_member(size_t nodes, size_t count) {
    chr_options opts;
    check(chr_options_init(&opts, CHR_OPTIONS_VERSION), "chr_options_init");
    opts.tokens_per_weight = 1;
    chr_ring *ring = NULL;
    check(chr_ring_new(&opts, &ring), "chr_ring_new");
    size_t len[2];
    char *texts[2] = {members_text(nodes, 1, &len[0]), members_text(nodes, 2, &len[1])};
    check(chr_ring_apply_text(ring, texts[0], len[0], "weight-1", NULL), "chr_ring_apply_text");
    for (size_t c = 0; c < count; ++c) {
        const size_t t = (c + 1) % 2;
        check(chr_ring_apply_text(ring, texts[t], len[t], t ? "weight-2" : "weight-1", NULL),
              "chr_ring_apply_text");
    }
    free(texts[0]);
    free(texts[1]);
    chr_ring_free(ring);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: fixed_work OP NODES COUNT\n");
        return 2;
    }
    const char *op = argv[1];
    const size_t nodes = strtoull(argv[2], NULL, 10);
    const size_t count = strtoull(argv[3], NULL, 10);
    char key[32];
    const char extra[] = "node-extra";
    chr_node_ref ref;
    chr_node_ref refs[3];
    size_t found = 0;

    if (strcmp(op, "build_from_scratch") == 0) {
        for (size_t c = 0; c < count; ++c) chr_ring_free(ring_of(nodes));
        return 0;
    }
    if (strcmp(op, "reload_every_member") == 0) return reload_every_member(nodes, count);
    chr_ring *ring = ring_of(nodes);
    chr_snapshot *snap = NULL;
    check(chr_ring_snapshot(ring, &snap), "chr_ring_snapshot");
    if (strcmp(op, "ring_lookup") == 0) {
        for (size_t c = 0; c < count; ++c) {
            int n = snprintf(key, sizeof key, "key-%zu", c);
            check(chr_ring_lookup(ring, key, (size_t)n, &ref), "chr_ring_lookup");
        }
    } else if (strcmp(op, "snapshot_lookup") == 0) {
        for (size_t c = 0; c < count; ++c) {
            int n = snprintf(key, sizeof key, "key-%zu", c);
            chr_node_view view;
            check(chr_snapshot_lookup(snap, key, (size_t)n, &view), "chr_snapshot_lookup");
        }
    } else if (strcmp(op, "ring_replicas3") == 0) {
        for (size_t c = 0; c < count; ++c) {
            int n = snprintf(key, sizeof key, "key-%zu", c);
            check(chr_ring_replicas(ring, key, (size_t)n, 3, refs, &found), "chr_ring_replicas");
        }
    } else if (strcmp(op, "snapshot_replicas3") == 0) {
        chr_node_view views[3];
        for (size_t c = 0; c < count; ++c) {
            int n = snprintf(key, sizeof key, "key-%zu", c);
            check(chr_snapshot_replicas(snap, key, (size_t)n, 3, views, &found), "chr_snapshot_replicas");
        }
    } else if (strcmp(op, "add_one_node") == 0 || strcmp(op, "remove_one_node") == 0) {
        /* Each round is one add and one remove; the two ops differ in which
         * of them the round starts from, as in bench_update. */
        const int remove_first = strcmp(op, "remove_one_node") == 0;
        if (remove_first) check(chr_ring_add(ring, extra, sizeof extra - 1, 1, NULL, 0, 0), "chr_ring_add");
        for (size_t c = 0; c < count; ++c) {
            if (remove_first) {
                check(chr_ring_remove(ring, extra, sizeof extra - 1), "chr_ring_remove");
                check(chr_ring_add(ring, extra, sizeof extra - 1, 1, NULL, 0, 0), "chr_ring_add");
            } else {
                check(chr_ring_add(ring, extra, sizeof extra - 1, 1, NULL, 0, 0), "chr_ring_add");
                check(chr_ring_remove(ring, extra, sizeof extra - 1), "chr_ring_remove");
            }
        }
    } else if (strcmp(op, "reweight_one_node") == 0) {
        for (size_t c = 0; c < count; ++c)
            check(chr_ring_set_weight(ring, "node-0000", 9, c % 2 ? 1 : 2), "chr_ring_set_weight");
    } else if (strcmp(op, "apply_batch") == 0) {
        if (nodes < 8) {
            fprintf(stderr, "fixed_work: apply_batch needs NODES >= 8\n");
            return 2;
        }
        char ids[12][16];
        chr_change forth[12], back[12];
        for (size_t i = 0; i < 12; ++i) {
            if (i < 4) snprintf(ids[i], sizeof ids[i], "node-extra-%u", (unsigned)i);
            else node_id(ids[i], sizeof ids[i], i - 4); /* node-0000..0007 */
            const size_t len = strlen(ids[i]);
            const uint32_t op_forth = i < 4 ? CHR_OP_ADD : i < 8 ? CHR_OP_REMOVE : CHR_OP_SET_WEIGHT;
            const uint32_t op_back = i < 4 ? CHR_OP_REMOVE : i < 8 ? CHR_OP_ADD : CHR_OP_SET_WEIGHT;
            forth[i] = (chr_change){op_forth, i < 8 ? 1 : 2, ids[i], len, NULL, 0, 0};
            back[i] = (chr_change){op_back, 1, ids[i], len, NULL, 0, 0};
        }
        for (size_t c = 0; c < count; ++c)
            check(chr_ring_apply(ring, c % 2 ? back : forth, 12, NULL), "chr_ring_apply");
    } else {
        fprintf(stderr, "fixed_work: unknown OP '%s'\n", op);
        return 2;
    }
    chr_snapshot_release(snap);
    chr_ring_free(ring);
    return 0;
}
