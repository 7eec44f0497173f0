#include "snapshot.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
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

class Snapshot::Builder {
public:
    // Sizes the snapshot's layout for T tokens over its (final) node table.
    Builder(Snapshot &s, size_t T)
        : s_(s), T_(T), tokens_vec_(s.nodes_.size(), 0), arcs_vec_(s.nodes_.size(), 0) {
        // Owner field: O bits for N nodes. Prefix index on the top P bits
        // of a hash: 1.5-3 tokens per bucket (the largest P with 2^P <=
        // T / 1.5), so a bucket overflows the 8-record window with
        // probability below 0.4% and position() reads two index entries
        // and one window. P >= O keeps the cold part within 32 bits (it only
        // matters for rings of mostly weight-0 members).
        unsigned owner_bits = 1;
        while ((size_t(1) << owner_bits) < s.nodes_.size()) ++owner_bits;  // <= 20: CHR_NODES_MAX is 2^20
        unsigned bits = 1;
        while (bits < 24 && (size_t(3) << bits) <= T) ++bits;  // 1.5 * 2^(bits + 1) <= T
        bits = std::max(bits, owner_bits);
        s.tokens_ = T;
        s.owner_bits_ = owner_bits;
        s.owner_mask_ = (uint32_t(1) << owner_bits) - 1;
        s.prefix_bits_ = bits;
        s.prefix_shift_ = 64 - bits;
        s.key_shift_ = 32 - bits;
        hot_bits_ = 32 - owner_bits;
        bits_ = bits;
        shift_ = 64 - bits;
        owner_mask_ = s.owner_mask_;
        start_vec_.assign((size_t(1) << bits) + 1, 0);
        s.hot_.resize(T + kWindow);
        s.cold_.resize(T);
        // Raw pointers and copies: add() stores through uint32_t pointers,
        // which could alias uint32_t members and force reloads.
        start_ = start_vec_.data();
        hot_ = s.hot_.data();
        cold_ = s.cold_.data();
        tokens_of_ = tokens_vec_.data();
        arcs_ = arcs_vec_.data();
    }

    // The next token in (value, owner) order. Also counts its bucket, its
    // owner's tokens and owned arc (token k owns (value[k-1], value[k]];
    // token 0's wrapping arc is added by finish()), and mixes it into the
    // fingerprint in four independent lanes (a single multiply chain would
    // bound the speed of every update by its latency).
    void add(uint64_t v, uint32_t o) noexcept {
        const uint64_t rest = v << bits_;
        hot_[k_] = ((uint32_t(rest >> 32) & ~owner_mask_) | o) ^ kWindowBias;
        cold_[k_] = uint32_t(rest << hot_bits_ >> 32);
        ++start_[(v >> shift_) + 1];
        ++tokens_of_[o];
        arcs_[o] += v - prev_;  // token 0's wrong arc is corrected by finish()
        prev_ = v;
        lanes_[k_ & 3].add(v ^ (uint64_t(o) * 0x9E3779B97F4A7C15ull));
        ++k_;
    }

    void finish() {
        Snapshot &s = s_;
        // Token 0 owns the wrapping arc (last, first], not (0, first] as
        // add() counted it; summed in 128 bits: one node may own all 2^64.
        const uint32_t first_owner = T_ ? s.owner_at(0) : 0;
        if (T_) arcs_[first_owner] += (u128(1) << 64) - prev_;
        std::fill(s.hot_.begin() + T_, s.hot_.end(), (~s.owner_mask_ | first_owner) ^ kWindowBias);  // the wrap

        FingerprintMix fp;
        fp.add(uint64_t(uint32_t(s.placement_->mode)));
        fp.add(s.placement_->tokens_per_weight);
        fp.add(s.placement_->seed);
        fp.add_bytes(s.placement_->hasher->name);
        fp.add(s.nodes_.size());
        for (const Node &n : s.nodes_) {
            fp.add_bytes(n.id);
            fp.add(n.weight);
        }
        fp.add(T_);
        for (const FingerprintMix &lane : lanes_) fp.add(lane.h);
        s.fingerprint_ = fp.h;

        s.eligible_ = 0;
        s.views_.resize(s.nodes_.size());
        s.ref_lines_.resize(s.nodes_.size());
        for (size_t i = 0; i < s.nodes_.size(); ++i) {
            Node &n = s.nodes_[i];
            n.tokens = tokens_vec_[i];
            n.ownership = double(arcs_vec_[i]) * 0x1p-64;
            s.eligible_ += n.tokens > 0;
            s.views_[i].view = {reinterpret_cast<const unsigned char *>(n.id.data()), n.id.size(),
                                reinterpret_cast<const unsigned char *>(n.zone.data()), n.zone.size(),
                                n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), 0};
            RefFields &ref = s.ref_lines_[i].ref;
            ref = {n.tag, n.ownership, n.weight, n.tokens, uint32_t(i), uint32_t(n.id.size()),
                   uint32_t(n.zone.size()), 0, {}};
            if (n.id.size() <= kShortId) std::memcpy(ref.short_id, n.id.data(), n.id.size());
        }
        build_index();
    }

private:
    // start_ counted tokens per bucket; summed, start[b] = the first token
    // of bucket b (a histogram and a prefix sum: no data-dependent branch,
    // 5x faster than walking tokens and buckets together). Then split into
    // the two-level index, with the widest groups (at most 64 buckets)
    // whose tokens, end included, fit a byte's offsets; with one bucket a
    // group, a bigger bucket's size is capped (and takes the exact path).
    void build_index() {
        Snapshot &s = s_;
        const size_t buckets = size_t(1) << s.prefix_bits_;
        std::vector<uint32_t> &start = start_vec_;
        for (size_t b = 1; b <= buckets; ++b) start[b] += start[b - 1];
        constexpr uint32_t kMaxOffset = std::numeric_limits<BucketOffset>::max();
        unsigned g = std::min(kMaxGroupShift, s.prefix_bits_ - 1);
        for (; g > 0; --g) {  // a group's end must fit too, or its last bucket's size would be cut
            bool fits = true;
            for (size_t G = 0; G < (buckets >> g) && fits; ++G)
                fits = start[(G + 1) << g] - start[G << g] <= kMaxOffset;
            if (fits) break;
        }
        s.group_shift_ = g;
        s.group_of_hash_shift_ = s.prefix_shift_ + g;
        const size_t groups = buckets >> g;
        s.group_start_.resize(groups + 1);
        s.bucket_offset_.resize(buckets + groups + 1);
        for (size_t G = 0; G <= groups; ++G) s.group_start_[G] = start[G << g];
        for (size_t b = 0; b <= buckets; ++b)
            s.bucket_offset_[s.offset_index(b)] = BucketOffset(start[b] - s.group_start_[b >> g]);
        for (size_t G = 0; G < groups; ++G)  // each group's end, after its last bucket
            s.bucket_offset_[((G + 1) << g) + G] =
                BucketOffset(std::min<uint32_t>(start[(G + 1) << g] - s.group_start_[G], kMaxOffset));
    }

    Snapshot &s_;
    const size_t T_;
    size_t k_ = 0;
    std::vector<uint32_t> start_vec_;  // tokens per bucket, then first token per bucket
    std::vector<uint32_t> tokens_vec_;  // tokens per node (4 bytes a node: stays in L1)
    std::vector<u128> arcs_vec_;        // owned arc per node
    uint32_t *start_, *hot_, *cold_, *tokens_of_;
    u128 *arcs_;
    unsigned bits_, shift_, hot_bits_;  // P, 64 - P, R
    uint32_t owner_mask_;
    FingerprintMix lanes_[4];
    uint64_t prev_ = 0;
};

Snapshot::Snapshot(PlacementPtr placement)
    : placement_(std::move(placement)), key_hash_(*placement_) {
    Builder(*this, 0).finish();
    live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::Snapshot(const Snapshot &base, MembershipDelta delta)
    : placement_(base.placement_), key_hash_(base.key_hash_) {
    if (placement_->mode != CHR_PLACEMENT_NATIVE) {
        nodes_ = std::move(delta.nodes);
        std::vector<uint64_t> values;
        std::vector<uint32_t> owners;
        compat::build_points(*placement_, nodes_, values, owners);
        Builder build(*this, values.size());
        for (size_t k = 0; k < values.size(); ++k) build.add(values[k], owners[k]);
        build.finish();
        live_snapshots.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const std::vector<Token> fresh = generate_tokens(delta);

    // Old node index -> new index, for nodes whose tokens are kept as they
    // are; their tokens plus the fresh ones are the new count.
    constexpr uint32_t kDropped = UINT32_MAX;
    std::vector<uint32_t> remap(base.nodes_.size(), kDropped);
    size_t T = fresh.size();
    for (size_t k = 0; k < delta.nodes.size(); ++k)
        if (delta.old_index[k] >= 0 && !delta.regenerate[k]) {
            remap[size_t(delta.old_index[k])] = uint32_t(k);
            T += base.nodes_[size_t(delta.old_index[k])].tokens;
        }
    nodes_ = std::move(delta.nodes);

    // Merge two sequences sorted by (value, owner) straight into the new
    // layout: one pass, no intermediate array. Remapping preserves the order
    // of surviving owners because both node tables are sorted by id.
    Builder build(*this, T);
    const Token *f = fresh.data(), *f_end = f + fresh.size();
    base.for_each_token([&](uint64_t value, uint32_t owner) {
        const uint32_t mapped = remap[owner];
        if (mapped == kDropped) return;
        const Token kept{value, mapped};
        for (; f != f_end && *f < kept; ++f) build.add(f->value, f->owner);
        build.add(kept.value, kept.owner);
    });
    for (; f != f_end; ++f) build.add(f->value, f->owner);
    build.finish();
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
    const chr_hash64_fn hash64 = placement_->hasher->hash64;
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
            tokens.push_back({hash64(buf, len, seed), uint32_t(k)});
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

uint64_t KeyHasher::compat_position(const void *key, size_t len) const noexcept {
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
            __builtin_prefetch(&bucket_offset_[offset_index(b)]);
        }
        for (size_t j = 0; j < m; ++j) {  // the window's 32 bytes may span two lines
            const uint32_t *window = &hot_[bucket_start(hashes[j] >> prefix_shift_)];
            __builtin_prefetch(window);
            __builtin_prefetch(window + kWindow - 1);
        }
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

size_t Snapshot::index_bytes() const noexcept {
    return (hot_.size() + cold_.size() + group_start_.size()) * sizeof(uint32_t) +
           bucket_offset_.size() * sizeof(BucketOffset);
}

}  // namespace chring
