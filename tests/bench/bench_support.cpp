#include "bench_support.hpp"

#define XXH_INLINE_ALL  // as the xxhash plugin does: the floor pays no PLT call
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>

namespace bench {

KeyPool::KeyPool() : keys_(kSize) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::mt19937_64 rng(20240601);
    std::uniform_int_distribution<int> length(20, 30);
    std::uniform_int_distribution<int> letter(0, int(sizeof alphabet) - 2);
    for (size_t n = 0; n < kSize; ++n) {
        Key &k = keys_[n];
        int prefix = std::snprintf(k.bytes, sizeof k.bytes, "session:user_%zu:", n);
        int total = std::max(length(rng), prefix + 1);  // at least one suffix byte
        for (int i = prefix; i < total; ++i) k.bytes[i] = alphabet[letter(rng)];
        k.len = uint8_t(total);
    }
    std::shuffle(keys_.begin(), keys_.end(), rng);
}

const KeyPool &KeyPool::get() {
    static const KeyPool pool;
    return pool;
}

void check(chr_status status, const char *what) {
    if (status == CHR_OK) return;
    std::fprintf(stderr, "bench: %s failed: %s (%s)\n", what, chr_strerror(status),
                 chr_last_error());
    std::abort();
}

std::string node_id(size_t i) { return "node-" + std::to_string(i); }

NodeBatch::NodeBatch(size_t nodes) {
    ids.reserve(nodes);
    for (size_t i = 0; i < nodes; ++i) ids.push_back(node_id(i));
    for (size_t i = 0; i < nodes; ++i)
        changes.push_back({CHR_OP_ADD, 1, ids[i].data(), ids[i].size(), nullptr, 0, i});
}

chr_ring *build_ring(size_t nodes) { return build_ring(NodeBatch(nodes)); }

chr_ring *build_ring(const NodeBatch &batch) {
    chr_ring *ring = nullptr;
    check(chr_ring_new(nullptr, &ring), "chr_ring_new");
    check(chr_ring_apply(ring, batch.changes.data(), batch.changes.size(), nullptr),
          "chr_ring_apply");
    return ring;
}

chr_ring *shared_ring(size_t nodes) {
    struct Free {
        void operator()(chr_ring *r) const { chr_ring_free(r); }
    };
    static std::mutex mutex;
    static std::map<size_t, std::unique_ptr<chr_ring, Free>> rings;
    std::lock_guard<std::mutex> lock(mutex);
    auto &slot = rings[nodes];
    if (!slot) slot.reset(build_ring(nodes));
    return slot.get();
}

TokenArray::TokenArray(const chr_snapshot *snap) {
    size_t count = 0;
    check(chr_snapshot_token_count(snap, &count), "chr_snapshot_token_count");
    values.resize(count);
    owners.resize(count);
    for (size_t i = 0; i < count; ++i)
        check(chr_snapshot_token(snap, i, &values[i], &owners[i]), "chr_snapshot_token");
}

uint32_t TokenArray::owner_at_or_after(uint64_t hash) const noexcept {
    auto it = std::lower_bound(values.begin(), values.end(), hash);
    return owners[it == values.end() ? 0 : size_t(it - values.begin())];
}

uint64_t key_hash(const Key &key) noexcept { return XXH3_64bits_withSeed(key.bytes, key.len, 0); }

std::string compare_with_reference(const chr_snapshot *snap, const TokenArray &tokens,
                                   size_t sample) {
    const KeyPool &pool = KeyPool::get();
    for (size_t i = 0; i < sample; ++i) {
        const Key &k = pool[i];
        chr_node_view view;
        chr_status st = chr_snapshot_lookup(snap, k.bytes, k.len, &view);
        if (st != CHR_OK) return std::string("chr_snapshot_lookup: ") + chr_last_error();
        uint32_t expected = tokens.owner_at_or_after(key_hash(k));
        if (view.index != expected)
            return "key '" + std::string(k.bytes, k.len) + "': chr_snapshot_lookup says node " +
                   std::to_string(view.index) + ", std::lower_bound says " +
                   std::to_string(expected);
    }
    return "";
}

}  // namespace bench
