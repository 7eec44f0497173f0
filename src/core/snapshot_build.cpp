// Building a snapshot: the empty ring, and a base plus a change of
// membership, either as an update of the base's index that rewrites only
// the chunks the change touches (native placement), or as a full build
// (compatibility placements, a first build, a change that outgrows the
// base's layout), counting each node's tokens and owned arc.
#include <algorithm>
#include <utility>

#include "fingerprint.hpp"
#include "snapshot.hpp"

namespace chring {

namespace detail {
extern std::atomic<int64_t> live_snapshots;  // snapshot.cpp
}  // namespace detail

namespace {

constexpr uint32_t kFreeSlot = UINT32_MAX;

// Whether every token of a nonempty index has one value.
bool one_value(const TokenIndex &ix) {
    return ix.token_value(ix.first()) == ix.token_value(ix.last_before_group(0));
}

}  // namespace

class Snapshot::Builder {
public:
    // Sizes the snapshot's layout for T tokens over its (final) node
    // table, whose indices are its slots.
    // `spare`: memory the index writer may take for its buffers.
    // `records`: see TokenIndex::Writer.
    Builder(Snapshot &s, size_t T, HugeArray<Token> spare = {}, void *records = nullptr)
        : s_(s), T_(T), index_(s.index_, T, s.nodes_.size(), std::move(spare), records),
          tokens_vec_(s.nodes_.size(), 0),
          arcs_vec_(s.nodes_.size(), 0) {
        tokens_of_ = tokens_vec_.data();
        arcs_ = arcs_vec_.data();
    }

    // The next token in (value, owner) order. Also counts its owner's
    // tokens and owned arc (token k owns (value[k-1], value[k]]; token 0's
    // wrapping arc is added by finish()).
    void add(uint64_t v, uint32_t o) noexcept {
        if (T_ && index_.count() == 0) first_owner_ = o;
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
        if (T_) arcs_[first_owner_] += (u128(1) << 64) - prev_;
        const size_t N = s.nodes_.size();
        s.slot_node_.assign(size_t(1) << s.index_.owner_bits(), kFreeSlot);
        s.node_slot_.resize(N);
        for (size_t i = 0; i < N; ++i) {
            s.slot_node_[i] = uint32_t(i);
            s.node_slot_[i] = uint32_t(i);
            s.nodes_[i].tokens = tokens_vec_[i];
            s.nodes_[i].arc = arcs_vec_[i];
        }
        s.derive_from_nodes();
    }

private:
    Snapshot &s_;
    const size_t T_;
    TokenIndex::Writer index_;
    std::vector<uint32_t> tokens_vec_;  // tokens per node (4 bytes a node: stays in L1)
    std::vector<u128> arcs_vec_;        // owned arc per node
    uint32_t *tokens_of_;
    u128 *arcs_;
    uint64_t prev_ = 0;
    uint32_t first_owner_ = 0;
};

// Everything derived from the node table once tokens, arcs and slots are set.
void Snapshot::derive_from_nodes() {
    const size_t N = nodes_.size();
    eligible_ = 0;
    weight_before_.assign(N + 1, 0);
    for (size_t i = 0; i < N; ++i) {
        const Node &n = nodes_[i];
        eligible_ += n.tokens > 0;
        weight_before_[i + 1] = weight_before_[i] + candidate_weight(i);
    }
    number_zones();
    derive_availability();
    static const std::vector<uint8_t> none;
    cache_.build(nodes_, slot_node_, routing_around_ ? marks_.down : none);
}

// Zone numbers for the zone replica policies: distinct labels numbered
// in byte order, and the count of zones holding a node with tokens.
void Snapshot::number_zones() {
    const size_t N = nodes_.size();
    zone_of_slot_.assign(slot_node_.size(), 0);
    zone_count_ = N ? 1 : 0;
    live_zones_ = eligible_ ? 1 : 0;
    bool zoned = false;
    for (const Node &n : nodes_) zoned |= !n.zone.empty();
    if (!zoned) return;  // one shared zone: every number 0
    std::vector<uint32_t> by_zone(N);
    for (size_t i = 0; i < N; ++i) by_zone[i] = uint32_t(i);
    std::sort(by_zone.begin(), by_zone.end(),
              [&](uint32_t a, uint32_t b) { return nodes_[a].zone < nodes_[b].zone; });
    std::vector<uint8_t> live(N, 0);
    uint32_t z = 0;
    for (size_t j = 0; j < N; ++j) {
        if (j && nodes_[by_zone[j]].zone != nodes_[by_zone[j - 1]].zone) ++z;
        zone_of_slot_[node_slot_[by_zone[j]]] = z;
        live[z] |= nodes_[by_zone[j]].tokens > 0;
    }
    zone_count_ = size_t(z) + 1;
    live_zones_ = 0;
    for (size_t i = 0; i < zone_count_; ++i) live_zones_ += live[i];
}

uint64_t Snapshot::fingerprint() const noexcept {
    if (fingerprint_known_.load(std::memory_order_acquire)) return fingerprint_.load(std::memory_order_relaxed);
    // Token k (in order) into lane k % 4, with its owner's node index: the
    // same digest whatever the layout (racing callers compute it alike).
    FingerprintMix lanes[4];
    size_t k = 0;
    index_.for_each_token([&](uint64_t v, uint32_t slot) {
        lanes[k++ & 3].add(v ^ (uint64_t(slot_node_[slot]) * 0x9E3779B97F4A7C15ull));
    });
    const uint64_t fp = ring_fingerprint(*placement_, nodes_, index_.token_count(), lanes);
    fingerprint_.store(fp, std::memory_order_relaxed);
    fingerprint_known_.store(true, std::memory_order_release);
    return fp;
}

Snapshot::Snapshot(PlacementPtr placement)
    : placement_(std::move(placement)), key_hash_(*placement_) {
    Builder(*this, 0).finish();
    index_.commit();
    detail::live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::Snapshot(const Snapshot &base, MembershipDelta delta, const Marks *marks)
    : placement_(base.placement_), key_hash_(base.key_hash_), token_bound_(delta.token_bound) {
    carry_marks(base, delta, marks);
    const PlacementOps &ops = *placement_->ops;
    if (ops.all_points) {
        nodes_ = std::move(delta.nodes);
        std::vector<Token> points;
        ops.all_points(*placement_, nodes_, points);
        Builder build(*this, points.size());
        for (const Token &t : points) build.add(t.value, t.owner);
        build.finish();
        index_.commit();
        detail::live_snapshots.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    FreshTokens fresh;
    HugeArray<Token> spare;  // the sort's scratch: the writer's buffers if the change builds afresh
    ops.fresh_tokens(*placement_, delta, fresh, &spare);
    nodes_ = std::move(delta.nodes);
    // fresh is not read after build_merged, which may write over it.
    if (!update(base, delta, fresh)) build_merged(base, delta, fresh, std::move(spare));
    index_.commit();  // last: nothing below may throw
    detail::live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

Snapshot::Snapshot(const Snapshot &base, Marks marks)
    : placement_(base.placement_), key_hash_(base.key_hash_), nodes_(base.nodes_),
      slot_node_(base.slot_node_), node_slot_(base.node_slot_), token_bound_(base.token_bound_) {
    marks_ = std::move(marks);
    // The index: the base's chunks shared by an update that changes no
    // token (O(groups), no token read); a ring too small for chunks, or
    // not the newest of its lineage, copies its tokens instead.
    const size_t T = base.index_.token_count();
    bool shared = false;
    if (T >= 2) {
        const std::vector<uint8_t> dropped(slot_node_.size(), 0);
        const std::vector<uint64_t> no_values;
        const std::vector<Token> no_tokens;
        std::vector<uint32_t> dirty;
        std::vector<u128> arc_delta;
        const TokenIndex::Updater::Change change{dropped, no_values, no_tokens, slot_node_};
        shared = TokenIndex::Updater::apply(base.index_, change, index_, dirty, arc_delta);
    }
    if (shared) {
        derive_from_nodes();
    } else {
        Builder build(*this, T);
        base.index_.for_each_token([&](uint64_t v, uint32_t slot) { build.add(v, base.slot_node_[slot]); });
        build.finish();
    }
    if (base.fingerprint_known_.load(std::memory_order_acquire)) {
        fingerprint_.store(base.fingerprint_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        fingerprint_known_.store(true, std::memory_order_release);
    }
    index_.commit();  // last: nothing below may throw
    detail::live_snapshots.fetch_add(1, std::memory_order_relaxed);
}

// The full build: the base's kept tokens merged with the fresh ones.
void Snapshot::build_merged(const Snapshot &base, const MembershipDelta &delta,
                            FreshTokens &fresh, HugeArray<Token> spare) {
    // Old slot -> new index, for nodes whose tokens are kept as they are;
    // their tokens plus the fresh ones are the new count.
    std::vector<uint32_t> remap(base.slot_node_.size(), kFreeSlot);
    size_t T = fresh.size();
    for (size_t k = 0; k < nodes_.size(); ++k)
        if (delta.old_index[k] >= 0 && !delta.regenerate[k]) {
            const size_t old = size_t(delta.old_index[k]);
            remap[base.node_slot_[old]] = uint32_t(k);
            T += base.nodes_[old].tokens;
        }

    // Merge two sequences sorted by (value, node order) straight into the
    // new layout: one pass, no intermediate array. Remapping preserves the
    // order of surviving owners because both node tables are sorted by id.
    // With no kept token and no sort scratch to reuse (a big build sorts
    // without one), the records overwrite the fresh tokens as they are
    // read: at 16M tokens, 128 MB less new memory.
    const bool in_place = T == fresh.size() && spare.size() == 0;
    Builder build(*this, T, std::move(spare), in_place ? fresh.data() : nullptr);
    const Token *f = fresh.data(), *f_end = f + fresh.size();
    base.index_.for_each_token([&](uint64_t value, uint32_t slot) {
        const uint32_t mapped = remap[slot];
        if (mapped == kFreeSlot) return;
        const Token kept{value, mapped};
        for (; f != f_end && *f < kept; ++f) build.add(f->value, f->owner);
        build.add(kept.value, kept.owner);
    });
    for (; f != f_end; ++f) build.add(f->value, f->owner);
    build.finish();
}

// The update: slots kept, freed and taken, then the index updated chunk by
// chunk and each node's count and arc adjusted by what changed. False if
// the change does not fit the base's layout (build_merged() then).
bool Snapshot::update(const Snapshot &base, const MembershipDelta &delta, const FreshTokens &fresh) {
    const size_t N = nodes_.size(), base_T = base.index_.token_count();
    if (base_T < 2 || one_value(base.index_)) return false;
    size_t T = fresh.size();
    for (size_t k = 0; k < N; ++k)
        if (delta.old_index[k] >= 0 && !delta.regenerate[k]) T += base.nodes_[size_t(delta.old_index[k])].tokens;
    // The base's prefix bits while its tokens a bucket stay in the band
    // around what a fresh build picks: a ring that grows or shrinks past
    // that is built anew.
    if (!base.index_.suits(T)) return false;

    // Slots: a kept node keeps its own; a removed node frees its; a new
    // node takes the lowest free one, if the base's owner field has one.
    slot_node_ = base.slot_node_;
    node_slot_.assign(N, kFreeSlot);
    std::vector<uint8_t> dropped(slot_node_.size(), 0);
    std::vector<uint8_t> kept(base.nodes_.size(), 0);
    for (size_t k = 0; k < N; ++k)
        if (delta.old_index[k] >= 0) kept[size_t(delta.old_index[k])] = 1;
    MembershipDelta gone;  // removed and reweighted nodes, as they were
    for (size_t i = 0; i < base.nodes_.size(); ++i)
        if (!kept[i]) {
            const uint32_t slot = base.node_slot_[i];
            slot_node_[slot] = kFreeSlot;
            dropped[slot] = 1;
            gone.nodes.push_back(base.nodes_[i]);
        }
    size_t free_slot = 0;
    for (size_t k = 0; k < N; ++k) {
        if (delta.old_index[k] >= 0) {
            const size_t old = size_t(delta.old_index[k]);
            node_slot_[k] = base.node_slot_[old];
            if (delta.regenerate[k]) {
                dropped[node_slot_[k]] = 1;
                gone.nodes.push_back(base.nodes_[old]);
            }
            continue;
        }
        while (free_slot < slot_node_.size() && slot_node_[free_slot] != kFreeSlot) ++free_slot;
        if (free_slot == slot_node_.size()) return false;  // a wider owner field: built anew
        node_slot_[k] = uint32_t(free_slot++);
    }
    for (size_t k = 0; k < N; ++k) slot_node_[node_slot_[k]] = uint32_t(k);

    // The tokens that go (regenerated as they were) and those that come.
    gone.regenerate.assign(gone.nodes.size(), 1);
    gone.old_index.assign(gone.nodes.size(), -1);
    FreshTokens gone_tokens;
    placement_->ops->fresh_tokens(*placement_, gone, gone_tokens, nullptr);
    std::vector<uint64_t> gone_values(gone_tokens.size());
    for (size_t j = 0; j < gone_tokens.size(); ++j) gone_values[j] = gone_tokens[j].value;
    gone_tokens = {};
    std::vector<Token> fresh_slots(fresh.size());
    for (size_t j = 0; j < fresh.size(); ++j) fresh_slots[j] = {fresh[j].value, node_slot_[fresh[j].owner]};

    std::vector<uint32_t> dirty;
    std::vector<u128> arc_delta;
    const TokenIndex::Updater::Change change{dropped, gone_values, fresh_slots, slot_node_};
    if (!TokenIndex::Updater::apply(base.index_, change, index_, dirty, arc_delta)) return false;
    if (index_.token_count() < 2 || one_value(index_)) return false;  // the full build clears it

    // Counts and arcs: a kept node's from the base, adjusted by what the
    // rewritten chunks changed.
    for (size_t k = 0; k < N; ++k) {
        Node &n = nodes_[k];
        const bool as_was = delta.old_index[k] >= 0 && !delta.regenerate[k];
        n.tokens = as_was ? base.nodes_[size_t(delta.old_index[k])].tokens : 0;
        n.arc = (as_was ? base.nodes_[size_t(delta.old_index[k])].arc : 0) + arc_delta[node_slot_[k]];
    }
    for (const Token &t : fresh) ++nodes_[t.owner].tokens;
    derive_from_nodes();
    return true;
}

}  // namespace chring
