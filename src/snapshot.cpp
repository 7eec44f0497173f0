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


}  // namespace

Snapshot::Snapshot(PlacementPtr placement)
    : placement_(std::move(placement)),
      hash64_(placement_->hasher->hash64),
      seed_(placement_->seed),
      native_(placement_->mode == CHR_PLACEMENT_NATIVE) {
    finish({}, {});
    live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::Snapshot(const Snapshot &base, MembershipDelta delta)
    : placement_(base.placement_), hash64_(base.hash64_), seed_(base.seed_), native_(base.native_) {
    if (!native_) {
        nodes_ = std::move(delta.nodes);
        std::vector<uint64_t> values;
        std::vector<uint32_t> owners;
        compat::build_points(*placement_, nodes_, values, owners);
        finish(values, owners);
        live_snapshots.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const size_t n_new = delta.nodes.size();

    // Old node index -> new index, for nodes whose tokens are kept as they are.
    constexpr uint32_t kDropped = UINT32_MAX;
    std::vector<uint32_t> remap(base.nodes_.size(), kDropped);
    for (size_t k = 0; k < n_new; ++k)
        if (delta.old_index[k] >= 0 && !delta.regenerate[k]) remap[size_t(delta.old_index[k])] = uint32_t(k);

    const std::vector<Token> fresh = generate_tokens(delta);

    // Merge two sequences sorted by (value, owner). Remapping preserves the
    // order of surviving owners because both node tables are sorted by id.
    // Sized for the worst case, then trimmed: one pass, no per-token checks.
    const size_t bound = base.tokens_ + fresh.size();
    std::vector<uint64_t> values(bound);
    std::vector<uint32_t> owners(bound);
    uint64_t *out_v = values.data();
    uint32_t *out_o = owners.data();
    const Token *f = fresh.data(), *f_end = f + fresh.size();
    base.for_each_token([&](uint64_t value, uint32_t owner) {
        const uint32_t mapped = remap[owner];
        if (mapped == kDropped) return;
        const Token kept{value, mapped};
        for (; f != f_end && *f < kept; ++f) *out_v++ = f->value, *out_o++ = f->owner;
        *out_v++ = kept.value, *out_o++ = kept.owner;
    });
    for (; f != f_end; ++f) *out_v++ = f->value, *out_o++ = f->owner;
    values.resize(size_t(out_v - values.data()));
    owners.resize(values.size());

    nodes_ = std::move(delta.nodes);
    finish(values, owners);
    live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::~Snapshot() { live_snapshots.fetch_sub(1, std::memory_order_relaxed); }

void Snapshot::release() const noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

int64_t Snapshot::live_count() noexcept { return live_snapshots.load(std::memory_order_relaxed); }

std::vector<Snapshot::Token> Snapshot::generate_tokens(const MembershipDelta &delta) const {
    const uint32_t tpw = placement_->tokens_per_weight;
    const uint64_t seed = placement_->seed;
    size_t total = 0;
    for (size_t k = 0; k < delta.nodes.size(); ++k)
        if (delta.regenerate[k]) total += size_t(delta.nodes[k].weight) * tpw;

    std::vector<Token> tokens;
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
            tokens.push_back({hash64_(buf, len, seed), uint32_t(k)});
        }
    }
    sort_tokens(tokens);
    return tokens;
}

void Snapshot::sort_tokens(std::vector<Token> &tokens) {
    // Hash values are close to uniform, so one counting pass on the top bits
    // places every token within a bucket of ~1, and an insertion sort
    // finishes: O(T) expected instead of std::sort's O(T log T) (a 1,000-node
    // ring builds in a third of the time). Skewed hashers only make buckets
    // bigger, which std::sort then handles: the result is the same order.
    const size_t n = tokens.size();
    if (n < 4096) {
        std::sort(tokens.begin(), tokens.end());
        return;
    }
    unsigned bits = 1;
    while (bits < 24 && (size_t(1) << (bits + 1)) <= n) ++bits;
    const unsigned shift = 64 - bits;
    std::vector<uint32_t> start((size_t(1) << bits) + 1, 0);
    for (const Token &t : tokens) ++start[(t.value >> shift) + 1];
    for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    std::vector<Token> sorted(n);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (const Token &t : tokens) sorted[fill[t.value >> shift]++] = t;
    for (size_t b = 0; b + 1 < start.size(); ++b) {
        Token *first = sorted.data() + start[b], *last = sorted.data() + start[b + 1];
        if (last - first > 32) {
            std::sort(first, last);
            continue;
        }
        for (Token *p = first + 1; p < last; ++p)  // insertion sort: ~1-2 tokens per bucket
            for (Token *q = p; q > first && *q < q[-1]; --q) std::swap(*q, q[-1]);
    }
    tokens.swap(sorted);
}

void Snapshot::finish(const std::vector<uint64_t> &values, const std::vector<uint32_t> &owners) {
    const size_t T = values.size();
    tokens_ = T;

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

    // One pass: tokens and owned arc per node (token k owns (values[k-1],
    // values[k]], token 0 the wrapping arc; summed in 128 bits since one node
    // may own all 2^64), and the fingerprint of the (value, owner) pairs in
    // four independent lanes (a single multiply chain would bound the speed
    // of every update by its latency).
    std::vector<u128> arcs(nodes_.size(), 0);
    for (Node &n : nodes_) n.tokens = 0;
    FingerprintMix lanes[4];
    uint64_t prev = T ? values[T - 1] : 0;
    for (size_t k = 0; k < T; ++k) {
        const uint64_t v = values[k];
        const uint32_t o = owners[k];
        ++nodes_[o].tokens;
        arcs[o] += k ? u128(v - prev) : (u128(1) << 64) - prev + v;
        prev = v;
        lanes[k & 3].add(v ^ (uint64_t(o) * 0x9E3779B97F4A7C15ull));
    }
    for (const FingerprintMix &lane : lanes) fp.add(lane.h);
    fingerprint_ = fp.h;
    eligible_ = 0;
    views_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
        Node &n = nodes_[i];
        n.ownership = double(arcs[i]) * 0x1p-64;
        eligible_ += n.tokens > 0;
        views_[i].view = {reinterpret_cast<const unsigned char *>(n.id.data()), n.id.size(),
                          reinterpret_cast<const unsigned char *>(n.zone.data()), n.zone.size(),
                          n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), 0};
        RefFields &ref = views_[i].ref;
        ref = {n.tag, n.ownership, n.weight, n.tokens, uint32_t(n.id.size()), uint32_t(n.zone.size()), {}};
        if (n.id.size() <= kShortId) std::memcpy(ref.short_id, n.id.data(), n.id.size());
    }

    // Owner field: O bits for N nodes. Prefix index on the top P bits of a
    // hash: one bucket per 1-2 tokens, so position() reads two index entries
    // and one window of records. P >= O keeps the cold part within 32 bits
    // (it only matters for rings of mostly weight-0 members).
    unsigned owner_bits = 1;
    while ((size_t(1) << owner_bits) < nodes_.size()) ++owner_bits;  // <= 20: CHR_NODES_MAX is 2^20
    unsigned bits = 1;
    while (bits < 24 && (size_t(1) << (bits + 1)) <= T) ++bits;
    bits = std::max(bits, owner_bits);
    const unsigned hot_bits = 32 - owner_bits;  // R
    owner_bits_ = owner_bits;
    owner_mask_ = (uint32_t(1) << owner_bits) - 1;
    prefix_bits_ = bits;
    prefix_shift_ = 64 - bits;

    // Counted, then summed: start[b] = tokens in buckets below b = the first
    // token of bucket b. No data-dependent branch (5x faster than walking
    // tokens and buckets together).
    const size_t buckets = size_t(1) << bits;
    std::vector<uint32_t> start(buckets + 1, 0);
    for (size_t k = 0; k < T; ++k) ++start[(values[k] >> prefix_shift_) + 1];
    for (size_t b = 1; b <= buckets; ++b) start[b] += start[b - 1];
    // Widest groups (at most 256 buckets) whose start offsets fit 16 bits;
    // one bucket per group always fits.
    unsigned g = std::min(8u, bits);
    for (;; --g) {
        bool fits = true;
        for (size_t b = 0; b <= buckets && fits; ++b) fits = start[b] - start[b >> g << g] <= UINT16_MAX;
        if (fits) break;
    }
    group_shift_ = g;
    const size_t groups = buckets >> g;
    group_start_.resize(groups + 1);
    bucket_offset_.resize(buckets + groups + 1);
    for (size_t G = 0; G <= groups; ++G) group_start_[G] = start[G << g];
    for (size_t b = 0; b <= buckets; ++b) bucket_offset_[b + (b >> g)] = uint16_t(start[b] - group_start_[b >> g]);
    for (size_t G = 0; G < groups; ++G)  // each group's end, after its last bucket
        bucket_offset_[((G + 1) << g) + G] =
            uint16_t(std::min<uint32_t>(start[(G + 1) << g] - group_start_[G], UINT16_MAX));

    hot_.resize(T + kWindow);
    cold_.resize(T);
    for (size_t k = 0; k < T; ++k) {
        const uint64_t rest = values[k] << bits;
        hot_[k] = ((uint32_t(rest >> 32) & ~owner_mask_) | owners[k]) ^ kBias;
        cold_[k] = uint32_t(rest << hot_bits >> 32);
    }
    std::fill(hot_.begin() + T, hot_.end(), (~owner_mask_ | (T ? owners[0] : 0)) ^ kBias);  // the wrap to token 0
}

uint64_t Snapshot::compat_key_position(const void *key, size_t len) const noexcept {
    return compat::key_position(*placement_, key, len);
}

uint32_t Snapshot::exact_position(uint64_t b, uint64_t rest) const noexcept {
    // Binary search: the bucket may hold every token (a constant hasher).
    uint32_t first = bucket_start(b), n = bucket_start(b + 1) - first;
    while (n > 0) {
        const uint32_t half = n / 2;
        if (rest_of(first + half) < rest) {
            first += half + 1;
            n -= half + 1;
        } else {
            n = half;
        }
    }
    return first;
}

uint64_t Snapshot::token_value(size_t i) const noexcept {
    // Token i's bucket is the last b whose start is <= i (empty buckets
    // before it share its start).
    uint64_t lo = 0, hi = uint64_t(1) << prefix_bits_;  // bucket_start(lo) <= i < bucket_start(hi)
    while (hi - lo > 1) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (bucket_start(mid) <= i) lo = mid;
        else hi = mid;
    }
    return lo << prefix_shift_ | rest_of(i) >> prefix_bits_;
}

void Snapshot::owners_of(const void *const *keys, const size_t *lens, size_t n,
                         uint32_t *owners) const noexcept {
    constexpr size_t kGroup = 16;
    uint64_t hashes[kGroup];
    for (size_t first = 0; first < n; first += kGroup) {
        const size_t m = std::min(kGroup, n - first);
        for (size_t j = 0; j < m; ++j) {
            hashes[j] = hash_key(keys[first + j], lens[first + j]);
            const uint64_t b = hashes[j] >> prefix_shift_;
            __builtin_prefetch(&group_start_[b >> group_shift_]);
            __builtin_prefetch(&bucket_offset_[b + (b >> group_shift_)]);
        }
        for (size_t j = 0; j < m; ++j) __builtin_prefetch(&hot_[bucket_start(hashes[j] >> prefix_shift_)]);
        for (size_t j = 0; j < m; ++j) owners[first + j] = owner_at(position(hashes[j]));
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

size_t Snapshot::index_bytes() const noexcept {
    return (hot_.size() + cold_.size() + group_start_.size()) * sizeof(uint32_t) +
           bucket_offset_.size() * sizeof(uint16_t);
}

}  // namespace chring
