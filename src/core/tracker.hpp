// The tracker behind chr_tracker: per-node in-flight counters keyed by a
// 64-bit hash of the node id, in an open-addressing table sized once at
// creation. A slot, once claimed by an id, keeps it for the tracker's life,
// so a ticket's slot stays valid after its node left every snapshot.
// Acquire and release are compare-and-swap loops on one slot's counter plus
// one add on the total: lock-free, no allocation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "bounded.hpp"
#include "chring.h"
#include "snapshot.hpp"

namespace chring {

class Tracker {
public:
    explicit Tracker(size_t max_nodes);  // may throw bad_alloc

    chr_status acquire(const char *who, const Snapshot &s, const void *key, size_t key_len,
                       const BoundParams &p, BoundChoice &c, chr_ticket &t);
    chr_status release(const char *who, const chr_ticket &t);
    chr_status set_available(const char *who, const void *id, size_t len, bool available);
    uint64_t load(const void *id, size_t len) const noexcept;
    uint64_t total() const noexcept { return total_.load(std::memory_order_acquire); }

private:
    struct alignas(64) Slot {
        std::atomic<uint64_t> key{0};   // 0 = free, else the id's hash (never 0)
        std::atomic<uint64_t> count{0};
        std::atomic<uint32_t> down{0};
    };
    static uint64_t id_key(const void *id, size_t len) noexcept;
    // The slot of `key`, or nullptr if no slot has it.
    Slot *find(uint64_t key) const noexcept;
    // The slot of `key`, claiming a free one; nullptr when max_nodes ids
    // already have one.
    Slot *claim(uint64_t key) noexcept;
    uint64_t check_of(size_t slot) const noexcept { return nonce_ ^ (slot * 0x9E3779B97F4A7C15ull); }

    const size_t max_nodes_;
    const size_t mask_;  // table size - 1 (a power of two >= 2 * max_nodes)
    std::unique_ptr<Slot[]> slots_;
    const uint64_t nonce_;
    alignas(64) std::atomic<uint64_t> total_{0};
    std::atomic<size_t> claimed_{0};
    std::atomic<uint32_t> down_{0};  // slots marked unavailable
};

}  // namespace chring
