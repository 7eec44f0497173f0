#include "base/spelling.hpp"

namespace chring {

size_t utf8_sequence(const unsigned char *s, size_t n, size_t i, uint32_t *cp) noexcept {
    const unsigned char lead = s[i];
    const size_t len = lead >= 0xF0 ? (lead <= 0xF4 ? 4 : 0) : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
    if (len == 0 || i + len > n) return 0;
    static constexpr uint32_t kLeadBits[5] = {0, 0, 0x1F, 0x0F, 0x07};
    static constexpr uint32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t c = lead & kLeadBits[len];
    for (size_t k = 1; k < len; ++k) {
        if ((s[i + k] & 0xC0) != 0x80) return 0;
        c = c << 6 | (s[i + k] & 0x3Fu);
    }
    const bool surrogate = c >= 0xD800 && c <= 0xDFFF;
    if (c < kSmallest[len] || c > 0x10FFFF || surrogate) return 0;
    *cp = c;
    return len;
}

bool invisible(uint32_t cp) noexcept {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

bool escaped_everywhere(uint32_t cp) noexcept { return cp == 0xFEFF; }

}  // namespace chring
