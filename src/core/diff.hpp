// Migration plans (docs/migration.md): what changes between two snapshots
// that place keys alike. A Diff holds the key-position ranges whose owner
// changes, the transfer matrix and the node correspondence by id; a Plan,
// for n replicas, which node gains which range from which old replicas.
// Both are computed once, by one merge walk over the two token arrays,
// then only read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chring.h"
#include "snapshot.hpp"

namespace chring {

constexpr uint32_t kNoNode = CHR_DIFF_NONE;

// CHR_OK if a key lands at the same position in both snapshots (the same
// placement, hasher and, when the placement is seeded, seed); otherwise
// CHR_EINCOMPATIBLE with a message naming both values.
chr_status check_same_positions(const Snapshot &a, const Snapshot &b, const char *who);

// One counted reference to a snapshot, dropped with the holder.
class SnapshotRef {
public:
    explicit SnapshotRef(const Snapshot &s) noexcept : s_(&s) { s_->retain(); }
    ~SnapshotRef() { s_->release(); }
    SnapshotRef(const SnapshotRef &o) noexcept : s_(o.s_) { s_->retain(); }
    SnapshotRef &operator=(const SnapshotRef &) = delete;
    const Snapshot &operator*() const noexcept { return *s_; }
    const Snapshot *operator->() const noexcept { return s_; }

private:
    const Snapshot *s_;
};

// The pieces of the circle on which both sides' successor tokens are
// constant, in order from position 0 to 2^64 - 1: f(first, last, a, b)
// with first..last the piece (included) and a, b the index of its
// successor token's position in each side (the first token >= every
// position of the piece, wrapping to the first past the last), or kNoToken for a side
// without tokens. Between two consecutive distinct token values of either
// side nothing changes, so this is every boundary there is: a merge of the
// two sorted arrays, each token read once (duplicates of a value are
// passed over: the first in the total order is the successor).
constexpr TokenIndex::Pos kNoToken = TokenIndex::kNoPos;
template <class F>
void walk_pieces(const TokenIndex &a, const TokenIndex &b, F &&f) {
    TokenIndex::Cursor ca(a), cb(b);
    const TokenIndex::Pos wrap_a = a.token_count() ? a.first() : kNoToken,
                          wrap_b = b.token_count() ? b.first() : kNoToken;
    uint64_t first = 0;
    while (!ca.done() || !cb.done()) {
        uint64_t p;
        if (ca.done()) p = cb.value();
        else if (cb.done()) p = ca.value();
        else p = std::min(ca.value(), cb.value());
        f(first, p, ca.done() ? wrap_a : ca.position(), cb.done() ? wrap_b : cb.position());
        while (!ca.done() && ca.value() == p) ca.next();
        while (!cb.done() && cb.value() == p) cb.next();
        if (p == UINT64_MAX) return;  // a token at the very top: no wrapping piece
        first = p + 1;
    }
    f(first, UINT64_MAX, wrap_a, wrap_b);
}

class Diff {
public:
    // Computes the diff; may throw bad_alloc. check_same_positions() first.
    Diff(const Snapshot &old_snap, const Snapshot &new_snap);

    const Snapshot &side(int which) const noexcept { return which == CHR_DIFF_OLD ? *old_ : *new_; }
    const std::vector<chr_diff_range> &ranges() const noexcept { return ranges_; }
    const std::vector<chr_diff_cell> &cells() const noexcept { return cells_; }
    double moved() const noexcept { return moved_; }
    uint32_t added() const noexcept { return added_; }
    uint32_t removed() const noexcept { return removed_; }

    // Node `index` of side `which` in the other side (by id), or kNoNode.
    uint32_t counterpart(int which, uint32_t index) const noexcept {
        if (index == kNoNode) return kNoNode;
        return which == CHR_DIFF_OLD ? old_to_new_[index] : new_to_old_[index];
    }
    // Whether a key owned by `from` (old index) and then `to` (new index)
    // changed owner: different ids, or an owner on one side only.
    bool moves(uint32_t from, uint32_t to) const noexcept {
        if (from == kNoNode || to == kNoNode) return from != to;
        return old_to_new_[from] != to;
    }
    // The owner of position h on a side, kNoNode when it has no token.
    static uint32_t owner_at(const Snapshot &s, uint64_t h) noexcept {
        return s.token_count() ? s.token_owner_at_hash(h) : kNoNode;
    }

private:
    SnapshotRef old_, new_;
    std::vector<uint32_t> old_to_new_, new_to_old_;
    std::vector<chr_diff_range> ranges_;
    std::vector<chr_diff_cell> cells_;
    double moved_ = 0.0;
    uint32_t added_ = 0, removed_ = 0;
};

class Plan {
public:
    // The plan for `replicas` copies (1..CHR_PLAN_REPLICAS_MAX) under a
    // known replica policy; may throw bad_alloc.
    Plan(const Diff &diff, int32_t policy, size_t replicas);

    const std::vector<chr_plan_range> &entries() const noexcept { return entries_; }
    int32_t policy() const noexcept { return policy_; }
    uint32_t replicas() const noexcept { return replicas_; }
    double copies() const noexcept { return copies_; }

private:
    SnapshotRef old_, new_;
    int32_t policy_;
    uint32_t replicas_;
    std::vector<chr_plan_range> entries_;
    double copies_ = 0.0;
};

}  // namespace chring
