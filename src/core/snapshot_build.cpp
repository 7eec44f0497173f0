// Building a snapshot: the empty ring, and a base plus a change of
// membership, merged (native) or rebuilt (compatibility placements) into
// the lookup index while counting each node's tokens, owned arc and the
// fingerprint in the same pass.
#include <algorithm>
#include <utility>

#include "fingerprint.hpp"
#include "snapshot.hpp"

namespace chring {

namespace detail {
extern std::atomic<int64_t> live_snapshots;  // snapshot.cpp
}  // namespace detail

class Snapshot::Builder {
public:
    // Sizes the snapshot's layout for T tokens over its (final) node table.
    Builder(Snapshot &s, size_t T)
        : s_(s), T_(T), index_(s.index_, T, s.nodes_.size()), tokens_vec_(s.nodes_.size(), 0),
          arcs_vec_(s.nodes_.size(), 0) {
        tokens_of_ = tokens_vec_.data();
        arcs_ = arcs_vec_.data();
    }

    // The next token in (value, owner) order. Also counts its owner's
    // tokens and owned arc (token k owns (value[k-1], value[k]]; token 0's
    // wrapping arc is added by finish()), and mixes it into the fingerprint
    // in four independent lanes.
    void add(uint64_t v, uint32_t o) noexcept {
        lanes_[index_.count() & 3].add(v ^ (uint64_t(o) * 0x9E3779B97F4A7C15ull));
        index_.add(v, o);
        ++tokens_of_[o];
        arcs_[o] += v - prev_;  // token 0's wrong arc is corrected by finish()
        prev_ = v;
    }

    void finish() {
        Snapshot &s = s_;
        index_.finish();
        // Token 0 owns the wrapping arc (last, first], not (0, first] as
        // add() counted it; summed in 128 bits: one node may own all 2^64.
        if (T_) arcs_[s.index_.owner_at(0)] += (u128(1) << 64) - prev_;
        s.fingerprint_ = ring_fingerprint(*s.placement_, s.nodes_, T_, lanes_);
        s.eligible_ = 0;
        s.weight_before_.assign(s.nodes_.size() + 1, 0);
        for (size_t i = 0; i < s.nodes_.size(); ++i) {
            Node &n = s.nodes_[i];
            n.tokens = tokens_vec_[i];
            n.arc = arcs_vec_[i];
            n.ownership = double(n.arc) * 0x1p-64;
            s.eligible_ += n.tokens > 0;
            s.weight_before_[i + 1] = s.weight_before_[i] + s.candidate_weight(i);
        }
        number_zones(s);
        s.cache_.build(s.nodes_);
    }

private:
    // Zone numbers for the zone replica policies: distinct labels numbered
    // in byte order, and the count of zones holding a node with tokens.
    static void number_zones(Snapshot &s) {
        const size_t N = s.nodes_.size();
        s.zone_of_.assign(N, 0);
        s.zone_count_ = N ? 1 : 0;
        s.live_zones_ = s.eligible_ ? 1 : 0;
        bool zoned = false;
        for (const Node &n : s.nodes_) zoned |= !n.zone.empty();
        if (!zoned) return;  // one shared zone: every number 0
        std::vector<uint32_t> by_zone(N);
        for (size_t i = 0; i < N; ++i) by_zone[i] = uint32_t(i);
        std::sort(by_zone.begin(), by_zone.end(),
                  [&](uint32_t a, uint32_t b) { return s.nodes_[a].zone < s.nodes_[b].zone; });
        std::vector<uint8_t> live(N, 0);
        uint32_t z = 0;
        for (size_t j = 0; j < N; ++j) {
            if (j && s.nodes_[by_zone[j]].zone != s.nodes_[by_zone[j - 1]].zone) ++z;
            s.zone_of_[by_zone[j]] = z;
            live[z] |= s.nodes_[by_zone[j]].tokens > 0;
        }
        s.zone_count_ = size_t(z) + 1;
        s.live_zones_ = 0;
        for (size_t i = 0; i < s.zone_count_; ++i) s.live_zones_ += live[i];
    }

    Snapshot &s_;
    const size_t T_;
    TokenIndex::Writer index_;
    std::vector<uint32_t> tokens_vec_;  // tokens per node (4 bytes a node: stays in L1)
    std::vector<u128> arcs_vec_;        // owned arc per node
    uint32_t *tokens_of_;
    u128 *arcs_;
    FingerprintMix lanes_[4];
    uint64_t prev_ = 0;
};

Snapshot::Snapshot(PlacementPtr placement)
    : placement_(std::move(placement)), key_hash_(*placement_) {
    Builder(*this, 0).finish();
    detail::live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::Snapshot(const Snapshot &base, MembershipDelta delta)
    : placement_(base.placement_), key_hash_(base.key_hash_) {
    const PlacementOps &ops = *placement_->ops;
    if (ops.all_points) {
        nodes_ = std::move(delta.nodes);
        std::vector<Token> points;
        ops.all_points(*placement_, nodes_, points);
        Builder build(*this, points.size());
        for (const Token &t : points) build.add(t.value, t.owner);
        build.finish();
        detail::live_snapshots.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    std::vector<Token> fresh;
    ops.fresh_tokens(*placement_, delta, fresh);

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
    base.index_.for_each_token([&](uint64_t value, uint32_t owner) {
        const uint32_t mapped = remap[owner];
        if (mapped == kDropped) return;
        const Token kept{value, mapped};
        for (; f != f_end && *f < kept; ++f) build.add(f->value, f->owner);
        build.add(kept.value, kept.owner);
    });
    for (; f != f_end; ++f) build.add(f->value, f->owner);
    build.finish();
    detail::live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace chring
