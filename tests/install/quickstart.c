/*
 * The quick start at the top of chring.h, as a program: the example's lines
 * as the header shows them, plus what it leaves to the reader (die(),
 * main()) and checks that it did what it says. run_install_test.sh builds
 * it against an installed chring with `pkg-config --cflags --libs chring`
 * only, and runs it with the installed library and plugins. Exits 1 on any
 * failure, after saying what failed.
 */
#include <chring.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *message) {
    fprintf(stderr, "quickstart: %s\n", message);
    exit(1);
}

static void expect(int ok, const char *what) {
    if (!ok) die(what);
}

/* Member `id` as the ring reports it. */
static chr_node_ref member(const chr_ring *ring, const char *id) {
    chr_node_ref nodes[2];
    size_t count = 0;
    if (chr_ring_nodes(ring, nodes, 2, &count) != CHR_OK) die(chr_last_error());
    for (size_t i = 0; i < count; ++i)
        if (nodes[i].id_len == strlen(id) && memcmp(nodes[i].id, id, nodes[i].id_len) == 0)
            return nodes[i];
    die("a member added by the example is missing");
    return nodes[0];
}

int main(void) {
    /* ---- the example, as chring.h shows it ---- */
    chr_ring *ring = NULL;
    if (chr_ring_new(NULL, &ring) != CHR_OK) die(chr_last_error());
    chr_ring_add(ring, "cache-a", 7, 1, NULL, 0, 0);
    chr_ring_add(ring, "cache-b", 7, 2, NULL, 0, 1);   // twice the share
    chr_node_ref owner;
    if (chr_ring_lookup(ring, "user:42", 7, &owner) == CHR_OK)
        printf("%.*s\n", (int)owner.id_len, (const char *)owner.id);
    else /* not in the example, which shortens error checks */
        die(chr_last_error());

    /* ---- what the example promises, checked before its last line ---- */

    chr_node_ref a = member(ring, "cache-a"), b = member(ring, "cache-b");
    expect(a.weight == 1 && b.weight == 2 && a.tag == 0 && b.tag == 1,
           "the members do not have the weights and tags they were added with");
    expect(a.tokens == CHR_DEFAULT_TOKENS_PER_WEIGHT && b.tokens == 2 * a.tokens,
           "cache-b does not have twice the tokens of cache-a");
    /* 320 of 480 tokens: an expected share of 2/3, give or take the arcs'
     * spread (relative sd ~ 1/sqrt(320) ~ 6%); 0.55..0.78 is about 3 sd. */
    expect(b.ownership > 0.55 && b.ownership < 0.78 && a.ownership + b.ownership > 0.999999 &&
               a.ownership + b.ownership < 1.000001,
           "cache-b does not own about twice the share of cache-a");
    expect((owner.tag == 0 && owner.id_len == 7 && memcmp(owner.id, "cache-a", 7) == 0) ||
               (owner.tag == 1 && owner.id_len == 7 && memcmp(owner.id, "cache-b", 7) == 0),
           "the owner of user:42 is not one of the two members");
    chr_node_ref again;
    expect(chr_ring_lookup(ring, "user:42", 7, &again) == CHR_OK && again.tag == owner.tag,
           "a second lookup of user:42 gave another owner");

    chr_ring_free(ring);
    return 0;
}
