// The extern "C" entry points of hashers and plugins (chring.h): loading a
// plugin, listing, registering and running hashers. Same rules as
// capi_ring.cpp: each is noexcept, checks its arguments with validate.hpp
// and runs what can throw through guarded().
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "chring.h"
#include "base/errors.hpp"
#include "firewall.hpp"
#include "plugin/registry.hpp"
#include "plugin/discovery.hpp"
#include "plugin/loader.hpp"
#include "base/validate.hpp"

namespace {

using chring::check_buffer;
using chring::check_bytes;
using chring::fail;
using chring::guarded;
using chring::null_arg;
using chring::too_small;

chr_status no_hasher(const char *who, const char *name) {
    std::string skipped = chring::skipped_plugins();
    return fail(CHR_ENOHASHER, "%s: no hasher named '%s' is registered or found in a plugin%s%s",
                who, chring::Quoted(name, strnlen(name, CHR_HASHER_NAME_MAX + 1)).c_str(),
                skipped.empty() ? "" : "; skipped: ", skipped.c_str());
}

}  // namespace

extern "C" {

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
