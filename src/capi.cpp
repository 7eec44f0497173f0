// Every extern "C" entry point, each behind one exception firewall.
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "chring.h"
#include "errors.hpp"
#include "hashers.hpp"
#include "plugins.hpp"
#include "ring.hpp"
#include "ringfile/ringfile.hpp"

namespace {

using chring::fail;
using chring::Node;
using chring::Ring;
using chring::Snapshot;

// Runs `body` and maps anything it throws to a status: bad_alloc to
// CHR_ENOMEM, anything else to CHR_EINTERNAL. Nothing escapes to C.
template <class F>
chr_status guarded(const char *who, F &&body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return fail(CHR_ENOMEM, "%s: out of memory", who);
    } catch (const std::exception &e) {
        return fail(CHR_EINTERNAL, "%s: internal error: %s", who, e.what());
    } catch (...) {
        return fail(CHR_EINTERNAL, "%s: internal error: unknown exception", who);
    }
}

Ring *impl(chr_ring *r) { return reinterpret_cast<Ring *>(r); }
const Ring *impl(const chr_ring *r) { return reinterpret_cast<const Ring *>(r); }
const Snapshot *impl(const chr_snapshot *s) { return reinterpret_cast<const Snapshot *>(s); }

chr_status null_arg(const char *who, const char *what) {
    return fail(CHR_EINVAL, "%s: %s is NULL", who, what);
}

__attribute__((noinline, cold)) chr_status null_key(const char *who, size_t len) {
    return fail(CHR_EINVAL, "%s: key is NULL with length %zu", who, len);
}

chr_status check_key(const char *who, const void *key, size_t len) {
    if (__builtin_expect(!key && len, 0)) return null_key(who, len);
    return CHR_OK;
}

chr_status empty_ring(const char *who) {
    return fail(CHR_EEMPTY, "%s: the ring has no node with tokens", who);
}

// RefFields is chr_node_ref's first 64 bytes, field for field.
static_assert(offsetof(chr_node_ref, tag) == offsetof(Snapshot::RefFields, tag) &&
                  offsetof(chr_node_ref, ownership) == offsetof(Snapshot::RefFields, ownership) &&
                  offsetof(chr_node_ref, weight) == offsetof(Snapshot::RefFields, weight) &&
                  offsetof(chr_node_ref, tokens) == offsetof(Snapshot::RefFields, tokens) &&
                  offsetof(chr_node_ref, index) == offsetof(Snapshot::RefFields, index) &&
                  offsetof(chr_node_ref, id_len) == offsetof(Snapshot::RefFields, id_len) &&
                  offsetof(chr_node_ref, zone_len) == offsetof(Snapshot::RefFields, zone_len) &&
                  offsetof(chr_node_ref, reserved0) == offsetof(Snapshot::RefFields, reserved0) &&
                  offsetof(chr_node_ref, id) == offsetof(Snapshot::RefFields, short_id) &&
                  sizeof(Snapshot::RefFields) == 64,
              "RefFields mirrors the head of chr_node_ref");

// The rest of a chr_node_ref whose id is longer than the head holds, or
// that has a zone: off the hot path.
__attribute__((noinline)) void fill_ref_rest(const Snapshot &s, uint32_t index,
                                             chr_node_ref *out) noexcept {
    const chr_node_view &v = s.view(index);
    if (v.id_len > Snapshot::kShortId) std::memcpy(out->id, v.id, v.id_len);
    if (v.zone_len) std::memcpy(out->zone, v.zone, v.zone_len);
}

static_assert(offsetof(Snapshot::RefFields, zone_len) ==
                  offsetof(Snapshot::RefFields, id_len) + sizeof(uint32_t),
              "fill_ref reads id_len and zone_len as one 64-bit word");

void fill_ref(const Snapshot &s, uint32_t index, chr_node_ref *out) noexcept {
    const Snapshot::RefFields &r = s.ref_fields(index);
    std::memcpy(out, &r, sizeof r);  // one line, constant size: inlined
    // One test for both id_len <= kShortId and zone_len == 0 (on a big-endian
    // machine it always fails, and fill_ref_rest tests each: still right).
    uint64_t lengths;
    std::memcpy(&lengths, &r.id_len, sizeof lengths);
    if (__builtin_expect(lengths > Snapshot::kShortId, 0)) fill_ref_rest(s, index, out);
}

// Shared by the ring and snapshot versions of replicas; `emit(i, node_index)`
// writes one result.
template <class Emit>
chr_status replicas_on(const Snapshot &s, const char *who, uint64_t hash, size_t n, size_t *count,
                       Emit &&emit) {
    if (s.eligible_count() == 0) return empty_ring(who);
    *count = s.replicas_at_hash(hash, n, emit);
    return CHR_OK;
}

chr_status check_replica_args(const char *who, const void *key, size_t len, size_t n,
                              const void *out, const size_t *count) {
    if (!out) return null_arg(who, "out");
    if (!count) return null_arg(who, "count");
    if (n == 0) return fail(CHR_EINVAL, "%s: n is 0 (ask for at least 1 replica)", who);
    return check_key(who, key, len);
}

}  // namespace

extern "C" {

CHR_API uint32_t chr_version(void) { return CHR_VERSION_NUMBER; }

#define CHR_TEXT_OF_(x) #x
#define CHR_TEXT_OF(x) CHR_TEXT_OF_(x)
CHR_API const char *chr_version_string(void) {
    return CHR_TEXT_OF(CHR_VERSION_MAJOR) "." CHR_TEXT_OF(CHR_VERSION_MINOR) "." CHR_TEXT_OF(
        CHR_VERSION_PATCH);
}

CHR_API const char *chr_strerror(chr_status status) { return chring::status_text(status); }

CHR_API const char *chr_last_error(void) { return chring::last_error(); }

CHR_API chr_status chr_options_init(chr_options *opts, uint32_t version) {
    static const char *who = "chr_options_init";
    if (!opts) return null_arg(who, "opts");
    if (version < 1 || version > CHR_OPTIONS_VERSION)
        return fail(CHR_EVERSION, "%s: version %u is not supported (1..%d)", who, version,
                    CHR_OPTIONS_VERSION);
    chr_options defaults = CHR_OPTIONS_INIT;
    *opts = defaults;
    opts->version = version;
    return CHR_OK;
}

CHR_API chr_status chr_ring_new(const chr_options *opts, chr_ring **out) {
    static const char *who = "chr_ring_new";
    // Checked here: Ring::create only ever sees the local `r` below.
    if (!out) return null_arg(who, "out");
    *out = nullptr;  // also when create throws (CHR_ENOMEM)
    return guarded(who, [&] {
        Ring *r = nullptr;
        chr_status st = Ring::create(opts, &r);
        *out = reinterpret_cast<chr_ring *>(r);
        return st;
    });
}

CHR_API void chr_ring_free(chr_ring *ring) { delete impl(ring); }

CHR_API chr_status chr_ring_apply(chr_ring *ring, const chr_change *changes, size_t count,
                                  size_t *failed_index) {
    static const char *who = "chr_ring_apply";
    if (failed_index) *failed_index = count;
    if (!ring) return null_arg(who, "ring");
    if (!changes && count) return fail(CHR_EINVAL, "%s: changes is NULL with count %zu", who, count);
    return guarded(who, [&] { return impl(ring)->apply(changes, count, failed_index, who); });
}

CHR_API chr_status chr_ring_add(chr_ring *ring, const void *id, size_t id_len, uint32_t weight,
                                const void *zone, size_t zone_len, uint64_t tag) {
    static const char *who = "chr_ring_add";
    if (!ring) return null_arg(who, "ring");
    chr_change c = {CHR_OP_ADD, weight, id, id_len, zone, zone_len, tag};
    return guarded(who, [&] { return impl(ring)->apply(&c, 1, nullptr, who); });
}

CHR_API chr_status chr_ring_remove(chr_ring *ring, const void *id, size_t id_len) {
    static const char *who = "chr_ring_remove";
    if (!ring) return null_arg(who, "ring");
    chr_change c = {CHR_OP_REMOVE, 0, id, id_len, nullptr, 0, 0};
    return guarded(who, [&] { return impl(ring)->apply(&c, 1, nullptr, who); });
}

CHR_API chr_status chr_ring_set_weight(chr_ring *ring, const void *id, size_t id_len,
                                       uint32_t weight) {
    static const char *who = "chr_ring_set_weight";
    if (!ring) return null_arg(who, "ring");
    chr_change c = {CHR_OP_SET_WEIGHT, weight, id, id_len, nullptr, 0, 0};
    return guarded(who, [&] { return impl(ring)->apply(&c, 1, nullptr, who); });
}

CHR_API chr_status chr_ring_lookup(const chr_ring *ring, const void *key, size_t key_len,
                                   chr_node_ref *out) {
    static const char *who = "chr_ring_lookup";
    if (!ring) return null_arg(who, "ring");
    if (!out) return null_arg(who, "out");
    if (chr_status st = check_key(who, key, key_len)) return st;
    const Ring &r = *impl(ring);
    const uint64_t h = r.hash_key(key, key_len);
    return r.read(who, [&](const Snapshot &s) {
        if (s.token_count() == 0) return empty_ring(who);
        fill_ref(s, s.owner_at_hash(h), out);
        return CHR_OK;
    });
}

CHR_API chr_status chr_ring_replicas(const chr_ring *ring, const void *key, size_t key_len,
                                     size_t n, chr_node_ref *out, size_t *count) {
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

CHR_API chr_status chr_ring_node_count(const chr_ring *ring, size_t *count) {
    static const char *who = "chr_ring_node_count";
    if (!ring) return null_arg(who, "ring");
    if (!count) return null_arg(who, "count");
    return impl(ring)->read(who, [&](const Snapshot &s) {
        *count = s.node_count();
        return CHR_OK;
    });
}

CHR_API chr_status chr_ring_token_count(const chr_ring *ring, size_t *count) {
    static const char *who = "chr_ring_token_count";
    if (!ring) return null_arg(who, "ring");
    if (!count) return null_arg(who, "count");
    return impl(ring)->read(who, [&](const Snapshot &s) {
        *count = s.token_count();
        return CHR_OK;
    });
}

CHR_API chr_status chr_ring_nodes(const chr_ring *ring, chr_node_ref *out, size_t capacity,
                                  size_t *count) {
    static const char *who = "chr_ring_nodes";
    if (!ring) return null_arg(who, "ring");
    if (!count) return null_arg(who, "count");
    if (!out && capacity) return fail(CHR_EINVAL, "%s: out is NULL with capacity %zu", who, capacity);
    return impl(ring)->read(who, [&](const Snapshot &s) {
        *count = s.node_count();
        if (capacity < s.node_count())
            return fail(CHR_ERANGE, "%s: capacity %zu is less than the %zu members", who, capacity,
                        s.node_count());
        for (size_t i = 0; i < s.node_count(); ++i) fill_ref(s, uint32_t(i), &out[i]);
        return CHR_OK;
    });
}

CHR_API chr_status chr_ring_ownership(const chr_ring *ring, const void *id, size_t id_len,
                                      double *fraction) {
    static const char *who = "chr_ring_ownership";
    if (!ring) return null_arg(who, "ring");
    if (!fraction) return null_arg(who, "fraction");
    if (!id && id_len) return fail(CHR_EINVAL, "%s: id is NULL with length %zu", who, id_len);
    if (id_len == 0 || id_len > CHR_NODE_ID_MAX)
        return fail(id_len ? CHR_ERANGE : CHR_EINVAL, "%s: node id is %zu bytes (1..%d allowed)", who,
                    id_len, CHR_NODE_ID_MAX);
    return guarded(who, [&] {
        std::string key(static_cast<const char *>(id), id_len);
        return impl(ring)->read(who, [&](const Snapshot &s) {
            int64_t i = s.find(key);
            if (i < 0)
                return fail(CHR_ENOENT, "%s: no node '%.*s' in the ring", who,
                            int(std::min<size_t>(id_len, 64)), key.data());
            *fraction = s.node(size_t(i)).ownership;
            return CHR_OK;
        });
    });
}

CHR_API chr_status chr_ring_fingerprint(const chr_ring *ring, uint64_t *fingerprint) {
    static const char *who = "chr_ring_fingerprint";
    if (!ring) return null_arg(who, "ring");
    if (!fingerprint) return null_arg(who, "fingerprint");
    return impl(ring)->read(who, [&](const Snapshot &s) {
        *fingerprint = s.fingerprint();
        return CHR_OK;
    });
}

CHR_API chr_status chr_ring_snapshot(const chr_ring *ring, chr_snapshot **out) {
    static const char *who = "chr_ring_snapshot";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (!ring) return null_arg(who, "ring");
    const Snapshot *s = nullptr;
    chr_status st = impl(ring)->acquire(&s, who);
    if (st == CHR_OK) *out = reinterpret_cast<chr_snapshot *>(const_cast<Snapshot *>(s));
    return st;
}

CHR_API void chr_snapshot_release(chr_snapshot *snap) {
    if (snap) impl(snap)->release();
}

CHR_API chr_status chr_snapshot_lookup(const chr_snapshot *snap, const void *key, size_t key_len,
                                       chr_node_view *out) {
    static const char *who = "chr_snapshot_lookup";
    if (!snap) return null_arg(who, "snap");
    if (!out) return null_arg(who, "out");
    if (chr_status st = check_key(who, key, key_len)) return st;
    const Snapshot &s = *impl(snap);
    if (__builtin_expect(s.token_count() == 0, 0)) return empty_ring(who);
    uint32_t o = s.owner_of(key, key_len);
    *out = s.view(o);
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_lookup_batch(const chr_snapshot *snap, const void *const *keys,
                                             const size_t *key_lens, size_t n, uint32_t *indices) {
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
                                         size_t *count) {
    static const char *who = "chr_snapshot_replicas";
    if (!snap) return null_arg(who, "snap");
    if (chr_status st = check_replica_args(who, key, key_len, n, out, count)) return st;
    const Snapshot &s = *impl(snap);
    return guarded(who, [&] {
        return replicas_on(s, who, s.hash_key(key, key_len), n, count,
                           [&](size_t i, uint32_t o) { out[i] = s.view(o); });
    });
}

CHR_API chr_status chr_snapshot_node(const chr_snapshot *snap, size_t index, chr_node_view *out) {
    static const char *who = "chr_snapshot_node";
    if (!snap) return null_arg(who, "snap");
    if (!out) return null_arg(who, "out");
    const Snapshot &s = *impl(snap);
    if (index >= s.node_count())
        return fail(CHR_ERANGE, "%s: index %zu is past the %zu members", who, index, s.node_count());
    *out = s.view(index);
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_node_count(const chr_snapshot *snap, size_t *count) {
    if (!snap) return null_arg("chr_snapshot_node_count", "snap");
    if (!count) return null_arg("chr_snapshot_node_count", "count");
    *count = impl(snap)->node_count();
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_token_count(const chr_snapshot *snap, size_t *count) {
    if (!snap) return null_arg("chr_snapshot_token_count", "snap");
    if (!count) return null_arg("chr_snapshot_token_count", "count");
    *count = impl(snap)->token_count();
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_fingerprint(const chr_snapshot *snap, uint64_t *fingerprint) {
    if (!snap) return null_arg("chr_snapshot_fingerprint", "snap");
    if (!fingerprint) return null_arg("chr_snapshot_fingerprint", "fingerprint");
    *fingerprint = impl(snap)->fingerprint();
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_token(const chr_snapshot *snap, size_t index, uint64_t *value,
                                      uint32_t *node_index) {
    static const char *who = "chr_snapshot_token";
    if (!snap) return null_arg(who, "snap");
    if (!value) return null_arg(who, "value");
    if (!node_index) return null_arg(who, "node_index");
    const Snapshot &s = *impl(snap);
    if (index >= s.token_count())
        return fail(CHR_ERANGE, "%s: index %zu is past the %zu tokens", who, index, s.token_count());
    *value = s.token_value(index);
    *node_index = s.token_owner(index);
    return CHR_OK;
}

CHR_API chr_status chr_plugin_load(const char *path, size_t *loaded) {
    static const char *who = "chr_plugin_load";
    if (loaded) *loaded = 0;
    if (!path) return null_arg(who, "path");
    return guarded(who, [&] { return chring::load_plugin(path, loaded, who); });
}

CHR_API chr_status chr_hasher_list(const char *plugin_dir, chr_hasher_info *out, size_t capacity,
                                   size_t *count) {
    static const char *who = "chr_hasher_list";
    if (!count) return null_arg(who, "count");
    if (!out && capacity) return fail(CHR_EINVAL, "%s: out is NULL with capacity %zu", who, capacity);
    return guarded(who, [&] {
        chring::discover_plugins(plugin_dir);
        std::vector<chring::HasherPtr> all = chring::list_hashers();
        *count = all.size();
        if (capacity < all.size())
            return fail(CHR_ERANGE, "%s: capacity %zu is less than the %zu hashers", who, capacity,
                        all.size());
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

CHR_API chr_status chr_hasher_register(const chr_hasher *hasher) {
    static const char *who = "chr_hasher_register";
    if (!hasher) return null_arg(who, "hasher");
    return guarded(who, [&] { return chring::register_hashers({hasher}, "registered", nullptr, who); });
}

namespace {
chr_status no_hasher(const char *who, const char *name) {
    return fail(CHR_ENOHASHER, "%s: no hasher named '%.*s' is registered or found in a plugin", who,
                CHR_HASHER_NAME_MAX, name);
}
}  // namespace

CHR_API chr_status chr_hasher_hash(const char *name, const void *data, size_t len, uint64_t seed,
                                   uint64_t *out) {
    static const char *who = "chr_hasher_hash";
    if (!name) return null_arg(who, "name");
    if (!out) return null_arg(who, "out");
    if (!data && len) return fail(CHR_EINVAL, "%s: data is NULL with length %zu", who, len);
    return guarded(who, [&] {
        chring::HasherPtr h = chring::resolve_hasher(name, nullptr);
        if (!h) return no_hasher(who, name);
        *out = h->hash64(data, len, seed);
        return CHR_OK;
    });
}

CHR_API chr_status chr_hasher_digest(const char *name, const void *data, size_t len,
                                     unsigned char *out, size_t capacity, size_t *digest_size) {
    static const char *who = "chr_hasher_digest";
    if (!name) return null_arg(who, "name");
    if (!digest_size) return null_arg(who, "digest_size");
    if (!out && capacity) return fail(CHR_EINVAL, "%s: out is NULL with capacity %zu", who, capacity);
    if (!data && len) return fail(CHR_EINVAL, "%s: data is NULL with length %zu", who, len);
    return guarded(who, [&] {
        chring::HasherPtr h = chring::resolve_hasher(name, nullptr);
        if (!h) return no_hasher(who, name);
        *digest_size = h->digest_size;
        if (!h->digest)
            return fail(CHR_ENOTSUP, "%s: hasher '%s' has no full digest", who, h->name.c_str());
        if (capacity < h->digest_size)
            return fail(CHR_ERANGE, "%s: capacity %zu is less than the %u-byte digest of '%s'", who,
                        capacity, h->digest_size, h->name.c_str());
        h->digest(data, len, out);
        return CHR_OK;
    });
}

}  // extern "C"

// ---- ring files (src/ringfile, docs/ring-file.md) ------------------------

namespace {

chr_status check_info(const char *who, chr_ringfile_info *info) {
    if (info && (info->version < 1 || info->version > CHR_RINGFILE_INFO_VERSION))
        return fail(CHR_EVERSION, "%s: info version %u is not supported (1..%d)", who, info->version,
                    CHR_RINGFILE_INFO_VERSION);
    return CHR_OK;
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

chr_status export_snapshot(const char *who, const Snapshot &s, uint32_t flags, uint64_t revision,
                           char *buf, size_t capacity, size_t *len) {
    const std::string text = (flags & CHR_EXPORT_JSON)
                                 ? chring::ringfile::json_text(s, flags, revision)
                                 : chring::ringfile::canonical_text(s, flags, revision);
    *len = text.size();
    if (capacity < text.size())
        return fail(CHR_ERANGE, "%s: capacity %zu is less than the %zu bytes of the ring file", who,
                    capacity, text.size());
    std::memcpy(buf, text.data(), text.size());
    if (capacity > text.size()) buf[text.size()] = '\0';
    return CHR_OK;
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

}  // namespace

extern "C" {

CHR_API chr_status chr_ringfile_info_init(chr_ringfile_info *info, uint32_t version) {
    static const char *who = "chr_ringfile_info_init";
    if (!info) return null_arg(who, "info");
    if (version < 1 || version > CHR_RINGFILE_INFO_VERSION)
        return fail(CHR_EVERSION, "%s: version %u is not supported (1..%d)", who, version,
                    CHR_RINGFILE_INFO_VERSION);
    *info = chr_ringfile_info{};
    info->version = version;
    return CHR_OK;
}

CHR_API chr_status chr_ring_new_from_text(const char *text, size_t len, const char *name,
                                          const chr_options *base, chr_ring **out,
                                          chr_ringfile_info *info) {
    static const char *who = "chr_ring_new_from_text";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (chr_status st = check_text(who, text, len)) return st;
    if (chr_status st = check_info(who, info)) return st;
    return guarded(who, [&] {
        return load_text(std::string_view(text ? text : "", len), name ? name : "<text>", nullptr,
                         base, out, info);
    });
}

CHR_API chr_status chr_ring_new_from_file(const char *path, const chr_options *base,
                                          chr_ring **out, chr_ringfile_info *info) {
    static const char *who = "chr_ring_new_from_file";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (!path) return null_arg(who, "path");
    if (chr_status st = check_info(who, info)) return st;
    return guarded(who, [&] {
        std::string text;
        if (chr_status st = chring::ringfile::read_file(path, text)) {
            if (info) chr_ringfile_info_init(info, info->version);
            return st;
        }
        return load_text(text, path, nullptr, base, out, info);
    });
}

CHR_API chr_status chr_ring_apply_text(chr_ring *ring, const char *text, size_t len,
                                       const char *name, chr_ringfile_info *info) {
    static const char *who = "chr_ring_apply_text";
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = check_text(who, text, len)) return st;
    if (chr_status st = check_info(who, info)) return st;
    return guarded(who, [&] {
        return load_text(std::string_view(text ? text : "", len), name ? name : "<text>", ring,
                         nullptr, nullptr, info);
    });
}

CHR_API chr_status chr_ring_apply_file(chr_ring *ring, const char *path, chr_ringfile_info *info) {
    static const char *who = "chr_ring_apply_file";
    if (!ring) return null_arg(who, "ring");
    if (!path) return null_arg(who, "path");
    if (chr_status st = check_info(who, info)) return st;
    return guarded(who, [&] {
        std::string text;
        if (chr_status st = chring::ringfile::read_file(path, text)) {
            if (info) chr_ringfile_info_init(info, info->version);
            return st;
        }
        return load_text(text, path, ring, nullptr, nullptr, info);
    });
}

CHR_API chr_status chr_ring_export(const chr_ring *ring, uint32_t flags, uint64_t revision,
                                   char *buf, size_t capacity, size_t *len) {
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
                                       char *buf, size_t capacity, size_t *len) {
    static const char *who = "chr_snapshot_export";
    if (!snap) return null_arg(who, "snap");
    if (chr_status st = check_export(who, flags, buf, capacity, len)) return st;
    return guarded(who, [&] { return export_snapshot(who, *impl(snap), flags, revision, buf, capacity, len); });
}

}  // extern "C"
