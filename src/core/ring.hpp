// The mutable ring handle: one published snapshot, a writer mutex, and the
// snapshots retired by writers until no reader can hold them.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "reclaim.hpp"
#include "snapshot.hpp"

namespace chring {

class Ring {
public:
    // An empty ring (make_placement() builds and checks the placement).
    explicit Ring(PlacementPtr placement);
    ~Ring();

    // Applies a batch and publishes it as one snapshot, or changes nothing.
    // Change c starts at changes + c * change_size; change_size is at least
    // kChangeV1Size, and the bytes of a change past what this library's
    // chr_change holds must be zero (fields of a later version it cannot honour).
    static constexpr size_t kChangeV1Size = offsetof(chr_change, tag) + sizeof(uint64_t);
    chr_status apply(const void *changes, size_t count, size_t change_size, size_t *failed_index,
                     const char *who);
    chr_status apply_one(const chr_change &change, const char *who) {
        return apply(&change, 1, sizeof change, nullptr, who);
    }

    // A batch that depends on the current state: under the writer lock,
    // plan(base, changes) fills the batch from the current snapshot, which
    // is then built, and published only if check(next) returns CHR_OK. No
    // other writer runs between the plan and the publish (ring files).
    // With `marks`, the new snapshot's availability state is exactly that
    // (ids not in the new membership are ignored: the caller checked them),
    // instead of the base's marks carried over.
    struct MarksById {
        std::vector<std::string> down;
        uint32_t panic_threshold = CHR_PANIC_THRESHOLD_DEFAULT;
    };
    using Plan = std::function<chr_status(const Snapshot &base, std::vector<chr_change> &changes)>;
    using Check = std::function<chr_status(const Snapshot &next)>;
    chr_status apply_planned(const Plan &plan, const Check &check, size_t *failed_index,
                             const char *who, const MarksById *marks = nullptr);

    // An availability change (chring.h, "Availability"): under the writer
    // lock, plan(base, marks) fills the new marks (by base's node index;
    // `marks` starts as base's), which are published with base's members and
    // tokens unless plan fails or they equal base's (CHR_OK, no snapshot).
    using MarksPlan = std::function<chr_status(const Snapshot &base, Marks &marks)>;
    chr_status set_marks(const MarksPlan &plan);

    // Where a key lands: fixed for the ring's lifetime, so callers hash
    // before read() and no hasher (plugin code) runs inside a read section.
    uint64_t hash_key(const void *key, size_t len) const noexcept { return key_hash_(key, len); }

    // Runs f(const Snapshot &) inside a read-side critical section on the
    // current snapshot: lock-free, never waits for a writer. Sections do not
    // nest: f must not read a ring (none of the C API's does).
    template <class F>
    chr_status read(const char *who, F &&f) const {
        reclaim::ReadGuard guard;
        if (!guard.ok()) return out_of_slots(who);
        return f(*current_.load(std::memory_order_seq_cst));
    }

    // A new reference to the current snapshot (release it with release()).
    chr_status acquire(const Snapshot **out, const char *who) const;

private:
    static chr_status out_of_slots(const char *who);
    // The batch on top of `base` as an unpublished snapshot (under writer_).
    // `changes` holds `count` chr_change structs of `change_size` bytes each.
    chr_status build(const Snapshot &base, const void *changes, size_t count, size_t change_size,
                     size_t *failed_index, const char *who, Snapshot **next,
                     const MarksById *marks = nullptr);
    void publish(Snapshot *next);  // under writer_; cannot fail
    void collect() noexcept;       // under writer_

    struct Retired {
        Snapshot *snapshot;
        uint64_t epoch;
    };

    const PlacementPtr placement_;  // every snapshot's, kept for key_hash_
    const KeyHasher key_hash_;
    std::mutex writer_;
    std::atomic<Snapshot *> current_;
    std::vector<Retired> retired_;  // guarded by writer_
};

}  // namespace chring
