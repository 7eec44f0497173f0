#include "snapshot.hpp"

#include <algorithm>
#include <memory>
#include <new>

#include "base/errors.hpp"
#include "reclaim.hpp"

namespace chring {

static_assert(kReplicaPolicies == CHR_REPLICAS_NTS + 1, "a name for every CHR_REPLICAS_*");

chr_status check_replica_policy(const char *who, int32_t policy) {
    if (policy >= 0 && policy < kReplicaPolicies) return CHR_OK;
    return fail(CHR_ENOTSUP, "%s: no replica policy %d in this library (0..%d: nodes, zones-first, nts)",
                who, policy, kReplicaPolicies - 1);
}

namespace detail {
std::atomic<int64_t> live_snapshots{0};  // snapshot_build.cpp counts them in
}  // namespace detail

Snapshot::~Snapshot() {
    delete[] member_keys_.load(std::memory_order_acquire);
    detail::live_snapshots.fetch_sub(1, std::memory_order_relaxed);
}

const uint64_t *Snapshot::build_member_keys(MemberKeyFn key_of) const {
    const size_t n = nodes_.size();
    std::unique_ptr<uint64_t[]> keys(new uint64_t[n ? n : 1]);
    for (size_t i = 0; i < n; ++i) keys[i] = key_of(nodes_[i].id.data(), nodes_[i].id.size());
    const uint64_t *installed = nullptr;
    if (member_keys_.compare_exchange_strong(installed, keys.get(), std::memory_order_acq_rel,
                                             std::memory_order_acquire))
        return keys.release();
    return installed;  // another thread's copy won; ours is freed
}

void Snapshot::release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

int64_t Snapshot::live_count() noexcept {
    return detail::live_snapshots.load(std::memory_order_relaxed);
}

void Snapshot::owners_of(const void *const *keys, const size_t *lens, size_t n,
                         uint32_t *owners) const noexcept {
    // A ring whose index fits the caches: hash and prefetch a group of
    // keys, then look them up (the pipeline below costs more than it saves).
    if (index_.token_count() < kPipelinedBatchTokens) {
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
        return;
    }
    // Bigger, each stage's reads miss: a pipeline kDistance keys deep a
    // stage. Key i is hashed and its index entries prefetched, key
    // i - kDistance's window prefetched (its index entries have arrived),
    // and key i - 2 kDistance looked up (its window has). A key's stages
    // are about one memory latency apart, so its misses overlap the work
    // on other keys instead of a group waiting for its slowest miss.
    constexpr size_t kDistance = 16, kRing = 64;  // kRing >= 2 kDistance + 1, a power of two
    uint64_t hashes[kRing];
    const size_t lead = std::min(n, 2 * kDistance);
    for (size_t i = 0; i < lead; ++i) {
        hashes[i] = hash_key(keys[i], lens[i]);
        index_.prefetch_bucket(hashes[i]);
        if (i >= kDistance) index_.prefetch_window(hashes[i - kDistance]);
    }
    for (size_t i = lead; i < n; ++i) {
        const uint64_t h = hash_key(keys[i], lens[i]);
        hashes[i % kRing] = h;
        index_.prefetch_bucket(h);
        index_.prefetch_window(hashes[(i - kDistance) % kRing]);
        owners[i - 2 * kDistance] = owner_at_hash(hashes[(i - 2 * kDistance) % kRing]);
    }
    // Drain: the last keys' windows, then their lookups.
    const size_t first_pending = n > 2 * kDistance ? n - 2 * kDistance : 0;
    for (size_t i = n > kDistance ? n - kDistance : 0; i < n; ++i) index_.prefetch_window(hashes[i % kRing]);
    for (size_t i = first_pending; i < n; ++i) owners[i] = owner_at_hash(hashes[i % kRing]);
}

size_t Snapshot::member_bytes() const noexcept {
    size_t bytes = nodes_.capacity() * sizeof(Node) + cache_.bytes() +
                   (slot_node_.capacity() + node_slot_.capacity() + zone_of_slot_.capacity()) * sizeof(uint32_t) +
                   weight_before_.capacity() * sizeof(uint64_t) + marks_.down.capacity() + down_slot_.capacity();
    if (member_keys_.load(std::memory_order_acquire)) bytes += nodes_.size() * sizeof(uint64_t);
    const std::string empty;
    for (const Node &n : nodes_) {  // heap beyond each string's own buffer
        if (n.id.capacity() > empty.capacity()) bytes += n.id.capacity() + 1;
        if (n.zone.capacity() > empty.capacity()) bytes += n.zone.capacity() + 1;
    }
    return bytes;
}

uint64_t *Snapshot::thread_bitmap(size_t bit_count) {
    // Not a thread_local vector: its destructor's registration could abort.
    uint64_t *bits = reclaim::thread_scratch((bit_count + 63) / 64);
    if (!bits) throw std::bad_alloc();
    return bits;
}

void Snapshot::replica_shares(ReplicaPolicy policy, size_t n, double *out) const {
    __extension__ typedef unsigned __int128 u128;  // one node may hold all 2^64
    std::vector<u128> sums(nodes_.size(), 0);
    const size_t T = index_.token_count();
    if (T == 0 || std::min(n, eligible_) == 0) {
        std::fill(out, out + nodes_.size(), 0.0);
        return;
    }
    // Token k's keys are its arc (value[k-1], value[k]], the wrapping arc
    // for k = 0; they all have the list of replicas_from_token(k). A token
    // whose owner is the previous token's has the same list (the walk from
    // k-1 meets that owner first, then walks on from k).
    std::vector<uint32_t> list(std::min(n, eligible_));
    size_t listed = 0;
    const uint64_t last = index_.token_value(index_.last_before_group(0));
    uint64_t prev = 0;
    uint32_t prev_slot = 0;
    bool first = true;
    for (TokenIndex::Cursor c(index_); !c.done(); c.next()) {
        const uint64_t value = c.value();
        const u128 arc = first ? (u128(1) << 64) - last + value : u128(value - prev);
        if (first || c.slot() != prev_slot)
            listed = replicas_from_token(c.position(), n, policy, [&](size_t i, uint32_t o) { list[i] = o; });
        for (size_t i = 0; i < listed; ++i) sums[list[i]] += arc;
        prev = value;
        prev_slot = c.slot();
        first = false;
    }
    for (size_t i = 0; i < nodes_.size(); ++i) out[i] = double(sums[i]) * 0x1p-64;
}

int64_t Snapshot::find(const std::string &id) const noexcept {
    auto it = std::lower_bound(nodes_.begin(), nodes_.end(), id,
                               [](const Node &n, const std::string &v) { return n.id < v; });
    if (it == nodes_.end() || it->id != id) return -1;
    return it - nodes_.begin();
}

}  // namespace chring
