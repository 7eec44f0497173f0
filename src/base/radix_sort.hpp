// Sorting a placement's fresh tokens by (value, owner), the order of a
// ring's token array, exactly as std::sort with Token's operator< would.
// Hash values are close to uniform, so counting passes on their top bits
// leave ranges of one or two tokens that an insertion sort finishes: O(T)
// expected instead of O(T log T). Large arrays take two passes: the first
// scatters into 2^11 ranges (a line buffer each, streamed out whole), the
// second sorts each range, by then small enough for L2, on its next bits
// in a buffer that stays in cache. A skewed hasher only leaves bigger
// ranges, which std::sort finishes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/huge_pages.hpp"
#include "base/membership.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace chring {
namespace radix {

// Insertion sort of [first, last): linear when every token is only a few
// places from its own.
inline void insertion_sort(Token *first, Token *last) {
    for (Token *p = first + 1; p < last; ++p) {
        if (!(*p < p[-1])) continue;
        const Token x = *p;
        Token *q = p;
        do *q = q[-1];
        while (--q > first && x < q[-1]);
        *q = x;
    }
}

// Finishes [first, last), whose tokens share every value bit a counting
// pass looked at.
inline void finish_range(Token *first, Token *last) {
    if (last - first > 32) std::sort(first, last);
    else insertion_sort(first, last);
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

// Sorts one range of a first pass, m tokens sharing the bits above
// `shift + bits`, from src into out: a counting pass on the next `bits`
// bits, then, while no range of it is longer than kInsertionRun (a
// uniform hash: ~2 tokens each), one insertion sort over all of out,
// every token then at most that far from its place (one loop, instead of
// one call per range, most of them empty); a longer range (a skewed
// hasher) takes finish_range per range.
inline void sort_range(const Token *src, size_t m, Token *out, unsigned shift, unsigned bits,
                       std::vector<size_t> &count, std::vector<size_t> &next) {
    constexpr size_t kInsertionRun = 32;
    counting_pass(src, m, out, shift, bits, count, next, false);
    const size_t buckets = size_t(1) << bits;
    size_t longest = 0;
    for (size_t b = 0; b < buckets; ++b) longest = std::max(longest, count[b + 1] - count[b]);
    if (longest > kInsertionRun) {
        for (size_t b = 0; b < buckets; ++b) finish_range(out + count[b], out + count[b + 1]);
        return;
    }
    insertion_sort(out, out + m);
}

// Bits a sort looks at in all for n tokens: about one token per final range.
inline unsigned final_bits(size_t n) noexcept {
    unsigned K = 1;
    while (K < 24 && (size_t(1) << (K + 1)) <= n) ++K;
    return K;
}

// Sorts a first-pass range of m tokens from src into dst by the next `bits`
// bits from `shift` up: through `buffer` (`buffer_size` tokens), which stays
// in cache from one range to the next, then copied to dst in one go
// (scattered into dst directly, every line of it would be a miss: it was
// last written by the first pass); a range past the buffer (a skewed
// hasher) straight into dst, which must not then overlap src. A range of up
// to 32 may overlap dst.
inline void sort_range_to(const Token *src, size_t m, Token *dst, Token *buffer, size_t buffer_size, unsigned shift,
                          unsigned bits, std::vector<size_t> &count, std::vector<size_t> &next) {
    if (m <= 32) {
        std::memmove(dst, src, m * sizeof(Token));
        finish_range(dst, dst + m);
    } else if (m <= buffer_size) {
        sort_range(src, m, buffer, shift, bits, count, next);
        std::memcpy(dst, buffer, m * sizeof(Token));
    } else {
        sort_range(src, m, dst, shift, bits, count, next);
    }
}

// A first pass's write buffer for one range: four tokens, one cache line,
// written out whole with stream_line().
struct alignas(64) Line {
    Token t[4];  // position p of the output in slot p % 4
};
static_assert(sizeof(Token) == 16 && sizeof(Line) == 64, "four tokens a cache line");

// Stores a full line at `to` (16-byte aligned) with non-temporal stores,
// which write the line without reading it first.
inline void stream_line(const Line &line, Token *to) noexcept {
#if defined(__SSE2__)
    const __m128i *from = reinterpret_cast<const __m128i *>(line.t);
    __m128i *dst = reinterpret_cast<__m128i *>(to);
    _mm_stream_si128(dst, _mm_load_si128(from));
    _mm_stream_si128(dst + 1, _mm_load_si128(from + 1));
    _mm_stream_si128(dst + 2, _mm_load_si128(from + 2));
    _mm_stream_si128(dst + 3, _mm_load_si128(from + 3));
#else
    std::copy(line.t, line.t + 4, to);
#endif
}

#if defined(__SSE2__)
// The first pass of a big sort: n tokens from src into dst by their top
// `bits` value bits (count as counting_pass leaves it, no finish). Every
// token's range is a different write stream, 2^bits of them, and a store
// that misses makes the CPU read the line before writing it. So tokens
// gather in a line-sized buffer per range (2^bits lines, in L2) and go out
// a whole line at a time with non-temporal stores, which write the line
// without reading it: half the memory traffic, and the first pass of a
// 16M-token sort takes half the time (tests/bench/HISTORY.md, "Inline key
// hash, replica walk without a step count, build memory traffic").
// A range's first and last lines may be shared with its neighbours: those
// tokens are stored one by one. Requires dst 16-byte aligned.
inline void scatter_by_top_bits(const Token *src, size_t n, Token *dst, unsigned bits,
                                std::vector<size_t> &count) {
    const size_t buckets = size_t(1) << bits;
    const unsigned shift = 64 - bits;
    std::fill(count.begin(), count.begin() + buckets + 1, 0);
    for (size_t i = 0; i < n; ++i) ++count[(src[i].value >> shift) + 1];
    for (size_t b = 1; b <= buckets; ++b) count[b] += count[b - 1];
    std::vector<Line> lines(buckets);
    std::vector<size_t> next(count.begin(), count.begin() + buckets);
    for (size_t i = 0; i < n; ++i) {
        const Token t = src[i];
        const size_t b = t.value >> shift;
        const size_t at = next[b]++;
        Line &line = lines[b];
        line.t[at & 3] = t;
        if ((at & 3) != 3) continue;
        const size_t start = at - 3;  // the output line [start, start + 4)
        if (start >= count[b]) {
            stream_line(line, dst + start);
        } else {  // the range's first line, begun by the range before
            for (size_t p = count[b]; p <= at; ++p) dst[p] = line.t[p & 3];
        }
    }
    for (size_t b = 0; b < buckets; ++b)  // each range's last, partial line
        for (size_t p = std::max(next[b] & ~size_t(3), count[b]); p < next[b]; ++p) dst[p] = lines[b].t[p & 3];
    _mm_sfence();  // the streamed lines are ordered before what follows
}
#endif

}  // namespace radix

// Sorts `tokens` (a vector of Token) by (value, owner). May allocate a
// scratch copy, which it leaves in *spare when given one (memory already
// faulted in, for a build to reuse) and frees otherwise.
template <class Tokens>
void sort_tokens(Tokens &tokens, HugeArray<Token> *spare = nullptr) {
    const size_t n = tokens.size();
    if (n < 64) {  // from 64 tokens on, one counting pass is 1.4-3x faster than std::sort
        std::sort(tokens.begin(), tokens.end());
        return;
    }
    const unsigned K = radix::final_bits(n);
    // Uninitialized (every slot is written), on huge pages from 2 MiB: a
    // build's scratch is new memory each time the heap was trimmed.
    HugeArray<Token> scratch(n);
    Token *a = tokens.data(), *tmp = scratch.data();
    constexpr unsigned kFirstBits = 11;
    if (K <= 16) {  // at most 2 MB of tokens: one pass, then back
        std::vector<size_t> count((size_t(1) << K) + 1), next;
        radix::counting_pass(a, n, tmp, 64 - K, K, count, next, true);
        std::memcpy(a, tmp, n * sizeof(Token));
        if (spare) *spare = std::move(scratch);
        return;
    }
    const unsigned second = K - kFirstBits;
    std::vector<size_t> first_count((size_t(1) << kFirstBits) + 1), count((size_t(1) << second) + 1), next;
#if defined(__SSE2__)
    if (reinterpret_cast<uintptr_t>(tmp) % 16 == 0)
        radix::scatter_by_top_bits(a, n, tmp, kFirstBits, first_count);
    else
#endif
        radix::counting_pass(a, n, tmp, 64 - kFirstBits, kFirstBits, first_count, next, false);
    // Each range back into `a`, in order, through a buffer of up to 1 MiB.
    size_t longest = 0;
    for (size_t b = 0; b + 1 < first_count.size(); ++b) longest = std::max(longest, first_count[b + 1] - first_count[b]);
    HugeArray<Token> buffer(std::min(longest, size_t(1) << 16));
    for (size_t b = 0; b + 1 < first_count.size(); ++b) {
        const size_t lo = first_count[b];
        radix::sort_range_to(tmp + lo, first_count[b + 1] - lo, a + lo, buffer.data(), buffer.size(), 64 - K, second,
                             count, next);
    }
    if (spare) *spare = std::move(scratch);
}

// A big sort whose first pass is done as the tokens are made, so that it
// needs no scratch copy of them: each token goes straight into its range
// by top value bits, a slot of room for the range's expected count plus
// eight standard deviations (hash values are close to uniform), gathered
// a cache line at a time and streamed out as the first pass of
// sort_tokens is. Then each range is sorted in a buffer that stays in
// cache and copied down to its place. At 16M tokens this spares the
// build 256 MB of new memory, which the kernel must fault in and zero
// (tests/bench/HISTORY.md, "Chunks freed by lineage; a big
// build's memory"). A range that
// overflows its room (a skewed hasher) fails the whole: the caller then
// makes the tokens again and sorts them with sort_tokens.
class RangeSort {
public:
    // Whether n tokens take this path: from 2^20 (16 MB of tokens) up.
    // Below, the tokens stay in cache between sort_tokens' passes, and a
    // 1,000-node build (160,000 tokens) took 9% longer this way (more of
    // its memory new to it).
    static bool suits(size_t n) noexcept { return n >= (size_t(1) << 20); }

    // Room for n tokens in `out` (resized, its elements not yet written).
    // Throws bad_alloc.
    RangeSort(FreshTokens &out, size_t n) : out_(out), n_(n) {
        const unsigned K = radix::final_bits(n);
        const unsigned range_bits = std::min(11u, K - 10);  // ranges of >= ~1,000 tokens
        second_bits_ = K - range_bits;
        shift_ = 64 - range_bits;
        const size_t ranges = size_t(1) << range_bits, expected = n >> range_bits;
        size_t sd = 1;
        while (sd * sd < expected) ++sd;
        room_ = (expected + 8 * sd + 16 + 3) & ~size_t(3);  // whole lines: each range's starts line-aligned
        out_.clear();
        reserve_huge(out_, ranges * room_);
        out_.resize(ranges * room_);
        fill_.assign(ranges, 0);
        lines_.resize(ranges);
    }

    // The next token, in any order.
    void put(uint64_t value, uint32_t owner) noexcept {
        const size_t r = size_t(value >> shift_);
        const size_t f = fill_[r];
        if (__builtin_expect(f == room_, 0)) {
            overflow_ = true;
            return;
        }
        fill_[r] = f + 1;
        Token &t = lines_[r].t[f & 3];
        t.value = value;  // fields stored one by one: no 16-byte reload
        t.owner = owner;
        if ((f & 3) == 3) radix::stream_line(lines_[r], out_.data() + r * room_ + (f - 3));
    }

    // Sorts what was put and leaves `out` the n tokens in order; false
    // (and `out` meaningless) if a range overflowed. Throws bad_alloc.
    bool finish() {
        if (overflow_) return false;
        Token *base = out_.data();
        const size_t ranges = fill_.size();
        for (size_t r = 0; r < ranges; ++r)  // each range's last, partial line
            for (size_t p = fill_[r] & ~size_t(3); p < fill_[r]; ++p) base[r * room_ + p] = lines_[r].t[p & 3];
#if defined(__SSE2__)
        _mm_sfence();  // the streamed lines are ordered before what follows
#endif
        HugeArray<Token> buffer(room_);
        std::vector<size_t> count((size_t(1) << second_bits_) + 1), next;
        size_t at = 0;
        for (size_t r = 0; r < ranges; ++r) {  // down to its place: at <= r * room_, m <= room_
            radix::sort_range_to(base + r * room_, fill_[r], base + at, buffer.data(), room_, shift_ - second_bits_,
                                 second_bits_, count, next);
            at += fill_[r];
        }
        out_.resize(n_);
        return true;
    }

private:
    FreshTokens &out_;  // 64-byte aligned (TokenAllocator), each range's room whole lines
    const size_t n_;
    unsigned second_bits_, shift_;
    size_t room_;
    std::vector<size_t> fill_;
    std::vector<radix::Line> lines_;
    bool overflow_ = false;
};

}  // namespace chring
