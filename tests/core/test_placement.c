/*
 * The placement table as the C API shows it (chr_placement_describe,
 * chr_placement_find), and its hasher rule held at chr_ring_new: a
 * compatibility placement takes only its own hasher, with exactly that
 * hasher's digest size. The short-digest hashers are registered under the
 * names "md5" and "crc32" before anything discovers plugins, so this suite
 * runs in its own process.
 */
#include <string.h>

#include "test_util.h"

/* A "crc32" and an "md5" whose digests are too short for the placements. */
static uint64_t short_hash64(const void *data, size_t len, uint64_t seed) {
    (void)data;
    return len ^ seed;
}
static void short_digest(const void *data, size_t len, unsigned char *out) {
    (void)data;
    memset(out, (int)len, 2);
}
static const chr_hasher short_crc32 = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "crc32",
                                       "2-byte digest", short_hash64, 2, short_digest, 0};
static const chr_hasher short_md5 = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "md5",
                                     "2-byte digest", short_hash64, 2, short_digest, 0};

static int register_short_hashers(void **state) {
    (void)state;
    assert_chr_ok(chr_hasher_register(&short_crc32));
    assert_chr_ok(chr_hasher_register(&short_md5));
    return 0;
}

static void test_describe_every_mode(void **state) {
    (void)state;
    static const struct {
        int32_t mode;
        const char *name, *hasher;
        uint32_t digest_size, flags;
    } want[] = {
        {CHR_PLACEMENT_NATIVE, "native", NULL, 0, CHR_PLACEMENT_SEEDED},
        {CHR_PLACEMENT_KETAMA, "ketama", "md5", 16, 0},
        {CHR_PLACEMENT_KETAMA_UNWEIGHTED, "ketama-unweighted", "md5", 16, 0},
        {CHR_PLACEMENT_NGINX, "nginx", "crc32", 4, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        chr_placement_info info = CHR_PLACEMENT_INFO_INIT;
        assert_chr_ok(chr_placement_describe(want[i].mode, &info));
        assert_int_equal(info.version, CHR_PLACEMENT_INFO_VERSION);
        assert_int_equal(info.mode, want[i].mode);
        assert_string_equal(info.name, want[i].name);
        assert_non_null(info.summary);
        assert_true(strlen(info.summary) > 0);
        if (want[i].hasher) assert_string_equal(info.hasher, want[i].hasher);
        else assert_null(info.hasher);
        assert_int_equal(info.digest_size, want[i].digest_size);
        assert_int_equal(info.flags, want[i].flags);

        int32_t mode = -1;
        assert_chr_ok(chr_placement_find(want[i].name, &mode));
        assert_int_equal(mode, want[i].mode);
    }
    /* The modes are dense: the one after the last is unknown. */
    chr_placement_info info = CHR_PLACEMENT_INFO_INIT;
    assert_chr_error(chr_placement_describe(CHR_PLACEMENT_NGINX + 1, &info), CHR_ENOTSUP,
                     "chr_placement_describe");
    assert_chr_error(chr_placement_describe(-1, &info), CHR_ENOTSUP, "chr_placement_describe");
}

static void test_describe_and_find_errors(void **state) {
    (void)state;
    chr_placement_info info = CHR_PLACEMENT_INFO_INIT;
    int32_t mode = 0;
    assert_chr_error(chr_placement_describe(0, NULL), CHR_EINVAL, "chr_placement_describe");
    info.version = 0;
    assert_chr_error(chr_placement_describe(0, &info), CHR_EVERSION, "chr_placement_describe");
    info.version = CHR_PLACEMENT_INFO_VERSION + 1;
    assert_chr_error(chr_placement_describe(0, &info), CHR_EVERSION, "chr_placement_describe");
    assert_chr_error(chr_placement_find(NULL, &mode), CHR_EINVAL, "chr_placement_find");
    assert_chr_error(chr_placement_find("nginx", NULL), CHR_EINVAL, "chr_placement_find");
    assert_chr_error(chr_placement_find("Nginx", &mode), CHR_ENOTSUP, "chr_placement_find");
    assert_chr_error(chr_placement_find("", &mode), CHR_ENOTSUP, "chr_placement_find");
}

/* A compat placement with another hasher: CHR_EINVAL, naming the placement. */
static void test_other_hasher_names_the_placement(void **state) {
    (void)state;
    chr_options opts = CHR_OPTIONS_INIT;
    opts.placement = CHR_PLACEMENT_NGINX;
    opts.hasher = "fnv1a";
    chr_ring *ring = (chr_ring *)&opts; /* must be reset to NULL */
    assert_chr_error(chr_ring_new(&opts, &ring), CHR_EINVAL, "chr_ring_new");
    assert_null(ring);
    assert_non_null(strstr(chr_last_error(), "placement 'nginx'"));
    assert_non_null(strstr(chr_last_error(), "'crc32'"));
}

/* A hasher whose digest is shorter than the original's is refused, not read past. */
static void test_short_digest_refused(void **state) {
    (void)state;
    static const struct {
        int32_t placement;
        const char *name, *needs;
    } cases[] = {
        {CHR_PLACEMENT_NGINX, "nginx", "exactly 4 bytes"},
        {CHR_PLACEMENT_KETAMA, "ketama", "exactly 16 bytes"},
        {CHR_PLACEMENT_KETAMA_UNWEIGHTED, "ketama-unweighted", "exactly 16 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        chr_options opts = CHR_OPTIONS_INIT;
        opts.placement = cases[i].placement;
        chr_ring *ring = NULL;
        assert_chr_error(chr_ring_new(&opts, &ring), CHR_ENOHASHER, "chr_ring_new");
        assert_null(ring);
        assert_non_null(strstr(chr_last_error(), "2-byte digest"));
        assert_non_null(strstr(chr_last_error(), cases[i].name));
        assert_non_null(strstr(chr_last_error(), cases[i].needs));
    }
}

/* A compat placement ignores seed and tokens_per_weight: rings that
 * differ only in those are one ring, fingerprint included. (With the
 * 2-byte hashers registered here no compat ring can be made, so this
 * checks the native side: seed and tokens_per_weight do count there.) */
static void test_native_fingerprint_counts_seed(void **state) {
    (void)state;
    chr_options a = CHR_OPTIONS_INIT, b = CHR_OPTIONS_INIT;
    b.seed = 7;
    chr_ring *ra = NULL, *rb = NULL;
    assert_chr_ok(chr_ring_new(&a, &ra));
    assert_chr_ok(chr_ring_new(&b, &rb));
    assert_chr_ok(chr_ring_add(ra, "n", 1, 1, NULL, 0, 0));
    assert_chr_ok(chr_ring_add(rb, "n", 1, 1, NULL, 0, 0));
    uint64_t fa = 0, fb = 0;
    assert_chr_ok(chr_ring_fingerprint(ra, &fa));
    assert_chr_ok(chr_ring_fingerprint(rb, &fb));
    assert_int_not_equal(fa, fb);
    chr_ring_free(ra);
    chr_ring_free(rb);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe_every_mode),
        cmocka_unit_test(test_describe_and_find_errors),
        cmocka_unit_test(test_other_hasher_names_the_placement),
        cmocka_unit_test(test_short_digest_refused),
        cmocka_unit_test(test_native_fingerprint_counts_seed),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, register_short_hashers, NULL);
}
