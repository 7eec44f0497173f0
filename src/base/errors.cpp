#include "base/errors.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <cstring>

namespace chring {
namespace {
// Fixed size so that reporting CHR_ENOMEM never needs memory.
thread_local char tls_message[512];
}  // namespace

chr_status fail(chr_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(tls_message, sizeof tls_message, fmt, ap);
    va_end(ap);
    return status;
}

const char *last_error() noexcept { return tls_message; }

static_assert(sizeof(PreserveLastError) >= sizeof tls_message, "saved_ must hold the message");
PreserveLastError::PreserveLastError() noexcept { std::memcpy(saved_, tls_message, sizeof tls_message); }
PreserveLastError::~PreserveLastError() { std::memcpy(tls_message, saved_, sizeof tls_message); }

const char *status_text(chr_status status) noexcept {
    switch (status) {
    case CHR_OK: return "success";
    case CHR_EINVAL: return "invalid argument";
    case CHR_ENOMEM: return "out of memory";
    case CHR_ERANGE: return "value out of range or buffer too small";
    case CHR_EEXIST: return "already exists";
    case CHR_ENOENT: return "no such node";
    case CHR_EEMPTY: return "ring has no node with tokens";
    case CHR_EVERSION: return "unsupported struct version";
    case CHR_ENOHASHER: return "no such hasher";
    case CHR_ENOTSUP: return "not supported by this build";
    case CHR_EINTERNAL: return "internal error";
    case CHR_EPLUGIN_NOFILE: return "plugin file not found or unreadable";
    case CHR_EPLUGIN_NOTSO: return "plugin file is not a loadable shared object";
    case CHR_EPLUGIN_SYMBOL: return "plugin entry point not found";
    case CHR_EPLUGIN_ABI: return "plugin ABI version not supported";
    case CHR_EPLUGIN_DESC: return "malformed hasher descriptor";
    case CHR_EPLUGIN_UNTRUSTED: return "plugin refused: file or directory not trusted";
    case CHR_EFORMAT: return "malformed ring file";
    case CHR_EOPTIONS: return "ring file options differ from the ring's";
    case CHR_EIO: return "ring file cannot be read";
    case CHR_EINCOMPATIBLE: return "snapshots place keys differently";
    default: return "unknown status";
    }
}

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

namespace {

bool plain_ascii(unsigned char c) noexcept {
    return c > 0x20 && c < 0x7f && c != '%' && c != '\\';
}

}  // namespace

Quoted::Quoted(const void *bytes, size_t len) noexcept {
    static const char digits[] = "0123456789ABCDEF";
    const unsigned char *s = static_cast<const unsigned char *>(bytes);
    const size_t n = len < kQuotedInput ? len : kQuotedInput;
    char *out = text_;
    auto encode = [&](unsigned char c) {
        *out++ = '%';
        *out++ = digits[c >> 4];
        *out++ = digits[c & 15];
    };
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t seq = s[i] >= 0x80 ? utf8_sequence(s, n, i, &cp) : 0;
        if (seq) {
            for (size_t k = 0; k < seq; ++k) {
                if (invisible(cp) || escaped_everywhere(cp)) encode(s[i + k]);
                else *out++ = char(s[i + k]);
            }
            i += seq;
            continue;
        }
        if (plain_ascii(s[i])) *out++ = char(s[i]);
        else encode(s[i]);
        ++i;
    }
    if (len > n) out = std::strcpy(out, "...") + 3;
    *out = '\0';
}

}  // namespace chring
