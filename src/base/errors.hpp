// The error model every layer reports through: status texts, the
// per-thread message behind chr_last_error(), and how bytes from a caller
// (ids, names) are spelled inside a message (base/spelling.hpp's encoder).
#pragma once

#include <cstddef>
#include <cstdint>

#include "chring.h"

// printf-style format checking: MinGW builds use its C99 printf
// (__USE_MINGW_ANSI_STDIO, the cross file sets it), which GCC checks as
// gnu_printf; plain `printf` there means Microsoft's, without %zu.
#if defined(_WIN32)
#define CHR_PRINTF(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#else
#define CHR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#endif

namespace chring {

// Records `status` with a printf-style message for chr_last_error() and
// returns `status`, so call sites read `return fail(CHR_EINVAL, "...")`.
// Never allocates: the message lives in a fixed thread-local buffer.
chr_status fail(chr_status status, const char *fmt, ...) CHR_PRINTF(2, 3);

const char *last_error() noexcept;

// A pointer for a message as 0x%llx: "%p" prints 0x1000 with glibc but
// 0000000000001000 with MinGW, and messages read the same everywhere.
inline unsigned long long address_of(const void *p) {
    return static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p));
}

// Keeps this thread's chr_last_error() message as it was across a scope
// whose failures are expected and handled (plugin discovery), so that a
// call that succeeds overall leaves the message untouched.
class PreserveLastError {
public:
    PreserveLastError() noexcept;
    ~PreserveLastError();
    PreserveLastError(const PreserveLastError &) = delete;
    PreserveLastError &operator=(const PreserveLastError &) = delete;

private:
    char saved_[512];
};
const char *status_text(chr_status status) noexcept;

// Caller bytes as a message shows them, spelled as the CLI spells ids
// (spell_field() with `hidden`: chr_ringfile_escape with CHR_ESCAPE_HIDDEN,
// which a ring file or --node reads back): printable ASCII and valid UTF-8
// stay as they are; controls, DEL, space, '%', a leading '#', the C1 and
// bidirectional controls, U+FEFF and bytes that are not valid UTF-8 become
// %XX. At most kQuotedInput bytes are spelled, then "...": a message stays
// bounded whatever the id. Never allocates.
class Quoted {
public:
    static constexpr size_t kQuotedInput = 64;
    Quoted(const void *bytes, size_t len) noexcept;
    const char *c_str() const noexcept { return text_; }

private:
    char text_[kQuotedInput * 3 + 4];
};

}  // namespace chring
