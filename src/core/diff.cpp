// The diff of two snapshots and the replica-aware plan (diff.hpp).
#include "diff.hpp"

#include <algorithm>
#include <cstring>

#include "base/errors.hpp"

namespace chring {

namespace {

double share(u128 width) noexcept { return double(width) * 0x1p-64; }

// Matches the two node tables (both sorted by id bytes): old_to_new[i] is
// old node i's index in the new table, or kNoNode; new_to_old likewise.
void match_nodes(const std::vector<Node> &old_nodes, const std::vector<Node> &new_nodes,
                 std::vector<uint32_t> &old_to_new, std::vector<uint32_t> &new_to_old) {
    old_to_new.assign(old_nodes.size(), kNoNode);
    new_to_old.assign(new_nodes.size(), kNoNode);
    for (size_t i = 0, j = 0; i < old_nodes.size() && j < new_nodes.size();) {
        const int c = old_nodes[i].id.compare(new_nodes[j].id);
        if (c < 0) {
            ++i;
        } else if (c > 0) {
            ++j;
        } else {
            old_to_new[i] = uint32_t(j);
            new_to_old[j] = uint32_t(i);
            ++i;
            ++j;
        }
    }
}

}  // namespace

chr_status check_same_positions(const Snapshot &a, const Snapshot &b, const char *who) {
    const Placement &pa = *a.placement(), &pb = *b.placement();
    if (pa.ops != pb.ops)
        return fail(CHR_EINCOMPATIBLE,
                    "%s: the snapshots place keys differently: placement '%s' and '%s'", who,
                    pa.ops->name, pb.ops->name);
    if (pa.hasher->name != pb.hasher->name)
        return fail(CHR_EINCOMPATIBLE, "%s: the snapshots place keys differently: hasher '%s' and '%s'",
                    who, Quoted(pa.hasher->name.data(), pa.hasher->name.size()).c_str(),
                    Quoted(pb.hasher->name.data(), pb.hasher->name.size()).c_str());
    if (pa.ops->seeded && pa.seed != pb.seed)
        return fail(CHR_EINCOMPATIBLE,
                    "%s: the snapshots place keys differently: seed %llu and %llu", who,
                    (unsigned long long)pa.seed, (unsigned long long)pb.seed);
    return CHR_OK;
}

Diff::Diff(const Snapshot &old_snap, const Snapshot &new_snap) : old_(old_snap), new_(new_snap) {
    const std::vector<Node> &old_nodes = old_snap.nodes();
    match_nodes(old_nodes, new_snap.nodes(), old_to_new_, new_to_old_);
    removed_ = uint32_t(std::count(old_to_new_.begin(), old_to_new_.end(), kNoNode));
    added_ = uint32_t(std::count(new_to_old_.begin(), new_to_old_.end(), kNoNode));

    // The walk: a piece that moves is a range, merged into the previous one
    // when it continues it with the same pair. Only the token arrays are
    // read, in order: what stays is derived afterwards from each node's
    // exact arc (accumulating it per piece here cost two thirds of the walk
    // in cache misses at 100,000 nodes).
    const TokenIndex &a = old_snap.tokens(), &b = new_snap.tokens();
    walk_pieces(a, b, [&](uint64_t first, uint64_t last, TokenIndex::Pos ia, TokenIndex::Pos ib) {
        const uint32_t from = ia == kNoToken ? kNoNode : old_snap.owner_at(ia);
        const uint32_t to = ib == kNoToken ? kNoNode : new_snap.owner_at(ib);
        if (!moves(from, to)) return;
        if (!ranges_.empty()) {
            chr_diff_range &r = ranges_.back();
            if (r.last + 1 == first && r.from == from && r.to == to) {
                r.last = last;
                return;
            }
        }
        ranges_.push_back(chr_diff_range{first, last, from, to});
    });

    // The matrix: the stays (one cell per old node that keeps keys, plus
    // none -> none), and the ranges summed per (from, to) pair. An old node
    // keeps its arc minus what moves away from it; with no token on either
    // side, the whole circle stays with nobody.
    struct Pair {
        uint32_t from, to;
        u128 width;
        bool operator<(const Pair &o) const noexcept {
            return from < o.from || (from == o.from && to < o.to);
        }
    };
    std::vector<u128> stays(old_nodes.size() + 1, 0);
    for (size_t i = 0; i < old_nodes.size(); ++i) stays[i] = old_nodes[i].arc;
    if (a.token_count() == 0 && b.token_count() == 0) stays.back() = u128(1) << 64;
    std::vector<Pair> pairs;
    pairs.reserve(ranges_.size() + old_nodes.size() + 1);
    u128 moved = 0;
    for (const chr_diff_range &r : ranges_) {
        const u128 width = u128(r.last - r.first) + 1;
        pairs.push_back({r.from, r.to, width});
        if (r.from != kNoNode) stays[r.from] -= width;
        moved += width;
    }
    moved_ = share(moved);
    std::sort(pairs.begin(), pairs.end());
    const ptrdiff_t move_pairs = ptrdiff_t(pairs.size());
    for (size_t i = 0; i < stays.size(); ++i) {  // one per old node, in order: sorted too
        if (stays[i] == 0) continue;
        const uint32_t from = i == old_nodes.size() ? kNoNode : uint32_t(i);
        pairs.push_back({from, from == kNoNode ? kNoNode : old_to_new_[i], stays[i]});
    }
    // Stays and moves never share a pair; merged, equal pairs are adjacent.
    std::inplace_merge(pairs.begin(), pairs.begin() + move_pairs, pairs.end());
    u128 sum = 0;
    for (size_t i = 0; i < pairs.size(); ++i) {
        sum += pairs[i].width;  // in 128 bits, rounded once per cell
        if (i + 1 < pairs.size() && pairs[i + 1].from == pairs[i].from && pairs[i + 1].to == pairs[i].to)
            continue;
        cells_.push_back(chr_diff_cell{pairs[i].from, pairs[i].to, share(sum)});
        sum = 0;
    }
}

namespace {

// A side's replica list for the positions whose successor is token
// `successor` (kNoToken: the side has no token, and no list).
size_t replica_list(const Snapshot &s, TokenIndex::Pos successor, size_t n, ReplicaPolicy policy, uint32_t *out) {
    if (successor == kNoToken) return 0;
    return s.ring_replicas_from_token(successor, n, policy, [&](size_t i, uint32_t node) { out[i] = node; });
}

}  // namespace

Plan::Plan(const Diff &diff, int32_t policy, size_t replicas)
    : old_(diff.side(CHR_DIFF_OLD)), new_(diff.side(CHR_DIFF_NEW)), policy_(policy),
      replicas_(uint32_t(replicas)) {
    const Snapshot &o = *old_, &nw = *new_;
    uint32_t old_list[CHR_PLAN_REPLICAS_MAX], new_list[CHR_PLAN_REPLICAS_MAX];
    size_t old_count = 0, new_count = 0;
    bool have_old = false, have_new = false;
    TokenIndex::Pos at_old = 0, at_new = 0;  // the successor each list was made for
    std::vector<size_t> open, next_open;  // entries ending at the previous piece
    u128 copies = 0;
    walk_pieces(o.tokens(), nw.tokens(), [&](uint64_t first, uint64_t last, TokenIndex::Pos ia,
                                             TokenIndex::Pos ib) {
        // Every position of the piece has the same successor, so the same
        // lists: each side's list is made once per successor token.
        if (!have_old || ia != at_old) {
            old_count = replica_list(o, ia, replicas, ReplicaPolicy(policy), old_list);
            have_old = true;
            at_old = ia;
        }
        if (!have_new || ib != at_new) {
            new_count = replica_list(nw, ib, replicas, ReplicaPolicy(policy), new_list);
            have_new = true;
            at_new = ib;
        }
        uint32_t gainers[CHR_PLAN_REPLICAS_MAX];
        size_t gained = 0;
        for (size_t k = 0; k < new_count; ++k) {
            const uint32_t was = diff.counterpart(CHR_DIFF_NEW, new_list[k]);
            if (was == kNoNode || std::find(old_list, old_list + old_count, was) == old_list + old_count)
                gainers[gained++] = new_list[k];
        }
        std::sort(gainers, gainers + gained);
        next_open.clear();
        for (size_t g = 0; g < gained; ++g) {
            auto continued = std::find_if(open.begin(), open.end(), [&](size_t e) {
                const chr_plan_range &r = entries_[e];
                return r.to == gainers[g] && r.last + 1 == first && r.source_count == old_count &&
                       std::equal(old_list, old_list + old_count, r.sources);
            });
            if (continued != open.end()) {
                entries_[*continued].last = last;
                next_open.push_back(*continued);
                continue;
            }
            chr_plan_range r;
            r.first = first;
            r.last = last;
            r.to = gainers[g];
            r.source_count = uint32_t(old_count);
            std::fill(std::copy(old_list, old_list + old_count, r.sources),
                      r.sources + CHR_PLAN_REPLICAS_MAX, kNoNode);
            next_open.push_back(entries_.size());
            entries_.push_back(r);
        }
        open.swap(next_open);
        copies += (u128(last - first) + 1) * gained;
    });
    copies_ = share(copies);
}

}  // namespace chring
