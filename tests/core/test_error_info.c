/*
 * chr_last_error_info(): the last failure of a thread as data. Each path
 * that records a field is asserted field by field (a ring file's source,
 * line and the earlier line of a duplicate, the member's bytes, the index
 * of a batch's bad change); a fresh thread reads CHR_OK and empty strings;
 * a successful call, and a failed chr_last_error_info() itself, leave the
 * record as it was.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, write, unlink */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define ALL_FLAGS                                                                        \
    (CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE | CHR_ERROR_HAS_OTHER_LINE | CHR_ERROR_HAS_MEMBER | \
     CHR_ERROR_HAS_CHANGE)

/* This thread's record, checked for what holds of every record. */
static chr_error_info last_info(void) {
    chr_error_info info = CHR_ERROR_INFO_INIT;
    assert_chr_ok(chr_last_error_info(&info));
    assert_int_equal(info.version, CHR_ERROR_INFO_VERSION);
    assert_non_null(info.function);
    assert_non_null(info.message);
    assert_non_null(info.reason);
    assert_non_null(info.source);
    assert_string_equal(info.message, chr_last_error());
    /* The reason is the end of the message. */
    const size_t message_len = strlen(info.message), reason_len = strlen(info.reason);
    assert_true(reason_len <= message_len);
    assert_string_equal(info.message + (message_len - reason_len), info.reason);
    assert_int_equal(info.flags & ~(unsigned)ALL_FLAGS, 0);
    assert_int_equal(info.reserved0, 0);
    if (!(info.flags & CHR_ERROR_HAS_SOURCE)) assert_string_equal(info.source, "");
    if (!(info.flags & CHR_ERROR_HAS_MEMBER)) {
        assert_null(info.member);
        assert_int_equal(info.member_len, 0);
    }
    return info;
}

static void assert_member(const chr_error_info *info, const void *id, size_t len) {
    assert_true(info->flags & CHR_ERROR_HAS_MEMBER);
    assert_int_equal(info->member_len, len);
    assert_memory_equal(info->member, id, len);
}

/* A ring file's failure: source, line and the message "source:line: reason". */
static void assert_file_failure(const chr_error_info *info, chr_status status, const char *function,
                                const char *source, uint32_t line, const char *reason) {
    assert_int_equal(info->status, status);
    assert_string_equal(info->function, function);
    assert_true(info->flags & CHR_ERROR_HAS_SOURCE);
    assert_true(info->flags & CHR_ERROR_HAS_LINE);
    assert_string_equal(info->source, source);
    assert_int_equal(info->line, line);
    assert_string_equal(info->reason, reason);
    char message[512];
    if (line) snprintf(message, sizeof message, "%s:%u: %s", source, line, reason);
    else snprintf(message, sizeof message, "%s: %s", source, reason);
    assert_string_equal(info->message, message);
}

static chr_status ring_from_text(const char *text, const char *name) {
    chr_ring *ring = NULL;
    chr_status st = chr_ring_new_from_text(text, strlen(text), name, NULL, &ring, NULL);
    chr_ring_free(ring);
    return st;
}

/* ---- a fresh thread, versions, what leaves the record ---------------------- */

static void *read_fresh_record(void *out) {
    chr_error_info *info = out;
    info->version = CHR_ERROR_INFO_VERSION;
    if (chr_last_error_info(info) != CHR_OK) info->version = 0;
    return NULL;
}

static void test_fresh_thread_reads_ok_and_empty(void **state) {
    (void)state;
    assert_chr_error(chr_ring_remove(NULL, "a", 1), CHR_EINVAL, "chr_ring_remove");
    chr_error_info info;
    memset(&info, 0xAB, sizeof info);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, read_fresh_record, &info), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(info.version, CHR_ERROR_INFO_VERSION);
    assert_int_equal(info.status, CHR_OK);
    assert_int_equal(info.flags, 0);
    assert_int_equal(info.line, 0);
    assert_int_equal(info.other_line, 0);
    assert_int_equal(info.reserved0, 0);
    assert_int_equal(info.change_index, 0);
    assert_string_equal(info.function, "");
    assert_string_equal(info.message, "");
    assert_string_equal(info.reason, "");
    assert_string_equal(info.source, "");
    assert_null(info.member);
    assert_int_equal(info.member_len, 0);
    /* This thread's record is its own. */
    assert_int_equal(last_info().status, CHR_EINVAL);
}

static void test_versions_and_null(void **state) {
    (void)state;
    assert_chr_error(chr_ring_remove(NULL, "a", 1), CHR_EINVAL, "chr_ring_remove");
    chr_error_info info = CHR_ERROR_INFO_INIT;
    memset(&info, 0xAB, sizeof info);
    info.version = 0;
    assert_chr_status(chr_last_error_info(&info), CHR_EVERSION);
    info.version = CHR_ERROR_INFO_VERSION + 1;
    assert_chr_status(chr_last_error_info(&info), CHR_EVERSION);
    assert_int_equal(info.status, (chr_status)0xABABABAB); /* not written */
    assert_chr_status(chr_last_error_info(NULL), CHR_EINVAL);
    /* None of them replaced the failure asked about. */
    const chr_error_info after = last_info();
    assert_int_equal(after.status, CHR_EINVAL);
    assert_string_equal(after.function, "chr_ring_remove");
    assert_string_equal(after.reason, "ring is NULL");

    /* chr_error_info_init fails as every X_init does: it records its failure. */
    assert_chr_error(chr_error_info_init(&info, 0), CHR_EVERSION, "chr_error_info_init");
    assert_string_equal(last_info().function, "chr_error_info_init");
}

static void test_success_leaves_the_record(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 2, 1);
    assert_chr_error(chr_ring_add(ring, "node-000", 8, 1, NULL, 0, 0), CHR_EEXIST, "chr_ring_add");
    const chr_error_info before = last_info();
    char message[512];
    snprintf(message, sizeof message, "%s", before.message);

    assert_chr_ok(chr_ring_add(ring, "fresh", 5, 1, NULL, 0, 0));
    assert_chr_ok(chr_ring_remove(ring, "fresh", 5));
    chr_ring *other = NULL;
    assert_chr_ok(chr_ring_new_from_text("a 1\n", 4, "ok.ring", NULL, &other, NULL));
    chr_ring_free(other);
    size_t count = 0;
    assert_chr_status(chr_ring_nodes(ring, NULL, 0, &count), CHR_ERANGE); /* a size query */

    const chr_error_info after = last_info();
    assert_int_equal(after.status, CHR_EEXIST);
    assert_int_equal(after.flags, before.flags);
    assert_string_equal(after.function, "chr_ring_add");
    assert_string_equal(after.message, message);
    assert_member(&after, "node-000", 8);
    chr_ring_free(ring);
}

/* ---- the ring's calls ------------------------------------------------------- */

static void test_ring_calls_record_the_member(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 2, 1);
    static const char raw[] = {'n', '\0', '\xc2', '\x9b', 'x'}; /* any bytes: NUL, U+009B (CSI) */

    assert_chr_ok(chr_ring_add(ring, raw, sizeof raw, 1, NULL, 0, 0));
    assert_chr_error(chr_ring_add(ring, raw, sizeof raw, 2, NULL, 0, 0), CHR_EEXIST, "chr_ring_add");
    chr_error_info info = last_info();
    assert_string_equal(info.function, "chr_ring_add");
    assert_int_equal(info.flags, CHR_ERROR_HAS_MEMBER);
    assert_member(&info, raw, sizeof raw);
    assert_string_equal(info.reason, "node 'n%00%C2%9Bx' is already in the ring");
    assert_string_equal(info.message, "chr_ring_add: node 'n%00%C2%9Bx' is already in the ring");

    assert_chr_error(chr_ring_remove(ring, "gone", 4), CHR_ENOENT, "chr_ring_remove");
    info = last_info();
    assert_string_equal(info.function, "chr_ring_remove");
    assert_int_equal(info.flags, CHR_ERROR_HAS_MEMBER);
    assert_member(&info, "gone", 4);
    assert_string_equal(info.reason, "no node 'gone' in the ring");

    assert_chr_error(chr_ring_set_weight(ring, "node-001", 8, CHR_WEIGHT_MAX + 1), CHR_ERANGE,
                     "chr_ring_set_weight");
    info = last_info();
    assert_string_equal(info.function, "chr_ring_set_weight");
    assert_member(&info, "node-001", 8);

    /* An id the ring refuses as an id is not a member. */
    char long_id[CHR_NODE_ID_MAX + 1];
    memset(long_id, 'q', sizeof long_id);
    assert_chr_error(chr_ring_add(ring, long_id, sizeof long_id, 1, NULL, 0, 0), CHR_ERANGE,
                     "chr_ring_add");
    info = last_info();
    assert_int_equal(info.flags, 0);
    assert_string_equal(info.function, "chr_ring_add");
    chr_ring_free(ring);
}

static void test_batch_records_the_change(void **state) {
    (void)state;
    chr_ring *ring = ring_with_nodes(NULL, 2, 1);
    const chr_change changes[] = {
        {CHR_OP_ADD, 1, "a", 1, NULL, 0, 0},
        {CHR_OP_SET_WEIGHT, 2, "a", 1, NULL, 0, 0},
        {CHR_OP_REMOVE, 0, "missing", 7, NULL, 0, 0},
        {CHR_OP_ADD, 1, "b", 1, NULL, 0, 0},
    };
    size_t failed = 99;
    assert_chr_error(chr_ring_apply(ring, changes, 4, &failed), CHR_ENOENT, "chr_ring_apply");
    assert_int_equal(failed, 2);
    chr_error_info info = last_info();
    assert_string_equal(info.function, "chr_ring_apply");
    assert_int_equal(info.flags, CHR_ERROR_HAS_CHANGE | CHR_ERROR_HAS_MEMBER);
    assert_int_equal(info.change_index, 2);
    assert_member(&info, "missing", 7);

    /* Without failed_index too; an unknown op still names its change and id. */
    chr_change bad_op[3];
    memcpy(bad_op, changes, sizeof bad_op);
    bad_op[1].op = 9;
    assert_chr_error(chr_ring_apply(ring, bad_op, 3, NULL), CHR_EINVAL, "chr_ring_apply");
    info = last_info();
    assert_int_equal(info.change_index, 1);
    assert_true(info.flags & CHR_ERROR_HAS_CHANGE);
    assert_member(&info, "a", 1);

    /* chr_ring_apply2: a field this library does not know, set in change 1. */
    struct {
        chr_change c;
        uint64_t later;
    } wide[2] = {{{CHR_OP_ADD, 1, "w0", 2, NULL, 0, 0}, 0}, {{CHR_OP_ADD, 1, "w1", 2, NULL, 0, 0}, 7}};
    assert_chr_error(chr_ring_apply2(ring, wide, 2, sizeof wide[0], &failed), CHR_ENOTSUP,
                     "chr_ring_apply2");
    assert_int_equal(failed, 1);
    info = last_info();
    assert_string_equal(info.function, "chr_ring_apply2");
    assert_int_equal(info.flags & CHR_ERROR_HAS_CHANGE, CHR_ERROR_HAS_CHANGE);
    assert_int_equal(info.change_index, 1);

    /* A batch-wide error is no change's. */
    assert_chr_error(chr_ring_apply(ring, NULL, 3, &failed), CHR_EINVAL, "chr_ring_apply");
    assert_int_equal(failed, 3);
    assert_int_equal(last_info().flags, 0);
    chr_ring_free(ring);
}

/* ---- ring files ----------------------------------------------------------- */

static void test_duplicate_id_names_both_lines(void **state) {
    (void)state;
    assert_chr_status(ring_from_text("# members\na 1\nb 1\na 2\n", "bad.ring"), CHR_EFORMAT);
    chr_error_info info = last_info();
    assert_file_failure(&info, CHR_EFORMAT, "chr_ring_new_from_text", "bad.ring", 4,
                        "duplicate id 'a' (first on line 2)");
    assert_true(info.flags & CHR_ERROR_HAS_OTHER_LINE);
    assert_int_equal(info.other_line, 2);
    assert_member(&info, "a", 1);
    assert_false(info.flags & CHR_ERROR_HAS_CHANGE);

    /* The member is the decoded id; the name defaults to "<text>". */
    static const char text[] = "a%20b 1\nc 1\na%20b 1\n";
    chr_ring *ring = NULL;
    assert_chr_status(chr_ring_new_from_text(text, sizeof text - 1, NULL, NULL, &ring, NULL), CHR_EFORMAT);
    info = last_info();
    assert_file_failure(&info, CHR_EFORMAT, "chr_ring_new_from_text", "<text>", 3,
                        "duplicate id 'a%20b' (first on line 1)");
    assert_int_equal(info.other_line, 1);
    assert_member(&info, "a b", 3);
}

static void test_directive_conflicts_name_the_earlier_line(void **state) {
    (void)state;
    assert_chr_status(ring_from_text("%%seed 1\n\n%%seed 2\n", "d.ring"), CHR_EFORMAT);
    chr_error_info info = last_info();
    assert_file_failure(&info, CHR_EFORMAT, "chr_ring_new_from_text", "d.ring", 3,
                        "duplicate %%seed (first on line 1)");
    assert_int_equal(info.flags, CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE | CHR_ERROR_HAS_OTHER_LINE);
    assert_int_equal(info.other_line, 1);

    assert_chr_status(ring_from_text("a 1\n%%seed 2\n", "d.ring"), CHR_EFORMAT);
    info = last_info();
    assert_int_equal(info.line, 2);
    assert_int_equal(info.other_line, 1);

    assert_chr_status(ring_from_text("%%seed 2\n%%ring-file 1\n", "d.ring"), CHR_EFORMAT);
    info = last_info();
    assert_int_equal(info.line, 2);
    assert_int_equal(info.other_line, 1);

    /* Any other error has no other line. */
    assert_chr_status(ring_from_text("%%seed x\n", "d.ring"), CHR_EFORMAT);
    info = last_info();
    assert_int_equal(info.line, 1);
    assert_int_equal(info.flags, CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE);
}

static void test_member_line_errors_name_the_member(void **state) {
    (void)state;
    assert_chr_status(ring_from_text("a 1\nb 12x eu\n", "m.ring"), CHR_EFORMAT);
    chr_error_info info = last_info();
    assert_file_failure(&info, CHR_EFORMAT, "chr_ring_new_from_text", "m.ring", 2,
                        "weight '12x' is not a whole number (0..1000000)");
    assert_member(&info, "b", 1);
    assert_false(info.flags & CHR_ERROR_HAS_OTHER_LINE);

    assert_chr_status(ring_from_text("b 1 z%zz\n", "m.ring"), CHR_EFORMAT);
    info = last_info();
    assert_int_equal(info.line, 1);
    assert_member(&info, "b", 1);

    /* An id that does not decode is no member. */
    assert_chr_status(ring_from_text("b%zz 1\n", "m.ring"), CHR_EFORMAT);
    info = last_info();
    assert_int_equal(info.line, 1);
    assert_int_equal(info.flags, CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE);
}

static void test_file_errors_name_the_file(void **state) {
    (void)state;
    chr_ring *ring = NULL;
    assert_chr_status(chr_ring_new_from_file("/nonexistent/dir/x.ring", NULL, &ring, NULL), CHR_EIO);
    chr_error_info info = last_info();
    assert_int_equal(info.status, CHR_EIO);
    assert_string_equal(info.function, "chr_ring_new_from_file");
    assert_int_equal(info.flags, CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE);
    assert_string_equal(info.source, "/nonexistent/dir/x.ring");
    assert_int_equal(info.line, 0);
    assert_string_equal(info.reason, "cannot open the ring file: No such file or directory");
    assert_string_equal(info.message,
                        "/nonexistent/dir/x.ring: cannot open the ring file: No such file or directory");

    /* chr_ring_new_from_file names itself, in the record and the message. */
    char path[] = "/tmp/chring-error-info-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a 1\n", 4), 4);
    chr_options base = CHR_OPTIONS_INIT;
    base.tokens_per_weight = 0;
    assert_chr_error(chr_ring_new_from_file(path, &base, &ring, NULL), CHR_ERANGE,
                     "chr_ring_new_from_file");
    info = last_info();
    assert_string_equal(info.function, "chr_ring_new_from_file");
    assert_string_equal(info.reason, "tokens_per_weight 0 is out of range (1..65536)");

    /* Applied, a malformed file: the function that read it, the path, the line. */
    assert_int_equal(write(fd, "a 1\n", 4), 4);
    close(fd);
    chr_ring *target = ring_with_nodes(NULL, 1, 1);
    assert_chr_status(chr_ring_apply_file(target, path, NULL), CHR_EFORMAT);
    info = last_info();
    assert_file_failure(&info, CHR_EFORMAT, "chr_ring_apply_file", path, 2,
                        "duplicate id 'a' (first on line 1)");
    chr_ring_free(target);
    unlink(path);
}

/* A follower's check records its failures as chr_follower_check's. */
static void test_follower_check_records_its_reads(void **state) {
    (void)state;
    char path[] = "/tmp/chring-error-info-follow-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a 1\nb 1\na 2\n", 12), 12);
    close(fd);
    chr_ring *ring = ring_with_nodes(NULL, 1, 1);
    chr_follower *follower = NULL;
    assert_chr_ok(chr_follower_new(ring, path, 0, &follower));
    int32_t outcome = 0;
    assert_chr_status(chr_follower_check(follower, &outcome, NULL), CHR_EFORMAT);
    chr_error_info info = last_info();
    assert_file_failure(&info, CHR_EFORMAT, "chr_follower_check", path, 3,
                        "duplicate id 'a' (first on line 1)");
    assert_int_equal(info.other_line, 1);
    assert_member(&info, "a", 1);
    chr_follower_free(follower);

    unlink(path);
    assert_chr_ok(chr_follower_new(ring, path, 0, &follower));
    assert_chr_status(chr_follower_check(follower, &outcome, NULL), CHR_EIO);
    info = last_info();
    assert_string_equal(info.function, "chr_follower_check");
    assert_string_equal(info.source, path);
    assert_int_equal(info.line, 0);
    chr_follower_free(follower);
    chr_ring_free(ring);
}

static void test_ring_file_refusals(void **state) {
    (void)state;
    /* A weight the placement does not take: the member's line and id. */
    assert_chr_status(
        ring_from_text("%%placement ketama-unweighted\na 1\nbee 2\n", "k.ring"), CHR_EFORMAT);
    chr_error_info info = last_info();
    assert_file_failure(&info, CHR_EFORMAT, "chr_ring_new_from_text", "k.ring", 3,
                        "weight 2 of 'bee' is out of range for placement ketama-unweighted (0..1: use "
                        "ketama for weighted servers)");
    assert_member(&info, "bee", 3);

    /* Options that differ from the ring's, applied. */
    chr_ring *ring = ring_with_nodes(NULL, 1, 1);
    static const char text[] = "%%seed 8\na 1\n";
    assert_chr_status(chr_ring_apply_text(ring, text, sizeof text - 1, "o.ring", NULL), CHR_EOPTIONS);
    info = last_info();
    assert_file_failure(&info, CHR_EOPTIONS, "chr_ring_apply_text", "o.ring", 1,
                        "%%seed 8 differs from the ring's seed 0");
    assert_false(info.flags & CHR_ERROR_HAS_MEMBER);
    chr_ring_free(ring);
}

static void test_unescape_names_its_function(void **state) {
    (void)state;
    char out[8];
    size_t len = 0;
    assert_chr_status(chr_ringfile_unescape("a%zz", 4, "id", out, sizeof out, &len), CHR_EFORMAT);
    const chr_error_info info = last_info();
    assert_string_equal(info.function, "chr_ringfile_unescape");
    assert_int_equal(info.flags, 0);
    /* The message names the field, not the function: it is the reason whole. */
    assert_string_equal(info.reason, info.message);
    assert_string_equal(info.message,
                        "id 'a%zz': '%' at byte 2 is not followed by two hex digits (write a literal "
                        "'%' as %25)");
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_thread_reads_ok_and_empty),
        cmocka_unit_test(test_versions_and_null),
        cmocka_unit_test(test_success_leaves_the_record),
        cmocka_unit_test(test_ring_calls_record_the_member),
        cmocka_unit_test(test_batch_records_the_change),
        cmocka_unit_test(test_duplicate_id_names_both_lines),
        cmocka_unit_test(test_directive_conflicts_name_the_earlier_line),
        cmocka_unit_test(test_member_line_errors_name_the_member),
        cmocka_unit_test(test_file_errors_name_the_file),
        cmocka_unit_test(test_follower_check_records_its_reads),
        cmocka_unit_test(test_ring_file_refusals),
        cmocka_unit_test(test_unescape_names_its_function),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
