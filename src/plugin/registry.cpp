#include "plugin/registry.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>

#include "base/errors.hpp"

namespace chring {
namespace {

struct Registry {
    std::mutex mu;
    std::vector<HasherPtr> hashers;
};

// A plugin's strings are read as bytes of its mapped segment (room_at()
// proved them readable), not as C objects: in a corrupted plugin built with
// AddressSanitizer, a string whose terminator was overwritten runs into the
// redzone the plugin's runtime poisons after it. So these reads are not
// instrumented (nor done with strnlen or memcpy, which ASan intercepts).
#if defined(__clang__) || defined(__GNUC__)
#define CHR_SEGMENT_READ __attribute__((no_sanitize_address))
#else
#define CHR_SEGMENT_READ
#endif

// Length of the string at s, reading at most `limit` bytes.
CHR_SEGMENT_READ size_t segment_strnlen(const char *s, size_t limit) noexcept {
    size_t n = 0;
    while (n < limit && s[n] != '\0') ++n;
    return n;
}

// The string at s, at most `limit` bytes of it (throws bad_alloc).
CHR_SEGMENT_READ std::string segment_string(const char *s, size_t limit) {
    std::string out(segment_strnlen(s, limit), '\0');
    for (size_t i = 0; i < out.size(); ++i) out[i] = s[i];
    return out;
}

// Only called on validated descriptors, whose strings are terminated
// within the bounds validate_descriptor() checked.
HasherPtr make_hasher(const chr_hasher *desc, const std::string &origin,
                      std::shared_ptr<const void> module) {
    auto h = std::make_shared<Hasher>();
    h->name = segment_string(desc->name, CHR_HASHER_NAME_MAX);
    if (desc->description) h->description = segment_string(desc->description, kDescriptionMax);
    h->origin = origin;
    h->hash64 = desc->hash64;
    h->digest_size = desc->digest_size;
    h->digest = desc->digest;
    h->module = std::move(module);
    return h;
}

Registry &registry() {
    // Never destroyed: rings may outlive static destructors. The built-in
    // hashers are in it before anyone can look one up; if building it
    // throws (out of memory), the next call tries again.
    static Registry *r = [] {
        auto fresh = std::make_unique<Registry>();
        fresh->hashers.push_back(make_hasher(&chr_builtin_xxh3, "builtin", nullptr));
        return fresh.release();
    }();
    return *r;
}

bool valid_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// Bytes readable from `p`: unbounded for the process's own descriptors.
size_t room_at(const AddressBounds *bounds, const void *p) {
    return bounds ? bounds->readable_from(p) : SIZE_MAX;
}


}  // namespace

chr_status validate_descriptor(const chr_hasher *d, const char *who, const AddressBounds *bounds) {
    if (!d) return fail(CHR_EPLUGIN_DESC, "%s: hasher descriptor is NULL", who);
    if (bounds) {
        if (reinterpret_cast<uintptr_t>(d) % alignof(chr_hasher) != 0)
            return fail(CHR_EPLUGIN_DESC, "%s: descriptor pointer 0x%llx is misaligned", who,
                        address_of(d));
        if (bounds->readable_from(d) < offsetof(chr_hasher, name))
            return fail(CHR_EPLUGIN_DESC,
                        "%s: descriptor pointer 0x%llx is outside the plugin's readable segments", who,
                        address_of(d));
    }
    if (d->abi_version < 1 || d->abi_version > CHR_PLUGIN_ABI_VERSION)
        return fail(CHR_EPLUGIN_ABI, "%s: descriptor ABI version %u is not supported (1..%u)", who,
                    d->abi_version, CHR_PLUGIN_ABI_VERSION);
    if (d->struct_size < sizeof(chr_hasher))
        return fail(CHR_EPLUGIN_DESC, "%s: descriptor size %u is smaller than the %zu bytes of ABI %u",
                    who, d->struct_size, sizeof(chr_hasher), d->abi_version);
    if (room_at(bounds, d) < sizeof(chr_hasher))
        return fail(CHR_EPLUGIN_DESC, "%s: descriptor at 0x%llx runs off the plugin's readable segment",
                    who, address_of(d));

    if (!d->name) return fail(CHR_EPLUGIN_DESC, "%s: descriptor has a NULL name", who);
    size_t room = room_at(bounds, d->name);
    if (room == 0)
        return fail(CHR_EPLUGIN_DESC, "%s: name pointer 0x%llx is outside the plugin's readable segments",
                    who, address_of(d->name));
    size_t limit = room < CHR_HASHER_NAME_MAX + 1 ? room : CHR_HASHER_NAME_MAX + 1;
    size_t len = segment_strnlen(d->name, limit);
    if (len == room)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher name at 0x%llx runs off the end of its segment", who,
                    address_of(d->name));
    if (len == 0 || len > CHR_HASHER_NAME_MAX)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher name length must be 1..%d bytes", who,
                    CHR_HASHER_NAME_MAX);
    for (size_t i = 0; i < len; ++i)
        if (!valid_name_char(d->name[i]))
            return fail(CHR_EPLUGIN_DESC, "%s: a hasher name has a character outside [a-z0-9_.-]", who);
    const int n = static_cast<int>(len);  // the name is printable from here on

    if (d->description) {
        size_t droom = room_at(bounds, d->description);
        if (droom == 0)
            return fail(CHR_EPLUGIN_DESC,
                        "%s: hasher '%.*s' description pointer 0x%llx is outside the plugin's readable "
                        "segments", who, n, d->name, address_of(d->description));
        size_t dlimit = droom < kDescriptionMax + 1 ? droom : kDescriptionMax + 1;
        size_t dlen = segment_strnlen(d->description, dlimit);
        if (dlen == droom)
            return fail(CHR_EPLUGIN_DESC, "%s: hasher '%.*s' description runs off the end of its segment",
                        who, n, d->name);
        if (dlen > kDescriptionMax)
            return fail(CHR_EPLUGIN_DESC, "%s: hasher '%.*s' description is longer than %zu bytes", who,
                        n, d->name, kDescriptionMax);
    }
    if (!d->hash64)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher '%.*s' has a NULL hash64 function", who, n, d->name);
    if (bounds && !bounds->executable(reinterpret_cast<const void *>(d->hash64)))
        return fail(CHR_EPLUGIN_DESC,
                    "%s: hasher '%.*s' hash64 function 0x%llx is outside the plugin's executable segments",
                    who, n, d->name, address_of(reinterpret_cast<const void *>(d->hash64)));
    if (d->digest_size > CHR_DIGEST_MAX)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher '%.*s' digest_size %u is over %d", who, n, d->name,
                    d->digest_size, CHR_DIGEST_MAX);
    if ((d->digest_size == 0) != (d->digest == nullptr))
        return fail(CHR_EPLUGIN_DESC,
                    "%s: hasher '%.*s' must give both digest_size and digest, or neither", who, n,
                    d->name);
    if (d->digest && bounds && !bounds->executable(reinterpret_cast<const void *>(d->digest)))
        return fail(CHR_EPLUGIN_DESC,
                    "%s: hasher '%.*s' digest function 0x%llx is outside the plugin's executable segments",
                    who, n, d->name, address_of(reinterpret_cast<const void *>(d->digest)));
    if (d->flags != 0)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher '%.*s' sets reserved flags 0x%x", who, n, d->name,
                    d->flags);
    return CHR_OK;
}

chr_status register_hashers(const std::vector<const chr_hasher *> &descs, const std::string &origin,
                            std::shared_ptr<const void> module, const char *who,
                            const AddressBounds *bounds) {
    for (const chr_hasher *d : descs)
        if (chr_status st = validate_descriptor(d, who, bounds)) return st;
    std::vector<HasherPtr> fresh;
    for (const chr_hasher *d : descs) fresh.push_back(make_hasher(d, origin, module));

    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (size_t i = 0; i < fresh.size(); ++i) {
        for (const HasherPtr &existing : r.hashers)
            if (existing->name == fresh[i]->name)
                return fail(CHR_EEXIST, "%s: a hasher named '%s' is already registered (from %s)",
                            who, fresh[i]->name.c_str(), existing->origin.c_str());
        for (size_t j = 0; j < i; ++j)
            if (fresh[j]->name == fresh[i]->name)
                return fail(CHR_EEXIST, "%s: two hashers named '%s' in %s", who,
                            fresh[i]->name.c_str(), origin.c_str());
    }
    r.hashers.reserve(r.hashers.size() + fresh.size());  // so the appends below cannot fail
    for (HasherPtr &h : fresh) r.hashers.push_back(std::move(h));
    return CHR_OK;
}

HasherPtr find_hasher(const std::string &name) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const HasherPtr &h : r.hashers)
        if (h->name == name) return h;
    return nullptr;
}

std::vector<HasherPtr> list_hashers() {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    return r.hashers;
}

}  // namespace chring
