// Epoch-based reclamation of ring snapshots.
//
// Why this scheme (numbers: shared/reference/measurements.md, this machine):
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
#include <cstdint>

namespace chring {
namespace reclaim {

struct Slot;

// Marks the calling thread as reading for its lifetime. Nests. ok() is false
// only if the thread's first-ever registration could not allocate its slot.
class ReadGuard {
public:
    ReadGuard() noexcept;
    ~ReadGuard();
    ReadGuard(const ReadGuard &) = delete;
    ReadGuard &operator=(const ReadGuard &) = delete;
    bool ok() const noexcept { return slot_ != nullptr; }

private:
    Slot *slot_;
    bool outermost_;
};

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

}  // namespace reclaim
}  // namespace chring
