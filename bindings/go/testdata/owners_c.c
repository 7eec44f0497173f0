/*
 * The C reference for the Go binding's file-following test: loads a ring
 * file with the C library alone and prints
 *   <fingerprint, 16 hex digits> <availability digest, 16 hex digits>
 *   <owner id as hex>            (one line per key "key:<i>", i < COUNT)
 * Usage: owners_c RINGFILE COUNT
 */
#include <chring.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: owners_c RINGFILE COUNT\n");
        return 2;
    }
    chr_ring *ring = NULL;
    uint64_t fp = 0;
    chr_availability_info avail = CHR_AVAILABILITY_INFO_INIT;
    if (chr_ring_new_from_file(argv[1], NULL, &ring, NULL) != CHR_OK ||
        chr_ring_fingerprint(ring, &fp) != CHR_OK || chr_ring_availability(ring, &avail) != CHR_OK) {
        fprintf(stderr, "owners_c: %s\n", chr_last_error());
        return 1;
    }
    printf("%016llx %016llx\n", (unsigned long long)fp, (unsigned long long)avail.digest);
    long count = strtol(argv[2], NULL, 10);
    for (long i = 0; i < count; ++i) {
        char key[32];
        int len = snprintf(key, sizeof key, "key:%ld", i);
        chr_node_ref ref;
        if (chr_ring_lookup(ring, key, (size_t)len, &ref) != CHR_OK) {
            fprintf(stderr, "owners_c: %s\n", chr_last_error());
            return 1;
        }
        for (uint32_t b = 0; b < ref.id_len; ++b) printf("%02x", ref.id[b]);
        putchar('\n');
    }
    chr_ring_free(ring);
    return 0;
}
