/*
 * ring_fingerprint FILE: prints chr_ring_fingerprint() of the ring the ring
 * file describes, read by chr_ring_new_from_file with default options, as
 * 0x + 16 hex digits. The CLI tests compare it with what `chring check`
 * prints and with the %%fingerprint `chring export` writes. Exit 1 with
 * chr_last_error() on stderr if the file is refused.
 */
#include <inttypes.h>
#include <stdio.h>

#include <chring.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ring_fingerprint FILE\n");
        return 2;
    }
    chr_ring *ring = NULL;
    uint64_t fingerprint = 0;
    if (chr_ring_new_from_file(argv[1], NULL, &ring, NULL) != CHR_OK ||
        chr_ring_fingerprint(ring, &fingerprint) != CHR_OK) {
        fprintf(stderr, "ring_fingerprint: %s\n", chr_last_error());
        chr_ring_free(ring);
        return 1;
    }
    printf("0x%016" PRIx64 "\n", fingerprint);
    chr_ring_free(ring);
    return 0;
}
