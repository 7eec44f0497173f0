#include "reclaim.hpp"

#include <new>

namespace chring {
namespace reclaim {

// One per reading thread, on its own cache line; never freed, only reused.
struct alignas(64) Slot {
    std::atomic<uint64_t> active{0};  // 0 = not reading, else the epoch it entered in
    std::atomic<bool> in_use{true};
    Slot *next = nullptr;
};

namespace {

std::atomic<uint64_t> global_epoch{1};
std::atomic<Slot *> slot_list{nullptr};

// A plain pointer, cheap to reach on every read; the holder below releases
// the slot at thread exit.
thread_local Slot *tls_slot __attribute__((tls_model("initial-exec"))) = nullptr;

struct SlotRelease {
    ~SlotRelease() {
        if (tls_slot) {
            tls_slot->active.store(0, std::memory_order_release);
            tls_slot->in_use.store(false, std::memory_order_release);
            tls_slot = nullptr;
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

Slot *thread_slot() noexcept {
    Slot *s = tls_slot;
    if (__builtin_expect(s != nullptr, 1)) return s;
    s = acquire_slot();
    if (s) {
        tls_slot = s;
        (void)&tls_release;  // odr-use so its destructor runs at thread exit
    }
    return s;
}

}  // namespace

ReadGuard::ReadGuard() noexcept : slot_(thread_slot()), outermost_(false) {
    if (!slot_) return;
    if (slot_->active.load(std::memory_order_relaxed) == 0) {
        outermost_ = true;
        // seq_cst: this store must be ordered before the reader's load of the
        // published pointer, against the writer's swap and slot scan.
        slot_->active.store(global_epoch.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
    }
}

ReadGuard::~ReadGuard() {
    if (outermost_) slot_->active.store(0, std::memory_order_release);
}

uint64_t retire_epoch() noexcept { return global_epoch.fetch_add(1, std::memory_order_seq_cst); }

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
