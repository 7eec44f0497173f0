/* A/B of two builds of libchring.so in one process, in alternating slices:
 *
 *   ab_interleaved LIB_A LIB_B [ROUNDS]        default ROUNDS: 41
 *
 * Loads both libraries with dlopen (RTLD_LOCAL: each resolves its own
 * symbols), builds the same rings in each (10, 100 and 1,000 nodes
 * "node-0000".., weight 1, default options), then for each operation
 * (lookups and replicas(3) through the ring and a snapshot, the snapshot's
 * batch lookup of 1,024 keys (per key), one node added
 * and removed, a ring built from scratch with one batch) runs
 * ROUNDS rounds of one slice of A and one of B (A first in odd rounds, B
 * first in even ones). A slice is one untimed pass over the same 2^16 keys
 * (refilling the caches; AB_KEYS sets another power of two, e.g. 2^20 for
 * rings whose index 2^16 keys would mostly bring into the caches), then as
 * many timed calls as take about 10 ms. AB_CHURN=N adds and removes N nodes
 * first, one at a time, so that the rings hold chunks made by updates.
 * AB_OPS=add_remove_one,build_from_scratch (say) runs only those rows.
 * Per operation it prints each side's
 * median ns per call and the median over rounds of B/A with its quartiles.
 *
 * Why: on a shared VM, the machine's speed drifts by several percent over
 * seconds (other guests, frequency), so two separate runs of a benchmark
 * differ by as much as the changes being judged. Slices a few milliseconds
 * apart see the same machine, and the ratio of neighbours cancels the
 * drift; the quartiles say how far to trust the median. The same library
 * given twice (A/A) shows what ratio the method gives to no change.
 *
 * Timing only: what a ratio is made of is for ab_instructions.sh (callgrind)
 * and perf to say. Exits 1 with a message on a failed call or load. */
#define _POSIX_C_SOURCE 200809L  /* clock_gettime */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chring.h"

enum { kMaxSizes = 4 };

typedef struct {
    const char *path;
    void *handle;
    chr_status (*ring_new)(const chr_options *, chr_ring **);
    chr_status (*ring_apply)(chr_ring *, const chr_change *, size_t, size_t *);
    chr_status (*ring_add)(chr_ring *, const void *, size_t, uint32_t, const void *, size_t, uint64_t);
    chr_status (*ring_remove)(chr_ring *, const void *, size_t);
    void (*ring_free)(chr_ring *);
    chr_status (*ring_snapshot)(const chr_ring *, chr_snapshot **);
    void (*snapshot_release)(chr_snapshot *);
    chr_status (*ring_lookup)(const chr_ring *, const void *, size_t, chr_node_ref *);
    chr_status (*snapshot_lookup)(const chr_snapshot *, const void *, size_t, chr_node_view *);
    chr_status (*snapshot_lookup_batch)(const chr_snapshot *, const void *const *, const size_t *, size_t,
                                        uint32_t *);
    chr_status (*ring_replicas)(const chr_ring *, const void *, size_t, size_t, chr_node_ref *, size_t *);
    chr_status (*snapshot_replicas)(const chr_snapshot *, const void *, size_t, size_t, chr_node_view *,
                                    size_t *);
    const char *(*last_error)(void);
    chr_ring *rings[kMaxSizes];
    chr_snapshot *snaps[kMaxSizes];
} Library;

/* The rings' members: "node-0000".. (the most nodes of any ring), weight 1. */
static chr_change *members;
static char (*member_ids)[16];


/* Ring sizes in nodes: 10, 100 and 1,000, or AB_NODES (up to kMaxSizes
 * sizes, e.g. "100000" for 16M tokens: update rows are left out past
 * 10,000 nodes, where one call takes longer than a slice). */
static size_t kNodes[kMaxSizes] = {10, 100, 1000};
static int sizes = 3;
static size_t most_nodes = 1000;
static const double kSliceNs = 1e7;
enum { kKeyBytes = 24, kBatch = 1024 };
static size_t key_count = 1 << 16;  /* a power of two, >= kBatch */
/* Nodes added and removed again before timing (AB_CHURN): the rings'
 * chunks then come from updates, as a long-lived ring's do. */
static size_t churn = 0;
static char (*keys)[kKeyBytes];
static const void **key_ptr;  /* keys[k], for the batch */
static size_t *key_len;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "ab_interleaved: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static void *symbol(Library *lib, const char *name) {
    void *p = dlsym(lib->handle, name);
    if (!p) die(name, dlerror());
    return p;
}

static void check(Library *lib, chr_status st, const char *what) {
    if (st != CHR_OK) die(what, lib->last_error());
}

static void load(Library *lib, const char *path) {
    lib->path = path;
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) die("dlopen", dlerror());
    *(void **)&lib->ring_new = symbol(lib, "chr_ring_new");
    *(void **)&lib->ring_apply = symbol(lib, "chr_ring_apply");
    *(void **)&lib->ring_add = symbol(lib, "chr_ring_add");
    *(void **)&lib->ring_remove = symbol(lib, "chr_ring_remove");
    *(void **)&lib->ring_free = symbol(lib, "chr_ring_free");
    *(void **)&lib->ring_snapshot = symbol(lib, "chr_ring_snapshot");
    *(void **)&lib->snapshot_release = symbol(lib, "chr_snapshot_release");
    *(void **)&lib->ring_lookup = symbol(lib, "chr_ring_lookup");
    *(void **)&lib->snapshot_lookup = symbol(lib, "chr_snapshot_lookup");
    *(void **)&lib->snapshot_lookup_batch = symbol(lib, "chr_snapshot_lookup_batch");
    *(void **)&lib->ring_replicas = symbol(lib, "chr_ring_replicas");
    *(void **)&lib->snapshot_replicas = symbol(lib, "chr_snapshot_replicas");
    *(void **)&lib->last_error = symbol(lib, "chr_last_error");
    for (int r = 0; r < sizes; ++r) {
        check(lib, lib->ring_new(NULL, &lib->rings[r]), "chr_ring_new");
        check(lib, lib->ring_apply(lib->rings[r], members, kNodes[r], NULL), "chr_ring_apply");
        for (size_t c = 0; c < churn; ++c) {
            char id[32];
            const int len = snprintf(id, sizeof id, "churn-%zu", c % 8);
            check(lib, lib->ring_add(lib->rings[r], id, (size_t)len, 1, NULL, 0, 0), "chr_ring_add");
            check(lib, lib->ring_remove(lib->rings[r], id, (size_t)len), "chr_ring_remove");
        }
        check(lib, lib->ring_snapshot(lib->rings[r], &lib->snaps[r]), "chr_ring_snapshot");
    }
}

static void unload(Library *lib) {
    for (int r = 0; r < sizes; ++r) {
        lib->snapshot_release(lib->snaps[r]);
        lib->ring_free(lib->rings[r]);
    }
    dlclose(lib->handle);
}

/* The updates: one node added and removed again (a call is the pair), and
 * a ring of that many nodes built with one batch and freed. */
enum Op {
    RING_LOOKUP,
    SNAPSHOT_LOOKUP,
    SNAPSHOT_BATCH,
    RING_REPLICAS3,
    SNAPSHOT_REPLICAS3,
    ADD_REMOVE_ONE,
    BUILD,
    OPS
};
static const char *const kOpNames[OPS] = {"ring_lookup",    "snapshot_lookup",    "snapshot_lookup_batch",
                                          "ring_replicas3", "snapshot_replicas3", "add_remove_one",
                                          "build_from_scratch"};

/* Which operations run: every one, or those AB_OPS names (comma-separated;
 * a name that is not an operation stops the program, since a typo would
 * run nothing). */
static int op_wanted[OPS];
static void choose_ops(void) {
    const char *at = getenv("AB_OPS");
    for (int op = 0; op < OPS; ++op) op_wanted[op] = at == NULL;
    while (at && *at) {
        const size_t n = strcspn(at, ",");
        int op = 0;
        while (op < OPS && !(strlen(kOpNames[op]) == n && strncmp(at, kOpNames[op], n) == 0)) ++op;
        if (op == OPS) die("AB_OPS: not an operation", at);
        op_wanted[op] = 1;
        at += n + (at[n] == ',');
    }
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* `calls` calls of `op` on ring r of `lib`, over the key pool in order;
 * returns ns per call (a batch call: per key). The results are summed into
 * a sink so that no call can be dropped. */
static volatile uint64_t sink;
static double timed_calls(Library *lib, enum Op op, int r, size_t calls) {
    chr_node_ref ref[3];
    chr_node_view view[3];
    static uint32_t indices[kBatch];
    size_t found = 0;
    uint64_t sum = 0;
    const double t0 = now_ns();
    for (size_t c = 0; c < calls; ++c) {
        const size_t k = c & (key_count - 1);
        chr_status st;
        switch (op) {
        case RING_LOOKUP:
            st = lib->ring_lookup(lib->rings[r], keys[k], key_len[k], ref);
            sum += ref[0].index;
            break;
        case SNAPSHOT_LOOKUP:
            st = lib->snapshot_lookup(lib->snaps[r], keys[k], key_len[k], view);
            sum += view[0].index;
            break;
        case SNAPSHOT_BATCH: {
            const size_t first = (c * kBatch) & (key_count - 1);
            st = lib->snapshot_lookup_batch(lib->snaps[r], key_ptr + first, key_len + first, kBatch, indices);
            sum += indices[kBatch - 1];
            break;
        }
        case RING_REPLICAS3:
            st = lib->ring_replicas(lib->rings[r], keys[k], key_len[k], 3, ref, &found);
            sum += ref[found - 1].index;
            break;
        case SNAPSHOT_REPLICAS3:
            st = lib->snapshot_replicas(lib->snaps[r], keys[k], key_len[k], 3, view, &found);
            sum += view[found - 1].index;
            break;
        case ADD_REMOVE_ONE:
            st = lib->ring_add(lib->rings[r], "node-extra", 10, 1, NULL, 0, 0);
            if (st == CHR_OK) st = lib->ring_remove(lib->rings[r], "node-extra", 10);
            break;
        default: {
            chr_ring *ring = NULL;
            st = lib->ring_new(NULL, &ring);
            if (st == CHR_OK) st = lib->ring_apply(ring, members, kNodes[r], NULL);
            lib->ring_free(ring);
            break;
        }
        }
        if (st != CHR_OK) die(kOpNames[op], lib->last_error());
    }
    const double ns = (now_ns() - t0) / (double)calls / (op == SNAPSHOT_BATCH ? kBatch : 1);
    sink += sum;
    return ns;
}

/* One slice: a pass over the key pool untimed, which brings this side's
 * ring back into the caches the other side's slice used (at 1,000 nodes the
 * two rings do not fit the L2 together), then `calls` timed calls. An
 * update slice warms with one call. */
static double slice(Library *lib, enum Op op, int r, size_t calls) {
    timed_calls(lib, op, r, op >= ADD_REMOVE_ONE ? 1 : op == SNAPSHOT_BATCH ? key_count / kBatch : key_count);
    return timed_calls(lib, op, r, calls);
}

/* ns as "12.34 ns", "123.4 us" or "12.3 ms", into buf (32 bytes). */
static const char *duration(char *buf, double ns) {
    if (ns < 1e4) snprintf(buf, 32, "%.2f ns", ns);
    else if (ns < 1e7) snprintf(buf, 32, "%.1f us", ns / 1e3);
    else snprintf(buf, 32, "%.2f ms", ns / 1e6);
    return buf;
}

static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* The q-quantile (0..1) of n values, sorted in place. */
static double quantile(double *v, int n, double q) {
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[(int)(q * (n - 1) + 0.5)];
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: ab_interleaved LIB_A LIB_B [ROUNDS]\n");
        return 2;
    }
    const int rounds = argc == 4 ? atoi(argv[3]) : 41;
    if (rounds < 1) die("ROUNDS must be at least 1", NULL);
    choose_ops();
    if (getenv("AB_CHURN")) churn = (size_t)strtoull(getenv("AB_CHURN"), NULL, 10);
    if (getenv("AB_KEYS")) {
        key_count = (size_t)strtoull(getenv("AB_KEYS"), NULL, 10);
        if (key_count < kBatch || key_count > ((size_t)1 << 26) || (key_count & (key_count - 1)))
            die("AB_KEYS: a power of two from 1024 to 2^26", NULL);
    }
    keys = malloc(key_count * sizeof *keys);
    key_ptr = malloc(key_count * sizeof *key_ptr);
    key_len = malloc(key_count * sizeof *key_len);
    if (!keys || !key_ptr || !key_len) die("out of memory", NULL);
    /* Keys like a cache's: a prefix and a decimal number, 12-20 bytes, in
     * a fixed pseudo-random order. */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t k = 0; k < key_count; ++k) {
        key_ptr[k] = keys[k];
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        key_len[k] = (size_t)snprintf(keys[k], kKeyBytes, "user:%llu", (unsigned long long)(x % 100000000000ull));
    }
    if (getenv("AB_NODES")) {
        char *at = getenv("AB_NODES"), *end;
        for (sizes = 0, most_nodes = 0; sizes < kMaxSizes; ++sizes, at = end) {
            const unsigned long long n = strtoull(at, &end, 10);
            if (end == at) break;
            if (n == 0 || n > 1000000) die("AB_NODES: sizes are 1 to 1,000,000 nodes", NULL);
            kNodes[sizes] = (size_t)n;
            if (n > most_nodes) most_nodes = (size_t)n;
        }
        if (sizes == 0) die("AB_NODES: no size", at);
    }
    members = calloc(most_nodes, sizeof *members);
    member_ids = calloc(most_nodes, sizeof *member_ids);
    if (!members || !member_ids) die("out of memory", NULL);
    for (size_t i = 0; i < most_nodes; ++i) {
        snprintf(member_ids[i], sizeof member_ids[i], "node-%04u", (unsigned)i);
        members[i].op = CHR_OP_ADD;
        members[i].id = member_ids[i];
        members[i].id_len = strlen(member_ids[i]);
        members[i].weight = 1;
    }
    Library libs[2];
    load(&libs[0], argv[1]);
    load(&libs[1], argv[2]);

    double *a = malloc(sizeof *a * (size_t)rounds), *b = malloc(sizeof *b * (size_t)rounds),
           *ratio = malloc(sizeof *ratio * (size_t)rounds);
    if (!a || !b || !ratio) die("out of memory", NULL);
    printf("In-process A/B, A = %s, B = %s, %d rounds of alternating slices\n\n", argv[1], argv[2], rounds);
    printf("| operation | A | B | B/A median | B/A quartiles |\n|---|--:|--:|--:|--:|\n");
    /* Half a second of work first, so the clock has ramped up before the
     * first row. */
    for (const double until = now_ns() + 5e8; now_ns() < until;) timed_calls(&libs[0], RING_LOOKUP, 0, 10000);
    for (int op = 0; op < OPS; ++op) {
        if (!op_wanted[op]) continue;
        for (int r = 0; r < sizes; ++r) {
            if (op >= ADD_REMOVE_ONE && kNodes[r] > 10000) continue;
            /* Slices of about kSliceNs, so that refilling the caches the
             * other side's slice took over is a small part of each. */
            const size_t probe = op >= ADD_REMOVE_ONE ? 5 : op == SNAPSHOT_BATCH ? 20 : 20000;
            const size_t per_call = op == SNAPSHOT_BATCH ? kBatch : 1;
            const size_t calls = (size_t)(kSliceNs / (timed_calls(&libs[0], (enum Op)op, r, probe) * per_call)) + 1;
            slice(&libs[1], (enum Op)op, r, calls);  /* warm both: caches, branch predictors */
            slice(&libs[0], (enum Op)op, r, calls);
            for (int i = 0; i < rounds; ++i) {
                const int first = i & 1;
                double t[2];
                t[first] = slice(&libs[first], (enum Op)op, r, calls);
                t[!first] = slice(&libs[!first], (enum Op)op, r, calls);
                a[i] = t[0];
                b[i] = t[1];
                ratio[i] = t[1] / t[0];
            }
            const double lo = quantile(ratio, rounds, 0.25), hi = quantile(ratio, rounds, 0.75);
            char ta[32], tb[32];
            printf("| %s/%zu | %s | %s | %.3f | %.3f-%.3f |\n", kOpNames[op], kNodes[r],
                   duration(ta, quantile(a, rounds, 0.5)), duration(tb, quantile(b, rounds, 0.5)),
                   quantile(ratio, rounds, 0.5), lo, hi);
            fflush(stdout);
        }
    }
    free(ratio);
    free(b);
    free(a);
    free(member_ids);
    free(members);
    free(key_len);
    free(key_ptr);
    free(keys);
    unload(&libs[1]);
    unload(&libs[0]);
    return 0;
}
