// The exception firewall: every extern "C" entry point that can reach code
// that throws runs it through guarded(), so no exception crosses into C.
#pragma once

#include <exception>
#include <new>

#include "base/errors.hpp"

namespace chring {

// Runs `body` and maps anything it throws to a status: bad_alloc to
// CHR_ENOMEM, anything else to CHR_EINTERNAL (with the exception's text).
template <class F>
chr_status guarded(const char *who, F &&body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return fail(CHR_ENOMEM, "%s: out of memory", who);
    } catch (const std::exception &e) {
        return fail(CHR_EINTERNAL, "%s: internal error: %s", who, e.what());
    } catch (...) {
        return fail(CHR_EINTERNAL, "%s: internal error: unknown exception", who);
    }
}

}  // namespace chring
