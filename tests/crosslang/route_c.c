/*
 * The C side of the cross-language test: reads gen_data's file, builds
 * the ring with one chr_ring_add per node in file order, and writes
 *   fingerprint <16 hex>
 *   counts <nodes> <tokens>
 *   <owner id hex> <replica id hex>,<replica id hex>,...     (one per key)
 * Owners come from chr_ring_lookup, replica lists from a snapshot.
 *
 * Usage: route_c DATA OUTPUT
 */
#include <chring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what)
{
    fprintf(stderr, "route_c: %s: %s\n", what, chr_last_error());
    exit(1);
}

static int hex_value(int c)
{
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* Decodes a hex token ("-" = empty) into buf; returns its length. */
static size_t unhex(const char *hex, unsigned char *buf)
{
    if (strcmp(hex, "-") == 0) return 0;
    size_t len = strlen(hex) / 2;
    for (size_t i = 0; i < len; ++i)
        buf[i] = (unsigned char)(hex_value(hex[2 * i]) << 4 | hex_value(hex[2 * i + 1]));
    return len;
}

static void put_hex(FILE *out, const unsigned char *bytes, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    if (len == 0) fputc('-', out);
    for (size_t i = 0; i < len; ++i) {
        fputc(digits[bytes[i] >> 4], out);
        fputc(digits[bytes[i] & 15], out);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s DATA OUTPUT\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "w");
    if (!in || !out) {
        perror("route_c");
        return 1;
    }
    unsigned tokens_per_weight, n_replicas;
    unsigned long long seed;
    int nodes, keys;
    if (fscanf(in, "chring-crosslang 1 options %u %llx replicas %u nodes %d", &tokens_per_weight,
               &seed, &n_replicas, &nodes) != 4) {
        fprintf(stderr, "route_c: bad header\n");
        return 1;
    }
    chr_options opts = CHR_OPTIONS_INIT;
    opts.tokens_per_weight = tokens_per_weight;
    opts.seed = seed;
    chr_ring *ring = NULL;
    if (chr_ring_new(&opts, &ring) != CHR_OK) die("chr_ring_new");

    static char hex_id[1024], hex_zone[256], hex_key[1024];
    unsigned char id[512], zone[128], key[512];
    for (int i = 0; i < nodes; ++i) {
        unsigned weight;
        unsigned long long tag;
        if (fscanf(in, "%1023s %u %255s %llu", hex_id, &weight, hex_zone, &tag) != 4) {
            fprintf(stderr, "route_c: bad node line %d\n", i);
            return 1;
        }
        size_t id_len = unhex(hex_id, id), zone_len = unhex(hex_zone, zone);
        if (chr_ring_add(ring, id, id_len, weight, zone, zone_len, tag) != CHR_OK) die("chr_ring_add");
    }

    uint64_t fingerprint;
    size_t node_count, token_count;
    if (chr_ring_fingerprint(ring, &fingerprint) || chr_ring_node_count(ring, &node_count) ||
        chr_ring_token_count(ring, &token_count))
        die("counts");
    fprintf(out, "fingerprint %016llx\ncounts %zu %zu\n", (unsigned long long)fingerprint, node_count,
            token_count);

    chr_snapshot *snap = NULL;
    if (chr_ring_snapshot(ring, &snap) != CHR_OK) die("chr_ring_snapshot");
    chr_node_view *replicas = calloc(n_replicas, sizeof *replicas);
    if (fscanf(in, " keys %d", &keys) != 1 || !replicas) return 1;
    for (int k = 0; k < keys; ++k) {
        if (fscanf(in, "%1023s", hex_key) != 1) {
            fprintf(stderr, "route_c: bad key line %d\n", k);
            return 1;
        }
        size_t key_len = unhex(hex_key, key), count;
        chr_node_ref owner;
        if (chr_ring_lookup(ring, key, key_len, &owner) != CHR_OK) die("chr_ring_lookup");
        if (chr_snapshot_replicas(snap, key, key_len, n_replicas, replicas, &count) != CHR_OK)
            die("chr_snapshot_replicas");
        put_hex(out, owner.id, owner.id_len);
        for (size_t r = 0; r < count; ++r) {
            fputc(r ? ',' : ' ', out);
            put_hex(out, replicas[r].id, replicas[r].id_len);
        }
        fputc('\n', out);
    }
    free(replicas);
    chr_snapshot_release(snap);
    chr_ring_free(ring);
    fclose(in);
    return fclose(out) == 0 ? 0 : 1;
}
