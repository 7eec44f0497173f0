// The compare at the heart of a lookup (Snapshot::locate): where a key falls
// in a window of eight 4-byte hot records. Its own header so a test can hold
// the vector and the portable versions against each other.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace chring {

// Records compared per lookup. Eight (32 bytes, two SSE2 compares) let a
// bucket hold 1.5-3 tokens on average, which halves the prefix index that
// four needed (one bucket per 1-2 tokens) and keeps the lookup's data in
// L2 at 1,000 nodes (tests/bench/HISTORY.md, "Search layouts"). Big rings
// hold 3-6 a bucket and compare a second window where a bucket has more
// than eight (TokenIndex::locate_wide).
constexpr uint32_t kWindow = 8;
// Flipped in every stored hot record: SSE2 has only a signed 32-bit compare,
// and flipping the top bit of both sides makes signed order unsigned order.
constexpr uint32_t kWindowBias = 0x80000000u;

// Trailing zero bits of x != 0, as a 64-bit value: __builtin_ctzll's int
// result costs a sign extension (cdqe) before it can index memory.
inline size_t trailing_zeros(uint64_t x) noexcept {
#if defined(__x86_64__)
    uint64_t zeros;
    asm("rep bsf %1, %0" : "=r"(zeros) : "r"(x) : "cc");  // tzcnt, or bsf before BMI1: equal for x != 0
    return zeros;
#else
    return size_t(__builtin_ctzll(x));
#endif
}

// The rank of key among records r[0..n), n <= kWindow: the index of the
// first record not below key ((r[j] ^ kWindowBias) >= key), or n if every
// one is. A bucket's records are sorted, so this is where the key falls in
// it; the records after the bucket are compared too and masked off.
//
// Returned doubled (2 * rank) because the SSE2 compare packs to two mask
// bits per record: record_at_rank_x2() then reads the answer with a scaled
// address, with no shift between the compare and that load.
inline size_t window_rank_x2_portable(const uint32_t *r, uint32_t key, uint32_t n) noexcept {
    size_t j = 0;
    while (j < n && (r[j] ^ kWindowBias) < key) ++j;
    return 2 * j;
}

// The same with two SSE2 compares (every x86-64; an AVX2 build with one
// compare measured no faster). Branch-free: the first record not below is
// the lowest zero of the below-mask cut to the first n records.
inline size_t window_rank_x2(const uint32_t *r, uint32_t key, uint32_t n) noexcept {
#if defined(__SSE2__)
    // (1 << 2n) - 1 from a table: the shift would need n in cl first
    static constexpr uint32_t kFirstRecords[kWindow + 1] = {0,     0x3,    0xf,    0x3f,  0xff,
                                                           0x3ff, 0xfff, 0x3fff, 0xffff};
    const __m128i k = _mm_set1_epi32(int32_t(key ^ kWindowBias));
    const __m128i low = _mm_cmpgt_epi32(k, _mm_loadu_si128(reinterpret_cast<const __m128i *>(r)));
    const __m128i high = _mm_cmpgt_epi32(k, _mm_loadu_si128(reinterpret_cast<const __m128i *>(r + 4)));
    // 8 x 32-bit lanes of all-ones/zero packed to 8 x 16 bits: 2 bits a record
    const uint32_t below = uint32_t(_mm_movemask_epi8(_mm_packs_epi32(low, high)));
    return trailing_zeros(~uint64_t(below & kFirstRecords[n]));  // ~: bit 2n up set
#else
    return window_rank_x2_portable(r, key, n);
#endif
}

// r[rank_x2 / 2], addressed as r + 2 * rank_x2 bytes.
inline uint32_t record_at_rank_x2(const uint32_t *r, size_t rank_x2) noexcept {
    return *reinterpret_cast<const uint32_t *>(reinterpret_cast<const char *>(r) + rank_x2 * 2);
}

}  // namespace chring
