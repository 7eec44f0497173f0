// Epoch-based reclamation of ring snapshots.
//
// Why this scheme (the ordering argument and costs: docs/design/reclamation.md):
// a reader announces itself in a per-thread slot (a plain store; the writer
// pays the store-load fence for it with membarrier(2), see reclaim.cpp; no
// shared cache line written), so readers never lock, never wait and scale
// across cores, unlike a shared refcount (43 ns at 2 readers) or
// std::atomic<shared_ptr> (not lock-free in libstdc++ 12). liburcu was the
// candidate library: its qsbr flavour needs the host application to report
// quiescent states, memb needs every reader thread registered, and call_rcu
// starts helper threads that do not survive nginx's fork of its workers. An
// embedded library cannot demand any of that from Go, LuaJIT or nginx
// threads, so slots here register themselves on a thread's first read and
// are recycled when it exits; no thread is started and writers never block.
#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>

namespace chring {
namespace reclaim {

// One per reading thread, on its own cache line; never freed, only reused.
struct alignas(64) Slot {
    std::atomic<uint64_t> active{0};  // 0 = not reading, else the epoch it entered in
    std::atomic<bool> in_use{true};
    Slot *next = nullptr;
    // thread_scratch()'s buffer, used only by the thread holding the slot
    // and kept with the slot for the next one.
    uint64_t *scratch = nullptr;
    size_t scratch_words = 0;
};

// What the inline read guard below needs from reclaim.cpp. Hidden: the
// guard is inlined into libchring only, which then reads them directly.
namespace detail {
#if defined(_WIN32)  // a DLL exports only what is marked
extern std::atomic<uint64_t> global_epoch;
#else
__attribute__((visibility("hidden"))) extern std::atomic<uint64_t> global_epoch;
#endif
// The calling thread's slot when a read needs no fence of its own: the
// thread is registered and writers fence readers with membarrier(2) (see
// reclaim.cpp). Otherwise nullptr, and reads enter through
// enter_read_slow(). One TLS pointer answers both questions, so a read's
// fast path has one test. Constant-initialized: reads of it need no TLS
// wrapper call.
#if defined(_WIN32)  // MinGW's thread_local is emulated: no TLS models
inline thread_local Slot *tls_fast_slot = nullptr;
#else
inline thread_local Slot *tls_fast_slot __attribute__((tls_model("initial-exec"))) = nullptr;
#endif
// Registers the thread on its first read, announces the read (with a fence
// when writers cannot fence readers) and returns the slot; nullptr only if
// the registration could not allocate.
Slot *enter_read_slow() noexcept;

// Announces a read in `slot` when writers fence readers. The store must be
// ordered before the reader's load of the published pointer, against the
// writer's swap and slot scan: the writer's membarrier is that fence.
// acquire: a reader that sees an epoch a writer opened also sees the
// pointer that writer swapped in before opening it.
inline void announce_unfenced(Slot *slot) noexcept {
    assert(slot->active.load(std::memory_order_relaxed) == 0 && "read sections do not nest");
    slot->active.store(global_epoch.load(std::memory_order_acquire), std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
}
}  // namespace detail

// Marks the calling thread as reading for its lifetime. Does not nest (the
// ring runs no user code, not even a hasher, inside a read section); debug
// builds check. ok() is false only if the thread's first-ever registration
// could not allocate its slot. Inline: it is on every ring-level read.
class ReadGuard {
public:
    ReadGuard() noexcept : slot_(detail::tls_fast_slot) {
        if (__builtin_expect(slot_ != nullptr, 1))
            detail::announce_unfenced(slot_);
        else
            slot_ = detail::enter_read_slow();
    }
    ~ReadGuard() {
        if (__builtin_expect(slot_ != nullptr, 1)) slot_->active.store(0, std::memory_order_release);
    }
    ReadGuard(const ReadGuard &) = delete;
    ReadGuard &operator=(const ReadGuard &) = delete;
    bool ok() const noexcept { return slot_ != nullptr; }

private:
    Slot *slot_;
};

// A buffer of at least `words` words for the calling thread's use within
// one call, kept for its later calls (and, after it exits, for the thread
// that reuses its slot); registers the thread as enter_read_slow() does.
// nullptr if that or the buffer could not be allocated. Allocates nothing
// at thread exit or in glibc's thread-exit bookkeeping.
uint64_t *thread_scratch(size_t words) noexcept;

// Called by a writer right after it swapped the published pointer: returns
// the epoch its old object was retired in, and opens the next epoch.
uint64_t retire_epoch() noexcept;

// Called by a writer after the swap and before oldest_reader_epoch(): makes
// every reader's slot announcement visible (membarrier when readers skip
// their own fence). False if that could not be ensured: free nothing then.
bool fence_readers() noexcept;

// The oldest epoch a reader is still inside, or UINT64_MAX if none is.
// An object retired in epoch r is unreachable once r < this value.
// Scans every thread's slot; O(threads ever registered).
uint64_t oldest_reader_epoch() noexcept;

// For tests: the slots ever registered, and in `in_use` how many belong to
// a live thread now (a thread's slot is recycled when it exits).
size_t registered_slots(size_t *in_use) noexcept;

}  // namespace reclaim
}  // namespace chring
