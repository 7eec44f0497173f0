// What every benchmark program shares: the key pool, rings of N nodes built
// through the public API, and the token array dumped from a snapshot.
#pragma once

#include <chring.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// One key of 20..30 bytes, "session:user_<n>:<suffix>", in a 32-byte record
// so the pool is one flat array.
struct Key {
    uint8_t len;
    char bytes[31];
};

// 2^20 keys, built once per process with a fixed seed and shuffled once.
// Benchmarks walk it in order from a per-thread start: consecutive lookups
// hit unrelated ring positions (the key hash scatters them) and no key
// repeats within 1M lookups, so the ring's cache lines are not kept hot by
// repetition. The key bytes themselves stream in order, as keys read from
// a network buffer would.
class KeyPool {
public:
    static constexpr size_t kSize = size_t(1) << 20;
    static const KeyPool &get();
    const Key &operator[](size_t i) const noexcept { return keys_[i & (kSize - 1)]; }

private:
    KeyPool();
    std::vector<Key> keys_;
};

// Aborts with chr_last_error() if `status` is not CHR_OK: a failure while
// setting up a benchmark is a bug, not a result.
void check(chr_status status, const char *what);

// "node-<i>": the id of node i in every ring built here.
std::string node_id(size_t i);

// A ring of `nodes` nodes of weight 1 (160 tokens each, default options),
// built with one chr_ring_apply batch. Release with chr_ring_free().
chr_ring *build_ring(size_t nodes);
struct NodeBatch;
// The same from a batch made beforehand (so that a timed build times only
// the library), or one the caller changed (zones, weights).
chr_ring *build_ring(const NodeBatch &batch);

// A ring of `nodes` nodes built once per process and kept for its lifetime;
// safe to call from several benchmark threads at once.
chr_ring *shared_ring(size_t nodes);

// The ADD changes that build_ring() applies; `ids` keeps the bytes alive.
struct NodeBatch {
    std::vector<std::string> ids;
    std::vector<chr_change> changes;
    explicit NodeBatch(size_t nodes);
};

// The sorted token array of a snapshot (chr_snapshot_token), for the plain
// std::lower_bound reference search.
struct TokenArray {
    std::vector<uint64_t> values;
    std::vector<uint32_t> owners;  // node index per token
    explicit TokenArray(const chr_snapshot *snap);
    // Owner of the first token >= hash, wrapping: the successor rule.
    uint32_t owner_at_or_after(uint64_t hash) const noexcept;
};

// Keeps a result alive without touching memory: every timed loop ends its
// iteration with this. benchmark::DoNotOptimize also tells the compiler that
// all memory may have changed, which on this machine made the 10-node
// chr_snapshot_lookup row 15.9 ns instead of 9.6 (the 100- and 1,000-node
// rows were unaffected), an artifact of the loop, not of the code timed.
inline void consume(uint64_t value) noexcept { asm volatile("" : : "r"(value)); }

// The median of repeated measurements (the upper one of an even count).
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Where a timed loop writes its results: iteration i uses slot i % 16, and
// the slots sit at 16 different offsets within a 4 KiB page. A lookup's
// result store and the next lookup's loads from the ring conflict when
// their addresses agree in the low 12 bits (4K aliasing); with one fixed
// result address the cost then depends on where it happens to fall, up to
// +35% for a 10-node ring whose hot data spans only a few page offsets
// (9.3-12.8 ns measured for one result moved over a page). Cycling the
// slots measures the average over result addresses, what a caller whose
// buffer could be anywhere can expect.
template <class T, size_t PerSlot = 1>
class ResultSlots {
public:
    static constexpr size_t kSlots = 16;
    T *operator[](size_t i) noexcept {
        return reinterpret_cast<T *>(bytes_ + (i % kSlots) * kStride);
    }

private:
    static constexpr size_t kStride = 4096 + 256;  // 256 apart within a page
    static_assert(sizeof(T) * PerSlot <= kStride, "a slot holds PerSlot results");
    alignas(4096) unsigned char bytes_[kSlots * kStride];
};

// The ring's key hash with the default options (xxh3, seed 0).
uint64_t key_hash(const Key &key) noexcept;

// Empty if chr_snapshot_lookup and a std::lower_bound over `tokens` agree on
// the first `sample` keys of the pool; otherwise what differed.
std::string compare_with_reference(const chr_snapshot *snap, const TokenArray &tokens,
                                   size_t sample);

}  // namespace bench
