#include "placement.hpp"

#include <cstring>

#include "base/errors.hpp"
#include "plugin/discovery.hpp"

namespace chring {
namespace {

// Every placement, by mode: the modes are 0..N-1 without gaps.
const PlacementOps *const kPlacements[] = {
    &native_placement,
    &ketama_placement,
    &ketama_unweighted_placement,
    &nginx_placement,
};
constexpr int32_t kPlacementCount = int32_t(sizeof kPlacements / sizeof kPlacements[0]);

}  // namespace

const PlacementOps *find_placement(int32_t mode) noexcept {
    if (mode < 0 || mode >= kPlacementCount) return nullptr;
    return kPlacements[mode];
}

const PlacementOps *find_placement(const char *name) noexcept {
    for (const PlacementOps *ops : kPlacements)
        if (std::strcmp(ops->name, name) == 0) return ops;
    return nullptr;
}

chr_status no_placement(const char *who, int32_t mode) {
    return fail(CHR_ENOTSUP, "%s: placement mode %d is not available in this build (0..%d)", who,
                mode, kPlacementCount - 1);
}

chr_status make_placement(const chr_options *opts, PlacementPtr *out, const char *who) {
    const chr_options &o = *opts;
    const PlacementOps *ops = find_placement(o.placement);
    if (!ops) return no_placement(who, o.placement);
    const char *name = o.hasher ? o.hasher : CHR_DEFAULT_HASHER;
    if (ops->hasher) {
        if (o.hasher && std::strcmp(o.hasher, ops->hasher) != 0)
            return fail(CHR_EINVAL,
                        "%s: placement '%s' (mode %d) is defined with hasher '%s', not '%s'", who,
                        ops->name, ops->mode, ops->hasher,
                        Quoted(o.hasher, strnlen(o.hasher, CHR_HASHER_NAME_MAX + 1)).c_str());
        name = ops->hasher;
    }
    auto placement = std::make_shared<Placement>();
    placement->hasher = resolve_hasher(name, o.plugin_dir);
    if (!placement->hasher) {
        std::string skipped = skipped_plugins();
        return fail(CHR_ENOHASHER,
                    "%s: no hasher named '%s' is registered or found in a plugin (searched next "
                    "to libchring, CHRING_PLUGIN_PATH and plugin_dir)%s%s",
                    who, Quoted(name, strnlen(name, CHR_HASHER_NAME_MAX + 1)).c_str(),
                    skipped.empty() ? "" : "; skipped: ", skipped.c_str());
    }
    // Exactly the original's digest size: the points read that many bytes.
    if (ops->digest_size && placement->hasher->digest_size != ops->digest_size)
        return fail(CHR_ENOHASHER,
                    "%s: hasher '%s' has a %u-byte digest; placement '%s' needs exactly %u bytes "
                    "(the %s digest)",
                    who, name, placement->hasher->digest_size, ops->name, ops->digest_size,
                    ops->hasher);
    placement->ops = ops;
    if (ops->seeded) {
        placement->seed = o.seed;
        placement->tokens_per_weight = o.tokens_per_weight;
    }
    *out = std::move(placement);
    return CHR_OK;
}

KeyHasher::KeyHasher(const Placement &p) noexcept
    : hash64_(p.hasher->hash64), seed_(p.seed), native_(p.ops == &native_placement),
      inline_xxh3_(native_ && is_builtin_xxh3(hash64_)), placement_(&p) {}

uint64_t KeyHasher::compat_position(const void *key, size_t len) const noexcept {
    return placement_->ops->key_position(*placement_, key, len);
}

}  // namespace chring
