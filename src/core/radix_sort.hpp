// Sorting a placement's fresh tokens by (value, owner), the order of a
// ring's token array, exactly as std::sort with Token's operator< would.
// Hash values are close to uniform, so counting passes on their top bits
// leave ranges of one or two tokens that an insertion sort finishes: O(T)
// expected instead of O(T log T). Large arrays take two passes: the first
// scatters into 2^11 ranges (few enough write streams for the caches), the
// second sorts each range, by then small enough for L2, on its next bits.
// A skewed hasher only leaves bigger ranges, which std::sort finishes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "huge_pages.hpp"
#include "membership.hpp"

namespace chring {
namespace radix {

// Finishes [first, last), whose tokens share every value bit a counting
// pass looked at.
inline void finish_range(Token *first, Token *last) {
    if (last - first > 32) {
        std::sort(first, last);
        return;
    }
    for (Token *p = first + 1; p < last; ++p) {
        const Token x = *p;
        Token *q = p;
        for (; q > first && x < q[-1]; --q) *q = q[-1];
        *q = x;
    }
}

// Counting pass on value bits [shift, shift + bits) of n tokens from src
// into dst (the bits above them are equal within src): afterwards range b
// of dst is [count[b], count[b + 1]), and with `finish` it is sorted too.
// count has at least 2^bits + 1 entries.
inline void counting_pass(const Token *src, size_t n, Token *dst, unsigned shift, unsigned bits,
                          std::vector<size_t> &count, std::vector<size_t> &next, bool finish) {
    const size_t buckets = size_t(1) << bits;
    const uint64_t mask = buckets - 1;
    std::fill(count.begin(), count.begin() + buckets + 1, 0);
    for (size_t i = 0; i < n; ++i) ++count[((src[i].value >> shift) & mask) + 1];
    for (size_t b = 1; b <= buckets; ++b) count[b] += count[b - 1];
    next.assign(count.begin(), count.begin() + buckets);
    for (size_t i = 0; i < n; ++i) dst[next[(src[i].value >> shift) & mask]++] = src[i];
    if (finish)
        for (size_t b = 0; b < buckets; ++b) finish_range(dst + count[b], dst + count[b + 1]);
}

}  // namespace radix

// Sorts `tokens` by (value, owner). May allocate a scratch copy.
inline void sort_tokens(std::vector<Token> &tokens) {
    const size_t n = tokens.size();
    if (n < 4096) {
        std::sort(tokens.begin(), tokens.end());
        return;
    }
    // K bits in all: about one token per final range.
    unsigned K = 1;
    while (K < 24 && (size_t(1) << (K + 1)) <= n) ++K;
    // Uninitialized (every slot is written), on huge pages from 2 MiB: a
    // build's scratch is new memory each time the heap was trimmed.
    const HugeBuffer<Token> scratch(n);
    Token *a = tokens.data(), *tmp = scratch.data();
    constexpr unsigned kFirstBits = 11;
    if (K <= 16) {  // at most 2 MB of tokens: one pass, then back
        std::vector<size_t> count((size_t(1) << K) + 1), next;
        radix::counting_pass(a, n, tmp, 64 - K, K, count, next, true);
        std::memcpy(a, tmp, n * sizeof(Token));
        return;
    }
    const unsigned second = K - kFirstBits;
    std::vector<size_t> first_count((size_t(1) << kFirstBits) + 1), count((size_t(1) << second) + 1), next;
    radix::counting_pass(a, n, tmp, 64 - kFirstBits, kFirstBits, first_count, next, false);
    for (size_t b = 0; b + 1 < first_count.size(); ++b) {
        const size_t lo = first_count[b], m = first_count[b + 1] - lo;
        if (m <= 32) {
            std::memcpy(a + lo, tmp + lo, m * sizeof(Token));
            radix::finish_range(a + lo, a + lo + m);
            continue;
        }
        radix::counting_pass(tmp + lo, m, a + lo, 64 - K, second, count, next, true);
    }
}

}  // namespace chring
