// The compare at the heart of a lookup (Snapshot::position): which of a
// window of eight 4-byte hot records are below a key. Its own header so a
// test can hold the vector and the portable versions against each other.
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace chring {

// Records compared per lookup. Eight (32 bytes, two SSE2 compares) let a
// bucket hold 1.5-3 tokens on average, which halves the prefix index that
// four needed (one bucket per 1-2 tokens) and keeps the lookup's data in
// L2 at 1,000 nodes (tests/bench/RESULTS.md, "search layouts").
constexpr uint32_t kWindow = 8;
// Flipped in every stored hot record: SSE2 has only a signed 32-bit compare,
// and flipping the top bit of both sides makes signed order unsigned order.
constexpr uint32_t kWindowBias = 0x80000000u;

// Bit j set when (r[j] ^ kWindowBias) < key, j < kWindow.
inline uint32_t window_below_portable(const uint32_t *r, uint32_t key) noexcept {
    uint32_t bits = 0;
    for (uint32_t j = 0; j < kWindow; ++j) bits |= uint32_t((r[j] ^ kWindowBias) < key) << j;
    return bits;
}

// The same with vector compares: one with AVX2 (when the build targets it),
// two with SSE2 (every x86-64).
inline uint32_t window_below(const uint32_t *r, uint32_t key) noexcept {
#if defined(__AVX2__)
    const __m256i window = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(r));
    const __m256i k = _mm256_set1_epi32(int32_t(key ^ kWindowBias));
    return uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k, window))));
#elif defined(__SSE2__)
    const __m128i k = _mm_set1_epi32(int32_t(key ^ kWindowBias));
    const __m128i low = _mm_cmpgt_epi32(k, _mm_loadu_si128(reinterpret_cast<const __m128i *>(r)));
    const __m128i high = _mm_cmpgt_epi32(k, _mm_loadu_si128(reinterpret_cast<const __m128i *>(r + 4)));
    return uint32_t(_mm_movemask_ps(_mm_castsi128_ps(low))) |
           uint32_t(_mm_movemask_ps(_mm_castsi128_ps(high))) << 4;
#else
    return window_below_portable(r, key);
#endif
}

}  // namespace chring
