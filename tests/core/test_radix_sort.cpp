// White-box: the fresh tokens' radix sort (src/base/radix_sort.hpp) gives
// exactly std::sort's (value, owner) order, on sizes around its one- and
// two-pass thresholds and on inputs that defeat its bucketing: equal
// values, all-equal, sorted, reversed, crowded top bits, duplicates. So
// does the sort a big build does as it makes its tokens (RangeSort), or
// it reports that a range overflowed (the build then sorts the usual way).
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <setjmp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

extern "C" { /* cmocka.h declares its functions without linkage */
#include <cmocka.h>
}
#include "test_cases.h"

#include "base/radix_sort.hpp"

namespace {

using chring::Token;

// CHR_RADIX_SMALL=1 (meson sets it in sanitizer builds, ~5x slower): only
// the sizes up to the first two-pass one, and RangeSort at its threshold,
// so that the test keeps well within its time limit on a loaded machine.
bool small() {
    const char *v = std::getenv("CHR_RADIX_SMALL");
    return v && std::strcmp(v, "1") == 0;
}

// Sizes: below the std::sort cutoff, one pass (below 2^17), two passes.
std::vector<size_t> sizes() {
    std::vector<size_t> all = {0, 1, 2, 31, 63, 64, 65, 160, 4095, 4096, 4097, 40000, 131071, 131072, 300001};
    if (small()) all.pop_back();
    return all;
}

void check_sorts_like_std_sort(std::vector<Token> tokens) {
    std::vector<Token> expected = tokens;
    std::sort(expected.begin(), expected.end());
    chring::sort_tokens(tokens);
    assert_int_equal(tokens.size(), expected.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i].value != expected[i].value || tokens[i].owner != expected[i].owner)
            fail_msg("n = %zu: token %zu is (%llx, %u), std::sort has (%llx, %u)", tokens.size(), i,
                     (unsigned long long)tokens[i].value, tokens[i].owner,
                     (unsigned long long)expected[i].value, expected[i].owner);
    }
}

// n tokens, value(i, rng) and owner(i, rng) each.
template <class Value, class Owner>
std::vector<Token> make(size_t n, Value value, Owner owner) {
    std::mt19937_64 rng(n * 7919 + 1);
    std::vector<Token> t(n);
    for (size_t i = 0; i < n; ++i) {
        t[i].value = value(i, rng);
        t[i].owner = owner(i, rng);
    }
    return t;
}

uint32_t random_owner(size_t, std::mt19937_64 &rng) { return uint32_t(rng() % 100000); }

void test_random(void **) {
    for (size_t n : sizes())
        check_sorts_like_std_sort(make(n, [](size_t, std::mt19937_64 &rng) { return rng(); }, random_owner));
    // The largest first pass used by a ring (2^20 tokens and more).
    check_sorts_like_std_sort(make(size_t(1) << 20, [](size_t, std::mt19937_64 &rng) { return rng(); }, random_owner));
}

void test_equal_values(void **) {
    // 16 distinct values: equal values must come out ordered by owner.
    for (size_t n : sizes())
        check_sorts_like_std_sort(make(
            n, [](size_t, std::mt19937_64 &rng) { return (rng() % 16) * 0x0F0F0F0F0F0F0F0Full; },
            random_owner));
    // Pairs of tokens with the same value, as a 64-bit hash collision makes.
    for (size_t n : sizes())
        check_sorts_like_std_sort(make(
            n, [](size_t i, std::mt19937_64 &) { return (uint64_t(i / 2) * 0x9E3779B97F4A7C15ull); },
            [](size_t i, std::mt19937_64 &) { return uint32_t(1000 - i % 2); }));
}

void test_all_equal(void **) {
    for (size_t n : sizes()) {
        check_sorts_like_std_sort(make(n, [](size_t, std::mt19937_64 &) { return uint64_t(42); }, random_owner));
        // Full duplicates: value and owner equal.
        check_sorts_like_std_sort(make(n, [](size_t, std::mt19937_64 &) { return ~uint64_t(0); },
                                       [](size_t, std::mt19937_64 &) { return uint32_t(7); }));
    }
}

void test_sorted_and_reversed(void **) {
    for (size_t n : sizes()) {
        std::vector<Token> t = make(n, [](size_t, std::mt19937_64 &rng) { return rng(); }, random_owner);
        std::sort(t.begin(), t.end());
        check_sorts_like_std_sort(t);
        std::reverse(t.begin(), t.end());
        check_sorts_like_std_sort(t);
        // Evenly spaced values, ascending and descending.
        check_sorts_like_std_sort(make(n, [](size_t i, std::mt19937_64 &) { return uint64_t(i) << 40; }, random_owner));
        check_sorts_like_std_sort(make(n, [n](size_t i, std::mt19937_64 &) { return uint64_t(n - i) << 40; }, random_owner));
    }
}

void test_crowded_bits(void **) {
    // A skewed hasher: only the low bits vary (every token in the first
    // bucket), the top 11 bits fixed (one first-pass range), or the top 20.
    const uint64_t masks[] = {0xFFFFull, 0x001FFFFFFFFFFFFFull, 0x00000FFFFFFFFFFFull};
    for (uint64_t mask : masks)
        for (size_t n : sizes())
            check_sorts_like_std_sort(make(
                n, [mask](size_t, std::mt19937_64 &rng) { return (rng() & mask) | (0xA5ull << 56 & ~mask); },
                random_owner));
}

// RangeSort fed `tokens` in their order: true and std::sort's order, or
// false (a range overflowed its room).
bool range_sorts_like_std_sort(const std::vector<Token> &tokens) {
    chring::FreshTokens out;
    chring::RangeSort sort(out, tokens.size());
    for (const Token &t : tokens) sort.put(t.value, t.owner);
    if (!sort.finish()) return false;
    std::vector<Token> expected = tokens;
    std::sort(expected.begin(), expected.end());
    assert_int_equal(out.size(), expected.size());
    for (size_t i = 0; i < out.size(); ++i)
        if (out[i].value != expected[i].value || out[i].owner != expected[i].owner)
            fail_msg("n = %zu: token %zu is (%llx, %u), std::sort has (%llx, %u)", out.size(), i,
                     (unsigned long long)out[i].value, out[i].owner, (unsigned long long)expected[i].value,
                     expected[i].owner);
    return true;
}

void test_range_sort(void **) {
    const size_t first = size_t(1) << 20;
    assert_true(chring::RangeSort::suits(first));
    assert_false(chring::RangeSort::suits(first - 1));
    for (size_t n : {first, first + 12345, size_t(1) << 21}) {
        if (small() && n != first) break;
        // Uniform values fit every range's room.
        assert_true(range_sorts_like_std_sort(
            make(n, [](size_t, std::mt19937_64 &rng) { return rng(); }, random_owner)));
        // Pairs of equal values, ordered by owner.
        assert_true(range_sorts_like_std_sort(make(
            n, [](size_t i, std::mt19937_64 &) { return uint64_t(i / 2) * 0x9E3779B97F4A7C15ull; },
            [](size_t i, std::mt19937_64 &) { return uint32_t(1000 - i % 2); })));
    }
    // A skewed hasher: the top bits fixed put every token in one range,
    // which overflows; so does one value for all.
    assert_false(range_sorts_like_std_sort(make(
        first, [](size_t, std::mt19937_64 &rng) { return (rng() & 0x000FFFFFFFFFFFFFull) | (0xA5ull << 56); },
        random_owner)));
    assert_false(range_sorts_like_std_sort(
        make(first, [](size_t, std::mt19937_64 &) { return uint64_t(42); }, random_owner)));
}

}  // namespace

int main(int argc, char **argv) {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_random),      cmocka_unit_test(test_equal_values),
        cmocka_unit_test(test_all_equal),   cmocka_unit_test(test_sorted_and_reversed),
        cmocka_unit_test(test_crowded_bits), cmocka_unit_test(test_range_sort),
    };
    select_cases(argc, argv, tests);
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
