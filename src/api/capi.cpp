// Every extern "C" entry point but the migration plans' (capi_diff.cpp):
// each is noexcept (chring.h declares them so for C++), checks its
// arguments with validate.hpp, and runs whatever can throw through
// guarded() (firewall.hpp), so no exception reaches C.
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "chring.h"
#include "base/errors.hpp"
#include "firewall.hpp"
#include "plugin/registry.hpp"
#include "placement.hpp"
#include "plugin/discovery.hpp"
#include "plugin/loader.hpp"
#include "ring.hpp"
#include "ringfile/ringfile.hpp"
#include "base/validate.hpp"

namespace {

using chring::check_buffer;
using chring::check_bytes;
using chring::check_id;
using chring::check_key;
using chring::empty_ring;
using chring::fail;
using chring::guarded;
using chring::Node;
using chring::NodeCache;
using chring::null_arg;
using chring::ReplicaPolicy;
using chring::Ring;
using chring::Snapshot;
using chring::too_small;

Ring *impl(chr_ring *r) { return reinterpret_cast<Ring *>(r); }
const Ring *impl(const chr_ring *r) { return reinterpret_cast<const Ring *>(r); }
const Snapshot *impl(const chr_snapshot *s) { return reinterpret_cast<const Snapshot *>(s); }

// RefFields is chr_node_ref's first 64 bytes, field for field.
static_assert(offsetof(chr_node_ref, tag) == offsetof(NodeCache::RefFields, tag) &&
                  offsetof(chr_node_ref, ownership) == offsetof(NodeCache::RefFields, ownership) &&
                  offsetof(chr_node_ref, weight) == offsetof(NodeCache::RefFields, weight) &&
                  offsetof(chr_node_ref, tokens) == offsetof(NodeCache::RefFields, tokens) &&
                  offsetof(chr_node_ref, index) == offsetof(NodeCache::RefFields, index) &&
                  offsetof(chr_node_ref, id_len) == offsetof(NodeCache::RefFields, id_len) &&
                  offsetof(chr_node_ref, zone_len) == offsetof(NodeCache::RefFields, zone_len) &&
                  offsetof(chr_node_ref, reserved0) == offsetof(NodeCache::RefFields, reserved0) &&
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

// Replica policies by number (CHR_REPLICAS_*), the names chr_replica_policy_name gives.
constexpr const char *kPolicyNames[] = {"nodes", "zones-first", "nts"};
constexpr int32_t kPolicies = int32_t(sizeof kPolicyNames / sizeof kPolicyNames[0]);

chr_status check_policy(const char *who, int32_t policy) {
    if (policy >= 0 && policy < kPolicies) return CHR_OK;
    return fail(CHR_ENOTSUP, "%s: no replica policy %d in this library (0..%d: nodes, zones-first, nts)",
                who, policy, kPolicies - 1);
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
    return guarded(who, [&] {
        return impl(ring)->apply(changes, count, change_size, failed_index, who);
    });
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

CHR_API chr_status chr_options_init(chr_options *opts, uint32_t version) noexcept {
    static const char *who = "chr_options_init";
    if (!opts) return null_arg(who, "opts");
    if (chr_status st = chring::check_version(who, "", version, CHR_OPTIONS_VERSION)) return st;
    chr_options defaults = CHR_OPTIONS_INIT;
    *opts = defaults;
    opts->version = version;
    return CHR_OK;
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
    static const char *who = "chr_placement_info_init";
    if (!info) return null_arg(who, "info");
    if (chr_status st = chring::check_version(who, "", version, CHR_PLACEMENT_INFO_VERSION))
        return st;
    chr_placement_info defaults = CHR_PLACEMENT_INFO_INIT;
    *info = defaults;
    info->version = version;
    return CHR_OK;
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
    if (chr_status st = check_policy(who, policy)) return st;
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
    if (chr_status st = check_policy(who, policy)) return st;
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
    if (chr_status st = check_policy(who, policy)) return st;
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
    if (chr_status st = check_policy(who, policy)) return st;
    *name = kPolicyNames[policy];
    return CHR_OK;
}

CHR_API chr_status chr_replica_policy_find(const char *name, int32_t *policy) noexcept {
    static const char *who = "chr_replica_policy_find";
    if (!name) return null_arg(who, "name");
    if (!policy) return null_arg(who, "policy");
    for (int32_t p = 0; p < kPolicies; ++p)
        if (std::strcmp(name, kPolicyNames[p]) == 0) {
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

CHR_API chr_status chr_plugin_load(const char *path, size_t *loaded) noexcept {
    static const char *who = "chr_plugin_load";
    if (loaded) *loaded = 0;
    if (!path) return null_arg(who, "path");
    return guarded(who, [&] { return chring::load_plugin(path, loaded, who); });
}

CHR_API chr_status chr_hasher_list(const char *plugin_dir, chr_hasher_info *out, size_t capacity,
                                   size_t *count) noexcept {
    static const char *who = "chr_hasher_list";
    if (!count) return null_arg(who, "count");
    if (chr_status st = check_buffer(who, out, capacity)) return st;
    return guarded(who, [&] {
        chring::discover_plugins(plugin_dir, nullptr);
        std::vector<chring::HasherPtr> all = chring::list_hashers();
        *count = all.size();
        if (capacity < all.size())
            return too_small(who, out, capacity, all.size(), "hashers");
        for (size_t i = 0; i < all.size(); ++i) {
            // Registry entries are immutable and never removed: the strings stay valid.
            out[i].name = all[i]->name.c_str();
            out[i].description = all[i]->description.c_str();
            out[i].origin = all[i]->origin.c_str();
            out[i].digest_size = all[i]->digest_size;
            out[i].reserved0 = 0;
        }
        return CHR_OK;
    });
}

CHR_API chr_status chr_hasher_register(const chr_hasher *hasher) noexcept {
    static const char *who = "chr_hasher_register";
    if (!hasher) return null_arg(who, "hasher");
    return guarded(who, [&] { return chring::register_hashers({hasher}, "registered", nullptr, who); });
}

namespace {
chr_status no_hasher(const char *who, const char *name) {
    std::string skipped = chring::skipped_plugins();
    return fail(CHR_ENOHASHER, "%s: no hasher named '%s' is registered or found in a plugin%s%s",
                who, chring::Quoted(name, strnlen(name, CHR_HASHER_NAME_MAX + 1)).c_str(),
                skipped.empty() ? "" : "; skipped: ", skipped.c_str());
}
}  // namespace

CHR_API chr_status chr_hasher_hash(const char *name, const void *data, size_t len, uint64_t seed,
                                   uint64_t *out) noexcept {
    static const char *who = "chr_hasher_hash";
    if (!name) return null_arg(who, "name");
    if (!out) return null_arg(who, "out");
    if (chr_status st = check_bytes(who, "data", data, len)) return st;
    return guarded(who, [&] {
        chring::HasherPtr h = chring::resolve_hasher(name, nullptr);
        if (!h) return no_hasher(who, name);
        *out = h->hash64(data, len, seed);
        return CHR_OK;
    });
}

CHR_API chr_status chr_hasher_digest(const char *name, const void *data, size_t len,
                                     unsigned char *out, size_t capacity, size_t *digest_size) noexcept {
    static const char *who = "chr_hasher_digest";
    if (!name) return null_arg(who, "name");
    if (!digest_size) return null_arg(who, "digest_size");
    if (chr_status st = check_buffer(who, out, capacity)) return st;
    if (chr_status st = check_bytes(who, "data", data, len)) return st;
    return guarded(who, [&] {
        chring::HasherPtr h = chring::resolve_hasher(name, nullptr);
        if (!h) return no_hasher(who, name);
        *digest_size = h->digest_size;
        if (!h->digest)
            return fail(CHR_ENOTSUP, "%s: hasher '%s' has no full digest", who, h->name.c_str());
        if (capacity < h->digest_size)
            return too_small(who, out, capacity, h->digest_size, "bytes of the digest");
        h->digest(data, len, out);
        return CHR_OK;
    });
}

}  // extern "C"

// ---- ring files (src/ringfile, docs/ring-file.md) ------------------------

namespace {

chr_status check_info(const char *who, chr_ringfile_info *info) {
    return info ? chring::check_version(who, "info", info->version, CHR_RINGFILE_INFO_VERSION)
                : CHR_OK;
}

void fill_info(chr_ringfile_info *info, const chring::ringfile::File &f,
               const chring::ringfile::Outcome &o, chr_status st) {
    if (!info) return;
    const uint32_t version = info->version;
    *info = chr_ringfile_info{};
    info->version = version;
    info->error_line = uint32_t(std::min<size_t>(o.error_line, UINT32_MAX));
    if (st != CHR_OK) return;
    info->flags = (f.revision_line ? CHR_RINGFILE_HAS_REVISION : 0u) |
                  (f.fingerprint_line ? CHR_RINGFILE_HAS_FINGERPRINT : 0u) |
                  (f.options_line ? CHR_RINGFILE_HAS_OPTIONS : 0u);
    info->revision = f.revision;
    info->fingerprint = o.fingerprint;
    info->format_version = f.format_version;
    info->members = uint32_t(f.members.size());
    info->added = o.added;
    info->removed = o.removed;
    info->reweighted = o.reweighted;
    info->replaced = o.replaced;
}

chr_status check_base(const char *who, const chr_options *base) {
    return base ? chring::check_version(who, "options", base->version, CHR_OPTIONS_VERSION)
                : CHR_OK;
}

chr_status check_text(const char *who, const char *text, size_t len) {
    if (!text && len) return fail(CHR_EINVAL, "%s: text is NULL with length %zu", who, len);
    return CHR_OK;
}

// Parses `text` and makes a ring of it (ring == nullptr) or applies it to `ring`.
chr_status load_text(std::string_view text, const std::string &name, chr_ring *ring,
                     const chr_options *base, chr_ring **out, chr_ringfile_info *info) {
    chring::ringfile::File f;
    chring::ringfile::Outcome o;
    size_t line = 0;
    chr_status st = chring::ringfile::parse(text, name, f, &line);
    if (st != CHR_OK) {
        o.error_line = line;
    } else if (ring) {
        st = chring::ringfile::apply(*impl(ring), f, o);
    } else {
        Ring *r = nullptr;
        st = chring::ringfile::create(f, base, &r, o);
        *out = reinterpret_cast<chr_ring *>(r);
    }
    fill_info(info, f, o, st);
    return st;
}

// A ring file as an entry point was given it: its text, or a path to read.
struct Source {
    bool is_file;
    const char *text;  // text calls: the bytes (NULL only with len 0) and
    size_t len;        // the name for messages (NULL: "<text>")
    const char *name;
    const char *path;  // file calls

    static Source of_text(const char *text, size_t len, const char *name) {
        return {false, text, len, name, nullptr};
    }
    static Source of_file(const char *path) { return {true, nullptr, 0, nullptr, path}; }
};

chr_status check_source(const char *who, const Source &src) {
    if (src.is_file) return src.path ? CHR_OK : null_arg(who, "path");
    return check_text(who, src.text, src.len);
}

// Reads the source (a file: CHR_EIO, info reset) and creates or applies it.
chr_status load_source(const Source &src, chr_ring *ring, const chr_options *base,
                       chr_ring **out, chr_ringfile_info *info) {
    if (!src.is_file)
        return load_text(std::string_view(src.text ? src.text : "", src.len),
                         src.name ? src.name : "<text>", ring, base, out, info);
    std::string text;
    if (chr_status st = chring::ringfile::read_file(src.path, text)) {
        if (info) chr_ringfile_info_init(info, info->version);
        return st;
    }
    return load_text(text, src.path, ring, base, out, info);
}

// chr_ring_new_from_text and chr_ring_new_from_file.
chr_status create_from(const char *who, const Source &src, const chr_options *base,
                       chr_ring **out, chr_ringfile_info *info) {
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (chr_status st = check_source(who, src)) return st;
    if (chr_status st = check_info(who, info)) return st;
    if (chr_status st = check_base(who, base)) return st;
    return guarded(who, [&] { return load_source(src, nullptr, base, out, info); });
}

// chr_ring_apply_text and chr_ring_apply_file.
chr_status apply_from(const char *who, chr_ring *ring, const Source &src, chr_ringfile_info *info) {
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = check_source(who, src)) return st;
    if (chr_status st = check_info(who, info)) return st;
    return guarded(who, [&] { return load_source(src, ring, nullptr, nullptr, info); });
}

chr_status copy_out(const char *who, const std::string &text, char *buf, size_t capacity,
                    size_t *out_len, const char *what) {
    *out_len = text.size();
    if (capacity < text.size()) return too_small(who, buf, capacity, text.size(), what);
    if (!text.empty()) std::memcpy(buf, text.data(), text.size());
    if (capacity > text.size()) buf[text.size()] = '\0';
    return CHR_OK;
}

chr_status export_snapshot(const char *who, const Snapshot &s, uint32_t flags, uint64_t revision,
                           char *buf, size_t capacity, size_t *len) {
    const std::string text = (flags & CHR_EXPORT_JSON)
                                 ? chring::ringfile::json_text(s, flags, revision)
                                 : chring::ringfile::canonical_text(s, flags, revision);
    return copy_out(who, text, buf, capacity, len, "bytes of the ring file");
}

chr_status check_export(const char *who, uint32_t flags, const char *buf, size_t capacity,
                        const size_t *len) {
    if (!len) return null_arg(who, "len");
    if (!buf && capacity) return fail(CHR_EINVAL, "%s: buf is NULL with capacity %zu", who, capacity);
    if (flags & ~(CHR_EXPORT_REVISION | CHR_EXPORT_JSON))
        return fail(CHR_EINVAL, "%s: unknown flags 0x%x (known: CHR_EXPORT_REVISION, CHR_EXPORT_JSON)",
                    who, flags & ~(CHR_EXPORT_REVISION | CHR_EXPORT_JSON));
    return CHR_OK;
}

// `text` into a caller buffer (with a NUL when it fits), or CHR_ERANGE
// with the size needed (no message for a size query: buf NULL, capacity 0).

chr_status check_out(const char *who, const void *buf, size_t capacity, const size_t *out_len) {
    if (!out_len) return null_arg(who, "out_len");
    return check_buffer(who, buf, capacity);
}

}  // namespace

extern "C" {

CHR_API chr_status chr_ringfile_info_init(chr_ringfile_info *info, uint32_t version) noexcept {
    static const char *who = "chr_ringfile_info_init";
    if (!info) return null_arg(who, "info");
    if (chr_status st = chring::check_version(who, "", version, CHR_RINGFILE_INFO_VERSION))
        return st;
    *info = chr_ringfile_info{};
    info->version = version;
    return CHR_OK;
}

CHR_API chr_status chr_ring_new_from_text(const char *text, size_t len, const char *name,
                                          const chr_options *base, chr_ring **out,
                                          chr_ringfile_info *info) noexcept {
    return create_from("chr_ring_new_from_text", Source::of_text(text, len, name), base, out, info);
}

CHR_API chr_status chr_ring_new_from_file(const char *path, const chr_options *base,
                                          chr_ring **out, chr_ringfile_info *info) noexcept {
    return create_from("chr_ring_new_from_file", Source::of_file(path), base, out, info);
}

CHR_API chr_status chr_ring_apply_text(chr_ring *ring, const char *text, size_t len,
                                       const char *name, chr_ringfile_info *info) noexcept {
    return apply_from("chr_ring_apply_text", ring, Source::of_text(text, len, name), info);
}

CHR_API chr_status chr_ring_apply_file(chr_ring *ring, const char *path, chr_ringfile_info *info) noexcept {
    return apply_from("chr_ring_apply_file", ring, Source::of_file(path), info);
}

CHR_API chr_status chr_ring_export(const chr_ring *ring, uint32_t flags, uint64_t revision,
                                   char *buf, size_t capacity, size_t *len) noexcept {
    static const char *who = "chr_ring_export";
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = check_export(who, flags, buf, capacity, len)) return st;
    return guarded(who, [&] {
        const Snapshot *s = nullptr;
        if (chr_status st = impl(ring)->acquire(&s, who)) return st;
        std::unique_ptr<const Snapshot, void (*)(const Snapshot *)> hold(
            s, [](const Snapshot *p) { p->release(); });
        return export_snapshot(who, *s, flags, revision, buf, capacity, len);
    });
}

CHR_API chr_status chr_snapshot_export(const chr_snapshot *snap, uint32_t flags, uint64_t revision,
                                       char *buf, size_t capacity, size_t *len) noexcept {
    static const char *who = "chr_snapshot_export";
    if (!snap) return null_arg(who, "snap");
    if (chr_status st = check_export(who, flags, buf, capacity, len)) return st;
    return guarded(who, [&] { return export_snapshot(who, *impl(snap), flags, revision, buf, capacity, len); });
}

CHR_API chr_status chr_ringfile_escape(const void *bytes, size_t len, uint32_t flags, char *buf,
                                       size_t capacity, size_t *out_len) noexcept {
    static const char *who = "chr_ringfile_escape";
    if (chr_status st = check_out(who, buf, capacity, out_len)) return st;
    if (chr_status st = check_bytes(who, "bytes", bytes, len)) return st;
    if (flags & ~CHR_ESCAPE_HIDDEN)
        return fail(CHR_EINVAL, "%s: unknown flags 0x%x (known: CHR_ESCAPE_HIDDEN)", who,
                    flags & ~CHR_ESCAPE_HIDDEN);
    return guarded(who, [&] {
        const std::string_view in(static_cast<const char *>(bytes ? bytes : ""), len);
        return copy_out(who, chring::ringfile::escape_field(in, (flags & CHR_ESCAPE_HIDDEN) != 0),
                        buf, capacity, out_len, "bytes of the spelling");
    });
}

CHR_API chr_status chr_ringfile_unescape(const char *field, size_t len, const char *what,
                                         char *buf, size_t capacity, size_t *out_len) noexcept {
    static const char *who = "chr_ringfile_unescape";
    if (chr_status st = check_out(who, buf, capacity, out_len)) return st;
    if (chr_status st = check_bytes(who, "field", field, len)) return st;
    return guarded(who, [&] {
        std::string out, why;
        if (!chring::ringfile::unescape_field(std::string_view(field ? field : "", len),
                                              what ? what : "field", out, why))
            return fail(CHR_EFORMAT, "%s", why.c_str());
        return copy_out(who, out, buf, capacity, out_len, "decoded bytes");
    });
}

}  // extern "C"
