#include "reclaim.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

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

// Releases the thread's slot at thread exit.
struct SlotRelease {
    ~SlotRelease() {
        if (tls_slot) {
            tls_slot->active.store(0, std::memory_order_release);
            tls_slot->in_use.store(false, std::memory_order_release);
            tls_slot = nullptr;
            tls_fast_slot = nullptr;
        }
    }
};
thread_local SlotRelease tls_release;

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

}  // namespace

Slot *detail::enter_read_slow() noexcept {
    Slot *s = tls_slot;
    if (!s) {
        if (!(s = acquire_slot())) return nullptr;
        tls_slot = s;
        if (asymmetric) tls_fast_slot = s;  // later reads take ReadGuard's fast path
        (void)&tls_release;  // odr-use so its destructor runs at thread exit
    }
    if (asymmetric) {
        detail::announce_unfenced(s);
    } else {  // the fence is the store's own
        assert(s->active.load(std::memory_order_relaxed) == 0 && "read sections do not nest");
        s->active.store(global_epoch.load(std::memory_order_acquire), std::memory_order_seq_cst);
    }
    return s;
}

uint64_t retire_epoch() noexcept { return global_epoch.fetch_add(1, std::memory_order_seq_cst); }

bool fence_readers() noexcept {
    if (!asymmetric) return true;  // readers fence themselves
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
    // A forked child may need to register again before the barrier works.
    return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
           membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
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
