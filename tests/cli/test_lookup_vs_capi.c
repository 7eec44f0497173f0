/*
 * `chring lookup` / `chring inspect` agree with the C API on the same
 * membership: the fingerprint, every key's owner and every replica list,
 * under each replica policy.
 *
 * The ring here is built with chring.h from the members of
 * data/mixed.members, written out by hand (an id with spaces and UTF-8,
 * one with a NUL byte, one starting with '#', CJK, zones, weights 1..3), so
 * the test also proves the CLI reads the file (through the library's ring-file
 * parser) as what it means.
 *
 * Usage: test_lookup_vs_capi CHRING MEMBERS_FILE
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chr_assert.h"

static const char *chring_path;
static const char *members_path;

/* data/mixed.members, decoded: id, weight, zone; tags are file positions. */
static const struct {
    const char *id;
    size_t id_len;
    uint32_t weight;
    const char *zone;
} members[] = {
    {"caf\xc3\xa9 au lait", 13, 1, "z#1"},
    {"node#1", 6, 3, ""},
    {"bin\0ary", 7, 1, ""},
    {"#hash", 5, 2, ""},
    {"\xe6\x9d\xb1\xe4\xba\xac", 6, 1, "asia"},
};
#define MEMBER_COUNT (sizeof members / sizeof members[0])
#define KEY_COUNT 20000
#define REPLICAS 3

static int setup_ring(void **state) {
    chr_ring *ring = NULL;
    if (chr_ring_new(NULL, &ring) != CHR_OK) return -1;
    for (size_t i = 0; i < MEMBER_COUNT; ++i)
        if (chr_ring_add(ring, members[i].id, members[i].id_len, members[i].weight, members[i].zone,
                         strlen(members[i].zone), i) != CHR_OK)
            return -1;
    *state = ring;
    return 0;
}

static int teardown_ring(void **state) {
    chr_ring_free(*state);
    return 0;
}

/* The CLI's spelling of an id: %XX for control bytes, space, '%', a
 * leading '#' (the ids above are valid UTF-8, kept as they are). */
static void encode_id(const unsigned char *id, size_t len, char *out) {
    for (size_t i = 0; i < len; ++i) {
        unsigned char c = id[i];
        if (c <= 0x20 || c == 0x7f || c == '%' || (i == 0 && c == '#'))
            out += sprintf(out, "%%%02X", c);
        else
            *out++ = (char)c;
    }
    *out = '\0';
}

static void key_text(size_t i, char *buf, size_t size) {
    snprintf(buf, size, i % 7 == 0 ? "caf\xc3\xa9-%zu" : "user:%zu", i);
}

/* Runs `chring ARGS < keys` and returns its stdout, read whole. */
static char *run_chring(const char *args, int with_keys) {
    char keys_path[] = "/tmp/chring-cli-keys-XXXXXX";
    int fd = mkstemp(keys_path);
    assert_true(fd >= 0);
    FILE *keys = fdopen(fd, "w");
    assert_non_null(keys);
    for (size_t i = 0; with_keys && i < KEY_COUNT; ++i) {
        char key[64];
        key_text(i, key, sizeof key);
        fprintf(keys, "%s\n", key);
    }
    assert_int_equal(fclose(keys), 0);

    char command[4096];
    snprintf(command, sizeof command, "env -u LD_LIBRARY_PATH '%s' %s -m '%s' < '%s'", chring_path, args,
             members_path, keys_path);
    FILE *p = popen(command, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 4096) {
            cap *= 2;
            out = realloc(out, cap);
            assert_non_null(out);
        }
    }
    out[len] = '\0';
    int status = pclose(p);
    unlink(keys_path);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        print_error("'%s' failed (status %d)\n", command, status);
        fail();
    }
    return out;
}

static void fingerprint_matches_inspect(void **state) {
    uint64_t fp = 0;
    assert_chr_ok(chr_ring_fingerprint(*state, &fp));
    char want[64];
    snprintf(want, sizeof want, "ring,fingerprint,0x%016llx\n", (unsigned long long)fp);
    char *out = run_chring("inspect --format csv", 0);
    if (!strstr(out, want)) {
        print_error("inspect printed no line '%s':\n%s\n", want, out);
        fail();
    }
    free(out);
}

/* Each output line is "key,owner[,replica...]"; compares it with what
 * chr_ring_replicas_policy says for that key (n = 1 is the owner alone). */
static void check_lines(const chr_ring *ring, char *out, size_t n, int32_t policy) {
    size_t line_no = 0;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), ++line_no) {
        char key[64];
        key_text(line_no, key, sizeof key);
        chr_node_ref refs[REPLICAS];
        size_t count = 0;
        assert_chr_ok(chr_ring_replicas_policy(ring, key, strlen(key), policy, n, refs, &count));
        if (n == 1) {
            chr_node_ref owner;
            assert_chr_ok(chr_ring_lookup(ring, key, strlen(key), &owner));
            assert_memory_equal(owner.id, refs[0].id, owner.id_len);
        }
        char want[2048];
        char *w = want + sprintf(want, "%s", key);
        for (size_t r = 0; r < count; ++r) {
            *w++ = ',';
            encode_id(refs[r].id, refs[r].id_len, w);
            w += strlen(w);
        }
        if (strcmp(line, want) != 0) {
            print_error("key %zu: chring printed '%s', the C API says '%s'\n", line_no, line, want);
            fail();
        }
    }
    assert_int_equal(line_no, KEY_COUNT);
}

static void owners_match_lookup(void **state) {
    char *out = run_chring("lookup --format csv --no-header", 1);
    check_lines(*state, out, 1, CHR_REPLICAS_NODES);
    free(out);
}

static void replicas_match_lookup(void **state) {
    char *out = run_chring("lookup --format csv --no-header --replicas 3", 1);
    check_lines(*state, out, REPLICAS, CHR_REPLICAS_NODES);
    free(out);
}

/* --policy: the zone policies' lists (mixed.members has 3 zones) */
static void policies_match_lookup(void **state) {
    char *out = run_chring("lookup --format csv --no-header --replicas 3 --policy zones-first", 1);
    check_lines(*state, out, REPLICAS, CHR_REPLICAS_ZONES_FIRST);
    free(out);
    out = run_chring("lookup --format csv --no-header --replicas 3 --policy nts", 1);
    check_lines(*state, out, REPLICAS, CHR_REPLICAS_NTS);
    free(out);
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s CHRING MEMBERS_FILE [CASE_FILTER]\n", argv[0]);
        return 2;
    }
    chring_path = argv[1];
    members_path = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(fingerprint_matches_inspect, setup_ring, teardown_ring),
        cmocka_unit_test_setup_teardown(owners_match_lookup, setup_ring, teardown_ring),
        cmocka_unit_test_setup_teardown(replicas_match_lookup, setup_ring, teardown_ring),
        cmocka_unit_test_setup_teardown(policies_match_lookup, setup_ring, teardown_ring),
    };
    chr_select_cases(argc > 3 ? argv[3] : NULL, tests, sizeof tests / sizeof tests[0]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
