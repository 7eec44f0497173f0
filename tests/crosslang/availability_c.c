/*
 * The C side of the availability cross-language test (availability.py):
 * follows a ring file (members, %%down lines, %%panic-threshold) into an
 * empty ring with chr_follower, then writes
 *   fingerprint <16 hex> availability <16 hex> panic <0|1> down <n> applied <16 hex>
 *   <owner id hex> <replica id hex>,<replica id hex>,...     (one per key)
 * where applied is the follower's applied_availability, owners come from
 * chr_ring_lookup (checked against the snapshot's batch) and replica lists
 * of every member from the snapshot.
 *
 * Usage: availability_c RINGFILE KEYS OUTPUT   (KEYS: one hex key per line)
 */
#include <chring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS_MAX 100000

static void die(const char *what)
{
    fprintf(stderr, "availability_c: %s: %s\n", what, chr_last_error());
    exit(1);
}

static size_t unhex(const char *hex, unsigned char *buf)
{
    size_t len = strlen(hex) / 2;
    for (size_t i = 0; i < len; ++i) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        buf[i] = (unsigned char)v;
    }
    return len;
}

static void put_hex(FILE *out, const unsigned char *bytes, size_t len)
{
    for (size_t i = 0; i < len; ++i) fprintf(out, "%02x", bytes[i]);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: availability_c RINGFILE KEYS OUTPUT\n");
        return 2;
    }
    chr_ring *ring = NULL;
    chr_follower *follower = NULL;
    int32_t outcome = 0;
    if (chr_ring_new(NULL, &ring) != CHR_OK || chr_follower_new(ring, argv[1], 0, &follower) != CHR_OK ||
        chr_follower_check(follower, &outcome, NULL) != CHR_OK)
        die(argv[1]);
    if (outcome != CHR_FOLLOW_APPLIED) die("the first check did not apply the file");
    chr_follow_state state = CHR_FOLLOW_STATE_INIT;
    chr_availability_info avail = CHR_AVAILABILITY_INFO_INIT;
    uint64_t fp;
    size_t members;
    if (chr_follower_state(follower, &state) != CHR_OK || chr_ring_availability(ring, &avail) != CHR_OK ||
        chr_ring_fingerprint(ring, &fp) != CHR_OK || chr_ring_node_count(ring, &members) != CHR_OK)
        die("state");

    static unsigned char keys[KEYS_MAX][64];
    static size_t lens[KEYS_MAX];
    static const void *ptrs[KEYS_MAX];
    static uint32_t batch[KEYS_MAX];
    FILE *in = fopen(argv[2], "r"), *out = fopen(argv[3], "w");
    if (!in || !out) {
        perror("availability_c");
        return 1;
    }
    char hex[256];
    size_t n = 0;
    while (n < KEYS_MAX && fscanf(in, "%255s", hex) == 1) {
        lens[n] = unhex(hex, keys[n]);
        ptrs[n] = keys[n];
        ++n;
    }
    chr_snapshot *snap = NULL;
    if (chr_ring_snapshot(ring, &snap) != CHR_OK || chr_snapshot_lookup_batch(snap, ptrs, lens, n, batch) != CHR_OK)
        die("batch");
    fprintf(out, "fingerprint %016llx availability %016llx panic %u down %u applied %016llx\n",
            (unsigned long long)fp, (unsigned long long)avail.digest, avail.panic, avail.down,
            (unsigned long long)state.applied_availability);
    chr_node_view *reps = calloc(members, sizeof *reps);
    for (size_t k = 0; k < n; ++k) {
        chr_node_ref owner;
        size_t count;
        if (chr_ring_lookup(ring, keys[k], lens[k], &owner) != CHR_OK ||
            chr_snapshot_replicas(snap, keys[k], lens[k], members, reps, &count) != CHR_OK)
            die("lookup");
        if (owner.index != batch[k]) die("the batch disagrees with the lookup");
        put_hex(out, owner.id, owner.id_len);
        for (size_t r = 0; r < count; ++r) {
            fputc(r ? ',' : ' ', out);
            put_hex(out, reps[r].id, reps[r].id_len);
        }
        fputc('\n', out);
    }
    free(reps);
    chr_snapshot_release(snap);
    chr_follower_free(follower);
    chr_ring_free(ring);
    fclose(in);
    return fclose(out) == 0 ? 0 : 1;
}
