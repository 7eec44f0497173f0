#include "base/errors.hpp"

#include "base/spelling.hpp"

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

Quoted::Quoted(const void *bytes, size_t len) noexcept {
    const size_t n = len < kQuotedInput ? len : kQuotedInput;
    char *out = text_;
    spell_field(bytes, n, true, [&](char c) { *out++ = c; });
    if (len > n) out = std::strcpy(out, "...") + 3;
    *out = '\0';
}

}  // namespace chring
