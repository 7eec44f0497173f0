// White-box: the lookup's window compare (src/core/window.hpp), vector and
// portable versions, against the plain unsigned comparison it stands for, on edge
// values (0, the bias boundary, all ones, equal) and random records.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <setjmp.h>

extern "C" { /* cmocka.h declares its functions without linkage */
#include <cmocka.h>
}
#include "test_cases.h"

#include "window.hpp"

namespace {

// The first of values[0..n) that is not below key, or n.
uint32_t expected_rank(const uint32_t *values, uint32_t key, uint32_t n) {
    for (uint32_t j = 0; j < n; ++j)
        if (values[j] >= key) return j;
    return n;
}

// Every n, so the records past n (another bucket's in a lookup) are seen to
// be masked off whatever they compare as.
void check(const uint32_t *values, uint32_t key) {
    uint32_t stored[chring::kWindow];
    for (uint32_t j = 0; j < chring::kWindow; ++j) stored[j] = values[j] ^ chring::kWindowBias;
    for (uint32_t n = 0; n <= chring::kWindow; ++n) {
        const uint32_t want = expected_rank(values, key, n);
        assert_int_equal(chring::window_rank_x2(stored, key, n), 2 * want);
        assert_int_equal(chring::window_rank_x2_portable(stored, key, n), 2 * want);
        if (want < n) assert_int_equal(chring::record_at_rank_x2(stored, 2 * want), stored[want]);
    }
}

void test_edges(void **) {
    const uint32_t edges[] = {0, 1, 0x7FFFFFFEu, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, 0xFFFFFFFEu, 0xFFFFFFFFu};
    for (uint32_t a : edges)
        for (uint32_t b : edges)
            for (uint32_t key : edges) {
                // key itself is not below; key - 1 is, unless key is 0
                const uint32_t values[chring::kWindow] = {a, b, a ^ b, key, b, key - 1, a, ~a};
                check(values, key);
            }
}

void test_random(void **) {
    uint64_t state = 0x3243F6A8885A308Dull;
    auto next = [&state] {  // splitmix64
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return uint32_t((z ^ (z >> 31)) >> 32);
    };
    for (int i = 0; i < 200000; ++i) {
        uint32_t values[chring::kWindow];
        for (uint32_t &v : values) v = next();
        check(values, next());
    }
}

}  // namespace

int main(int argc, char **argv) {
    const CMUnitTest tests[] = {cmocka_unit_test(test_edges), cmocka_unit_test(test_random)};
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
