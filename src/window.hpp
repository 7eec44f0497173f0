// The compare at the heart of a lookup (Snapshot::position): which of a
// window of four 4-byte hot records are below a key. Its own header so a
// test can hold the SSE2 and the portable versions against each other.
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace chring {

constexpr uint32_t kWindow = 4;  // records compared per lookup
// Flipped in every stored hot record: SSE2 has only a signed 32-bit compare,
// and flipping the top bit of both sides makes signed order unsigned order.
constexpr uint32_t kWindowBias = 0x80000000u;

// Bit j set when (r[j] ^ kWindowBias) < key, j < kWindow.
inline uint32_t window_below_portable(const uint32_t *r, uint32_t key) noexcept {
    return uint32_t((r[0] ^ kWindowBias) < key) | uint32_t((r[1] ^ kWindowBias) < key) << 1 |
           uint32_t((r[2] ^ kWindowBias) < key) << 2 | uint32_t((r[3] ^ kWindowBias) < key) << 3;
}

// The same; SSE2 (every x86-64) compares the four in one instruction.
inline uint32_t window_below(const uint32_t *r, uint32_t key) noexcept {
#if defined(__SSE2__)
    const __m128i window = _mm_loadu_si128(reinterpret_cast<const __m128i *>(r));
    const __m128i k = _mm_set1_epi32(int32_t(key ^ kWindowBias));
    return uint32_t(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(k, window))));
#else
    return window_below_portable(r, key);
#endif
}

}  // namespace chring
