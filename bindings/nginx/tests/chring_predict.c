/*
 * chring_predict — what the C API says a chring upstream does, for the
 * nginx end-to-end driver to compare with what nginx actually did.
 *
 *   chring_predict [OPTIONS] SERVERS_FILE < keys > owners
 *   chring_predict [OPTIONS] --replicas N SERVERS_FILE < keys > replicas
 *   chring_predict [OPTIONS] --ownership SERVERS_FILE > shares
 *   chring_predict [OPTIONS] --fingerprint SERVERS_FILE > fingerprint
 *
 * SERVERS_FILE: one member per line, "WEIGHT ID" (ID = the `server` text,
 * the rest of the line; WEIGHT 0 = a `down` server), in configuration
 * order: the tag is the line number from 0, as the module numbers nodes.
 * Keys: one per line. Output: the owner's id per key, or "-" when no
 * member has a token; with --replicas N, the key's first N replicas
 * (1..32), tab-separated, owner first. With --ownership: "FRACTION ID"
 * per member. With --fingerprint: the ring's chr_ring_fingerprint() as
 * "0x" and 16 hex digits (the module's $chring_fingerprint).
 * OPTIONS: --placement native|nginx, --hash NAME, --tokens N, --seed N,
 * --policy nodes|zones-first|nts (the replica policy), --zoned (lines are
 * "WEIGHT ZONE ID": the zone a ring file would give the member).
 * Exit status 0, or 1 with chr_last_error() on stderr.
 */
#include <chring.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 4096

static int fail(const char *what, chr_status status) {
    fprintf(stderr, "chring_predict: %s: %s: %s\n", what, chr_strerror(status),
            chr_last_error());
    return 1;
}

static int usage(void) {
    fprintf(stderr, "usage: chring_predict [--placement native|nginx] [--hash NAME] "
                    "[--tokens N] [--seed N] [--policy NAME] [--zoned] "
                    "[--replicas N | --ownership | --fingerprint] SERVERS_FILE\n");
    return 2;
}

static int parse_u64(const char *text, unsigned long long max, unsigned long long *out) {
    char *end = NULL;
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && text[0] != '-' && *out <= max;
}

static void chomp(char *line) {
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\n') line[len - 1] = '\0';
}

/* Adds every "WEIGHT ID" line (zoned: "WEIGHT ZONE ID") of `path` to
 * `ring`, tagged by line number. */
static int load_servers(chr_ring *ring, const char *path, int zoned) {
    char line[LINE_MAX_BYTES];
    uint64_t tag = 0;
    FILE *in = fopen(path, "r");
    if (!in) {
        fprintf(stderr, "chring_predict: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    while (fgets(line, sizeof line, in)) {
        unsigned long long weight;
        char *space;
        chomp(line);
        space = strchr(line, ' ');
        if (!space) continue;
        *space = '\0';
        if (!parse_u64(line, CHR_WEIGHT_MAX, &weight)) {
            fprintf(stderr, "chring_predict: bad weight \"%s\" in %s\n", line, path);
            fclose(in);
            return 1;
        }
        const char *zone = "", *id = space + 1;
        if (zoned) {
            char *after_zone = strchr(space + 1, ' ');
            if (!after_zone) continue;
            *after_zone = '\0';
            zone = space + 1;
            id = after_zone + 1;
        }
        chr_status st = chr_ring_add(ring, id, strlen(id), (uint32_t)weight, zone, strlen(zone),
                                     tag++);
        if (st != CHR_OK) {
            fclose(in);
            return fail("chr_ring_add", st);
        }
    }
    fclose(in);
    return 0;
}

#define REPLICAS_MAX 32

/* The first `n` replicas of each key on stdin (n = 1: the owner). */
static int print_replicas(const chr_snapshot *snap, size_t n, int32_t policy) {
    char key[LINE_MAX_BYTES];
    chr_node_view views[REPLICAS_MAX];
    while (fgets(key, sizeof key, stdin)) {
        size_t count = 0;
        chomp(key);
        chr_status st = chr_snapshot_replicas_policy(snap, key, strlen(key), policy, n, views,
                                                     &count);
        if (st == CHR_EEMPTY) {
            puts("-");
            continue;
        }
        if (st != CHR_OK) return fail("chr_snapshot_replicas_policy", st);
        for (size_t i = 0; i < count; ++i)
            printf("%s%.*s", i ? "\t" : "", (int)views[i].id_len, (const char *)views[i].id);
        putchar('\n');
    }
    return 0;
}

static int print_ownership(const chr_snapshot *snap) {
    size_t count = 0;
    chr_status st = chr_snapshot_node_count(snap, &count);
    if (st != CHR_OK) return fail("chr_snapshot_node_count", st);
    for (size_t i = 0; i < count; ++i) {
        chr_node_view node;
        st = chr_snapshot_node(snap, i, &node);
        if (st != CHR_OK) return fail("chr_snapshot_node", st);
        printf("%.9f %.*s\n", node.ownership, (int)node.id_len, (const char *)node.id);
    }
    return 0;
}

int main(int argc, char **argv) {
    chr_options opts = CHR_OPTIONS_INIT;
    const char *servers = NULL;
    int ownership = 0;
    int fingerprint = 0;
    int zoned = 0;
    int32_t policy = CHR_REPLICAS_NODES;
    size_t replicas = 1;
    unsigned long long number;

    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--ownership") == 0) {
            ownership = 1;
        } else if (strcmp(arg, "--fingerprint") == 0) {
            fingerprint = 1;
        } else if (strcmp(arg, "--zoned") == 0) {
            zoned = 1;
        } else if (strcmp(arg, "--policy") == 0 && next) {
            if (chr_replica_policy_find(next, &policy) != CHR_OK) return usage();
            ++i;
        } else if (strcmp(arg, "--replicas") == 0 && next) {
            if (!parse_u64(next, REPLICAS_MAX, &number) || number == 0) return usage();
            replicas = (size_t)number;
            ++i;
        } else if (strcmp(arg, "--placement") == 0 && next) {
            if (strcmp(next, "native") == 0) opts.placement = CHR_PLACEMENT_NATIVE;
            else if (strcmp(next, "nginx") == 0) opts.placement = CHR_PLACEMENT_NGINX;
            else return usage();
            ++i;
        } else if (strcmp(arg, "--hash") == 0 && next) {
            opts.hasher = next;
            ++i;
        } else if (strcmp(arg, "--tokens") == 0 && next) {
            if (!parse_u64(next, CHR_TOKENS_PER_WEIGHT_MAX, &number)) return usage();
            opts.tokens_per_weight = (uint32_t)number;
            ++i;
        } else if (strcmp(arg, "--seed") == 0 && next) {
            if (!parse_u64(next, UINT64_MAX, &number)) return usage();
            opts.seed = (uint64_t)number;
            ++i;
        } else if (arg[0] != '-' && !servers) {
            servers = arg;
        } else {
            return usage();
        }
    }
    if (!servers) return usage();

    chr_ring *ring = NULL;
    chr_status st = chr_ring_new(&opts, &ring);
    if (st != CHR_OK) return fail("chr_ring_new", st);
    int rc = load_servers(ring, servers, zoned);
    chr_snapshot *snap = NULL;
    if (rc == 0) {
        st = chr_ring_snapshot(ring, &snap);
        if (st != CHR_OK) rc = fail("chr_ring_snapshot", st);
    }
    if (rc == 0 && fingerprint) {
        uint64_t value = 0;
        st = chr_snapshot_fingerprint(snap, &value);
        if (st != CHR_OK) rc = fail("chr_snapshot_fingerprint", st);
        else printf("0x%016llx\n", (unsigned long long)value);
    } else if (rc == 0) {
        rc = ownership ? print_ownership(snap) : print_replicas(snap, replicas, policy);
    }
    chr_snapshot_release(snap);
    chr_ring_free(ring);
    return rc;
}
