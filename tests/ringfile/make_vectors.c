/*
 * make_vectors — writes the known answers of tests/vectors/ring-file.
 *
 *   make_vectors expect FILE.ring      prints FILE.expect
 *   make_vectors canonical FILE.ring   prints FILE.ring's canonical form
 *   make_vectors json FILE.ring        prints its JSON twin (for check_json.py)
 *
 * Run only to add a vector or after a deliberate change of the format or
 * of the ring; the ringfile suite checks the stored answers.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "vectors.h"

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "expect") != 0 && strcmp(argv[1], "canonical") != 0 &&
                      strcmp(argv[1], "json") != 0)) {
        fprintf(stderr, "usage: make_vectors expect|canonical|json FILE.ring\n");
        return 2;
    }
    size_t len = 0;
    char *text = vectors_read(argv[2], &len);
    if (!text) {
        perror(argv[2]);
        return 1;
    }
    const char *name = strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2];
    size_t out_len = 0;
    char *out = strcmp(argv[1], "expect") == 0      ? vectors_expect(name, text, len)
                : strcmp(argv[1], "canonical") == 0 ? vectors_canonical(name, text, len, &out_len)
                                                    : vectors_json(name, text, len);
    if (!out) {
        fprintf(stderr, "make_vectors: %s\n", chr_last_error());
        return 1;
    }
    fputs(out, stdout);
    free(out);
    free(text);
    return 0;
}
