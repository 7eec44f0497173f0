// The extern "C" entry points of bounded-load lookups and the tracker
// (chring.h, "Bounded loads and availability"): each noexcept, arguments
// checked here, whatever can throw run through guarded().
#include <cstring>
#include <new>

#include "bounded.hpp"
#include "capi_handles.hpp"
#include "chring.h"
#include "base/errors.hpp"
#include "firewall.hpp"
#include "snapshot.hpp"
#include "tracker.hpp"
#include "base/validate.hpp"

namespace chring {

chr_status read_bound_options(const char *who, const chr_bound_options *opts, BoundParams &p) {
    p = BoundParams{};
    if (!opts) return CHR_OK;
    if (chr_status st = check_version(who, "opts", opts->version, CHR_BOUND_OPTIONS_VERSION)) return st;
    if (opts->factor_pct < CHR_BALANCE_FACTOR_MIN || opts->factor_pct > CHR_BALANCE_FACTOR_MAX)
        return fail(CHR_ERANGE, "%s: factor_pct %u is not in %u..%u", who, opts->factor_pct,
                    CHR_BALANCE_FACTOR_MIN, CHR_BALANCE_FACTOR_MAX);
    if (opts->spill != CHR_SPILL_REPLICAS && opts->spill != CHR_SPILL_SHUFFLE)
        return fail(CHR_EINVAL, "%s: spill %u is not CHR_SPILL_REPLICAS (0) or CHR_SPILL_SHUFFLE (1)",
                    who, opts->spill);
    if (opts->slack > CHR_LOAD_MAX)
        return fail(CHR_ERANGE, "%s: slack %llu is over CHR_LOAD_MAX (%llu)", who,
                    (unsigned long long)opts->slack, (unsigned long long)CHR_LOAD_MAX);
    p.bounded = true;
    p.factor_pct = opts->factor_pct;
    p.spill = opts->spill;
    p.max_probes = opts->max_probes;
    p.slack = opts->slack;
    return CHR_OK;
}

}  // namespace chring

namespace {

using chring::BoundChoice;
using chring::BoundParams;
using chring::fail;
using chring::guarded;
using chring::impl;
using chring::null_arg;
using chring::Snapshot;
using chring::Tracker;

Tracker *impl(chr_tracker *t) { return reinterpret_cast<Tracker *>(t); }
const Tracker *impl(const chr_tracker *t) { return reinterpret_cast<const Tracker *>(t); }

void fill_result(const BoundChoice &c, chr_bound_result *r) {
    if (!r) return;
    r->index = c.index;
    r->home = c.home;
    r->probes = c.probes;
    r->flags = c.flags;
    r->load = c.load;
    r->capacity = c.capacity;
}

chr_status load_over(const char *who, const char *what, size_t i, uint64_t v) {
    return fail(CHR_ERANGE, "%s: %s %zu is %llu, over CHR_LOAD_MAX (%llu)", who, what, i,
                (unsigned long long)v, (unsigned long long)CHR_LOAD_MAX);
}

// The id of a tracker call: 1..CHR_NODE_ID_MAX bytes.
chr_status check_tracker_id(const char *who, const void *tracker, const void *id, size_t len) {
    if (!tracker) return null_arg(who, "tracker");
    return chring::check_id(who, id, len);
}

}  // namespace

CHR_API chr_status chr_bound_options_init(chr_bound_options *opts, uint32_t version) noexcept {
    return chring::init_versioned("chr_bound_options_init", "opts", opts, version,
                                   CHR_BOUND_OPTIONS_VERSION, chr_bound_options CHR_BOUND_OPTIONS_INIT);
}

CHR_API chr_status chr_bound_capacities(const uint32_t *weights, size_t n, uint64_t total_load,
                                        const chr_bound_options *opts, uint64_t *caps) noexcept {
    static const char *who = "chr_bound_capacities";
    if (n && (!weights || !caps))
        return fail(CHR_EINVAL, "%s: weights and caps must not be NULL when n is %zu", who, n);
    if (n > CHR_NODES_MAX)
        return fail(CHR_ERANGE, "%s: n %zu is over CHR_NODES_MAX (%u)", who, n, CHR_NODES_MAX);
    const chr_bound_options defaults = CHR_BOUND_OPTIONS_INIT;
    BoundParams p;
    if (chr_status st = chring::read_bound_options(who, opts ? opts : &defaults, p)) return st;
    if (total_load > CHR_LOAD_MAX * uint64_t(CHR_NODES_MAX))
        return fail(CHR_ERANGE, "%s: total_load %llu is over CHR_LOAD_MAX * CHR_NODES_MAX", who,
                    (unsigned long long)total_load);
    uint64_t W = 0;
    for (size_t i = 0; i < n; ++i) {
        if (weights[i] > CHR_WEIGHT_MAX)
            return fail(CHR_ERANGE, "%s: weight %zu is %u, over CHR_WEIGHT_MAX (%u)", who, i,
                        weights[i], CHR_WEIGHT_MAX);
        W += weights[i];
    }
    const uint64_t slots = chring::bound_total_slots(total_load, p.factor_pct);
    uint64_t before = 0;
    for (size_t i = 0; i < n; ++i) {
        caps[i] = weights[i] ? chring::bound_capacity(slots, W, before, weights[i], p.slack) : 0;
        before += weights[i];
    }
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_lookup_bounded(const chr_snapshot *snap, const void *key,
                                               size_t key_len, const uint64_t *loads,
                                               const unsigned char *available, size_t n_nodes,
                                               const chr_bound_options *opts, chr_node_view *out,
                                               chr_bound_result *result) noexcept {
    static const char *who = "chr_snapshot_lookup_bounded";
    if (!snap) return null_arg(who, "snap");
    if (!out) return null_arg(who, "out");
    if (chr_status st = chring::check_key(who, key, key_len)) return st;
    const Snapshot &s = *impl(snap);
    if ((loads || available) && n_nodes != s.node_count())
        return fail(CHR_EINVAL, "%s: n_nodes is %zu, the snapshot has %zu nodes", who, n_nodes,
                    s.node_count());
    BoundParams p;
    if (chr_status st = chring::read_bound_options(who, opts, p)) return st;
    if (s.token_count() == 0) return chring::empty_ring(who);
    uint64_t total = 0;
    if (loads && p.bounded) {
        const chring::MemberLoads m = chring::member_loads(s, [&](uint32_t i) { return loads[i]; });
        total = m.total;
        if (m.bits > CHR_LOAD_MAX)
            for (size_t i = 0; i < n_nodes; ++i)
                if (loads[i] > CHR_LOAD_MAX) return load_over(who, "load", i, loads[i]);
    }
    return guarded(who, [&] {
        BoundChoice c;
        const bool found = chring::choose_bounded(
            s, s.hash_key(key, key_len), p, total, available == nullptr,
            [&](uint32_t i) { return loads ? loads[i] : 0; },
            [&](uint32_t i) { return available[i] != 0; }, c);
        if (!found)
            return fail(CHR_EEMPTY, "%s: every node with tokens is marked unavailable", who);
        *out = s.view(c.index);
        fill_result(c, result);
        return CHR_OK;
    });
}

CHR_API chr_status chr_tracker_new(size_t max_nodes, chr_tracker **out) noexcept {
    static const char *who = "chr_tracker_new";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (max_nodes == 0) max_nodes = CHR_TRACKER_NODES_DEFAULT;
    if (max_nodes > CHR_NODES_MAX)
        return fail(CHR_ERANGE, "%s: max_nodes %zu is over CHR_NODES_MAX (%u)", who, max_nodes,
                    CHR_NODES_MAX);
    return guarded(who, [&] {
        *out = reinterpret_cast<chr_tracker *>(new Tracker(max_nodes));
        return CHR_OK;
    });
}

CHR_API void chr_tracker_free(chr_tracker *tracker) noexcept { delete impl(tracker); }

CHR_API chr_status chr_tracker_acquire(chr_tracker *tracker, const chr_snapshot *snap,
                                       const void *key, size_t key_len,
                                       const chr_bound_options *opts, chr_node_view *out,
                                       chr_bound_result *result, chr_ticket *ticket) noexcept {
    static const char *who = "chr_tracker_acquire";
    if (!tracker) return null_arg(who, "tracker");
    if (!snap) return null_arg(who, "snap");
    if (!ticket) return null_arg(who, "ticket");
    if (chr_status st = chring::check_key(who, key, key_len)) return st;
    BoundParams p;
    if (chr_status st = chring::read_bound_options(who, opts, p)) return st;
    const Snapshot &s = *impl(snap);
    if (s.token_count() == 0) return chring::empty_ring(who);
    return guarded(who, [&] {
        BoundChoice c;
        chr_ticket t{};
        if (chr_status st = impl(tracker)->acquire(who, s, key, key_len, p, c, t)) return st;
        *ticket = t;
        if (out) *out = s.view(c.index);
        fill_result(c, result);
        return CHR_OK;
    });
}

CHR_API chr_status chr_tracker_release(chr_tracker *tracker, const chr_ticket *ticket) noexcept {
    static const char *who = "chr_tracker_release";
    if (!tracker) return null_arg(who, "tracker");
    if (!ticket) return null_arg(who, "ticket");
    return impl(tracker)->release(who, *ticket);
}

CHR_API chr_status chr_tracker_set_available(chr_tracker *tracker, const void *id, size_t id_len,
                                             uint32_t available) noexcept {
    static const char *who = "chr_tracker_set_available";
    if (chr_status st = check_tracker_id(who, tracker, id, id_len)) return st;
    return impl(tracker)->set_available(who, id, id_len, available != 0);
}

CHR_API chr_status chr_tracker_load(const chr_tracker *tracker, const void *id, size_t id_len,
                                    uint64_t *load) noexcept {
    static const char *who = "chr_tracker_load";
    if (chr_status st = check_tracker_id(who, tracker, id, id_len)) return st;
    if (!load) return null_arg(who, "load");
    *load = impl(tracker)->load(id, id_len);
    return CHR_OK;
}

CHR_API chr_status chr_tracker_total(const chr_tracker *tracker, uint64_t *total) noexcept {
    static const char *who = "chr_tracker_total";
    if (!tracker) return null_arg(who, "tracker");
    if (!total) return null_arg(who, "total");
    *total = impl(tracker)->total();
    return CHR_OK;
}
