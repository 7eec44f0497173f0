/*
 * test_follower.c — chr_follower_*: a ring kept equal to a ring file
 * (suite 'ringfile').
 *
 * Each case writes ring files into a fresh directory and checks what a
 * follower did with them: applied (the ring equals the file), refused (the
 * ring is exactly as before, the state says why, with what was read of the
 * refused file's %%revision and %%fingerprint), or unchanged (nothing read).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "test_util.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct scratch {
    char dir[64];
    char path[96];  /* the followed file */
    char temp[96];  /* written, then renamed over path */
} scratch;

static void scratch_init(scratch *s) {
    snprintf(s->dir, sizeof s->dir, "/tmp/chring-follower-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->path, sizeof s->path, "%s/ring", s->dir);
    snprintf(s->temp, sizeof s->temp, "%s/.ring.tmp", s->dir);
}

static void scratch_clean(scratch *s) {
    unlink(s->path);
    unlink(s->temp);
    assert_int_equal(rmdir(s->dir), 0);
}

static void write_at(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* Replaces the followed file by rename, as chring's writers do. */
static void replace(scratch *s, const char *text) {
    write_at(s->temp, text);
    assert_int_equal(rename(s->temp, s->path), 0);
}

static chr_ring *empty_ring(void) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new(NULL, &ring));
    return ring;
}

static uint64_t text_fingerprint(const char *text) {
    chr_ring *ring = NULL;
    assert_chr_ok(chr_ring_new_from_text(text, strlen(text), NULL, NULL, &ring, NULL));
    uint64_t fp = ring_fingerprint(ring);
    chr_ring_free(ring);
    return fp;
}

static chr_follow_state state_of(const chr_follower *f) {
    chr_follow_state st = CHR_FOLLOW_STATE_INIT;
    assert_chr_ok(chr_follower_state(f, &st));
    return st;
}

/* One check: its status and outcome must be these. */
static void expect_checked(chr_follower *f, chr_status status, int32_t outcome) {
    int32_t got = -1;
    chr_status st = chr_follower_check(f, &got, NULL);
    if (st != status || got != outcome)
        fail_msg("check: status %d outcome %d (want %d, %d): %s", st, got, status, outcome,
                 chr_last_error());
}

static const char *const kGood1 = "%%revision 7\na 1\nb 2\n";
static const char *const kGood2 = "%%revision 8\na 1\nb 2\nc 1\n";

/* ---- cases --------------------------------------------------------------- */

/* The first check applies whatever the stamp; later ones only a new file. */
static void test_applies_then_unchanged(void **state) {
    (void)state;
    scratch s;
    scratch_init(&s);
    replace(&s, kGood1);
    chr_ring *ring = empty_ring();
    chr_follower *f = NULL;
    assert_chr_ok(chr_follower_new(ring, s.path, 0, &f));

    chr_follow_state st = state_of(f);
    assert_int_equal(st.checks, 0);
    assert_int_equal(st.last_outcome, CHR_FOLLOW_UNCHANGED);
    assert_int_equal(st.status, CHR_OK);

    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    int32_t outcome = -1;
    assert_chr_ok(chr_follower_check(f, &outcome, &info));
    assert_int_equal(outcome, CHR_FOLLOW_APPLIED);
    assert_int_equal(info.added, 2);
    assert_int_equal(info.revision, 7);
    assert_int_equal(ring_fingerprint(ring), text_fingerprint(kGood1));
    st = state_of(f);
    assert_int_equal(st.applied, 1);
    assert_int_equal(st.applied_revision, 7);
    assert_true(st.applied_flags & CHR_RINGFILE_HAS_REVISION);
    assert_int_equal(st.applied_fingerprint, ring_fingerprint(ring));

    /* Unchanged: info is left as it was. */
    chr_ringfile_info untouched = info;
    untouched.added = 12345;
    assert_chr_ok(chr_follower_check(f, &outcome, &untouched));
    assert_int_equal(outcome, CHR_FOLLOW_UNCHANGED);
    assert_int_equal(untouched.added, 12345);

    replace(&s, kGood2);
    assert_chr_ok(chr_follower_check(f, &outcome, &info));
    assert_int_equal(outcome, CHR_FOLLOW_APPLIED);
    assert_int_equal(info.added, 1);
    assert_int_equal(info.removed, 0);
    assert_int_equal(ring_fingerprint(ring), text_fingerprint(kGood2));
    expect_checked(f, CHR_OK, CHR_FOLLOW_UNCHANGED);
    st = state_of(f);
    assert_int_equal(st.checks, 4);
    assert_int_equal(st.applied, 2);
    assert_int_equal(st.refused, 0);
    assert_int_equal(st.applied_revision, 8);
    assert_string_equal(st.message, "");

    chr_follower_free(f);
    chr_ring_free(ring);
    scratch_clean(&s);
}

/* A file that changes only the availability state is applied: the ring
 * gets the marks with the same tokens, and the state records the digest;
 * a version-1 state is filled up to its end only. */
static void test_availability_only_change(void **state) {
    (void)state;
    scratch s;
    scratch_init(&s);
    replace(&s, kGood2);
    chr_ring *ring = empty_ring();
    chr_follower *f = NULL;
    assert_chr_ok(chr_follower_new(ring, s.path, 0, &f));
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);
    const uint64_t fp = ring_fingerprint(ring);
    assert_int_equal(state_of(f).applied_availability, 0);

    replace(&s, "%%revision 9\n%%down b\na 1\nb 2\nc 1\n");
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    int32_t outcome = -1;
    assert_chr_ok(chr_follower_check(f, &outcome, &info));
    assert_int_equal(outcome, CHR_FOLLOW_APPLIED);
    assert_int_equal(info.added + info.removed + info.reweighted + info.replaced, 0);
    assert_int_equal(info.down, 1);
    assert_int_equal(ring_fingerprint(ring), fp);
    chr_availability_info avail = CHR_AVAILABILITY_INFO_INIT;
    assert_chr_ok(chr_ring_availability(ring, &avail));
    assert_int_equal(avail.down, 1);
    assert_true(avail.digest != 0);
    assert_int_equal(info.availability, avail.digest);
    chr_follow_state st = state_of(f);
    assert_int_equal(st.applied_availability, avail.digest);
    assert_true(st.applied_flags & CHR_RINGFILE_HAS_AVAILABILITY);

    struct {
        chr_follow_state state;
        unsigned char guard[16];
    } v1;
    memset(&v1, 0xEE, sizeof v1);
    v1.state.version = 1;
    assert_chr_ok(chr_follower_state(f, &v1.state));
    for (size_t i = offsetof(chr_follow_state, applied_availability); i < sizeof v1; ++i)
        assert_int_equal(((unsigned char *)&v1)[i], 0xEE);

    chr_follower_free(f);
    chr_ring_free(ring);
    scratch_clean(&s);
}

/* A bad file is refused once, the ring keeps the last good one, and the
 * state names the fault, the line and what the file claimed to be. */
static void test_refused_keeps_last_good(void **state) {
    (void)state;
    scratch s;
    scratch_init(&s);
    replace(&s, kGood1);
    chr_ring *ring = empty_ring();
    chr_follower *f = NULL;
    assert_chr_ok(chr_follower_new(ring, s.path, 0, &f));
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);
    const uint64_t good = ring_fingerprint(ring);

    replace(&s, "%%revision 9\n%%fingerprint 0x0123456789abcdef\na 1\nb x\n");
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    int32_t outcome = -1;
    assert_chr_status(chr_follower_check(f, &outcome, &info), CHR_EFORMAT);
    assert_int_equal(outcome, CHR_FOLLOW_REFUSED);
    assert_int_equal(info.error_line, 4);
    assert_int_equal(ring_fingerprint(ring), good);
    char where[128];
    snprintf(where, sizeof where, "%s:4: ", s.path);
    assert_memory_equal(chr_last_error(), where, strlen(where));

    chr_follow_state st = state_of(f);
    assert_int_equal(st.status, CHR_EFORMAT);
    assert_int_equal(st.last_outcome, CHR_FOLLOW_REFUSED);
    assert_int_equal(st.error_line, 4);
    assert_int_equal(st.refused, 1);
    assert_string_equal(st.message, chr_last_error());
    assert_int_equal(st.refused_flags, CHR_RINGFILE_HAS_REVISION | CHR_RINGFILE_HAS_FINGERPRINT);
    assert_int_equal(st.refused_revision, 9);
    assert_int_equal(st.refused_fingerprint, 0x0123456789abcdefull);
    /* The ring's file is still the one applied last. */
    assert_int_equal(st.applied_revision, 7);
    assert_int_equal(st.applied_fingerprint, good);

    /* Reported once: the same bad file is not read again... */
    expect_checked(f, CHR_OK, CHR_FOLLOW_UNCHANGED);
    st = state_of(f);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.status, CHR_EFORMAT); /* ...and the state still says why */
    assert_int_equal(st.last_outcome, CHR_FOLLOW_UNCHANGED);

    /* A %%fingerprint that does not match the ring it describes. */
    replace(&s, "%%revision 10\n%%fingerprint 0x0000000000000001\na 1\n");
    assert_chr_status(chr_follower_check(f, &outcome, NULL), CHR_EFORMAT);
    assert_int_equal(ring_fingerprint(ring), good);
    st = state_of(f);
    assert_int_equal(st.refused_revision, 10);
    assert_int_equal(st.refused_fingerprint, 1);

    /* Options that differ from the ring's. */
    replace(&s, "%%placement ketama\na:11211 1\n");
    assert_chr_status(chr_follower_check(f, &outcome, NULL), CHR_EOPTIONS);
    assert_int_equal(ring_fingerprint(ring), good);
    st = state_of(f);
    assert_int_equal(st.refused_flags, 0);

    /* A good file again clears the refusal. */
    replace(&s, kGood2);
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);
    st = state_of(f);
    assert_int_equal(st.status, CHR_OK);
    assert_int_equal(st.error_line, 0);
    assert_int_equal(st.refused_flags, 0);
    assert_string_equal(st.message, "");
    assert_int_equal(st.refused, 3);
    assert_int_equal(st.applied, 2);
    assert_int_equal(ring_fingerprint(ring), text_fingerprint(kGood2));

    chr_follower_free(f);
    chr_ring_free(ring);
    scratch_clean(&s);
}

/* A file that is missing (at the start or later) is CHR_EIO once; the ring
 * keeps what it had; the file's return is applied. */
static void test_missing_file(void **state) {
    (void)state;
    scratch s;
    scratch_init(&s);
    chr_ring *ring = empty_ring();
    chr_follower *f = NULL;
    assert_chr_ok(chr_follower_new(ring, s.path, 0, &f));
    assert_chr_status(chr_follower_check(f, NULL, NULL), CHR_EIO);
    assert_non_null(strstr(chr_last_error(), s.path));
    expect_checked(f, CHR_OK, CHR_FOLLOW_UNCHANGED);

    replace(&s, kGood1);
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);
    const uint64_t good = ring_fingerprint(ring);

    assert_int_equal(unlink(s.path), 0);
    expect_checked(f, CHR_EIO, CHR_FOLLOW_REFUSED);
    assert_int_equal(ring_fingerprint(ring), good);
    expect_checked(f, CHR_OK, CHR_FOLLOW_UNCHANGED);

    /* A directory in its place is refused too (a different stamp). */
    assert_int_equal(mkdir(s.path, 0700), 0);
    expect_checked(f, CHR_EIO, CHR_FOLLOW_REFUSED);
    assert_int_equal(rmdir(s.path), 0);

    replace(&s, kGood2);
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);
    assert_int_equal(ring_fingerprint(ring), text_fingerprint(kGood2));
    chr_follow_state st = state_of(f);
    assert_int_equal(st.refused, 3);
    assert_int_equal(st.applied, 2);

    chr_follower_free(f);
    chr_ring_free(ring);
    scratch_clean(&s);
}

/* Every part of the stamp counts: a rewrite in place with another size,
 * and one with the same size but another modification time. */
static void test_stamp_in_place_rewrites(void **state) {
    (void)state;
    scratch s;
    scratch_init(&s);
    write_at(s.path, "a 1\n");
    chr_ring *ring = empty_ring();
    chr_follower *f = NULL;
    assert_chr_ok(chr_follower_new(ring, s.path, 0, &f));
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);

    write_at(s.path, "a 1\nb 1\n"); /* same inode, other size */
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);
    assert_int_equal(ring_fingerprint(ring), text_fingerprint("a 1\nb 1\n"));

    /* Same inode and size; the times set apart explicitly, as a coarse
     * file system clock could otherwise leave them equal. */
    write_at(s.path, "a 1\nc 1\n");
    struct timeval times[2] = {{1000000000, 0}, {1000000000, 0}};
    assert_int_equal(utimes(s.path, times), 0);
    expect_checked(f, CHR_OK, CHR_FOLLOW_APPLIED);
    assert_int_equal(ring_fingerprint(ring), text_fingerprint("a 1\nc 1\n"));
    expect_checked(f, CHR_OK, CHR_FOLLOW_UNCHANGED);

    chr_follower_free(f);
    chr_ring_free(ring);
    scratch_clean(&s);
}

static void test_arguments(void **state) {
    (void)state;
    chr_ring *ring = empty_ring();
    chr_follower *f = (chr_follower *)&f;
    assert_chr_error(chr_follower_new(ring, "x", 0, NULL), CHR_EINVAL, "chr_follower_new");
    assert_chr_error(chr_follower_new(NULL, "x", 0, &f), CHR_EINVAL, "chr_follower_new");
    assert_null(f);
    assert_chr_error(chr_follower_new(ring, NULL, 0, &f), CHR_EINVAL, "chr_follower_new");
    assert_chr_error(chr_follower_new(ring, "", 0, &f), CHR_EINVAL, "chr_follower_new");
    assert_chr_error(chr_follower_new(ring, "x", 1, &f), CHR_EINVAL, "chr_follower_new");
    assert_null(f);

    int32_t outcome = 99;
    assert_chr_error(chr_follower_check(NULL, &outcome, NULL), CHR_EINVAL, "chr_follower_check");
    assert_int_equal(outcome, CHR_FOLLOW_UNCHANGED);

    assert_chr_ok(chr_follower_new(ring, "/nonexistent/chring-follower-test", 0, &f));
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    info.version = CHR_RINGFILE_INFO_VERSION + 1;
    assert_chr_error(chr_follower_check(f, &outcome, &info), CHR_EVERSION, "chr_follower_check");
    assert_int_equal(state_of(f).checks, 0); /* a refused call is no check */

    chr_follow_state st = CHR_FOLLOW_STATE_INIT;
    assert_chr_error(chr_follower_state(NULL, &st), CHR_EINVAL, "chr_follower_state");
    assert_chr_error(chr_follower_state(f, NULL), CHR_EINVAL, "chr_follower_state");
    st.version = 0;
    assert_chr_error(chr_follower_state(f, &st), CHR_EVERSION, "chr_follower_state");
    st.version = CHR_FOLLOW_STATE_VERSION + 1;
    assert_chr_error(chr_follower_state(f, &st), CHR_EVERSION, "chr_follower_state");

    memset(&st, 0xAB, sizeof st);
    assert_chr_ok(chr_follow_state_init(&st, CHR_FOLLOW_STATE_VERSION));
    chr_follow_state zero = CHR_FOLLOW_STATE_INIT;
    assert_memory_equal(&st, &zero, sizeof st);
    assert_chr_error(chr_follow_state_init(NULL, 1), CHR_EINVAL, "chr_follow_state_init");
    assert_chr_error(chr_follow_state_init(&st, 0), CHR_EVERSION, "chr_follow_state_init");

    chr_follower_free(f);
    chr_follower_free(NULL);
    chr_ring_free(ring);
}

/* One thread checks while the file flips between two good versions, one
 * reads the state and readers look keys up: every lookup finds a member of
 * one of the two files, and the last check leaves the ring equal to the
 * file as it ends. TSan runs this too. */
typedef struct shared {
    chr_ring *ring;
    chr_follower *follower;
    volatile int stop;
    unsigned long bad;
} shared;

static void *state_reader(void *arg) {
    shared *sh = arg;
    while (!sh->stop) {
        chr_follow_state st = CHR_FOLLOW_STATE_INIT;
        if (chr_follower_state(sh->follower, &st) != CHR_OK || st.status != CHR_OK) sh->bad++;
    }
    return NULL;
}

static void *key_reader(void *arg) {
    shared *sh = arg;
    unsigned i = 0;
    while (!sh->stop) {
        char key[16];
        int n = snprintf(key, sizeof key, "k%u", i++);
        chr_node_ref ref;
        chr_status st = chr_ring_lookup(sh->ring, key, (size_t)n, &ref);
        if (st != CHR_OK || ref.id_len != 1 || (ref.id[0] != 'a' && ref.id[0] != 'b' && ref.id[0] != 'c'))
            sh->bad++;
    }
    return NULL;
}

static void test_concurrent_use(void **state) {
    (void)state;
    scratch s;
    scratch_init(&s);
    replace(&s, kGood1);
    shared sh = {empty_ring(), NULL, 0, 0};
    assert_chr_ok(chr_follower_new(sh.ring, s.path, 0, &sh.follower));
    expect_checked(sh.follower, CHR_OK, CHR_FOLLOW_APPLIED);
    pthread_t t[2];
    assert_int_equal(pthread_create(&t[0], NULL, state_reader, &sh), 0);
    assert_int_equal(pthread_create(&t[1], NULL, key_reader, &sh), 0);
    for (int i = 0; i < 200; i++) {
        replace(&s, i % 2 ? kGood1 : kGood2);
        int32_t outcome;
        assert_chr_ok(chr_follower_check(sh.follower, &outcome, NULL));
    }
    sh.stop = 1;
    assert_int_equal(pthread_join(t[0], NULL), 0);
    assert_int_equal(pthread_join(t[1], NULL), 0);
    assert_int_equal(sh.bad, 0);
    expect_checked(sh.follower, CHR_OK, CHR_FOLLOW_UNCHANGED);
    assert_int_equal(ring_fingerprint(sh.ring), text_fingerprint(kGood1)); /* i = 199 wrote kGood1 */

    chr_follower_free(sh.follower);
    chr_ring_free(sh.ring);
    scratch_clean(&s);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_applies_then_unchanged),
        cmocka_unit_test(test_availability_only_change),
        cmocka_unit_test(test_refused_keeps_last_good),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_stamp_in_place_rewrites),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_concurrent_use),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
