#include "hashers.hpp"

#include <cstring>
#include <mutex>

#include "errors.hpp"

namespace chring {
namespace {

struct Registry {
    std::mutex mu;
    std::vector<HasherPtr> hashers;
};

HasherPtr make_hasher(const chr_hasher *desc, const std::string &origin,
                      std::shared_ptr<const void> module) {
    auto h = std::make_shared<Hasher>();
    h->name = desc->name;
    h->description = desc->description ? desc->description : "";
    h->origin = origin;
    h->hash64 = desc->hash64;
    h->digest_size = desc->digest_size;
    h->digest = desc->digest;
    h->module = std::move(module);
    return h;
}

Registry &registry() {
    static Registry *r = new Registry;  // never destroyed: rings may outlive static destructors
    return *r;
}

bool valid_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

}  // namespace

chr_status validate_descriptor(const chr_hasher *d, const char *who) {
    if (!d) return fail(CHR_EPLUGIN_DESC, "%s: hasher descriptor is NULL", who);
    if (d->abi_version < 1 || d->abi_version > CHR_PLUGIN_ABI_VERSION)
        return fail(CHR_EPLUGIN_ABI, "%s: descriptor ABI version %u is not supported (1..%u)", who,
                    d->abi_version, CHR_PLUGIN_ABI_VERSION);
    if (d->struct_size < sizeof(chr_hasher))
        return fail(CHR_EPLUGIN_DESC, "%s: descriptor size %u is smaller than the %zu bytes of ABI %u",
                    who, d->struct_size, sizeof(chr_hasher), d->abi_version);
    if (!d->name) return fail(CHR_EPLUGIN_DESC, "%s: descriptor has a NULL name", who);
    size_t len = strnlen(d->name, CHR_HASHER_NAME_MAX + 1);
    if (len == 0 || len > CHR_HASHER_NAME_MAX)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher name length must be 1..%d bytes", who,
                    CHR_HASHER_NAME_MAX);
    for (size_t i = 0; i < len; ++i)
        if (!valid_name_char(d->name[i]))
            return fail(CHR_EPLUGIN_DESC, "%s: hasher name '%s' has a character outside [a-z0-9_.-]",
                        who, d->name);
    if (!d->hash64)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher '%s' has a NULL hash64 function", who, d->name);
    if (d->digest_size > CHR_DIGEST_MAX)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher '%s' digest_size %u is over %d", who, d->name,
                    d->digest_size, CHR_DIGEST_MAX);
    if ((d->digest_size == 0) != (d->digest == nullptr))
        return fail(CHR_EPLUGIN_DESC,
                    "%s: hasher '%s' must give both digest_size and digest, or neither", who,
                    d->name);
    if (d->flags != 0)
        return fail(CHR_EPLUGIN_DESC, "%s: hasher '%s' sets reserved flags 0x%x", who, d->name,
                    d->flags);
    return CHR_OK;
}

chr_status register_hashers(const std::vector<const chr_hasher *> &descs, const std::string &origin,
                            std::shared_ptr<const void> module, const char *who) {
    for (const chr_hasher *d : descs)
        if (chr_status st = validate_descriptor(d, who)) return st;
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
