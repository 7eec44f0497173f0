#include "reclaim.hpp"

#if defined(_WIN32)
#include <windows.h>
#else
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <new>

namespace chring {
namespace reclaim {

namespace {

std::atomic<Slot *> slot_list{nullptr};

// Asymmetric fences: a reader's announcement needs a store-load fence
// against the writer's swap. With membarrier(2) the writer (rare) forces that
// fence on every running thread, so the reader (hot) only needs a compiler
// barrier: ~6 ns less per ring-level read on this machine. Without
// membarrier, or under ThreadSanitizer (which cannot see membarrier's
// ordering), readers use a seq_cst store instead.
#if defined(__SANITIZE_THREAD__)
#define CHR_RECLAIM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHR_RECLAIM_TSAN 1
#endif
#endif

#if defined(_WIN32)
// Windows has the same asymmetric fence: FlushProcessWriteBuffers() makes
// every processor running a thread of this process flush its store buffer
// (an inter-processor interrupt, as membarrier's PRIVATE_EXPEDITED
// command), documented since Vista and present in every Windows and Wine
// this build runs on; it cannot fail and needs no registration.
bool asymmetric_fences_available() noexcept {
#if defined(CHR_RECLAIM_TSAN)
    return false;
#else
    return true;
#endif
}
#else
long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

bool asymmetric_fences_available() noexcept {
#if defined(CHR_RECLAIM_TSAN)
    return false;
#else
    long cmds = membarrier(MEMBARRIER_CMD_QUERY);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
#endif
}
#endif

}  // namespace

namespace detail {
std::atomic<uint64_t> global_epoch{1};
}  // namespace detail

using detail::global_epoch;
using detail::tls_fast_slot;

namespace {

// True when writers fence readers with membarrier(2), so a reader's
// announcement needs no fence of its own. Decided once per process; readers
// and writers agree because both go by it (readers through tls_fast_slot).
const bool asymmetric = asymmetric_fences_available();

// The calling thread's slot once registered (tls_fast_slot is it too when
// asymmetric), nullptr before.
thread_local Slot *tls_slot = nullptr;

void release_slot(Slot *s) noexcept {
    s->active.store(0, std::memory_order_release);
    s->in_use.store(false, std::memory_order_release);
}

// A thread's slot is released when the thread exits by a callback the
// system calls with the slot itself, not by a C++ thread_local destructor:
// registering one of those on a thread's first read allocates in glibc
// (__cxa_thread_atexit_impl), which kills the process when that fails,
// while the callbacks' per-thread values below are set without allocating
// or fail with an error. The key (index) is
// deleted when libchring is unloaded, so no callback outlives the code it
// points to.
#if defined(_WIN32)
// Windows: fiber-local storage, whose callback Windows runs at the exit of
// every thread, the ones CreateThread started as well as std::thread's (a
// thread_local destructor under MinGW runs only for threads its runtime
// knows). The callback touches no thread-local variable (their storage may
// already be gone).
void WINAPI release_at_thread_exit(void *slot) {
    if (slot) release_slot(static_cast<Slot *>(slot));
}
struct ExitKey {
    DWORD index = ::FlsAlloc(release_at_thread_exit);
    ~ExitKey() {
        if (index != FLS_OUT_OF_INDEXES) ::FlsFree(index);
    }
    bool set(Slot *s) const noexcept { return index != FLS_OUT_OF_INDEXES && ::FlsSetValue(index, s); }
};
#else
// POSIX: a thread-specific key, whose destructor runs at thread exit,
// while the thread's TLS is still there. A key below glibc's
// PTHREAD_KEY_2NDLEVEL_SIZE (32) is set without allocating.
void release_at_thread_exit(void *slot) {
    // Another key's destructor may read a ring after this one: it must
    // take a slot anew (and set the key again), not use a released one.
    tls_slot = nullptr;
    tls_fast_slot = nullptr;
    release_slot(static_cast<Slot *>(slot));
}
struct ExitKey {
    pthread_key_t key;
    bool made = pthread_key_create(&key, release_at_thread_exit) == 0;
    ~ExitKey() {
        if (made) pthread_key_delete(key);
    }
    bool set(Slot *s) const noexcept { return made && pthread_setspecific(key, s) == 0; }
};
#endif
ExitKey exit_key;

Slot *acquire_slot() noexcept {
    for (Slot *s = slot_list.load(std::memory_order_acquire); s; s = s->next) {
        bool expected = false;
        if (!s->in_use.load(std::memory_order_relaxed) &&
            s->in_use.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
            return s;
    }
    Slot *s = new (std::nothrow) Slot;
    if (!s) return nullptr;
    Slot *head = slot_list.load(std::memory_order_relaxed);
    do {
        s->next = head;
    } while (!slot_list.compare_exchange_weak(head, s, std::memory_order_release,
                                              std::memory_order_relaxed));
    return s;
}

// The calling thread's slot, taken on its first call; nullptr if that
// could not allocate.
Slot *thread_slot() noexcept {
    if (Slot *s = tls_slot) return s;
    Slot *s = acquire_slot();
    if (!s) return nullptr;
    if (!exit_key.set(s)) {
        release_slot(s);
        return nullptr;
    }
    tls_slot = s;
    if (asymmetric) tls_fast_slot = s;  // later reads take ReadGuard's fast path
    return s;
}

}  // namespace

Slot *detail::enter_read_slow() noexcept {
    Slot *s = thread_slot();
    if (!s) return nullptr;
    if (asymmetric) {
        detail::announce_unfenced(s);
    } else {  // the fence is the store's own
        assert(s->active.load(std::memory_order_relaxed) == 0 && "read sections do not nest");
        s->active.store(global_epoch.load(std::memory_order_acquire), std::memory_order_seq_cst);
    }
    return s;
}

uint64_t *thread_scratch(size_t words) noexcept {
    Slot *s = thread_slot();
    if (!s) return nullptr;
    if (s->scratch_words < words) {
        uint64_t *bigger = new (std::nothrow) uint64_t[words];
        if (!bigger) return nullptr;
        delete[] s->scratch;
        s->scratch = bigger;
        s->scratch_words = words;
    }
    return s->scratch;
}

uint64_t retire_epoch() noexcept { return global_epoch.fetch_add(1, std::memory_order_seq_cst); }

bool fence_readers() noexcept {
    if (!asymmetric) return true;  // readers fence themselves
#if defined(_WIN32)
    ::FlushProcessWriteBuffers();
    return true;
#else
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
    // A forked child may need to register again before the barrier works.
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
           membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
#endif
}

size_t registered_slots(size_t *in_use) noexcept {
    size_t all = 0, busy = 0;
    for (Slot *s = slot_list.load(std::memory_order_acquire); s; s = s->next) {
        ++all;
        if (s->in_use.load(std::memory_order_acquire)) ++busy;
    }
    if (in_use) *in_use = busy;
    return all;
}

uint64_t oldest_reader_epoch() noexcept {
    // A reader that may hold an object retired in epoch r entered at an epoch
    // <= r (it read the epoch before the swap); later readers see the new one.
    uint64_t oldest = UINT64_MAX;
    for (Slot *s = slot_list.load(std::memory_order_acquire); s; s = s->next) {
        uint64_t a = s->active.load(std::memory_order_seq_cst);
        if (a != 0 && a < oldest) oldest = a;
    }
    return oldest;
}

}  // namespace reclaim
}  // namespace chring
