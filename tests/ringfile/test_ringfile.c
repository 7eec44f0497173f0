/*
 * test_ringfile.c — the ring file format through the C API (suite 'ringfile').
 *
 * Round trips over random rings of every placement, each malformed-file
 * message with its line, apply-file atomicity, revisions, the file-reading
 * checks (directory, FIFO, size), and the compatibility with today's
 * members files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <pthread.h>

#include "test_util.h"
#include "vectors.h"

/* ---- helpers ------------------------------------------------------------- */

static chr_ring *load(const char *text, size_t len, chr_ringfile_info *info) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new_from_text(text, len, "test.ring", NULL, &ring, info));
    assert_non_null(ring);
    return ring;
}

static chr_ring *load_str(const char *text) { return load(text, strlen(text), NULL); }

static chr_ring *new_ring(const chr_options *opts) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(opts, &ring));
    return ring;
}

/* chr_ring_new_from_text refuses `text` with `status`, exactly `message` in
 * chr_last_error() and `line` in the info, and leaves *out NULL. The error
 * record says the same as data: the function, the name as source, the line
 * and the reason, the message after its "name:line: " ("name: ") prefix. */
static void expect_text_refused(const char *text, size_t len, const char *name, chr_status status,
                                uint32_t line, const char *message) {
    chr_ring *ring = (chr_ring *)&ring; /* must be reset to NULL */
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_status st = chr_ring_new_from_text(text, len, name, NULL, &ring, &info);
    if (st != status || strcmp(chr_last_error(), message) != 0 || info.error_line != line)
        fail_msg("%s: status %d, line %u, message\n  got:  %s\n  want: %d, line %u, %s", name, st,
                 info.error_line, chr_last_error(), status, line, message);
    assert_null(ring);
    chr_error_info error = CHR_ERROR_INFO_INIT;
    assert_chr_ok(chr_last_error_info(&error));
    char prefix[256];
    if (line) snprintf(prefix, sizeof prefix, "%s:%u: ", name, line);
    else snprintf(prefix, sizeof prefix, "%s: ", name);
    if (error.status != status || strcmp(error.function, "chr_ring_new_from_text") != 0 ||
        (error.flags & (CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE)) !=
            (CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE) ||
        strcmp(error.source, name) != 0 || error.line != line || strcmp(error.message, message) != 0 ||
        strncmp(message, prefix, strlen(prefix)) != 0 || strcmp(error.reason, message + strlen(prefix)) != 0)
        fail_msg("%s: record status %d, function '%s', flags 0x%x, source '%s', line %u, reason '%s'\n"
                 "  want: %d, chr_ring_new_from_text, source and line, '%s', %u, '%s'",
                 name, error.status, error.function, error.flags, error.source, error.line, error.reason,
                 status, name, line, message + strlen(prefix));
}

/* The ring's export as a malloc'd, NUL-terminated string. */
static char *export_ring(const chr_ring *ring, uint32_t flags, uint64_t revision, size_t *len_out) {
    size_t len = 0;
    assert_chr_status(chr_ring_export(ring, flags, revision, NULL, 0, &len), CHR_ERANGE);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    size_t got = 0;
    assert_chr_ok(chr_ring_export(ring, flags, revision, buf, len + 1, &got));
    assert_int_equal(got, len);
    assert_int_equal(buf[len], '\0');
    if (len_out) *len_out = len;
    return buf;
}

static uint64_t text_fingerprint(const char *text) {
    chr_ring *ring = load_str(text);
    uint64_t fp = ring_fingerprint(ring);
    chr_ring_free(ring);
    return fp;
}

/* Members of two rings: equal ids, weights and zones (ids in byte order). */
static void assert_same_members(const chr_ring *a, const chr_ring *b) {
    size_t na = ring_node_count(a), nb = ring_node_count(b);
    assert_int_equal(na, nb);
    if (na == 0) return;
    chr_node_ref *ra = calloc(na, sizeof *ra), *rb = calloc(nb, sizeof *rb);
    assert_non_null(ra);
    assert_non_null(rb);
    size_t count;
    assert_chr_ok(chr_ring_nodes(a, ra, na, &count));
    assert_chr_ok(chr_ring_nodes(b, rb, nb, &count));
    for (size_t i = 0; i < na; ++i) {
        assert_int_equal(ra[i].id_len, rb[i].id_len);
        assert_memory_equal(ra[i].id, rb[i].id, ra[i].id_len);
        assert_int_equal(ra[i].weight, rb[i].weight);
        assert_int_equal(ra[i].zone_len, rb[i].zone_len);
        if (ra[i].zone_len) assert_memory_equal(ra[i].zone, rb[i].zone, ra[i].zone_len);
    }
    free(ra);
    free(rb);
}

/* Members added by calls, to compare with what a file gives. */
typedef struct member {
    const char *id;
    size_t id_len;
    uint32_t weight;
    const char *zone; /* NULL: none */
    uint64_t tag;
} member;

static void add_members(chr_ring *ring, const member *members, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        const member *m = &members[i];
        assert_chr_ok(chr_ring_add(ring, m->id, m->id_len, m->weight, m->zone,
                                   m->zone ? strlen(m->zone) : 0, m->tag));
    }
}

#define ADD_MEMBERS(ring, table) add_members((ring), (table), sizeof(table) / sizeof((table)[0]))

/* ---- random rings ----------------------------------------------------------- */

static const char *const placement_hashers[] = {"xxh3", "md5", "md5", "crc32"};
static const uint32_t placement_max_weight[] = {4, 6, 1, 2};

/* Pieces the escapes treat specially, which uniform bytes almost never
 * spell: a random id is sometimes made of them (U+FEFF first in an id that
 * is first in its file is a byte order mark unless escaped). */
static const char *const special_pieces[] = {"\xEF\xBB\xBF", "#", "%", " ", "%%", "\xC2\x9B", "\xE2\x80\xAE", "a"};

static size_t special_bytes(test_rng *rng, unsigned char *out, size_t max) {
    size_t len = 0, pieces = 1 + (size_t)rng_below(rng, 4);
    for (size_t p = 0; p < pieces; ++p) {
        const char *piece = special_pieces[rng_below(rng, sizeof special_pieces / sizeof special_pieces[0])];
        size_t n = strlen(piece);
        if (len + n > max) break;
        memcpy(out + len, piece, n);
        len += n;
    }
    return len ? len : (out[0] = 'a', 1);
}

/* A ring of placement `mode` with up to 8 members whose ids are random
 * bytes (1..256 of them) or special pieces, zones random bytes (0..64),
 * random weights and, for the compatibility placements, random tags that
 * may repeat. Every id byte drawn is marked in `seen`. */
static chr_ring *random_ring(test_rng *rng, int32_t mode, unsigned char seen[256]) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.placement = mode;
    opts.hasher = placement_hashers[mode];
    opts.seed = rng_next(rng);
    opts.tokens_per_weight = (uint32_t)(1 + rng_below(rng, 8));
    chr_ring *ring = new_ring(&opts);
    size_t members = (size_t)rng_below(rng, 9);
    for (size_t k = 0; k < members; ++k) {
        unsigned char id[CHR_NODE_ID_MAX], zone[CHR_ZONE_MAX];
        size_t id_len = rng_below(rng, 4) == 0 ? 1 + (size_t)rng_below(rng, CHR_NODE_ID_MAX)
                                               : 1 + (size_t)rng_below(rng, 12);
        size_t zone_len = (size_t)rng_below(rng, CHR_ZONE_MAX + 1);
        if (rng_below(rng, 3) == 0) zone_len = 0;
        if (rng_below(rng, 8) == 0) id_len = special_bytes(rng, id, sizeof id);
        else
            for (size_t i = 0; i < id_len; ++i) id[i] = (unsigned char)rng_below(rng, 256);
        for (size_t i = 0; i < id_len; ++i) seen[id[i]] = 1;
        for (size_t i = 0; i < zone_len; ++i) zone[i] = (unsigned char)rng_below(rng, 256);
        uint32_t weight = (uint32_t)rng_below(rng, placement_max_weight[mode] + 1);
        chr_status st = chr_ring_add(ring, id, id_len, weight, zone, zone_len, rng_below(rng, 6));
        assert_true(st == CHR_OK || st == CHR_EEXIST);
    }
    return ring;
}

/* ---- round trips -------------------------------------------------------------- */

/* parse(export(r)) has r's fingerprint and members; export(parse(f)) == f
 * for the canonical f; the revision survives. 10,000 rings, every
 * placement, ids over every byte value. */
static void test_round_trip_random_rings(void **state) {
    (void)state;
    test_rng rng = rng_seeded(0x5EED0F11E5ull);
    unsigned char seen[256] = {0};
    for (unsigned i = 0; i < 10000; ++i) {
        int32_t mode = (int32_t)(i % 4);
        chr_ring *ring = random_ring(&rng, mode, seen);
        uint32_t flags = (i & 4) ? CHR_EXPORT_REVISION : 0;
        uint64_t revision = rng_next(&rng);
        size_t len;
        char *text = export_ring(ring, flags, revision, &len);

        chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
        chr_ring *back = load(text, len, &info);
        assert_int_equal(ring_fingerprint(back), ring_fingerprint(ring));
        assert_int_equal(info.fingerprint, ring_fingerprint(ring));
        assert_int_equal(info.members, ring_node_count(ring));
        assert_int_equal(info.flags & CHR_RINGFILE_HAS_REVISION, flags ? CHR_RINGFILE_HAS_REVISION : 0);
        assert_true(info.flags & CHR_RINGFILE_HAS_FINGERPRINT);
        assert_true(info.flags & CHR_RINGFILE_HAS_OPTIONS);
        if (flags) assert_int_equal(info.revision, revision);
        assert_same_members(ring, back);

        size_t len2;
        char *again = export_ring(back, flags, info.revision, &len2);
        assert_int_equal(len2, len);
        assert_memory_equal(again, text, len);
        free(again);
        free(text);
        chr_ring_free(back);
        chr_ring_free(ring);
    }
    for (int b = 0; b < 256; ++b) assert_true(seen[b]);
}

/* A member whose id starts with U+FEFF, first in its file: the export
 * spells it %EF%BB%BF (raw, the file would start with a byte order mark
 * and be refused), and reads back to the same ring, in every placement and
 * in a members file without directives. */
static void test_byte_order_mark_id_first(void **state) {
    (void)state;
    static const member members[] = {
        {"\xEF\xBB\xBF" "a", 4, 1, NULL, 0},
        {"\xEF\xBB\xBF" "b\xEF\xBB\xBF", 7, 2, "\xEF\xBB\xBF" "z", 1},
        {"\xF0\x9F\x98\x80", 4, 1, NULL, 2}, /* sorts after U+FEFF: it is not first */
    };
    for (int32_t mode = 0; mode < 4; ++mode) {
        chr_options opts = CHR_OPTIONS_INIT;
        opts.placement = mode;
        opts.hasher = placement_hashers[mode];
        chr_ring *ring = new_ring(&opts);
        for (size_t i = 0; i < 3; ++i) {
            member m = members[i];
            m.weight = m.weight < placement_max_weight[mode] ? m.weight : placement_max_weight[mode];
            add_members(ring, &m, 1);
        }
        size_t len;
        char *text = export_ring(ring, 0, 0, &len);
        const char *first = strstr(text, "%%fingerprint ");
        assert_non_null(first);
        first = strchr(first, '\n') + 1;
        assert_true(strncmp(first, "%EF%BB%BFa ", 11) == 0);
        char line[64];
        snprintf(line, sizeof line, "\n%%EF%%BB%%BFb%%EF%%BB%%BF %u %%EF%%BB%%BFz\n",
                 (unsigned)(placement_max_weight[mode] < 2 ? placement_max_weight[mode] : 2));
        assert_non_null(strstr(text, line));
        assert_null(memmem(text, len, "\xEF\xBB\xBF", 3)); /* nowhere raw */

        chr_ring *back = load(text, len, NULL);
        assert_int_equal(ring_fingerprint(back), ring_fingerprint(ring));
        assert_same_members(ring, back);
        chr_ring_free(back);

        /* The member lines alone, as a members file: still read, first line first. */
        if (mode == CHR_PLACEMENT_NATIVE) {
            chr_ring *plain = load(first, strlen(first), NULL);
            assert_int_equal(ring_fingerprint(plain), ring_fingerprint(ring));
            chr_ring_free(plain);
        }
        free(text);
        chr_ring_free(ring);
    }
}

/* ---- malformed files ------------------------------------------------------------- */

typedef struct bad_file {
    const char *text;
    size_t len; /* 0: strlen(text) */
    chr_status status;
    uint32_t line;
    const char *message;
} bad_file;

#define KNOWN "(known: ring-file, placement, hasher, seed, tokens-per-weight, revision, fingerprint, panic-threshold, availability, down)"

static const bad_file bad_files[] = {
    {"\xEF\xBB\xBF" "a 1\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: the file starts with a UTF-8 byte order mark (EF BB BF): save it without one"},
    {"a 1\nb\0 1\n", 10, CHR_EFORMAT, 2,
     "bad.ring:2: NUL byte: this is binary data, not a ring file (a ring file is text)"},
    {"\x1f\x8b\x08\x00\x5c\x7a\x01\x00", 8, CHR_EFORMAT, 1,
     "bad.ring:1: NUL byte: this is binary data, not a ring file (a ring file is text)"},
    {"\x8f\x03\xc1\xfe 1\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: id '\\x8F\\x03\\xC1\\xFE': raw control byte 0x03 (write it as %03)"},
    {"a\rb 1\n", 0, CHR_EFORMAT, 1, "bad.ring:1: id 'a\\x0Db': raw control byte 0x0D (write it as %0D)"},
    {"# members\na\n", 0, CHR_EFORMAT, 2,
     "bad.ring:2: expected 'id weight [zone]', found 1 field (the weight is required)"},
    {"a 1 z extra\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: expected 'id weight [zone]', found 4 fields (write a space inside an id or a zone as %20)"},
    {"a b 1\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: weight 'b' is not a whole number (0..1000000); if 'a b' is one id, write its space as %20"},
    {"a 2\x0b" "z\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: weight '2\\x0Bz': raw control byte 0x0B (fields are separated by spaces and tabs only)"},
    {"a 12x\n", 0, CHR_EFORMAT, 1, "bad.ring:1: weight '12x' is not a whole number (0..1000000)"},
    {"a -1\n", 0, CHR_EFORMAT, 1, "bad.ring:1: weight '-1' is not a whole number (0..1000000)"},
    {"a 1000001\n", 0, CHR_EFORMAT, 1, "bad.ring:1: weight '1000001' is over the limit 1000000"},
    {"a%zz 1\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: id 'a%zz': '%' at byte 2 is not followed by two hex digits (write a literal '%' as %25)"},
    {"a 1 eu%4\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: zone 'eu%4': '%' at byte 3 is not followed by two hex digits (write a literal '%' as %25)"},
    {"a 1\nb 1\na 2\n", 0, CHR_EFORMAT, 3, "bad.ring:3: duplicate id 'a' (first on line 1)"},
    {"%%colour blue\n", 0, CHR_EFORMAT, 1, "bad.ring:1: unknown directive %%colour " KNOWN},
    {"%%down x\na 1\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%down 'x' names no member of the file"},
    {"%%down a\n%%down a\na 1\n", 0, CHR_EFORMAT, 2, "bad.ring:2: duplicate %%down 'a' (first on line 1)"},
    {"%%down\na 1\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%down needs a value (the id of a member)"},
    {"%%panic-threshold 101\na 1\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%panic-threshold '101' is out of range (0..100)"},
    {"%%availability 0x1\na 1\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%availability '0x1' is not 0x followed by 16 hex digits"},
    {"%%availability 0x0000000000000001\na 1\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%availability 0x0000000000000001 does not match the availability state the file "
     "describes (0x0000000000000000)"},
    {"a 1\n%%down a\n", 0, CHR_EFORMAT, 2,
     "bad.ring:2: directive %%down after the first member (line 1): directives come first"},
    {"%% seed\n", 0, CHR_EFORMAT, 1, "bad.ring:1: '%%' without a directive name " KNOWN},
    {"a 1\n%%seed 1\n", 0, CHR_EFORMAT, 2,
     "bad.ring:2: directive %%seed after the first member (line 1): directives come first"},
    {"%%seed 1\n%%seed 2\n", 0, CHR_EFORMAT, 2, "bad.ring:2: duplicate %%seed (first on line 1)"},
    {"%%seed\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%seed needs a value"},
    {"%%seed 1 2\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%seed takes one value, found 2"},
    {"%%seed -1\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%seed '-1' has a sign: write digits only"},
    {"%%seed +1\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%seed '+1' has a sign: write digits only"},
    {"%%seed 18446744073709551616\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%seed '18446744073709551616' overflows 64 bits (0..18446744073709551615)"},
    {"%%revision 12a\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%revision '12a' is not a decimal number"},
    {"%%revision 007\n", 0, CHR_EFORMAT, 1, "bad.ring:1: %%revision '007' has a leading zero (write 7)"},
    {"%%tokens-per-weight 0\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%tokens-per-weight '0' is out of range (1..65536)"},
    {"%%tokens-per-weight 65537\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%tokens-per-weight '65537' is out of range (1..65536)"},
    {"%%placement round-robin\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%placement 'round-robin' is not one of native, ketama, ketama-unweighted, nginx"},
    {"%%hasher XXH3\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%hasher 'XXH3' is not a hasher name (1..63 bytes of a-z 0-9 _ . -)"},
    {"%%placement ketama\n%%hasher xxh3\n", 0, CHR_EFORMAT, 2,
     "bad.ring:2: %%hasher xxh3: placement ketama is defined with hasher md5"},
    {"%%hasher no-such-hasher\n", 0, CHR_ENOHASHER, 1,
     "bad.ring:1: %%hasher no-such-hasher: no hasher of that name is registered or found in a "
     "plugin (searched next to libchring, CHRING_PLUGIN_PATH and plugin_dir)"},
    {"%%ring-file 2\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%ring-file 2 is not supported (this library reads version 1)"},
    {"%%seed 1\n%%ring-file 1\n", 0, CHR_EFORMAT, 2,
     "bad.ring:2: %%ring-file must be the first directive (line 1 comes before it)"},
    {"%%fingerprint 1234\n", 0, CHR_EFORMAT, 1,
     "bad.ring:1: %%fingerprint '1234' is not 0x followed by 16 hex digits"},
    {"%%placement ketama-unweighted\na 1\nb 2\n", 0, CHR_EFORMAT, 3,
     "bad.ring:3: weight 2 of 'b' is out of range for placement ketama-unweighted (0..1: use "
     "ketama for weighted servers)"},
    {"%%tokens-per-weight 65536\na 256\nb 1\n", 0, CHR_EFORMAT, 3,
     "bad.ring:3: member 'b' brings the ring over 16777216 tokens (the limit; weight x "
     "tokens-per-weight 65536 summed over members)"},
};

static void test_malformed_files(void **state) {
    (void)state;
    size_t count = sizeof bad_files / sizeof bad_files[0];
    assert_true(count >= 25);
    for (size_t i = 0; i < count; ++i) {
        const bad_file *b = &bad_files[i];
        expect_text_refused(b->text, b->len ? b->len : strlen(b->text), "bad.ring", b->status,
                            b->line, b->message);
    }
}

/* An id in a message is spelled as the CLI prints ids (chr_ringfile_escape
 * with CHR_ESCAPE_HIDDEN, its first 64 bytes, then "..."): a duplicate with
 * a C1 control (U+009B, a CSI) and a long one. The error record holds the
 * id's bytes whole. */
static void test_duplicate_id_spelling(void **state) {
    (void)state;
    expect_text_refused("a%C2%9Bb 1\nx 1\na%C2%9Bb 2\n", 26, "dup.ring", CHR_EFORMAT, 3,
                        "dup.ring:3: duplicate id 'a%C2%9Bb' (first on line 1)");
    chr_error_info error = CHR_ERROR_INFO_INIT;
    assert_chr_ok(chr_last_error_info(&error));
    assert_int_equal(error.other_line, 1);
    assert_int_equal(error.member_len, 4);
    assert_memory_equal(error.member, "a\xc2\x9b" "b", 4);

    char text[2 * (100 + 3) + 1], message[200];
    memset(text, 'L', 100);
    memcpy(text + 100, " 1\n", 3);
    memcpy(text + 103, text, 103);
    text[206] = '\0';
    snprintf(message, sizeof message, "long.ring:2: duplicate id '%.64s...' (first on line 1)", text);
    expect_text_refused(text, 206, "long.ring", CHR_EFORMAT, 2, message);
    assert_chr_ok(chr_last_error_info(&error));
    assert_int_equal(error.member_len, 100);
}

/* Lines longer than the limit, ids and zones over theirs. */
static void test_overlong_fields(void **state) {
    (void)state;
    size_t n = CHR_RINGFILE_LINE_MAX + 1;
    char *text = malloc(n + 8);
    assert_non_null(text);
    memset(text, 'a', n);
    memcpy(text + n, " 1\n", 3);
    expect_text_refused(text, n + 3, "long.ring", CHR_EFORMAT, 1,
                        "long.ring:1: line is 65539 bytes long (limit 65536)");
    /* exactly the limit is a line; its id is then too long */
    memcpy(text + CHR_RINGFILE_LINE_MAX - 2, " 1\n", 3);
    expect_text_refused(text, CHR_RINGFILE_LINE_MAX + 1, "long.ring", CHR_EFORMAT, 1,
                        "long.ring:1: id is 65534 bytes long (1..256 allowed)");
    free(text);

    char id[300], line[1024];
    memset(id, 'x', 257);
    id[257] = '\0';
    snprintf(line, sizeof line, "%s 1\n", id);
    expect_text_refused(line, strlen(line), "id.ring", CHR_EFORMAT, 1,
                        "id.ring:1: id is 257 bytes long (1..256 allowed)");
    /* 256 bytes, all escaped: the most an id line can need */
    line[0] = '\0';
    for (int i = 0; i < 256; ++i) strcat(line, i < 100 ? "%41" : "B");
    strcat(line, " 1\n");
    chr_ring *ok = load_str(line);
    assert_int_equal(ring_node_count(ok), 1);
    chr_ring_free(ok);
    char zone[70];
    memset(zone, 'z', 65);
    zone[65] = '\0';
    snprintf(line, sizeof line, "a 1 %s\n", zone);
    expect_text_refused(line, strlen(line), "zone.ring", CHR_EFORMAT, 1,
                        "zone.ring:1: zone is 65 bytes long (0..64 allowed)");
}

/* A %%fingerprint is checked: a wrong one names its line and both values. */
static void test_fingerprint_mismatch(void **state) {
    (void)state;
    uint64_t real = text_fingerprint("a 1\nb 2\n");
    const char *text = "%%fingerprint 0x0000000000000001\na 1\nb 2\n";
    char want[200];
    snprintf(want, sizeof want,
             "fp.ring:1: %%%%fingerprint 0x0000000000000001 does not match the ring the file "
             "describes (0x%016llx)",
             (unsigned long long)real);
    expect_text_refused(text, strlen(text), "fp.ring", CHR_EFORMAT, 1, want);
    /* the right one, in either case of hex digits */
    char good[200];
    snprintf(good, sizeof good, "%%%%fingerprint 0X%016llX\na 1\nb 2\n", (unsigned long long)real);
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_ring *ring = load(good, strlen(good), &info);
    assert_true(info.flags & CHR_RINGFILE_HAS_FINGERPRINT);
    assert_int_equal(info.fingerprint, real);
    chr_ring_free(ring);
}

/* Availability directives: the export writes them after %%fingerprint
 * (none when nothing is marked and the threshold is the default), a file
 * read back gives the same state, and applying a file that changes only
 * the availability publishes it with the same tokens. */
static void test_availability_directives(void **state) {
    (void)state;
    chr_ring *ring = load_str("a 1\nb 1\nc 1\nd%20e 1\n");
    char *plain = export_ring(ring, 0, 0, NULL);
    assert_null(strstr(plain, "%%down"));
    assert_chr_ok(chr_ring_set_down(ring, "d e", 3, 1));
    assert_chr_ok(chr_ring_set_down(ring, "b", 1, 1));
    char *marked = export_ring(ring, 0, 0, NULL);
    chr_availability_info avail = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_ring_availability(ring, &avail));
    char tail[200];
    snprintf(tail, sizeof tail, "%%%%down b\n%%%%down d%%20e\n%%%%availability 0x%016llx\na 1\n",
             (unsigned long long)avail.digest);
    assert_non_null(strstr(marked, tail));
    /* Same text without the marks: only the availability lines differ. */
    char *fp = strstr(marked, "%%down");
    assert_non_null(fp);
    assert_int_equal(strncmp(marked, plain, (size_t)(fp - marked)), 0);

    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_ring *copy = load(marked, strlen(marked), &info);
    assert_true(info.flags & CHR_RINGFILE_HAS_AVAILABILITY);
    assert_int_equal(info.down, 2);
    assert_int_equal(info.panic_threshold, CHR_PANIC_THRESHOLD_DEFAULT);
    assert_int_equal(info.availability, avail.digest);
    char *again = export_ring(copy, 0, 0, NULL);
    assert_string_equal(again, marked);

    /* Applying the plain file: membership unchanged, marks gone. */
    assert_chr_ok(chr_ring_apply_text(copy, plain, strlen(plain), "plain.ring", &info));
    assert_int_equal(info.flags & CHR_RINGFILE_HAS_AVAILABILITY, 0);
    assert_int_equal(info.availability, 0);
    assert_int_equal(info.added + info.removed + info.reweighted + info.replaced, 0);
    chr_availability_info now = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_ring_availability(copy, &now));
    assert_int_equal(now.down, 0);
    /* And back, with a threshold; a version-1 info is filled up to its end only. */
    const char *with_threshold = "%%panic-threshold 30\n%%down c\na 1\nb 1\nc 1\nd%20e 1\n";
    struct {
        chr_ringfile_info info;
        unsigned char guard[16];
    } v1;
    memset(&v1, 0xEE, sizeof v1);
    v1.info.version = 1;
    assert_chr_ok(chr_ring_apply_text(copy, with_threshold, strlen(with_threshold), "t.ring", &v1.info));
    for (size_t i = offsetof(chr_ringfile_info, availability); i < sizeof v1; ++i)
        assert_int_equal(((unsigned char *)&v1)[i], 0xEE);
    assert_chr_ok(chr_ring_availability(copy, &now));
    assert_int_equal(now.down, 1);
    assert_int_equal(now.panic_threshold, 30);
    char *exported = export_ring(copy, 0, 0, NULL);
    assert_non_null(strstr(exported, "%%panic-threshold 30\n%%down c\n%%availability 0x"));
    assert_int_equal(ring_fingerprint(copy), ring_fingerprint(ring));
    free(exported);
    free(again);
    free(marked);
    free(plain);
    chr_ring_free(copy);
    chr_ring_free(ring);
}

/* ---- reading files ------------------------------------------------------------ */

static void temp_dir(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/chring-ringfile-XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void write_file(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* chr_ring_new_from_file refuses `path` with `status` and the message
 * "<path>: <reason>", and leaves *out NULL. */
static void expect_file_refused(const char *path, chr_status status, const char *reason) {
    chr_ring *ring = (chr_ring *)&ring; /* must be reset to NULL */
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s", path, reason);
    assert_chr_status(chr_ring_new_from_file(path, NULL, &ring, &info), status);
    assert_string_equal(chr_last_error(), msg);
    assert_null(ring);
}

static void test_file_checks(void **state) {
    (void)state;
    char dir[64], path[128], msg[256];
    temp_dir(dir, sizeof dir);
    chr_ring *ring = NULL;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;

    expect_file_refused(dir, CHR_EIO, "is a directory, not a ring file");
    snprintf(path, sizeof path, "%s/missing.ring", dir);
    expect_file_refused(path, CHR_EIO, "cannot open the ring file: No such file or directory");
    snprintf(path, sizeof path, "%s/fifo.ring", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    expect_file_refused(path, CHR_EIO, "is not a regular file (a device, FIFO or socket)"); /* does not block */
    unlink(path);

    /* over the size limit: a sparse file, so the test writes nothing */
    snprintf(path, sizeof path, "%s/huge.ring", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)CHR_RINGFILE_SIZE_MAX + 1), 0);
    close(fd);
    expect_file_refused(path, CHR_EFORMAT, "is 268435457 bytes (limit 268435456)");
    unlink(path);

    /* a good file by path: errors name the path and line */
    snprintf(path, sizeof path, "%s/good.ring", dir);
    write_file(path, "%%revision 9\na 1\nb 1\n", 21);
    assert_chr_ok(chr_ring_new_from_file(path, NULL, &ring, &info));
    assert_int_equal(info.revision, 9);
    assert_int_equal(ring_node_count(ring), 2);
    write_file(path, "a 1\nb x\n", 8);
    uint64_t before = ring_fingerprint(ring);
    assert_chr_status(chr_ring_apply_file(ring, path, &info), CHR_EFORMAT);
    snprintf(msg, sizeof msg, "%s:2: weight 'x' is not a whole number (0..1000000)", path);
    assert_string_equal(chr_last_error(), msg);
    assert_int_equal(info.error_line, 2);
    assert_int_equal(ring_fingerprint(ring), before);
    write_file(path, "a 1\n", 4);
    assert_chr_ok(chr_ring_apply_file(ring, path, &info));
    assert_int_equal(info.removed, 1);
    assert_int_equal(info.flags & CHR_RINGFILE_HAS_REVISION, 0);
    chr_ring_free(ring);
    unlink(path);
    rmdir(dir);
}

/* ---- empty files, CRLF, today's members files --------------------------------- */

/* An empty file (or only comments) is a valid ring with no members. */
static void test_empty_file(void **state) {
    (void)state;
    chr_ring *fresh = new_ring(NULL);
    const char *texts[] = {"", "\n\n", "# nothing yet\n   \n\t# still nothing\n"};
    for (size_t i = 0; i < 3; ++i) {
        chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
        chr_ring *ring = load(texts[i], strlen(texts[i]), &info);
        assert_int_equal(ring_node_count(ring), 0);
        assert_int_equal(info.members, 0);
        assert_int_equal(ring_fingerprint(ring), ring_fingerprint(fresh));
        chr_ring_free(ring);
    }
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new_from_text(NULL, 0, NULL, NULL, &ring, NULL));
    size_t len;
    char *text = export_ring(ring, 0, 0, &len);
    char want[256];
    snprintf(want, sizeof want,
             "%%%%ring-file 1\n%%%%placement native\n%%%%hasher xxh3\n%%%%seed 0\n"
             "%%%%tokens-per-weight 160\n%%%%fingerprint 0x%016llx\n",
             (unsigned long long)ring_fingerprint(fresh));
    assert_string_equal(text, want);
    free(text);
    chr_ring_free(ring);
    chr_ring_free(fresh);
}

/* CRLF line ends give the same ring as LF; the export is LF. */
static void test_crlf_same_as_lf(void **state) {
    (void)state;
    const char *lf = "%%seed 3\n# comment\na 1 z1\nb 2\ncaf\xC3\xA9 3 eu%20west\n";
    const char *crlf = "%%seed 3\r\n# comment\r\na 1 z1\r\nb 2\r\ncaf\xC3\xA9 3 eu%20west\r\n";
    chr_ring *a = load_str(lf), *b = load_str(crlf);
    assert_int_equal(ring_fingerprint(a), ring_fingerprint(b));
    assert_same_members(a, b);
    char *ea = export_ring(a, 0, 0, NULL), *eb = export_ring(b, 0, 0, NULL);
    assert_string_equal(ea, eb);
    assert_null(strchr(ea, '\r'));
    free(ea);
    free(eb);
    chr_ring_free(a);
    chr_ring_free(b);
}

/* Today's members file (src/cli/README.md) means what it always meant:
 * default options, tags = positions, %XX decoded, comments skipped. */
static void test_members_file_compatible(void **state) {
    (void)state;
    const char *text = "# cache tier, eu-west        <- a comment\n"
                       "cache-a        1  eu-west-1a\n"
                       "cache-b        2  eu-west-1b   # twice the share of cache-a\n"
                       "10.0.0.7:11211 1\n"
                       "draining-node  0               # a member without tokens: gets no keys\n"
                       "caf%C3%A9%20au%20lait 1        # id \"caf\xC3\xA9 au lait\"\n"
                       "node#1\t007\n";
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_ring *ring = load(text, strlen(text), &info);
    assert_int_equal(info.flags, 0);
    assert_int_equal(info.members, 6);
    assert_int_equal(info.format_version, 1);

    /* the file's members, tag = position */
    static const member members[] = {
        {"cache-a", 7, 1, "eu-west-1a", 0},      {"cache-b", 7, 2, "eu-west-1b", 1},
        {"10.0.0.7:11211", 14, 1, NULL, 2},      {"draining-node", 13, 0, NULL, 3},
        {"caf\xC3\xA9 au lait", 13, 1, NULL, 4}, {"node#1", 6, 7, NULL, 5},
    };
    chr_ring *by_calls = new_ring(NULL);
    ADD_MEMBERS(by_calls, members);
    assert_int_equal(ring_fingerprint(ring), ring_fingerprint(by_calls));
    assert_same_members(ring, by_calls);
    chr_node_ref ref;
    assert_chr_ok(chr_ring_lookup(ring, "x", 1, &ref));
    chr_node_ref refs[6];
    size_t count;
    assert_chr_ok(chr_ring_nodes(ring, refs, 6, &count));
    for (size_t i = 0; i < count; ++i)
        if (refs[i].id_len == 7 && memcmp(refs[i].id, "cache-b", 7) == 0) assert_int_equal(refs[i].tag, 1);

    /* base options apply to a file without option directives */
    chr_options ketama = CHR_OPTIONS_INIT;
    ketama.placement = CHR_PLACEMENT_KETAMA;
    chr_ring *k = NULL, *k_calls = NULL;
    assert_chr_ok(chr_ring_new_from_text(text, strlen(text), "m", &ketama, &k, NULL));
    assert_chr_ok(chr_ring_new(&ketama, &k_calls));
    ADD_MEMBERS(k_calls, members);
    assert_int_equal(ring_fingerprint(k), ring_fingerprint(k_calls));
    assert_same_members(k, k_calls);
    /* ... but not to a file with one: its absent options are the defaults */
    const char *seeded = "%%seed 0\na 1\n";
    chr_ring *d = NULL;
    assert_chr_ok(chr_ring_new_from_text(seeded, strlen(seeded), "s", &ketama, &d, &info));
    assert_int_equal(ring_fingerprint(d), text_fingerprint("a 1\n"));
    assert_int_equal(info.flags, CHR_RINGFILE_HAS_OPTIONS);
    chr_ring_free(d);
    chr_ring_free(k);
    chr_ring_free(k_calls);
    chr_ring_free(ring);
    chr_ring_free(by_calls);
}

/* ---- canonical form and JSON twin --------------------------------------------- */

static void test_canonical_text_exact(void **state) {
    (void)state;
    chr_ring *ring = new_ring(NULL);
    static const member members[] = {
        {"b c", 3, 2, "z one", 0}, {"#a", 2, 1, "#z", 1}, {"a#%", 3, 0, NULL, 2},
        {"caf\xC3\xA9\xFF\t\x7f", 8, 3, NULL, 3}, {"\x00\x01", 2, 1, "", 4},
    };
    ADD_MEMBERS(ring, members);
    char *text = export_ring(ring, CHR_EXPORT_REVISION, 18446744073709551615ull, NULL);
    char want[512];
    snprintf(want, sizeof want,
             "%%%%ring-file 1\n%%%%placement native\n%%%%hasher xxh3\n%%%%seed 0\n"
             "%%%%tokens-per-weight 160\n%%%%revision 18446744073709551615\n"
             "%%%%fingerprint 0x%016llx\n"
             "%%00%%01 1\n"
             "%%23a 1 %%23z\n"
             "a#%%25 0\n"
             "b%%20c 2 z%%20one\n"
             "caf\xC3\xA9%%FF%%09%%7F 3\n",
             (unsigned long long)ring_fingerprint(ring));
    assert_string_equal(text, want);
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_ring *back = load(text, strlen(text), &info);
    assert_int_equal(info.revision, 18446744073709551615ull);
    assert_same_members(ring, back);
    chr_ring_free(back);
    free(text);

    /* compatibility placements keep the tag (configuration) order */
    chr_options nginx = CHR_OPTIONS_INIT;
    nginx.placement = CHR_PLACEMENT_NGINX;
    chr_ring *n = new_ring(&nginx);
    static const member servers[] = {
        {"10.0.0.2:80", 11, 1, NULL, 7}, {"10.0.0.9:80", 11, 2, NULL, 3}, {"10.0.0.1:80", 11, 1, NULL, 7},
    };
    ADD_MEMBERS(n, servers);
    text = export_ring(n, 0, 0, NULL);
    snprintf(want, sizeof want,
             "%%%%ring-file 1\n%%%%placement nginx\n%%%%hasher crc32\n%%%%seed 0\n"
             "%%%%tokens-per-weight 160\n%%%%fingerprint 0x%016llx\n"
             "10.0.0.9:80 2\n10.0.0.1:80 1\n10.0.0.2:80 1\n",
             (unsigned long long)ring_fingerprint(n));
    assert_string_equal(text, want);
    free(text);
    chr_ring_free(n);
    chr_ring_free(ring);
}

static void test_json_twin_exact(void **state) {
    (void)state;
    chr_ring *ring = new_ring(NULL);
    char *text = export_ring(ring, CHR_EXPORT_JSON, 0, NULL);
    char want[768];
    snprintf(want, sizeof want,
             "{\"format\":\"chring-ring-file\",\"version\":1,\"placement\":\"native\",\"hasher\":"
             "\"xxh3\",\"seed\":\"0\",\"tokens_per_weight\":160,\"fingerprint\":\"0x%016llx\","
             "\"members\":[]}\n",
             (unsigned long long)ring_fingerprint(ring));
    assert_string_equal(text, want);
    free(text);
    assert_chr_ok(chr_ring_add(ring, "a\"\\ b", 5, 2, "eu", 2, 0));
    assert_chr_ok(chr_ring_add(ring, "\xFF", 1, 1, NULL, 0, 1));
    text = export_ring(ring, CHR_EXPORT_JSON | CHR_EXPORT_REVISION, 42, NULL);
    snprintf(want, sizeof want,
             "{\"format\":\"chring-ring-file\",\"version\":1,\"placement\":\"native\",\"hasher\":"
             "\"xxh3\",\"seed\":\"0\",\"tokens_per_weight\":160,\"revision\":\"42\","
             "\"fingerprint\":\"0x%016llx\",\"members\":[\n"
             "{\"id\":\"a\\\"\\\\%%20b\",\"id_base64\":\"YSJcIGI=\",\"weight\":2,\"zone\":\"eu\","
             "\"zone_base64\":\"ZXU=\"},\n"
             "{\"id\":\"%%FF\",\"id_base64\":\"/w==\",\"weight\":1,\"zone\":\"\",\"zone_base64\":\"\"}\n"
             "]}\n",
             (unsigned long long)ring_fingerprint(ring));
    assert_string_equal(text, want);
    free(text);
    chr_ring_free(ring);
}

/* Buffers: the size on CHR_ERANGE, nothing written, exact fit without a
 * NUL, bad flags and arguments; a snapshot exports as its ring does. */
static void test_export_buffers(void **state) {
    (void)state;
    chr_ring *ring = load_str("a 1\nb 2\n");
    size_t len = 0, got = 0;
    assert_size_query(chr_ring_export(ring, 0, 0, NULL, 0, &len));
    assert_true(len > 0);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    memset(buf, '#', len + 1);
    assert_chr_error(chr_ring_export(ring, 0, 0, buf, len - 1, &got), CHR_ERANGE, "chr_ring_export");
    assert_int_equal(got, len);
    assert_int_equal(buf[0], '#');
    assert_chr_ok(chr_ring_export(ring, 0, 0, buf, len, &got));
    assert_int_equal(buf[len], '#'); /* no room: no NUL */
    assert_chr_error(chr_ring_export(ring, 0x4, 0, buf, len, &got), CHR_EINVAL, "chr_ring_export");
    assert_chr_error(chr_ring_export(ring, 0, 0, NULL, 5, &got), CHR_EINVAL, "chr_ring_export");
    assert_chr_error(chr_ring_export(ring, 0, 0, buf, len, NULL), CHR_EINVAL, "chr_ring_export");
    assert_chr_error(chr_ring_export(NULL, 0, 0, buf, len, &got), CHR_EINVAL, "chr_ring_export");

    chr_snapshot *snap = NULL;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    assert_chr_ok(chr_ring_add(ring, "c", 1, 1, NULL, 0, 2)); /* the snapshot keeps a and b */
    char *from_snap = malloc(len + 1);
    assert_non_null(from_snap);
    size_t snap_len = 0;
    assert_size_query(chr_snapshot_export(snap, 0, 0, NULL, 0, &snap_len));
    assert_int_equal(snap_len, len);
    assert_chr_ok(chr_snapshot_export(snap, 0, 0, from_snap, len + 1, &got));
    assert_int_equal(got, len);
    assert_memory_equal(from_snap, buf, len);
    assert_chr_error(chr_snapshot_export(NULL, 0, 0, from_snap, len, &got), CHR_EINVAL,
                     "chr_snapshot_export");
    chr_snapshot_release(snap);
    free(from_snap);
    free(buf);
    chr_ring_free(ring);
}

/* ---- apply ---------------------------------------------------------------------- */

/* A bad file, a file whose options differ and a wrong fingerprint change
 * nothing; a good file gives exactly the fresh ring's fingerprint. */
static void test_apply_atomic(void **state) {
    (void)state;
    const char *a = "%%seed 7\na 1 z1\nb 2 z2\nc 3\nd 0\n";
    chr_ring *ring = load_str(a);
    const uint64_t before = ring_fingerprint(ring);
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;

    static const struct {
        const char *name, *text;
        chr_status status;
        uint32_t line;
        const char *message; /* the whole message; NULL: it starts "<name>:<line>: " */
    } refused[] = {
        {"b.ring", "a 5\nb 2\nx 1\ny q\n", CHR_EFORMAT, 4,
         "b.ring:4: weight 'q' is not a whole number (0..1000000)"},
        {"s.ring", "%%seed 8\na 1 z1\n", CHR_EOPTIONS, 1,
         "s.ring:1: %%seed 8 differs from the ring's seed 7"},
        {"o.ring", "%%placement native\na 1\n" /* seed left at its default */, CHR_EOPTIONS, 1,
         "o.ring:1: the file's seed is 0 (no %%seed line: the default) differs from the ring's "
         "seed 7"},
        {"h.ring", "%%seed 7\n%%hasher fnv1a\na 1\n", CHR_EOPTIONS, 2,
         "h.ring:2: %%hasher fnv1a differs from the ring's hasher xxh3"},
        {"f.ring", "%%fingerprint 0x0123456789abcdef\na 1\n", CHR_EFORMAT, 1, NULL},
        /* 16,800,160 tokens: over at line 3 */
        {"big.ring", "a 1\nb 100000\nc 5000\n", CHR_EFORMAT, 3, NULL},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
        const char *text = refused[i].text;
        assert_chr_status(chr_ring_apply_text(ring, text, strlen(text), refused[i].name, &info),
                          refused[i].status);
        assert_int_equal(info.error_line, refused[i].line);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s:%u: ", refused[i].name, refused[i].line);
        if (refused[i].message)
            assert_string_equal(chr_last_error(), refused[i].message);
        else if (strncmp(chr_last_error(), prefix, strlen(prefix)) != 0)
            fail_msg("%s: \"%s\" does not start \"%s\"", refused[i].name, chr_last_error(), prefix);
        assert_int_equal(ring_fingerprint(ring), before);
    }

    /* good: remove c, reweight b, move a to another zone, add e; d kept */
    const char *good = "%%revision 5\ne 2 z9\na 1 z3\nb 4 z2\nd 0\n";
    assert_chr_ok(chr_ring_apply_text(ring, good, strlen(good), "g.ring", &info));
    assert_int_equal(info.added, 1);
    assert_int_equal(info.removed, 1);
    assert_int_equal(info.reweighted, 1);
    assert_int_equal(info.replaced, 1);
    assert_int_equal(info.revision, 5);
    assert_int_equal(info.error_line, 0);
    const char *fresh_text = "%%seed 7\ne 2 z9\na 1 z3\nb 4 z2\nd 0\n";
    chr_ring *fresh = load_str(fresh_text);
    assert_int_equal(ring_fingerprint(ring), ring_fingerprint(fresh));
    assert_int_equal(info.fingerprint, ring_fingerprint(fresh));
    assert_same_members(ring, fresh);
    /* applying it again changes nothing */
    assert_chr_ok(chr_ring_apply_text(ring, good, strlen(good), "g.ring", &info));
    assert_int_equal(info.added + info.removed + info.reweighted + info.replaced, 0);
    assert_int_equal(ring_fingerprint(ring), ring_fingerprint(fresh));
    chr_ring_free(fresh);
    chr_ring_free(ring);
}

/* fresh(A) + apply(B) == fresh(B) for random A, B of every placement,
 * with B's members in random order (the compatibility placements must
 * then follow B's positions: tags equal them afterwards). */
static void test_apply_equals_fresh_random(void **state) {
    (void)state;
    test_rng rng = rng_seeded(0xA991Eull);
    unsigned char seen[256] = {0};
    for (unsigned i = 0; i < 400; ++i) {
        int32_t mode = (int32_t)(i % 4);
        test_rng fork = rng;
        chr_ring *a = random_ring(&rng, mode, seen);
        /* B: options of A (same rng prefix), other members */
        test_rng again = fork;
        chr_ring *b = random_ring(&again, mode, seen);
        /* B's members partly shared with A: shuffle a union by re-adding some of A's */
        size_t na = ring_node_count(a);
        chr_node_ref *refs = calloc(na ? na : 1, sizeof *refs);
        size_t count;
        assert_chr_ok(chr_ring_nodes(a, refs, na, &count));
        for (size_t k = 0; k < na; ++k) {
            if (rng_below(&rng, 2)) continue;
            uint32_t w = rng_below(&rng, 2) ? refs[k].weight
                                            : (uint32_t)rng_below(&rng, placement_max_weight[mode] + 1);
            chr_status st = chr_ring_add(b, refs[k].id, refs[k].id_len, w, refs[k].zone,
                                         rng_below(&rng, 3) ? refs[k].zone_len : 0, rng_below(&rng, 9));
            assert_true(st == CHR_OK || st == CHR_EEXIST);
        }
        free(refs);
        rng = again;
        char *text = export_ring(b, 0, 0, NULL);
        chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
        assert_chr_ok(chr_ring_apply_text(a, text, strlen(text), "b.ring", &info));
        chr_ring *fresh = load(text, strlen(text), NULL);
        assert_int_equal(ring_fingerprint(a), ring_fingerprint(fresh));
        assert_int_equal(ring_fingerprint(a), ring_fingerprint(b));
        assert_same_members(a, fresh);
        char *back = export_ring(a, 0, 0, NULL);
        assert_string_equal(back, text);
        free(back);
        free(text);
        chr_ring_free(fresh);
        chr_ring_free(b);
        chr_ring_free(a);
    }
}

/* A file without option directives applies with the ring's options. */
static void test_apply_plain_list_to_compat_ring(void **state) {
    (void)state;
    chr_options ketama = CHR_OPTIONS_INIT;
    ketama.placement = CHR_PLACEMENT_KETAMA;
    chr_ring *ring = new_ring(&ketama);
    const char *list = "10.0.0.1:11211 1\n10.0.0.2:11211 3\n10.0.0.3:11211 2\n";
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    assert_chr_ok(chr_ring_apply_text(ring, list, strlen(list), "l", &info));
    assert_int_equal(info.added, 3);
    chr_ring *fresh = NULL;
    assert_chr_ok(chr_ring_new_from_text(list, strlen(list), "l", &ketama, &fresh, NULL));
    assert_int_equal(ring_fingerprint(ring), ring_fingerprint(fresh));
    /* the same servers in another order are another ketama ring: applied, they
       are re-added at their new positions */
    const char *moved = "10.0.0.3:11211 2\n10.0.0.1:11211 1\n10.0.0.2:11211 3\n";
    assert_chr_ok(chr_ring_apply_text(ring, moved, strlen(moved), "m", &info));
    assert_int_equal(info.replaced, 3);
    chr_ring *fresh2 = NULL;
    assert_chr_ok(chr_ring_new_from_text(moved, strlen(moved), "m", &ketama, &fresh2, NULL));
    assert_int_equal(ring_fingerprint(ring), ring_fingerprint(fresh2));
    chr_node_ref refs[3];
    size_t count;
    assert_chr_ok(chr_ring_nodes(ring, refs, 3, &count));
    assert_int_equal(refs[2].tag, 0); /* 10.0.0.3 is first in the file */
    chr_ring_free(fresh2);
    chr_ring_free(fresh);
    chr_ring_free(ring);
}

/* Readers during applies see the old or the new ring, never a mix: every
 * snapshot taken has one of the two files' fingerprints and member counts. */
typedef struct reader_args {
    chr_ring *ring;
    uint64_t fp_a, fp_b;
    int stop; /* __atomic */
    size_t reads, bad;
} reader_args;

static void *reader(void *p) {
    reader_args *r = p;
    for (size_t i = 0; i < 2000000 && !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); ++i) {
        chr_snapshot *snap = NULL;
        if (chr_ring_snapshot(r->ring, &snap) != CHR_OK) {
            ++r->bad;
            break;
        }
        uint64_t fp = 0;
        size_t count = 0;
        chr_snapshot_fingerprint(snap, &fp);
        chr_snapshot_node_count(snap, &count);
        if (!((fp == r->fp_a && count == 3) || (fp == r->fp_b && count == 4))) ++r->bad;
        chr_snapshot_release(snap);
        ++r->reads;
    }
    return NULL;
}

static void test_apply_under_readers(void **state) {
    (void)state;
    const char *a = "a 1\nb 2\nc 1 z\n", *b = "a 2\nc 1 y\nd 1\ne 3\n";
    reader_args r = {load_str(a), text_fingerprint(a), text_fingerprint(b), 0, 0, 0};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, reader, &r), 0);
    for (int i = 0; i < 300; ++i) {
        const char *text = (i & 1) ? a : b;
        assert_chr_ok(chr_ring_apply_text(r.ring, text, strlen(text), "flip", NULL));
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(r.bad, 0);
    assert_true(r.reads > 0);
    assert_int_equal(ring_fingerprint(r.ring), r.fp_a);
    chr_ring_free(r.ring);
}

/* ---- revision, info, arguments ------------------------------------------------------ */

static void test_revision_retrievable(void **state) {
    (void)state;
    const char *text = "%%ring-file 1\n%%revision 18446744073709551615\na 1\n";
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_ring *ring = load(text, strlen(text), &info);
    assert_int_equal(info.flags, CHR_RINGFILE_HAS_REVISION);
    assert_int_equal(info.revision, 18446744073709551615ull);
    assert_int_equal(info.fingerprint, ring_fingerprint(ring));
    const char *next = "%%revision 0\na 1\nb 1\n";
    assert_chr_ok(chr_ring_apply_text(ring, next, strlen(next), "n", &info));
    assert_int_equal(info.flags, CHR_RINGFILE_HAS_REVISION);
    assert_int_equal(info.revision, 0);
    assert_int_equal(info.added, 1);
    const char *none = "a 1\n";
    assert_chr_ok(chr_ring_apply_text(ring, none, strlen(none), "n", &info));
    assert_int_equal(info.flags, 0);
    assert_int_equal(info.revision, 0);
    chr_ring_free(ring);
}

static void test_info_and_arguments(void **state) {
    (void)state;
    chr_ringfile_info from_macro = CHR_RINGFILE_INFO_INIT, from_function;
    memset(&from_function, 0xA5, sizeof from_function);
    assert_chr_ok(chr_ringfile_info_init(&from_function, CHR_RINGFILE_INFO_VERSION));
    assert_memory_equal(&from_macro, &from_function, sizeof from_macro);
    assert_chr_error(chr_ringfile_info_init(NULL, 1), CHR_EINVAL, "chr_ringfile_info_init");
    assert_chr_error(chr_ringfile_info_init(&from_function, CHR_RINGFILE_INFO_VERSION + 1), CHR_EVERSION, "chr_ringfile_info_init");

    chr_ring *ring = NULL;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    info.version = 99;
    assert_chr_error(chr_ring_new_from_text("a 1\n", 4, NULL, NULL, &ring, &info), CHR_EVERSION,
                     "chr_ring_new_from_text");
    assert_chr_error(chr_ring_new_from_text(NULL, 4, NULL, NULL, &ring, NULL), CHR_EINVAL,
                     "chr_ring_new_from_text");
    assert_chr_error(chr_ring_new_from_text("a 1\n", 4, NULL, NULL, NULL, NULL), CHR_EINVAL,
                     "chr_ring_new_from_text");
    assert_chr_error(chr_ring_new_from_file(NULL, NULL, &ring, NULL), CHR_EINVAL, "chr_ring_new_from_file");
    assert_chr_error(chr_ring_apply_text(NULL, "", 0, NULL, NULL), CHR_EINVAL, "chr_ring_apply_text");
    assert_chr_error(chr_ring_apply_file(NULL, "/x", NULL), CHR_EINVAL, "chr_ring_apply_file");
    chr_options bad = CHR_OPTIONS_INIT;
    bad.version = 77;
    assert_chr_error(chr_ring_new_from_text("a 1\n", 4, NULL, &bad, &ring, NULL), CHR_EVERSION,
                     "chr_ring_new_from_text");
    assert_null(ring);
    assert_chr_error(chr_ring_new_from_file("/nonexistent", &bad, &ring, NULL), CHR_EVERSION,
                     "chr_ring_new_from_file");
    /* a NULL name reads <text> in messages */
    assert_chr_status(chr_ring_new_from_text("a\n", 2, NULL, NULL, &ring, NULL), CHR_EFORMAT);
    assert_string_equal(chr_last_error(),
                        "<text>:1: expected 'id weight [zone]', found 1 field (the weight is required)");
    assert_string_equal(chr_strerror(CHR_EFORMAT), "malformed ring file");
    assert_string_equal(chr_strerror(CHR_EOPTIONS), "ring file options differ from the ring's");
    assert_string_equal(chr_strerror(CHR_EIO), "ring file cannot be read");
}

/* ---- field spellings (chr_ringfile_escape / chr_ringfile_unescape) ----------------- */

static size_t escape(const void *bytes, size_t len, uint32_t flags, char *out, size_t capacity) {
    size_t n = 0;
    assert_chr_ok(chr_ringfile_escape(bytes, len, flags, out, capacity, &n));
    assert_true(n <= 3 * len);
    return n;
}

static size_t unescape(const char *field, size_t len, char *out, size_t capacity) {
    size_t n = 0;
    assert_chr_ok(chr_ringfile_unescape(field, len, "id", out, capacity, &n));
    assert_true(n <= len);
    return n;
}

/* Exact spellings, the round trip over random bytes with both flags, the
 * messages of a bad field, and the buffer rules. */
static void test_field_spelling(void **state) {
    (void)state;
    static const struct {
        const char *bytes;
        uint32_t flags;
        const char *want;
    } cases[] = {
        {"cache-a", 0, "cache-a"},
        {"caf\xC3\xA9 au lait", 0, "caf\xC3\xA9%20au%20lait"},
        {"#a#b", 0, "%23a#b"},
        {"100%", 0, "100%25"},
        {"tab\there\x7F", 0, "tab%09here%7F"},
        {"bad\xFF\xC3", 0, "bad%FF%C3"},
        {"\xED\xA0\x80", 0, "%ED%A0%80"},              /* a surrogate is not valid UTF-8 */
        {"csi\xC2\x9B" "2J", 0, "csi\xC2\x9B" "2J"},     /* canonical: valid UTF-8 stays */
        {"csi\xC2\x9B" "2J", CHR_ESCAPE_HIDDEN, "csi%C2%9B2J"},
        {"r\xE2\x80\xAEl\xE2\x81\xA6x\xD8\x9C", CHR_ESCAPE_HIDDEN, "r%E2%80%AEl%E2%81%A6x%D8%9C"},
        {"\xE2\x82\xAC", CHR_ESCAPE_HIDDEN, "\xE2\x82\xAC"}, /* the euro sign is shown */
        /* U+FEFF wherever it stands, with either flag; a lone EF BB is not valid UTF-8 */
        {"\xEF\xBB\xBF" "a\xEF\xBB\xBF" "b", 0, "%EF%BB%BFa%EF%BB%BFb"},
        {"a\xEF\xBB\xBF", CHR_ESCAPE_HIDDEN, "a%EF%BB%BF"},
        {"\xEF\xBB\xBE", 0, "\xEF\xBB\xBE"}, /* U+FEFE: not escaped */
    };
    char out[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        size_t n = escape(cases[i].bytes, strlen(cases[i].bytes), cases[i].flags, out, sizeof out);
        assert_int_equal(n, strlen(cases[i].want));
        assert_memory_equal(out, cases[i].want, n);
        assert_int_equal(out[n], '\0');
    }

    /* The canonical spelling is what export writes for the id. */
    char ids[3][8] = {"\x01 x", "%#a", "\xC2\x85"};
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    for (int i = 0; i < 3; ++i) assert_chr_ok(chr_ring_add(ring, ids[i], strlen(ids[i]), 1, NULL, 0, 0));
    char *text = export_ring(ring, 0, 0, NULL);
    for (int i = 0; i < 3; ++i) {
        size_t n = escape(ids[i], strlen(ids[i]), 0, out, sizeof out);
        memcpy(out + n, " 1\n", 4);
        assert_non_null(strstr(text, out));
    }
    free(text);
    chr_ring_free(ring);

    /* Any bytes, either flag: unescape(escape(b)) == b. */
    srand(16);
    unsigned char bytes[64];
    char spelled[3 * sizeof bytes + 1], back[sizeof bytes];
    for (int round = 0; round < 20000; ++round) {
        size_t len = (size_t)(rand() % (int)sizeof bytes);
        for (size_t k = 0; k < len; ++k)
            bytes[k] = (unsigned char)(round % 3 ? rand() % 256 : "\xC2\x9B\xE2\x80\xAE %#a"[rand() % 9]);
        uint32_t flags = round % 2 ? CHR_ESCAPE_HIDDEN : 0;
        size_t n = escape(bytes, len, flags, spelled, sizeof spelled);
        for (size_t k = 0; k < n; ++k) {
            unsigned char c = (unsigned char)spelled[k];
            assert_true(c > 0x20 && c != 0x7F); /* no blank, no control: one field */
        }
        assert_true(n == 0 || spelled[0] != '#');
        assert_int_equal(unescape(spelled, n, back, sizeof back), len);
        assert_memory_equal(back, bytes, len);
    }

    /* Bad fields: CHR_EFORMAT, the field named as the caller calls it. */
    size_t n = 99;
    assert_chr_status(chr_ringfile_unescape("a%zz", 4, "key", out, sizeof out, &n), CHR_EFORMAT);
    assert_string_equal(chr_last_error(),
                        "key 'a%zz': '%' at byte 2 is not followed by two hex digits (write a literal '%' as %25)");
    assert_chr_status(chr_ringfile_unescape("a\x07" "b", 3, NULL, out, sizeof out, &n), CHR_EFORMAT);
    assert_string_equal(chr_last_error(), "field 'a\\x07b': raw control byte 0x07 (write it as %07)");
    assert_chr_status(chr_ringfile_unescape("%4", 2, "zone", out, sizeof out, &n), CHR_EFORMAT);
    assert_non_null(strstr(chr_last_error(), "zone '%4': '%' at byte 1"));
    assert_int_equal(unescape("%41%62c", 7, out, sizeof out), 3);
    assert_memory_equal(out, "Abc", 3);
    assert_int_equal(unescape(NULL, 0, NULL, 0), 0);

    /* Buffers: a size query leaves the message alone; too small a buffer
     * fails with it and writes nothing. */
    assert_chr_status(chr_ringfile_unescape("bad%", 4, "id", out, sizeof out, &n), CHR_EFORMAT);
    const char *kept = "id 'bad%': '%' at byte 4 is not followed by two hex digits (write a literal '%' as %25)";
    assert_string_equal(chr_last_error(), kept);
    assert_chr_status(chr_ringfile_escape("a b", 3, 0, NULL, 0, &n), CHR_ERANGE);
    assert_int_equal(n, 5);
    assert_chr_status(chr_ringfile_unescape("a%20b", 5, "id", NULL, 0, &n), CHR_ERANGE);
    assert_int_equal(n, 3);
    assert_string_equal(chr_last_error(), kept);
    memset(out, 'x', sizeof out);
    assert_chr_error(chr_ringfile_escape("a b", 3, 0, out, 4, &n), CHR_ERANGE, "chr_ringfile_escape");
    assert_int_equal(n, 5);
    assert_int_equal(out[0], 'x');
    assert_int_equal(escape("a b", 3, 0, out, 5), 5); /* exactly fits: no NUL */
    assert_int_equal(out[5], 'x');
    assert_int_equal(escape("", 0, 0, NULL, 0), 0);
    assert_chr_error(chr_ringfile_escape("a", 1, 0x2, out, sizeof out, &n), CHR_EINVAL, "chr_ringfile_escape");
    assert_chr_error(chr_ringfile_escape("a", 1, 0, out, sizeof out, NULL), CHR_EINVAL, "chr_ringfile_escape");
    assert_chr_error(chr_ringfile_escape(NULL, 1, 0, out, sizeof out, &n), CHR_EINVAL, "chr_ringfile_escape");
    assert_chr_error(chr_ringfile_escape("a", 1, 0, NULL, 9, &n), CHR_EINVAL, "chr_ringfile_escape");
    assert_chr_error(chr_ringfile_unescape(NULL, 1, "id", out, sizeof out, &n), CHR_EINVAL,
                     "chr_ringfile_unescape");
    assert_chr_error(chr_ringfile_unescape("a", 1, "id", out, sizeof out, NULL), CHR_EINVAL,
                     "chr_ringfile_unescape");
}

/* ---- one member line alone ---------------------------------------------------- */

/* chr_ringfile_parse_member refuses `line` with CHR_EFORMAT and exactly
 * "line.txt: <reason>"; the record has the name as source, no line, the
 * reason, and the member `id` (NULL: none). `out` is left zero. */
static void expect_line_refused(const char *line, size_t len, const char *reason, const char *id) {
    chr_ringfile_member m = CHR_RINGFILE_MEMBER_INIT;
    memset(&m.weight, 0x5A, sizeof m - offsetof(chr_ringfile_member, weight));
    chr_status st = chr_ringfile_parse_member(line, len, "line.txt", &m);
    char want[1024];
    snprintf(want, sizeof want, "line.txt: %s", reason);
    if (st != CHR_EFORMAT || strcmp(chr_last_error(), want) != 0)
        fail_msg("line '%.*s': status %d, message\n  got:  %s\n  want: %s", (int)len, line, st,
                 chr_last_error(), want);
    chr_ringfile_member zero = CHR_RINGFILE_MEMBER_INIT;
    assert_memory_equal(&m, &zero, sizeof m);
    chr_error_info error = CHR_ERROR_INFO_INIT;
    assert_chr_ok(chr_last_error_info(&error));
    assert_int_equal(error.status, CHR_EFORMAT);
    assert_string_equal(error.function, "chr_ringfile_parse_member");
    assert_string_equal(error.source, "line.txt");
    assert_string_equal(error.reason, reason);
    assert_int_equal(error.line, 0);
    const uint32_t flags = CHR_ERROR_HAS_SOURCE | (id ? CHR_ERROR_HAS_MEMBER : 0u);
    if (error.flags != flags) fail_msg("line '%.*s': flags 0x%x, want 0x%x", (int)len, line, error.flags, flags);
    if (id) {
        assert_int_equal(error.member_len, strlen(id));
        assert_memory_equal(error.member, id, strlen(id));
    }
}

static chr_ringfile_member parse_line_ok(const char *line) {
    chr_ringfile_member m = CHR_RINGFILE_MEMBER_INIT;
    assert_chr_ok(chr_ringfile_parse_member(line, strlen(line), NULL, &m));
    return m;
}

static void expect_member(const chr_ringfile_member *m, const char *id, size_t id_len, uint32_t weight,
                          const char *zone, size_t zone_len) {
    assert_int_equal(m->version, CHR_RINGFILE_MEMBER_VERSION);
    assert_int_equal(m->id_len, id_len);
    assert_memory_equal(m->id, id, id_len);
    assert_int_equal(m->weight, weight);
    assert_int_equal(m->zone_len, zone_len);
    if (zone_len) assert_memory_equal(m->zone, zone, zone_len);
}

/* What a member line reads as, and every class of refusal: those a file's
 * member line gets, with the same reason, and those of a line that is not
 * one member line (blank, comment, directive, a line break). */
static void test_member_line(void **state) {
    (void)state;
    chr_ringfile_member m = parse_line_ok("cache-a 1 eu-west-1a");
    expect_member(&m, "cache-a", 7, 1, "eu-west-1a", 10);
    m = parse_line_ok(" \tcaf%C3%A9%20au%20lait\t007   r%23 # a comment");
    expect_member(&m, "caf\xC3\xA9 au lait", 13, 7, "r#", 2);
    m = parse_line_ok("node#1 0");
    expect_member(&m, "node#1", 6, 0, NULL, 0);
    m = parse_line_ok("a 1000000 #");
    expect_member(&m, "a", 1, 1000000, NULL, 0);
    /* U+FEFF first: a byte order mark only at a file's start, not a line's */
    m = parse_line_ok("\xEF\xBB\xBF" "b 2");
    expect_member(&m, "\xEF\xBB\xBF" "b", 4, 2, NULL, 0);
    /* the longest id and zone */
    char line[1200];
    memset(line, 'i', 256);
    memcpy(line + 256, " 3 ", 3);
    memset(line + 259, 'z', 64);
    line[323] = '\0';
    m = parse_line_ok(line);
    assert_int_equal(m.id_len, 256);
    assert_int_equal(m.zone_len, 64);
    assert_int_equal(m.weight, 3);

    /* Not a member line. */
    expect_line_refused("", 0, "a blank line, not a member line (expected 'id weight [zone]')", NULL);
    expect_line_refused(NULL, 0, "a blank line, not a member line (expected 'id weight [zone]')", NULL);
    expect_line_refused(" \t ", 3, "a blank line, not a member line (expected 'id weight [zone]')", NULL);
    expect_line_refused("  #x 1", 6,
                        "a comment, not a member line: its first field '#x' starts with '#' (write a '#' "
                        "that starts an id as %23)", NULL);
    expect_line_refused("%%seed 1", 8,
                        "a directive, not a member line: its first field '%%seed' starts with '%%' (write "
                        "a '%' that starts an id as %25)", NULL);
    expect_line_refused("a 1\nb 2", 7, "LF at byte 4: a member line is one line, without a line break", NULL);
    expect_line_refused("a 1\r", 4, "CR at byte 4: a member line is one line, without a line break", NULL);
    expect_line_refused("a 1\n", 4, "LF at byte 4: a member line is one line, without a line break", NULL);
    expect_line_refused("a\0 1", 4, "NUL byte: this is binary data, not a ring file (a ring file is text)", NULL);
    char *big = malloc(CHR_RINGFILE_LINE_MAX + 8);
    assert_non_null(big);
    memset(big, 'a', CHR_RINGFILE_LINE_MAX + 1);
    expect_line_refused(big, CHR_RINGFILE_LINE_MAX + 1, "line is 65537 bytes long (limit 65536)", NULL);
    memcpy(big + CHR_RINGFILE_LINE_MAX - 2, " 1", 2); /* exactly the limit: a line, its id too long */
    expect_line_refused(big, CHR_RINGFILE_LINE_MAX, "id is 65534 bytes long (1..256 allowed)", NULL);
    free(big);

    /* A member line's faults, as a file's; the member once the id is read. */
    expect_line_refused("a", 1, "expected 'id weight [zone]', found 1 field (the weight is required)", NULL);
    expect_line_refused("a 1 z extra", 11,
                        "expected 'id weight [zone]', found 4 fields (write a space inside an id or a zone as %20)",
                        NULL);
    expect_line_refused("a 12x", 5, "weight '12x' is not a whole number (0..1000000)", "a");
    expect_line_refused("a -1", 4, "weight '-1' is not a whole number (0..1000000)", "a");
    expect_line_refused("a 1000001", 9, "weight '1000001' is over the limit 1000000", "a");
    expect_line_refused("my node 1", 9,
                        "weight 'node' is not a whole number (0..1000000); if 'my node' is one id, write its "
                        "space as %20", "my");
    expect_line_refused("t 2\x0b" "eu", 6,
                        "weight '2\\x0Beu': raw control byte 0x0B (fields are separated by spaces and tabs only)", "t");
    expect_line_refused("a%zz 1", 6,
                        "id 'a%zz': '%' at byte 2 is not followed by two hex digits (write a literal '%' as %25)", NULL);
    expect_line_refused("a\x1b" "b 1", 5, "id 'a\\x1Bb': raw control byte 0x1B (write it as %1B)", NULL);
    expect_line_refused("a 1 eu%4", 8,
                        "zone 'eu%4': '%' at byte 3 is not followed by two hex digits (write a literal '%' as %25)", "a");
    expect_line_refused("a 1 e\x7f", 6, "zone 'e\\x7F': raw control byte 0x7F (write it as %7F)", "a");
    memset(line, 'x', 257);
    memcpy(line + 257, " 1", 3);
    expect_line_refused(line, strlen(line), "id is 257 bytes long (1..256 allowed)", NULL);
    memcpy(line, "a 1 ", 4);
    memset(line + 4, 'z', 65);
    line[69] = '\0';
    expect_line_refused(line, strlen(line), "zone is 65 bytes long (0..64 allowed)", "a");

    /* Arguments and versions. */
    chr_ringfile_member out = CHR_RINGFILE_MEMBER_INIT;
    assert_chr_error(chr_ringfile_parse_member("a 1", 3, NULL, NULL), CHR_EINVAL, "chr_ringfile_parse_member");
    assert_chr_error(chr_ringfile_parse_member(NULL, 3, NULL, &out), CHR_EINVAL, "chr_ringfile_parse_member");
    assert_int_equal(out.id_len, 0);
    for (uint32_t v = 0; v <= CHR_RINGFILE_MEMBER_VERSION + 1; v += CHR_RINGFILE_MEMBER_VERSION + 1) {
        memset(&out, 0x5A, sizeof out);
        out.version = v;
        assert_chr_error(chr_ringfile_parse_member("a 1", 3, NULL, &out), CHR_EVERSION, "chr_ringfile_parse_member");
        assert_int_equal(out.weight, 0x5A5A5A5Au); /* not written */
    }
    assert_chr_ok(chr_ringfile_member_init(&out, CHR_RINGFILE_MEMBER_VERSION));
    assert_chr_status(chr_ringfile_parse_member("a 1x", 4, NULL, &out), CHR_EFORMAT);
    assert_string_equal(chr_last_error(), "<text>: weight '1x' is not a whole number (0..1000000)");
    assert_chr_error(chr_ringfile_member_init(NULL, 1), CHR_EINVAL, "chr_ringfile_member_init");
    assert_chr_error(chr_ringfile_member_init(&out, 2), CHR_EVERSION, "chr_ringfile_member_init");
    /* Success leaves the record as it was. */
    const char *before = "<text>: weight '1x' is not a whole number (0..1000000)";
    assert_chr_status(chr_ringfile_parse_member("a 1x", 4, NULL, &out), CHR_EFORMAT);
    m = parse_line_ok("b 2");
    assert_string_equal(chr_last_error(), before);
}

/* The line's pieces the generator joins: fields, blanks, escapes good and
 * bad, comments, directives, control bytes, line breaks, long runs. */
static const char *const line_pieces[] = {
    "a", "b", "z", "0", "7", "12", "007", "1000000", "1000001", "-1", " ", " ", "\t", "  ",
    "#", "# c", "%", "%%", "%%seed", "%20", "%2", "%zz", "%23", "%0a", "\x0b", "\x01", "\x7f",
    "\r", "\n", "\xC2\x9B", "\xEF\xBB\xBF", "-", "x",
};

/* A file holding the line (after a first blank line, where a byte order
 * mark is not the file's) and the line read alone agree: the line is
 * accepted iff the file is accepted with one member and the line holds no
 * line break, with the same id, weight and zone; a refused member line has
 * the same reason and member in both. Options with 1 token per weight keep
 * the ring's limits out of it. */
static void test_member_line_agrees_with_file(void **state) {
    (void)state;
    chr_options base = CHR_OPTIONS_INIT;
    base.tokens_per_weight = 1;
    srand(20261207);
    char line[4096], text[4100];
    size_t accepted = 0, refused_both = 0;
    for (int round = 0; round < 20000; ++round) {
        size_t len = 0;
        if (round % 2 == 0) { /* shaped like a member line: fields of pieces, blanks between */
            static const char *const blanks[] = {" ", "\t", "  ", " \t"};
            static const char *const weights[] = {"0", "7", "007", "1000000", "1000001", "12x", "-1"};
            static const char *const good[] = {"a", "b", "z", "7", "%20", "%23", "%0a", "\xC2\x9B",
                                               "\xEF\xBB\xBF", "-", "node#1", "%25"};
            const int fields = rand() % 4 ? 2 + rand() % 2 : rand() % 5;
            if (rand() % 3 == 0) line[len++] = ' ';
            for (int k = 0; k < fields; ++k) {
                if (k) {
                    const char *b = blanks[rand() % 4];
                    memcpy(line + len, b, strlen(b));
                    len += strlen(b);
                }
                const int parts = k == 1 && rand() % 4 ? 0 : 1 + rand() % 3;
                if (parts == 0) {
                    const char *w = weights[(size_t)rand() % (sizeof weights / sizeof weights[0])];
                    memcpy(line + len, w, strlen(w));
                    len += strlen(w);
                }
                for (int q = 0; q < parts; ++q) {
                    const char *p = rand() % 3 ? good[(size_t)rand() % (sizeof good / sizeof good[0])]
                                               : line_pieces[(size_t)rand() % (sizeof line_pieces / sizeof line_pieces[0])];
                    if (p[0] == ' ' || p[0] == '\t' || (p[0] == '#' && rand() % 4)) p = "a";
                    memcpy(line + len, p, strlen(p));
                    len += strlen(p);
                }
            }
            if (rand() % 4 == 0) {
                memcpy(line + len, " # note", 7);
                len += 7;
            }
        }
        const int pieces = round % 2 == 0 ? 0 : 1 + rand() % 8;
        for (int k = 0; k < pieces; ++k) {
            if (rand() % 40 == 0) { /* a long run: ids and zones near their limits */
                size_t run = (size_t)(60 + rand() % 200);
                memset(line + len, "xz"[rand() % 2], run);
                len += run;
                continue;
            }
            const char *p = line_pieces[(size_t)rand() % (sizeof line_pieces / sizeof line_pieces[0])];
            memcpy(line + len, p, strlen(p));
            len += strlen(p);
        }
        if (round % 50 == 1 && len) line[rand() % (int)len] = '\0';
        chr_ringfile_member m = CHR_RINGFILE_MEMBER_INIT;
        const chr_status line_st = chr_ringfile_parse_member(line, len, "x", &m);
        chr_error_info line_error = CHR_ERROR_INFO_INIT;
        assert_chr_ok(chr_last_error_info(&line_error));
        char line_reason[600];
        snprintf(line_reason, sizeof line_reason, "%s", line_st == CHR_OK ? "" : line_error.reason);
        unsigned char line_member[CHR_NODE_ID_MAX];
        const size_t line_member_len = line_st == CHR_OK || !(line_error.flags & CHR_ERROR_HAS_MEMBER)
                                           ? 0 : line_error.member_len;
        if (line_member_len) memcpy(line_member, line_error.member, line_member_len);

        text[0] = '\n';
        memcpy(text + 1, line, len);
        chr_ring *ring = NULL;
        chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
        const chr_status file_st = chr_ring_new_from_text(text, len + 1, "x", &base, &ring, &info);
        const int has_break = memchr(line, '\n', len) || memchr(line, '\r', len);
        const int file_one = file_st == CHR_OK && info.members == 1;
        if ((line_st == CHR_OK) != (file_one && !has_break))
            fail_msg("line '%.*s': alone %d (%s), in a file %d with %u members", (int)len, line, line_st,
                     line_reason, file_st, info.members);
        assert_true(line_st == CHR_OK || line_st == CHR_EFORMAT);
        if (line_st == CHR_OK) {
            ++accepted;
            chr_node_ref node;
            size_t count = 0;
            assert_chr_ok(chr_ring_nodes(ring, &node, 1, &count));
            assert_int_equal(count, 1);
            expect_member(&m, (const char *)node.id, node.id_len, node.weight, (const char *)node.zone,
                          node.zone_len);
        } else if (file_st != CHR_OK && !has_break) {
            chr_error_info file_error = CHR_ERROR_INFO_INIT;
            assert_chr_ok(chr_last_error_info(&file_error));
            /* a directive line's own faults are the file's: alone it is just not a member line */
            if (strncmp(line_reason, "a directive, not a member line", 30) != 0) {
                ++refused_both;
                if (strcmp(file_error.reason, line_reason) != 0)
                    fail_msg("line '%.*s': reasons differ\n  alone:     %s\n  in a file: %s", (int)len, line,
                             line_reason, file_error.reason);
                const size_t file_member_len = (file_error.flags & CHR_ERROR_HAS_MEMBER) ? file_error.member_len : 0;
                assert_int_equal(file_member_len, line_member_len);
                if (line_member_len) assert_memory_equal(file_error.member, line_member, line_member_len);
            }
        }
        chr_ring_free(ring);
    }
    /* the generator reaches both sides */
    if (accepted < 2000 || refused_both < 2000)
        fail_msg("%zu lines accepted, %zu member lines refused in both: too few", accepted, refused_both);
}

/* ---- known answers ---------------------------------------------------------------- */

/* Every NAME.ring of tests/vectors/ring-file loads to exactly the answers
 * in NAME.expect (fingerprint, counts, revision, canonical or not, owners
 * and replicas of fixed keys); a canonical one exports to its own bytes. */
static void test_vectors(void **state) {
    (void)state;
    DIR *dir = opendir(VECTORS_DIR);
    assert_non_null(dir);
    size_t checked = 0, canonical = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".ring") != 0) continue;
        char path[512], expect_path[512];
        snprintf(path, sizeof path, "%s/%s", VECTORS_DIR, e->d_name);
        snprintf(expect_path, sizeof expect_path, "%s/%.*s.expect", VECTORS_DIR, (int)(n - 5), e->d_name);
        size_t len = 0, expect_len = 0;
        char *text = vectors_read(path, &len), *expect = vectors_read(expect_path, &expect_len);
        assert_non_null(text);
        if (!expect) {
            print_error("%s has no .expect file\n", path);
            fail();
        }
        char *got = vectors_expect(e->d_name, text, len);
        if (!got) {
            print_error("%s: %s\n", path, chr_last_error());
            fail();
        }
        if (strcmp(got, expect) != 0) {
            print_error("%s: answers differ from %s\n--- got:\n%s", path, expect_path, got);
            fail();
        }
        if (strstr(expect, "\ncanonical yes\n")) {
            size_t out_len = 0;
            char *again = vectors_canonical(e->d_name, text, len, &out_len);
            assert_non_null(again);
            assert_int_equal(out_len, len);
            assert_memory_equal(again, text, len);
            free(again);
            ++canonical;
        }
        /* and by path, as embeddings read it */
        chr_ring *ring = NULL;
        chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
        assert_chr_ok(chr_ring_new_from_file(path, NULL, &ring, &info));
        char fp[40];
        snprintf(fp, sizeof fp, "\nfingerprint 0x%016llx\n", (unsigned long long)info.fingerprint);
        assert_non_null(strstr(expect, fp));
        chr_ring_free(ring);
        free(got);
        free(text);
        free(expect);
        ++checked;
    }
    closedir(dir);
    assert_true(checked >= 8);
    assert_true(canonical >= 5);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_random_rings),
        cmocka_unit_test(test_byte_order_mark_id_first),
        cmocka_unit_test(test_malformed_files),
        cmocka_unit_test(test_duplicate_id_spelling),
        cmocka_unit_test(test_overlong_fields),
        cmocka_unit_test(test_fingerprint_mismatch),
        cmocka_unit_test(test_availability_directives),
        cmocka_unit_test(test_file_checks),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_crlf_same_as_lf),
        cmocka_unit_test(test_members_file_compatible),
        cmocka_unit_test(test_canonical_text_exact),
        cmocka_unit_test(test_json_twin_exact),
        cmocka_unit_test(test_export_buffers),
        cmocka_unit_test(test_apply_atomic),
        cmocka_unit_test(test_apply_equals_fresh_random),
        cmocka_unit_test(test_apply_plain_list_to_compat_ring),
        cmocka_unit_test(test_apply_under_readers),
        cmocka_unit_test(test_revision_retrievable),
        cmocka_unit_test(test_info_and_arguments),
        cmocka_unit_test(test_field_spelling),
        cmocka_unit_test(test_member_line),
        cmocka_unit_test(test_member_line_agrees_with_file),
        cmocka_unit_test(test_vectors),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
