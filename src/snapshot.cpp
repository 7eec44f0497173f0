#include "snapshot.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "compat.hpp"

namespace chring {
namespace {

std::atomic<int64_t> live_snapshots{0};

__extension__ typedef unsigned __int128 u128;  // arc sums: one node may own all 2^64

// Fingerprint accumulator over integers, not memory, so it is the same on
// every platform and byte order. Not cryptographic: it tells rings apart.
struct FingerprintMix {
    uint64_t h = 0x243F6A8885A308D3ull;
    void add(uint64_t v) noexcept {
        h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    void add_bytes(const std::string &s) noexcept {
        add(s.size());
        uint64_t word = 0;
        unsigned n = 0;
        for (unsigned char c : s) {
            word |= uint64_t(c) << (8 * n);
            if (++n == 8) {
                add(word);
                word = 0;
                n = 0;
            }
        }
        if (n) add(word);
    }
};

// Writes the decimal digits of v at p; returns the number written.
size_t put_decimal(char *p, uint32_t v) noexcept {
    char tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = char('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; ++i) p[i] = tmp[n - 1 - i];
    return n;
}

struct ReplicaScratch {
    std::vector<uint32_t> stamp;  // per node: the generation that chose it
    uint32_t generation = 0;
};
thread_local ReplicaScratch replica_scratch;

}  // namespace

Snapshot::Snapshot(PlacementPtr placement)
    : placement_(std::move(placement)),
      hash64_(placement_->hasher->hash64),
      native_(placement_->mode == CHR_PLACEMENT_NATIVE) {
    finish();
    live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::Snapshot(const Snapshot &base, MembershipDelta delta)
    : placement_(base.placement_), hash64_(base.hash64_), native_(base.native_) {
    if (!native_) {
        nodes_ = std::move(delta.nodes);
        compat::build_points(*placement_, nodes_, values_, owners_);
        finish();
        live_snapshots.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const size_t n_new = delta.nodes.size();

    // Old node index -> new index, for nodes whose tokens are kept as they are.
    std::vector<int64_t> remap(base.nodes_.size(), -1);
    for (size_t k = 0; k < n_new; ++k)
        if (delta.old_index[k] >= 0 && !delta.regenerate[k]) remap[size_t(delta.old_index[k])] = int64_t(k);

    std::vector<uint64_t> fresh_values;
    std::vector<uint32_t> fresh_owners;
    generate_tokens(delta, fresh_values, fresh_owners);

    size_t kept = 0;
    for (uint32_t o : base.owners_) kept += remap[o] >= 0;
    values_.resize(kept + fresh_values.size());
    owners_.resize(values_.size());

    // Merge two sequences sorted by (value, owner). Remapping preserves the
    // order of surviving owners because both node tables are sorted by id.
    size_t i = 0, j = 0, out = 0;
    const size_t nb = base.values_.size(), nf = fresh_values.size();
    while (true) {
        while (i < nb && remap[base.owners_[i]] < 0) ++i;
        if (i == nb) break;
        uint64_t bv = base.values_[i];
        uint32_t bo = uint32_t(remap[base.owners_[i]]);
        while (j < nf && (fresh_values[j] < bv || (fresh_values[j] == bv && fresh_owners[j] < bo))) {
            values_[out] = fresh_values[j];
            owners_[out++] = fresh_owners[j++];
        }
        values_[out] = bv;
        owners_[out++] = bo;
        ++i;
    }
    for (; j < nf; ++j) {
        values_[out] = fresh_values[j];
        owners_[out++] = fresh_owners[j];
    }

    nodes_ = std::move(delta.nodes);
    finish();
    live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::~Snapshot() { live_snapshots.fetch_sub(1, std::memory_order_relaxed); }

void Snapshot::release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

int64_t Snapshot::live_count() noexcept { return live_snapshots.load(std::memory_order_relaxed); }

void Snapshot::generate_tokens(const MembershipDelta &delta, std::vector<uint64_t> &values,
                               std::vector<uint32_t> &owners) const {
    const uint32_t tpw = placement_->tokens_per_weight;
    const uint64_t seed = placement_->seed;
    size_t total = 0;
    for (size_t k = 0; k < delta.nodes.size(); ++k)
        if (delta.regenerate[k]) total += size_t(delta.nodes[k].weight) * tpw;

    std::vector<std::pair<uint64_t, uint32_t>> tokens;
    tokens.reserve(total);
    char buf[CHR_NODE_ID_MAX + 1 + 10];
    for (size_t k = 0; k < delta.nodes.size(); ++k) {
        if (!delta.regenerate[k]) continue;
        const Node &node = delta.nodes[k];
        const uint32_t count = node.weight * tpw;  // bounded by CHR_TOKENS_MAX (checked by the ring)
        std::memcpy(buf, node.id.data(), node.id.size());
        buf[node.id.size()] = '#';
        char *digits = buf + node.id.size() + 1;
        for (uint32_t t = 0; t < count; ++t) {
            size_t len = node.id.size() + 1 + put_decimal(digits, t);
            tokens.emplace_back(hash64_(buf, len, seed), uint32_t(k));
        }
    }
    std::sort(tokens.begin(), tokens.end());
    values.resize(tokens.size());
    owners.resize(tokens.size());
    for (size_t t = 0; t < tokens.size(); ++t) {
        values[t] = tokens[t].first;
        owners[t] = tokens[t].second;
    }
}

void Snapshot::finish() {
    const size_t T = values_.size();

    // Tokens and owned arc per node: token k owns (values[k-1], values[k]],
    // token 0 the wrapping arc. Summed in 128 bits: one node may own 2^64.
    std::vector<u128> arcs(nodes_.size(), 0);
    for (Node &n : nodes_) n.tokens = 0;
    for (size_t k = 0; k < T; ++k) {
        Node &n = nodes_[owners_[k]];
        ++n.tokens;
        u128 arc = k ? (u128)(values_[k] - values_[k - 1])
                                  : ((u128)1 << 64) - values_[T - 1] + values_[0];
        arcs[owners_[k]] += arc;
    }
    eligible_ = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
        nodes_[i].ownership = double(arcs[i]) * 0x1p-64;
        eligible_ += nodes_[i].tokens > 0;
    }

    // Prefix index on the top `bits` bits of a hash: at most one bucket per
    // token (<= 4 bytes per token), ~1 token per bucket, so a lookup reads
    // two index words and scans a handful of values.
    unsigned bits = 1;
    while (bits < 24 && (size_t(1) << (bits + 1)) <= T) ++bits;
    prefix_shift_ = 64 - bits;
    prefix_.assign((size_t(1) << bits) + 1, 0);
    size_t k = 0;
    for (size_t b = 0; b < prefix_.size(); ++b) {
        while (k < T && (values_[k] >> prefix_shift_) < b) ++k;
        prefix_[b] = uint32_t(k);
    }

    FingerprintMix fp;
    fp.add(uint64_t(uint32_t(placement_->mode)));
    fp.add(placement_->tokens_per_weight);
    fp.add(placement_->seed);
    fp.add_bytes(placement_->hasher->name);
    fp.add(nodes_.size());
    for (const Node &n : nodes_) {
        fp.add_bytes(n.id);
        fp.add(n.weight);
    }
    fp.add(T);
    for (size_t t = 0; t < T; ++t) {
        fp.add(values_[t]);
        fp.add(owners_[t]);
    }
    fingerprint_ = fp.h;
}

uint64_t Snapshot::compat_key_position(const void *key, size_t len) const noexcept {
    return compat::key_position(*placement_, key, len);
}

uint32_t Snapshot::lower_bound(uint32_t lo, uint32_t hi, uint64_t h) const noexcept {
    return uint32_t(std::lower_bound(values_.begin() + lo, values_.begin() + hi, h) - values_.begin());
}

size_t Snapshot::replicas(const void *key, size_t len, size_t n, uint32_t *out) const {
    n = std::min(n, eligible_);
    if (n == 0) return 0;
    const size_t T = values_.size();
    size_t k = successor(hash_key(key, len));
    size_t found = 0;
    if (n <= kLinearScanReplicas) {
        for (size_t steps = 0; found < n && steps < T; ++steps) {
            uint32_t o = owners_[k];
            bool seen = false;
            for (size_t f = 0; f < found; ++f) seen |= out[f] == o;
            if (!seen) out[found++] = o;
            if (++k == T) k = 0;
        }
        return found;
    }
    // Many replicas: mark chosen nodes in a per-thread table instead of
    // rescanning the output (O(T) instead of O(T * n)).
    ReplicaScratch &s = replica_scratch;
    if (s.stamp.size() < nodes_.size()) s.stamp.assign(nodes_.size(), 0), s.generation = 0;
    if (++s.generation == 0) std::fill(s.stamp.begin(), s.stamp.end(), 0), s.generation = 1;
    for (size_t steps = 0; found < n && steps < T; ++steps) {
        uint32_t o = owners_[k];
        if (s.stamp[o] != s.generation) {
            s.stamp[o] = s.generation;
            out[found++] = o;
        }
        if (++k == T) k = 0;
    }
    return found;
}

int64_t Snapshot::find(const std::string &id) const noexcept {
    auto it = std::lower_bound(nodes_.begin(), nodes_.end(), id,
                               [](const Node &n, const std::string &v) { return n.id < v; });
    if (it == nodes_.end() || it->id != id) return -1;
    return it - nodes_.begin();
}

size_t Snapshot::index_bytes() const noexcept {
    return values_.size() * (sizeof(uint64_t) + sizeof(uint32_t)) + prefix_.size() * sizeof(uint32_t);
}

}  // namespace chring
