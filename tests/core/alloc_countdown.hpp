// An allocation-failure countdown (as SQLite's tests do it): alloc_countdown.cpp
// replaces this executable's global operator new / new[] (every variant:
// plain, nothrow, aligned) so that, when the calling thread has armed it,
// its k-th allocation fails: std::bad_alloc, or nullptr for the nothrow
// forms. The replacement also counts blocks not yet deleted, so a test can
// tell that a failed call gave back everything it took.
//
// It can also replace malloc, calloc and realloc (see Hooks).
//
// The replacement allocates with malloc/aligned_alloc and frees with free,
// so it also works under ASan (whose own operator new it overrides: ASan
// still sees every block through malloc, and LeakSanitizer still reports
// leaks) and under TSan.
#pragma once

#include <cstddef>

namespace alloc_countdown {

enum class Mode {
    once,        // only the k-th allocation fails
    persistent,  // the k-th and every later one fail
};

enum class Hooks {
    new_only,        // operator new
    new_and_malloc,  // and malloc, calloc, realloc, the C library's own calls
                     // included, where hooks_malloc() (no sanitizer)
};

// Arms the calling thread: its k-th allocation from now on fails
// (k >= 1); k == 0 only counts.
void arm(unsigned long k, Mode mode, Hooks hooks = Hooks::new_only) noexcept;

// Whether this build replaces malloc (ALLOC_COUNTDOWN_MALLOC: not under a
// sanitizer, which brings its own allocator).
bool hooks_malloc() noexcept;

struct Tally {
    unsigned long allocations;  // attempted by this thread while armed
    bool injected;              // whether one of them was made to fail
};
// Disarms the calling thread and says what happened while it was armed.
Tally disarm() noexcept;

// Blocks from operator new not yet given to operator delete, all threads.
long outstanding_blocks() noexcept;

const char *mode_name(Mode mode) noexcept;

}  // namespace alloc_countdown
