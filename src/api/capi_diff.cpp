// The extern "C" entry points of migration plans (chring.h, "Migration
// plans"): diffs and replica plans. Same rules as capi_ring.cpp: each is
// noexcept, checks its arguments with validate.hpp and runs what can throw
// through guarded().
#include <cstring>
#include <new>

#include "capi_handles.hpp"
#include "chring.h"
#include "diff.hpp"
#include "base/errors.hpp"
#include "firewall.hpp"
#include "base/validate.hpp"

namespace {

using chring::Diff;
using chring::fail;
using chring::guarded;
using chring::impl;
using chring::kNoNode;
using chring::null_arg;
using chring::Plan;
using chring::Snapshot;

const Diff *impl(const chr_diff *d) { return reinterpret_cast<const Diff *>(d); }
const Plan *impl(const chr_plan *p) { return reinterpret_cast<const Plan *>(p); }

static_assert(sizeof(chr_diff_range) == 24 && sizeof(chr_diff_cell) == 16 &&
                  sizeof(chr_plan_range) == 24 + 4 * CHR_PLAN_REPLICAS_MAX,
              "the element structs are what chring.h documents");

chr_status check_side(const char *who, int32_t side) {
    if (side != CHR_DIFF_OLD && side != CHR_DIFF_NEW)
        return fail(CHR_EINVAL, "%s: side %d is neither CHR_DIFF_OLD (0) nor CHR_DIFF_NEW (1)", who, side);
    return CHR_OK;
}

template <class Info>
chr_status check_info_version(const char *who, const Info *info, uint32_t current) {
    if (!info) return null_arg(who, "info");
    if (info->version < 1 || info->version > current)
        return fail(CHR_EVERSION, "%s: info version %u is not supported (1..%u)", who, info->version,
                    current);
    return CHR_OK;
}

// Elements cursor.. of `all` into out[0..capacity): the iterators of ranges,
// cells and plan entries.
template <class T>
chr_status copy_from(const char *who, const std::vector<T> &all, size_t cursor, T *out,
                     size_t capacity, size_t *written, const char *what) {
    if (!written) return null_arg(who, "written");
    *written = 0;
    if (chr_status st = chring::check_buffer(who, out, capacity)) return st;
    if (cursor > all.size())
        return fail(CHR_ERANGE, "%s: cursor %zu is past the %zu %s", who, cursor, all.size(), what);
    const size_t n = std::min(capacity, all.size() - cursor);
    if (n) std::memcpy(out, all.data() + cursor, n * sizeof(T));
    *written = n;
    return CHR_OK;
}

const chr_node_view kNoView = {nullptr, 0, reinterpret_cast<const unsigned char *>(""), 0, 0, 0.0, 0, 0, kNoNode, 0};

const chr_node_view &view_of(const Snapshot &s, uint32_t index) {
    return index == kNoNode ? kNoView : s.view(index);
}

}  // namespace

extern "C" {

CHR_API chr_status chr_diff_info_init(chr_diff_info *info, uint32_t version) noexcept {
    return chring::init_versioned("chr_diff_info_init", "info", info, version,
                                   CHR_DIFF_INFO_VERSION);
}

CHR_API chr_status chr_plan_info_init(chr_plan_info *info, uint32_t version) noexcept {
    return chring::init_versioned("chr_plan_info_init", "info", info, version,
                                   CHR_PLAN_INFO_VERSION);
}

CHR_API chr_status chr_diff_new(const chr_snapshot *old_snap, const chr_snapshot *new_snap,
                                chr_diff **out) noexcept {
    static const char *who = "chr_diff_new";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (!old_snap) return null_arg(who, "old_snap");
    if (!new_snap) return null_arg(who, "new_snap");
    const Snapshot &a = *impl(old_snap), &b = *impl(new_snap);
    if (chr_status st = chring::check_same_positions(a, b, who)) return st;
    return guarded(who, [&] {
        *out = reinterpret_cast<chr_diff *>(new Diff(a, b));
        return CHR_OK;
    });
}

CHR_API void chr_diff_free(chr_diff *diff) noexcept { delete reinterpret_cast<Diff *>(diff); }

CHR_API chr_status chr_diff_describe(const chr_diff *diff, chr_diff_info *info) noexcept {
    static const char *who = "chr_diff_describe";
    if (!diff) return null_arg(who, "diff");
    if (chr_status st = check_info_version(who, info, CHR_DIFF_INFO_VERSION)) return st;
    const Diff &d = *impl(diff);
    const Snapshot &a = d.side(CHR_DIFF_OLD), &b = d.side(CHR_DIFF_NEW);
    // Version 1 is the whole struct today; later versions fill by version.
    *info = chr_diff_info{info->version, 0, d.ranges().size(), d.cells().size(), d.moved(),
                          a.fingerprint(), b.fingerprint(), uint32_t(a.node_count()),
                          uint32_t(b.node_count()), d.added(), d.removed()};
    return CHR_OK;
}

CHR_API chr_status chr_diff_ranges(const chr_diff *diff, size_t cursor, chr_diff_range *out,
                                   size_t capacity, size_t *written) noexcept {
    static const char *who = "chr_diff_ranges";
    if (!diff) return null_arg(who, "diff");
    return copy_from(who, impl(diff)->ranges(), cursor, out, capacity, written, "ranges");
}

CHR_API chr_status chr_diff_matrix(const chr_diff *diff, size_t cursor, chr_diff_cell *out,
                                   size_t capacity, size_t *written) noexcept {
    static const char *who = "chr_diff_matrix";
    if (!diff) return null_arg(who, "diff");
    return copy_from(who, impl(diff)->cells(), cursor, out, capacity, written, "cells");
}

CHR_API chr_status chr_diff_snapshot(const chr_diff *diff, int32_t side, const chr_snapshot **out) noexcept {
    static const char *who = "chr_diff_snapshot";
    if (!diff) return null_arg(who, "diff");
    if (!out) return null_arg(who, "out");
    if (chr_status st = check_side(who, side)) return st;
    *out = reinterpret_cast<const chr_snapshot *>(&impl(diff)->side(side));
    return CHR_OK;
}

CHR_API chr_status chr_diff_counterpart(const chr_diff *diff, int32_t side, uint32_t index,
                                        uint32_t *other) noexcept {
    static const char *who = "chr_diff_counterpart";
    if (!diff) return null_arg(who, "diff");
    if (!other) return null_arg(who, "other");
    if (chr_status st = check_side(who, side)) return st;
    const Diff &d = *impl(diff);
    if (index != kNoNode)
        if (chr_status st = chring::check_index(who, index, d.side(side).node_count(), "members"))
            return st;
    *other = d.counterpart(side, index);
    return CHR_OK;
}

CHR_API chr_status chr_diff_lookup(const chr_diff *diff, const void *key, size_t key_len,
                                   chr_transition *out) noexcept {
    static const char *who = "chr_diff_lookup";
    if (!diff) return null_arg(who, "diff");
    if (!out) return null_arg(who, "out");
    if (chr_status st = chring::check_key(who, key, key_len)) return st;
    const Diff &d = *impl(diff);
    const Snapshot &a = d.side(CHR_DIFF_OLD), &b = d.side(CHR_DIFF_NEW);
    const uint64_t h = a.hash_key(key, key_len);
    const uint32_t from = Diff::owner_at(a, h), to = Diff::owner_at(b, h);
    out->position = h;
    out->old_index = from;
    out->new_index = to;
    out->moved = d.moves(from, to);
    out->reserved0 = 0;
    out->old_owner = view_of(a, from);
    out->new_owner = view_of(b, to);
    return CHR_OK;
}

CHR_API chr_status chr_diff_lookup_batch(const chr_diff *diff, const void *const *keys,
                                         const size_t *key_lens, size_t n, uint32_t *old_indices,
                                         uint32_t *new_indices) noexcept {
    static const char *who = "chr_diff_lookup_batch";
    if (!diff) return null_arg(who, "diff");
    if (n && (!keys || !key_lens || !old_indices || !new_indices))
        return fail(CHR_EINVAL,
                    "%s: keys, key_lens, old_indices and new_indices must not be NULL when n is %zu",
                    who, n);
    for (size_t i = 0; i < n; ++i)
        if (!keys[i] && key_lens[i])
            return fail(CHR_EINVAL, "%s: key %zu is NULL with length %zu", who, i, key_lens[i]);
    const Diff &d = *impl(diff);
    const Snapshot &a = d.side(CHR_DIFF_OLD), &b = d.side(CHR_DIFF_NEW);
    for (size_t i = 0; i < n; ++i) {
        const uint64_t h = a.hash_key(keys[i], key_lens[i]);
        old_indices[i] = Diff::owner_at(a, h);
        new_indices[i] = Diff::owner_at(b, h);
    }
    return CHR_OK;
}

CHR_API chr_status chr_plan_new(const chr_diff *diff, int32_t policy, size_t replicas,
                                chr_plan **out) noexcept {
    static const char *who = "chr_plan_new";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (!diff) return null_arg(who, "diff");
    if (replicas == 0) return fail(CHR_EINVAL, "%s: replicas is 0 (ask for at least 1)", who);
    if (replicas > CHR_PLAN_REPLICAS_MAX)
        return fail(CHR_ERANGE, "%s: replicas %zu is over CHR_PLAN_REPLICAS_MAX (%d)", who, replicas,
                    CHR_PLAN_REPLICAS_MAX);
    if (chr_status st = chring::check_replica_policy(who, policy)) return st;
    return guarded(who, [&] {
        *out = reinterpret_cast<chr_plan *>(new Plan(*impl(diff), policy, replicas));
        return CHR_OK;
    });
}

CHR_API void chr_plan_free(chr_plan *plan) noexcept { delete reinterpret_cast<Plan *>(plan); }

CHR_API chr_status chr_plan_describe(const chr_plan *plan, chr_plan_info *info) noexcept {
    static const char *who = "chr_plan_describe";
    if (!plan) return null_arg(who, "plan");
    if (chr_status st = check_info_version(who, info, CHR_PLAN_INFO_VERSION)) return st;
    const Plan &p = *impl(plan);
    *info = chr_plan_info{info->version, p.policy(), p.replicas(), 0, p.entries().size(), p.copies()};
    return CHR_OK;
}

CHR_API chr_status chr_plan_ranges(const chr_plan *plan, size_t cursor, chr_plan_range *out,
                                   size_t capacity, size_t *written) noexcept {
    static const char *who = "chr_plan_ranges";
    if (!plan) return null_arg(who, "plan");
    return copy_from(who, impl(plan)->entries(), cursor, out, capacity, written, "plan entries");
}

}  // extern "C"
