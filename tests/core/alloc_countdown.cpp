// The replaced global allocation functions behind alloc_countdown.hpp.
#include "alloc_countdown.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

#ifndef ALLOC_COUNTDOWN_MALLOC
#define ALLOC_COUNTDOWN_MALLOC 0
#endif
#if ALLOC_COUNTDOWN_MALLOC
extern "C" void *__libc_malloc(std::size_t);
extern "C" void *__libc_calloc(std::size_t, std::size_t);
extern "C" void *__libc_realloc(void *, std::size_t);
extern "C" void __libc_free(void *);
#endif

namespace alloc_countdown {
namespace {

// Trivial, zero-initialised thread-local state: safe to touch from inside
// operator new at any point of a thread's life.
struct Countdown {
    unsigned long target;  // 0: count only
    unsigned long seen;
    bool armed, persistent, injected, malloc_too;
};
thread_local Countdown countdown;

std::atomic<long> live_blocks{0};

bool must_fail() noexcept {
    Countdown &c = countdown;
    if (!c.armed) return false;
    ++c.seen;
    if (c.target == 0 || c.seen < c.target || (c.seen > c.target && !c.persistent)) return false;
    c.injected = true;
    return true;
}

#if ALLOC_COUNTDOWN_MALLOC
void *plain_malloc(std::size_t size) { return __libc_malloc(size); }  // not counted twice
#else
void *plain_malloc(std::size_t size) { return std::malloc(size); }
#endif

void *allocate(std::size_t size, std::size_t alignment, bool nothrow) {
    void *p = nullptr;
    if (!must_fail()) {
        if (size == 0) size = 1;  // distinct non-null pointers for size 0
        if (alignment <= alignof(std::max_align_t)) {
            p = plain_malloc(size);
        } else {
            size = (size + alignment - 1) / alignment * alignment;  // as aligned_alloc wants
            p = std::aligned_alloc(alignment, size);
        }
    }
    if (!p) {
        if (nothrow) return nullptr;
        throw std::bad_alloc();
    }
    live_blocks.fetch_add(1, std::memory_order_relaxed);
    return p;
}

void deallocate(void *p) noexcept {
    if (!p) return;
    live_blocks.fetch_sub(1, std::memory_order_relaxed);
    std::free(p);  // __libc_free when malloc is replaced: the same heap
}

}  // namespace

void arm(unsigned long k, Mode mode, Hooks hooks) noexcept {
    countdown = Countdown{k, 0, true, mode == Mode::persistent, false, hooks == Hooks::new_and_malloc};
}

bool hooks_malloc() noexcept { return ALLOC_COUNTDOWN_MALLOC; }

Tally disarm() noexcept {
    Tally t{countdown.seen, countdown.injected};
    countdown = Countdown{};
    return t;
}

long outstanding_blocks() noexcept { return live_blocks.load(std::memory_order_relaxed); }

const char *mode_name(Mode mode) noexcept { return mode == Mode::once ? "once" : "persistent"; }

#if ALLOC_COUNTDOWN_MALLOC
// malloc's countdown, for the C library's own allocations (glibc's
// bookkeeping of thread_local destructors, say).
bool malloc_must_fail() noexcept { return countdown.malloc_too && must_fail(); }
#endif

}  // namespace alloc_countdown

#if ALLOC_COUNTDOWN_MALLOC
extern "C" {
void *malloc(std::size_t n) {
    if (alloc_countdown::malloc_must_fail()) return errno = ENOMEM, nullptr;
    return __libc_malloc(n);
}
void *calloc(std::size_t n, std::size_t size) {
    if (alloc_countdown::malloc_must_fail()) return errno = ENOMEM, nullptr;
    return __libc_calloc(n, size);
}
void *realloc(void *p, std::size_t n) {
    if (alloc_countdown::malloc_must_fail()) return errno = ENOMEM, nullptr;
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
}
#endif

using alloc_countdown::allocate;
using alloc_countdown::deallocate;
constexpr std::size_t kPlain = alignof(std::max_align_t);

void *operator new(std::size_t n) { return allocate(n, kPlain, false); }
void *operator new[](std::size_t n) { return allocate(n, kPlain, false); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return allocate(n, kPlain, true); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return allocate(n, kPlain, true); }
void *operator new(std::size_t n, std::align_val_t a) { return allocate(n, std::size_t(a), false); }
void *operator new[](std::size_t n, std::align_val_t a) { return allocate(n, std::size_t(a), false); }
void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    return allocate(n, std::size_t(a), true);
}
void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept {
    return allocate(n, std::size_t(a), true);
}

void operator delete(void *p) noexcept { deallocate(p); }
void operator delete[](void *p) noexcept { deallocate(p); }
void operator delete(void *p, std::size_t) noexcept { deallocate(p); }
void operator delete[](void *p, std::size_t) noexcept { deallocate(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { deallocate(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { deallocate(p); }
void operator delete(void *p, std::align_val_t) noexcept { deallocate(p); }
void operator delete[](void *p, std::align_val_t) noexcept { deallocate(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { deallocate(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { deallocate(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { deallocate(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept { deallocate(p); }
