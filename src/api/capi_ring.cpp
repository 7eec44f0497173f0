// The extern "C" entry points of rings and snapshots (chring.h): the
// library's version and errors, options, placements, ring changes, lookups
// and replicas, snapshots and their tables, replica policies. Each is
// noexcept (chring.h declares them so for C++), checks its arguments with
// validate.hpp, and runs whatever can throw through guarded()
// (firewall.hpp), so no exception reaches C.
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "chring.h"
#include "base/errors.hpp"
#include "capi_handles.hpp"
#include "firewall.hpp"
#include "placement.hpp"
#include "ring.hpp"
#include "base/validate.hpp"

namespace {

using chring::check_buffer;
using chring::check_id;
using chring::check_key;
using chring::empty_ring;
using chring::fail;
using chring::guarded;
using chring::impl;
using chring::Node;
using chring::NodeCache;
using chring::null_arg;
using chring::ReplicaPolicy;
using chring::Ring;
using chring::Snapshot;
using chring::too_small;

// RefFields is chr_node_ref's first 64 bytes, field for field.
static_assert(offsetof(chr_node_ref, tag) == offsetof(NodeCache::RefFields, tag) &&
                  offsetof(chr_node_ref, ownership) == offsetof(NodeCache::RefFields, ownership) &&
                  offsetof(chr_node_ref, weight) == offsetof(NodeCache::RefFields, weight) &&
                  offsetof(chr_node_ref, tokens) == offsetof(NodeCache::RefFields, tokens) &&
                  offsetof(chr_node_ref, index) == offsetof(NodeCache::RefFields, index) &&
                  offsetof(chr_node_ref, id_len) == offsetof(NodeCache::RefFields, id_len) &&
                  offsetof(chr_node_ref, zone_len) == offsetof(NodeCache::RefFields, zone_len) &&
                  offsetof(chr_node_ref, flags) == offsetof(NodeCache::RefFields, flags) &&
                  offsetof(chr_node_ref, id) == offsetof(NodeCache::RefFields, short_id) &&
                  sizeof(NodeCache::RefFields) == 64,
              "RefFields mirrors the head of chr_node_ref");

// The rest of a chr_node_ref whose id is longer than the head holds, or
// that has a zone: off the hot path.
__attribute__((noinline)) void fill_ref_rest(const Snapshot &s, uint32_t slot,
                                             chr_node_ref *out) noexcept {
    const chr_node_view &v = s.view_of_slot(slot);
    if (v.id_len > NodeCache::kShortId) std::memcpy(out->id, v.id, v.id_len);
    if (v.zone_len) std::memcpy(out->zone, v.zone, v.zone_len);
}

static_assert(offsetof(NodeCache::RefFields, zone_len) ==
                  offsetof(NodeCache::RefFields, id_len) + sizeof(uint32_t),
              "fill_ref reads id_len and zone_len as one 64-bit word");

// Node in `slot` (the index's owner field) as a chr_node_ref.
void fill_ref(const Snapshot &s, uint32_t slot, chr_node_ref *out) noexcept {
    const NodeCache::RefFields &r = s.ref_fields_of_slot(slot);
    std::memcpy(out, &r, sizeof r);  // one line, constant size: inlined
    // One test for both id_len <= kShortId and zone_len == 0 (on a big-endian
    // machine it always fails, and fill_ref_rest tests each: still right).
    uint64_t lengths;
    std::memcpy(&lengths, &r.id_len, sizeof lengths);
    if (__builtin_expect(lengths > NodeCache::kShortId, 0)) fill_ref_rest(s, slot, out);
}

// Shared by the ring and snapshot versions of replicas; `emit(i, slot)`
// writes one result.
template <class Emit>
chr_status replicas_on(const Snapshot &s, const char *who, uint64_t hash, size_t n, size_t *count,
                       Emit &&emit) {
    if (s.eligible_count() == 0) return empty_ring(who);
    *count = s.replicas_at_hash<true>(hash, n, emit);
    return CHR_OK;
}
template <class Emit>
chr_status replicas_on(const Snapshot &s, const char *who, uint64_t hash, size_t n,
                       ReplicaPolicy policy, size_t *count, Emit &&emit) {
    if (s.eligible_count() == 0) return empty_ring(who);
    *count = s.replicas_at_hash<true>(hash, n, policy, emit);
    return CHR_OK;
}

// The arguments of a lookup on a ring or a snapshot (`handle`, called
// `handle_name`). A statement macro, not a function: the checks are on every
// lookup's path, and this keeps them exactly as written out (a helper,
// even inlined, changed the registers GCC allocates for the whole call).
#define CHR_CHECK_LOOKUP_ARGS(who, handle, handle_name, key, len, out)      \
    if (!(handle)) return null_arg((who), (handle_name));                    \
    if (!(out)) return null_arg((who), "out");                               \
    if (chr_status st_ = check_key((who), (key), (len))) return st_

// The arguments of chr_ring_replicas and chr_snapshot_replicas, after the handle.
chr_status check_replica_args(const char *who, const void *key, size_t len, size_t n,
                              const void *out, const size_t *count) {
    if (!out) return null_arg(who, "out");
    if (!count) return null_arg(who, "count");
    if (n == 0) return fail(CHR_EINVAL, "%s: n is 0 (ask for at least 1 replica)", who);
    return check_key(who, key, len);
}

// chr_ring_apply and chr_ring_apply2: a batch of `change_size`-byte changes.
chr_status apply_batch(const char *who, chr_ring *ring, const void *changes, size_t count,
                       size_t change_size, size_t *failed_index) {
    if (failed_index) *failed_index = count;
    if (!ring) return null_arg(who, "ring");
    if (!changes && count) return fail(CHR_EINVAL, "%s: changes is NULL with count %zu", who, count);
    if (change_size < Ring::kChangeV1Size)
        return fail(CHR_EINVAL, "%s: change_size %zu is less than the %zu bytes of chr_change 0.1",
                    who, change_size, Ring::kChangeV1Size);
    size_t failed = count;
    chr_status st = guarded(who, [&] { return impl(ring)->apply(changes, count, change_size, &failed, who); });
    if (st != CHR_OK && failed < count) chring::note_change(failed);  // one change's failure
    if (failed_index) *failed_index = failed;
    return st;
}

// One value of the ring's current snapshot (a count, the fingerprint) into
// *out, which the entry point calls `what`.
template <class T, class Get>
chr_status ring_value(const char *who, const chr_ring *ring, T *out, const char *what, Get &&get) {
    if (!ring) return null_arg(who, "ring");
    if (!out) return null_arg(who, what);
    return impl(ring)->read(who, [&](const Snapshot &s) {
        *out = get(s);
        return CHR_OK;
    });
}

// The same for a snapshot handle.
template <class T, class Get>
chr_status snapshot_value(const char *who, const chr_snapshot *snap, T *out, const char *what,
                          Get &&get) {
    if (!snap) return null_arg(who, "snap");
    if (!out) return null_arg(who, what);
    *out = get(*impl(snap));
    return CHR_OK;
}

// Entry `index` of one of a snapshot's tables (its members, its tokens):
// `null_out` names the first NULL output argument, if any; `count(s)` is
// the table's size; `write(s)` fills the outputs.
template <class Count, class Write>
chr_status snapshot_entry(const char *who, const chr_snapshot *snap, size_t index,
                          const char *null_out, const char *what, Count &&count, Write &&write) {
    if (!snap) return null_arg(who, "snap");
    if (null_out) return null_arg(who, null_out);
    const Snapshot &s = *impl(snap);
    if (chr_status st = chring::check_index(who, index, count(s), what)) return st;
    write(s);
    return CHR_OK;
}

}  // namespace

extern "C" {

CHR_API uint32_t chr_version(void) noexcept { return CHR_VERSION_NUMBER; }

#define CHR_TEXT_OF_(x) #x
#define CHR_TEXT_OF(x) CHR_TEXT_OF_(x)
CHR_API const char *chr_version_string(void) noexcept {
    return CHR_TEXT_OF(CHR_VERSION_MAJOR) "." CHR_TEXT_OF(CHR_VERSION_MINOR) "." CHR_TEXT_OF(
        CHR_VERSION_PATCH);
}

CHR_API const char *chr_strerror(chr_status status) noexcept { return chring::status_text(status); }

CHR_API const char *chr_last_error(void) noexcept { return chring::last_error(); }

CHR_API chr_status chr_error_info_init(chr_error_info *info, uint32_t version) noexcept {
    return chring::init_versioned("chr_error_info_init", "info", info, version,
                                   CHR_ERROR_INFO_VERSION, chr_error_info CHR_ERROR_INFO_INIT);
}

// Its own failures leave the record alone: it holds the failure asked about.
CHR_API chr_status chr_last_error_info(chr_error_info *info) noexcept {
    if (!info) return CHR_EINVAL;
    if (info->version < 1 || info->version > CHR_ERROR_INFO_VERSION) return CHR_EVERSION;
    chring::last_error_info(info);
    return CHR_OK;
}

CHR_API chr_status chr_options_init(chr_options *opts, uint32_t version) noexcept {
    return chring::init_versioned("chr_options_init", "opts", opts, version,
                                   CHR_OPTIONS_VERSION, chr_options CHR_OPTIONS_INIT);
}

CHR_API chr_status chr_ring_new(const chr_options *opts, chr_ring **out) noexcept {
    static const char *who = "chr_ring_new";
    if (!out) return null_arg(who, "out");
    *out = nullptr;  // also when the build throws (CHR_ENOMEM)
    chr_options o;
    if (chr_status st = chring::read_options(who, opts, &o)) return st;
    return guarded(who, [&] {
        chring::PlacementPtr placement;
        if (chr_status st = chring::make_placement(&o, &placement, who)) return st;
        *out = reinterpret_cast<chr_ring *>(new Ring(std::move(placement)));
        return CHR_OK;
    });
}

CHR_API chr_status chr_placement_info_init(chr_placement_info *info, uint32_t version) noexcept {
    return chring::init_versioned("chr_placement_info_init", "info", info, version,
                                   CHR_PLACEMENT_INFO_VERSION, chr_placement_info CHR_PLACEMENT_INFO_INIT);
}

CHR_API chr_status chr_placement_describe(int32_t mode, chr_placement_info *out) noexcept {
    static const char *who = "chr_placement_describe";
    if (!out) return null_arg(who, "out");
    if (chr_status st = chring::check_version(who, "", out->version, CHR_PLACEMENT_INFO_VERSION))
        return st;
    const chring::PlacementOps *ops = chring::find_placement(mode);
    if (!ops) return chring::no_placement(who, mode);
    // Version 1 is the whole struct today; later versions fill by version.
    *out = {out->version, ops->mode,        ops->name,
            ops->summary, ops->hasher,      ops->digest_size,
            ops->seeded ? CHR_PLACEMENT_SEEDED : 0u};
    return CHR_OK;
}

CHR_API chr_status chr_placement_find(const char *name, int32_t *mode) noexcept {
    static const char *who = "chr_placement_find";
    if (!name) return null_arg(who, "name");
    if (!mode) return null_arg(who, "mode");
    const chring::PlacementOps *ops = chring::find_placement(name);
    if (!ops)
        return fail(CHR_ENOTSUP, "%s: no placement named '%s' in this library", who,
                    chring::Quoted(name, std::strlen(name)).c_str());
    *mode = ops->mode;
    return CHR_OK;
}

CHR_API void chr_ring_free(chr_ring *ring) noexcept { delete impl(ring); }

CHR_API chr_status chr_ring_apply(chr_ring *ring, const chr_change *changes, size_t count,
                                  size_t *failed_index) noexcept {
    return apply_batch("chr_ring_apply", ring, changes, count, Ring::kChangeV1Size, failed_index);
}

CHR_API chr_status chr_ring_apply2(chr_ring *ring, const void *changes, size_t count,
                                   size_t change_size, size_t *failed_index) noexcept {
    return apply_batch("chr_ring_apply2", ring, changes, count, change_size, failed_index);
}

CHR_API chr_status chr_ring_add(chr_ring *ring, const void *id, size_t id_len, uint32_t weight,
                                const void *zone, size_t zone_len, uint64_t tag) noexcept {
    static const char *who = "chr_ring_add";
    if (!ring) return null_arg(who, "ring");
    chr_change c = {CHR_OP_ADD, weight, id, id_len, zone, zone_len, tag};
    return guarded(who, [&] { return impl(ring)->apply_one(c, who); });
}

CHR_API chr_status chr_ring_remove(chr_ring *ring, const void *id, size_t id_len) noexcept {
    static const char *who = "chr_ring_remove";
    if (!ring) return null_arg(who, "ring");
    chr_change c = {CHR_OP_REMOVE, 0, id, id_len, nullptr, 0, 0};
    return guarded(who, [&] { return impl(ring)->apply_one(c, who); });
}

CHR_API chr_status chr_ring_set_weight(chr_ring *ring, const void *id, size_t id_len,
                                       uint32_t weight) noexcept {
    static const char *who = "chr_ring_set_weight";
    if (!ring) return null_arg(who, "ring");
    chr_change c = {CHR_OP_SET_WEIGHT, weight, id, id_len, nullptr, 0, 0};
    return guarded(who, [&] { return impl(ring)->apply_one(c, who); });
}

CHR_API chr_status chr_ring_lookup(const chr_ring *ring, const void *key, size_t key_len,
                                   chr_node_ref *out) noexcept {
    static const char *who = "chr_ring_lookup";
    CHR_CHECK_LOOKUP_ARGS(who, ring, "ring", key, key_len, out);
    const Ring &r = *impl(ring);
    const uint64_t h = r.hash_key(key, key_len);
    return r.read(who, [&](const Snapshot &s) {
        if (s.token_count() == 0) return empty_ring(who);
        fill_ref(s, s.slot_at_hash(h), out);
        return CHR_OK;
    });
}

CHR_API chr_status chr_ring_replicas(const chr_ring *ring, const void *key, size_t key_len,
                                     size_t n, chr_node_ref *out, size_t *count) noexcept {
    static const char *who = "chr_ring_replicas";
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = check_replica_args(who, key, key_len, n, out, count)) return st;
    const Ring &r = *impl(ring);
    const uint64_t h = r.hash_key(key, key_len);
    return guarded(who, [&] {
        return r.read(who, [&](const Snapshot &s) {
            return replicas_on(s, who, h, n, count,
                               [&](size_t i, uint32_t o) { fill_ref(s, o, &out[i]); });
        });
    });
}

CHR_API chr_status chr_ring_replicas_policy(const chr_ring *ring, const void *key, size_t key_len,
                                            int32_t policy, size_t n, chr_node_ref *out,
                                            size_t *count) noexcept {
    static const char *who = "chr_ring_replicas_policy";
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = check_replica_args(who, key, key_len, n, out, count)) return st;
    if (chr_status st = chring::check_replica_policy(who, policy)) return st;
    const Ring &r = *impl(ring);
    const uint64_t h = r.hash_key(key, key_len);
    return guarded(who, [&] {
        return r.read(who, [&](const Snapshot &s) {
            return replicas_on(s, who, h, n, ReplicaPolicy(policy), count,
                               [&](size_t i, uint32_t o) { fill_ref(s, o, &out[i]); });
        });
    });
}

CHR_API chr_status chr_ring_nodes(const chr_ring *ring, chr_node_ref *out, size_t capacity,
                                  size_t *count) noexcept {
    static const char *who = "chr_ring_nodes";
    if (!ring) return null_arg(who, "ring");
    if (!count) return null_arg(who, "count");
    if (chr_status st = check_buffer(who, out, capacity)) return st;
    return impl(ring)->read(who, [&](const Snapshot &s) {
        *count = s.node_count();
        if (capacity < s.node_count())
            return too_small(who, out, capacity, s.node_count(), "members");
        for (size_t i = 0; i < s.node_count(); ++i) fill_ref(s, s.slot_of_node(i), &out[i]);
        return CHR_OK;
    });
}

CHR_API chr_status chr_ring_ownership(const chr_ring *ring, const void *id, size_t id_len,
                                      double *fraction) noexcept {
    static const char *who = "chr_ring_ownership";
    if (!ring) return null_arg(who, "ring");
    if (!fraction) return null_arg(who, "fraction");
    if (chr_status st = check_id(who, id, id_len)) return st;
    return guarded(who, [&] {
        std::string key(static_cast<const char *>(id), id_len);
        return impl(ring)->read(who, [&](const Snapshot &s) {
            int64_t i = s.find(key);
            if (i < 0)
                return fail(CHR_ENOENT, "%s: no node '%s' in the ring", who,
                            chring::Quoted(key.data(), key.size()).c_str());
            *fraction = s.node(size_t(i)).ownership();
            return CHR_OK;
        });
    });
}

CHR_API chr_status chr_ring_snapshot(const chr_ring *ring, chr_snapshot **out) noexcept {
    static const char *who = "chr_ring_snapshot";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (!ring) return null_arg(who, "ring");
    const Snapshot *s = nullptr;
    chr_status st = impl(ring)->acquire(&s, who);
    if (st == CHR_OK) *out = reinterpret_cast<chr_snapshot *>(const_cast<Snapshot *>(s));
    return st;
}

CHR_API void chr_snapshot_release(chr_snapshot *snap) noexcept {
    if (snap) impl(snap)->release();
}

CHR_API chr_status chr_snapshot_lookup(const chr_snapshot *snap, const void *key, size_t key_len,
                                       chr_node_view *out) noexcept {
    static const char *who = "chr_snapshot_lookup";
    CHR_CHECK_LOOKUP_ARGS(who, snap, "snap", key, key_len, out);
    const Snapshot &s = *impl(snap);
    if (__builtin_expect(s.token_count() == 0, 0)) return empty_ring(who);
    *out = s.view_of_slot(s.slot_at_hash(s.hash_key(key, key_len)));
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_lookup_batch(const chr_snapshot *snap, const void *const *keys,
                                             const size_t *key_lens, size_t n, uint32_t *indices) noexcept {
    static const char *who = "chr_snapshot_lookup_batch";
    if (!snap) return null_arg(who, "snap");
    if (n && (!keys || !key_lens || !indices))
        return fail(CHR_EINVAL, "%s: keys, key_lens and indices must not be NULL when n is %zu",
                    who, n);
    const Snapshot &s = *impl(snap);
    if (n && s.token_count() == 0) return empty_ring(who);
    for (size_t i = 0; i < n; ++i)
        if (!keys[i] && key_lens[i])
            return fail(CHR_EINVAL, "%s: key %zu is NULL with length %zu", who, i, key_lens[i]);
    s.owners_of(keys, key_lens, n, indices);
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_replicas(const chr_snapshot *snap, const void *key,
                                         size_t key_len, size_t n, chr_node_view *out,
                                         size_t *count) noexcept {
    static const char *who = "chr_snapshot_replicas";
    if (!snap) return null_arg(who, "snap");
    if (chr_status st = check_replica_args(who, key, key_len, n, out, count)) return st;
    const Snapshot &s = *impl(snap);
    const uint64_t h = s.hash_key(key, key_len);
    return guarded(who, [&] {
        return replicas_on(s, who, h, n, count, [&](size_t i, uint32_t o) { out[i] = s.view_of_slot(o); });
    });
}

CHR_API chr_status chr_snapshot_replicas_policy(const chr_snapshot *snap, const void *key,
                                                size_t key_len, int32_t policy, size_t n,
                                                chr_node_view *out, size_t *count) noexcept {
    static const char *who = "chr_snapshot_replicas_policy";
    if (!snap) return null_arg(who, "snap");
    if (chr_status st = check_replica_args(who, key, key_len, n, out, count)) return st;
    if (chr_status st = chring::check_replica_policy(who, policy)) return st;
    const Snapshot &s = *impl(snap);
    const uint64_t h = s.hash_key(key, key_len);
    return guarded(who, [&] {
        return replicas_on(s, who, h, n, ReplicaPolicy(policy), count,
                           [&](size_t i, uint32_t o) { out[i] = s.view_of_slot(o); });
    });
}

CHR_API chr_status chr_snapshot_replica_shares(const chr_snapshot *snap, int32_t policy, size_t n,
                                               double *shares, size_t capacity,
                                               size_t *count) noexcept {
    static const char *who = "chr_snapshot_replica_shares";
    if (!snap) return null_arg(who, "snap");
    if (!count) return null_arg(who, "count");
    if (chr_status st = check_buffer(who, shares, capacity)) return st;
    if (n == 0) return fail(CHR_EINVAL, "%s: n is 0 (ask for at least 1 replica)", who);
    if (chr_status st = chring::check_replica_policy(who, policy)) return st;
    const Snapshot &s = *impl(snap);
    *count = s.node_count();
    if (capacity < s.node_count()) return too_small(who, shares, capacity, s.node_count(), "members");
    return guarded(who, [&] {
        s.replica_shares(ReplicaPolicy(policy), n, shares);
        return CHR_OK;
    });
}

CHR_API chr_status chr_replica_policy_name(int32_t policy, const char **name) noexcept {
    static const char *who = "chr_replica_policy_name";
    if (!name) return null_arg(who, "name");
    if (chr_status st = chring::check_replica_policy(who, policy)) return st;
    *name = chring::kReplicaPolicyNames[policy];
    return CHR_OK;
}

CHR_API chr_status chr_replica_policy_find(const char *name, int32_t *policy) noexcept {
    static const char *who = "chr_replica_policy_find";
    if (!name) return null_arg(who, "name");
    if (!policy) return null_arg(who, "policy");
    for (int32_t p = 0; p < chring::kReplicaPolicies; ++p)
        if (std::strcmp(name, chring::kReplicaPolicyNames[p]) == 0) {
            *policy = p;
            return CHR_OK;
        }
    return fail(CHR_ENOTSUP, "%s: no replica policy named '%s' (nodes, zones-first, nts)", who,
                chring::Quoted(name, std::strlen(name)).c_str());
}

CHR_API chr_status chr_snapshot_node(const chr_snapshot *snap, size_t index,
                                     chr_node_view *out) noexcept {
    return snapshot_entry(
        "chr_snapshot_node", snap, index, out ? nullptr : "out", "members",
        [](const Snapshot &s) { return s.node_count(); },
        [&](const Snapshot &s) { *out = s.view(index); });
}

// The values a ring and a snapshot both report, one pair of entry points
// each: chr_ring_node_count and chr_snapshot_node_count, chr_ring_token_count
// and chr_snapshot_token_count, chr_ring_fingerprint and
// chr_snapshot_fingerprint. The ring's reads its current snapshot.
#define CHR_VALUE_ENTRY_POINTS(name, T, arg)                                                  \
    CHR_API chr_status chr_ring_##name(const chr_ring *ring, T *arg) noexcept {               \
        return ring_value("chr_ring_" #name, ring, arg, #arg,                                 \
                          [](const Snapshot &s) { return s.name(); });                        \
    }                                                                                         \
    CHR_API chr_status chr_snapshot_##name(const chr_snapshot *snap, T *arg) noexcept {       \
        return snapshot_value("chr_snapshot_" #name, snap, arg, #arg,                         \
                              [](const Snapshot &s) { return s.name(); });                    \
    }
CHR_VALUE_ENTRY_POINTS(node_count, size_t, count)
CHR_VALUE_ENTRY_POINTS(token_count, size_t, count)
CHR_VALUE_ENTRY_POINTS(fingerprint, uint64_t, fingerprint)
#undef CHR_VALUE_ENTRY_POINTS

CHR_API chr_status chr_snapshot_token(const chr_snapshot *snap, size_t index, uint64_t *value,
                                      uint32_t *node_index) noexcept {
    return snapshot_entry(
        "chr_snapshot_token", snap, index,
        !value ? "value" : !node_index ? "node_index" : nullptr, "tokens",
        [](const Snapshot &s) { return s.token_count(); },
        [&](const Snapshot &s) {
            *value = s.token_value(index);
            *node_index = s.token_owner(index);
        });
}

}  // extern "C"
