#include "tracker.hpp"

#include <chrono>

#include "base/errors.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace chring {

namespace {
size_t table_size(size_t max_nodes) {
    size_t n = 2;
    while (n < 2 * max_nodes) n <<= 1;
    return n;
}
}  // namespace

Tracker::Tracker(size_t max_nodes)
    : max_nodes_(max_nodes), mask_(table_size(max_nodes) - 1), slots_(new Slot[mask_ + 1]),
      nonce_(XXH3_64bits_withSeed(this, 0, uint64_t(std::chrono::steady_clock::now()
                                                          .time_since_epoch()
                                                          .count())) |
             1) {}

uint64_t Tracker::id_key(const void *id, size_t len) noexcept {
    const uint64_t k = XXH3_64bits_withSeed(id, len, 0x63687472696e67ull);  // "chring"
    return k ? k : 1;
}

Tracker::Slot *Tracker::find(uint64_t key) const noexcept {
    for (size_t i = key & mask_;; i = (i + 1) & mask_) {
        const uint64_t k = slots_[i].key.load(std::memory_order_acquire);
        if (k == key) return &slots_[i];
        if (k == 0) return nullptr;  // slots are never freed: the chain ends here
    }
}

Tracker::Slot *Tracker::claim(uint64_t key) noexcept {
    if (Slot *s = find(key)) return s;
    if (claimed_.fetch_add(1, std::memory_order_relaxed) >= max_nodes_) {
        claimed_.fetch_sub(1, std::memory_order_relaxed);
        return find(key);  // another thread may have claimed it meanwhile
    }
    // The table holds at least twice max_nodes slots: a free one exists.
    for (size_t i = key & mask_;; i = (i + 1) & mask_) {
        uint64_t k = slots_[i].key.load(std::memory_order_acquire);
        if (k == 0 && slots_[i].key.compare_exchange_strong(k, key, std::memory_order_acq_rel))
            return &slots_[i];
        if (k == key) {  // claimed by another thread first: give our claim back
            claimed_.fetch_sub(1, std::memory_order_relaxed);
            return &slots_[i];
        }
    }
}

chr_status Tracker::acquire(const char *who, const Snapshot &s, const void *key, size_t key_len,
                            const BoundParams &p, BoundChoice &c, chr_ticket &t) {
    const uint64_t h = s.hash_key(key, key_len);
    // The members' id keys, hashed once per snapshot (the first acquire on
    // it allocates them: bad_alloc is CHR_ENOMEM), so that reading a
    // member's counter is one probe of the table, not a hash and a probe.
    const uint64_t *const keys = s.member_keys(&Tracker::id_key);
    auto load = [&](uint32_t i) -> uint64_t {
        const Slot *sl = find(keys[i]);
        return sl ? sl->count.load(std::memory_order_acquire) : 0;
    };
    auto up = [&](uint32_t i) {
        const Slot *sl = find(keys[i]);
        return !sl || sl->down.load(std::memory_order_acquire) == 0;
    };
    for (;;) {
        const bool all_up = down_.load(std::memory_order_acquire) == 0;
        // The snapshot's members' counts, as chr_snapshot_lookup_bounded
        // sums the caller's: not total_, which also holds the requests of
        // nodes that left and of other rings sharing this tracker. Read
        // once per pass: the compare-and-swap below checks the chosen
        // node's count against the capacity for this L, as the old total_
        // read was; only a pass that lost a race reads it again.
        const uint64_t total = p.bounded ? member_loads(s, load).total : 0;
        if (!choose_bounded(s, h, p, total, all_up, load, up, c))
            return fail(CHR_EEMPTY, "%s: every node with tokens is marked unavailable", who);
        // Without a probe limit a full walk finds room for the total it was
        // given; finding none means other acquires counted requests after
        // the total was read: read it again.
        if ((c.flags & CHR_BOUND_OVER) && p.max_probes == 0) continue;
        Slot *sl = claim(keys[c.index]);
        if (!sl)
            return fail(CHR_ERANGE, "%s: the tracker has counters for %zu node ids, its maximum",
                        who, max_nodes_);
        uint64_t count = sl->count.load(std::memory_order_acquire);
        bool counted = false;
        // Counted only while below the capacity just computed (or, past the
        // probe limit, unconditionally); a lost race computes again.
        while (count < c.capacity || (c.flags & CHR_BOUND_OVER)) {
            if (sl->count.compare_exchange_weak(count, count + 1, std::memory_order_acq_rel)) {
                counted = true;
                break;
            }
        }
        if (!counted) continue;
        c.load = count;
        total_.fetch_add(1, std::memory_order_acq_rel);
        const size_t index = size_t(sl - slots_.get());
        t.slot = index;
        t.check = check_of(index);
        return CHR_OK;
    }
}

chr_status Tracker::release(const char *who, const chr_ticket &t) {
    if (t.slot > mask_ || t.check != check_of(size_t(t.slot)))
        return fail(CHR_EINVAL, "%s: the ticket (slot %llu) is not one of this tracker's", who,
                    (unsigned long long)t.slot);
    Slot &sl = slots_[t.slot];
    uint64_t count = sl.count.load(std::memory_order_acquire);
    do {
        if (count == 0)
            return fail(CHR_EINVAL, "%s: the ticket's node has no request in flight (released twice?)",
                        who);
    } while (!sl.count.compare_exchange_weak(count, count - 1, std::memory_order_acq_rel));
    total_.fetch_sub(1, std::memory_order_acq_rel);
    return CHR_OK;
}

chr_status Tracker::set_available(const char *who, const void *id, size_t len, bool available) {
    Slot *sl = claim(id_key(id, len));
    if (!sl)
        return fail(CHR_ERANGE, "%s: the tracker has counters for %zu node ids, its maximum", who,
                    max_nodes_);
    const uint32_t down = available ? 0 : 1;
    if (sl->down.exchange(down, std::memory_order_acq_rel) != down) {
        if (down)
            down_.fetch_add(1, std::memory_order_acq_rel);
        else
            down_.fetch_sub(1, std::memory_order_acq_rel);
    }
    return CHR_OK;
}

uint64_t Tracker::load(const void *id, size_t len) const noexcept {
    const Slot *sl = find(id_key(id, len));
    return sl ? sl->count.load(std::memory_order_acquire) : 0;
}

}  // namespace chring
