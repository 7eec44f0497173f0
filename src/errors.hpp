// Status texts and the per-thread error message behind chr_last_error().
#pragma once

#include "chring.h"

namespace chring {

// Records `status` with a printf-style message for chr_last_error() and
// returns `status`, so call sites read `return fail(CHR_EINVAL, "...")`.
// Never allocates: the message lives in a fixed thread-local buffer.
chr_status fail(chr_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *last_error() noexcept;

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

}  // namespace chring
