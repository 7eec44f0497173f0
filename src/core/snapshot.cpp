#include "snapshot.hpp"

#include <algorithm>

namespace chring {

namespace detail {
std::atomic<int64_t> live_snapshots{0};  // snapshot_build.cpp counts them in
}  // namespace detail

Snapshot::~Snapshot() { detail::live_snapshots.fetch_sub(1, std::memory_order_relaxed); }

void Snapshot::release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

int64_t Snapshot::live_count() noexcept {
    return detail::live_snapshots.load(std::memory_order_relaxed);
}

void Snapshot::owners_of(const void *const *keys, const size_t *lens, size_t n,
                         uint32_t *owners) const noexcept {
    constexpr size_t kGroup = 16;
    uint64_t hashes[kGroup];
    for (size_t first = 0; first < n; first += kGroup) {
        const size_t m = std::min(kGroup, n - first);
        for (size_t j = 0; j < m; ++j) {
            hashes[j] = hash_key(keys[first + j], lens[first + j]);
            index_.prefetch_bucket(hashes[j]);
        }
        for (size_t j = 0; j < m; ++j) index_.prefetch_window(hashes[j]);
        for (size_t j = 0; j < m; ++j) owners[first + j] = owner_at_hash(hashes[j]);
    }
}

uint64_t *Snapshot::thread_bitmap(size_t nodes) {
    static thread_local std::vector<uint64_t> bits;  // grows once per thread, then reused
    if (bits.size() < (nodes + 63) / 64) bits.resize((nodes + 63) / 64);
    return bits.data();
}

int64_t Snapshot::find(const std::string &id) const noexcept {
    auto it = std::lower_bound(nodes_.begin(), nodes_.end(), id,
                               [](const Node &n, const std::string &v) { return n.id < v; });
    if (it == nodes_.end() || it->id != id) return -1;
    return it - nodes_.begin();
}

}  // namespace chring
