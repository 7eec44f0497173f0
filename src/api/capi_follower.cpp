// The extern "C" entry points of followers (chring.h, "Following a ring
// file"): a ring kept equal to a ring file, src/ringfile/follower.*. Same
// rules as capi_ring.cpp: each is noexcept, checks its arguments with
// validate.hpp and runs what can throw through guarded().
#include <cstring>
#include <new>
#include <string>

#include "chring.h"
#include "base/errors.hpp"
#include "base/validate.hpp"
#include "capi_handles.hpp"
#include "firewall.hpp"
#include "ringfile/follower.hpp"

namespace {

using chring::fail;
using chring::guarded;
using chring::null_arg;
using chring::ringfile::Follower;

Follower *impl(chr_follower *f) { return reinterpret_cast<Follower *>(f); }
const Follower *impl(const chr_follower *f) { return reinterpret_cast<const Follower *>(f); }

}  // namespace

extern "C" {

CHR_API chr_status chr_follow_state_init(chr_follow_state *state, uint32_t version) noexcept {
    return chring::init_versioned("chr_follow_state_init", "state", state, version,
                                   CHR_FOLLOW_STATE_VERSION);
}

CHR_API chr_status chr_follower_new(chr_ring *ring, const char *path, uint32_t flags,
                                    chr_follower **out) noexcept {
    static const char *who = "chr_follower_new";
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (!ring) return null_arg(who, "ring");
    if (!path) return null_arg(who, "path");
    if (!*path) return fail(CHR_EINVAL, "%s: path is empty", who);
    if (flags) return fail(CHR_EINVAL, "%s: flags 0x%x: no flag is defined (pass 0)", who, unsigned(flags));
    return guarded(who, [&] {
        *out = reinterpret_cast<chr_follower *>(new Follower(*chring::impl(ring), path));
        return CHR_OK;
    });
}

CHR_API void chr_follower_free(chr_follower *follower) noexcept { delete impl(follower); }

CHR_API chr_status chr_follower_check(chr_follower *follower, int32_t *outcome,
                                      chr_ringfile_info *info) noexcept {
    static const char *who = "chr_follower_check";
    if (outcome) *outcome = CHR_FOLLOW_UNCHANGED;
    if (!follower) return null_arg(who, "follower");
    if (info)
        if (chr_status st = chring::check_version(who, "info", info->version, CHR_RINGFILE_INFO_VERSION))
            return st;
    return guarded(who, [&] { return impl(follower)->check(outcome, info); });
}

CHR_API chr_status chr_follower_state(const chr_follower *follower, chr_follow_state *state) noexcept {
    static const char *who = "chr_follower_state";
    if (!follower) return null_arg(who, "follower");
    if (!state) return null_arg(who, "state");
    if (chr_status st = chring::check_version(who, "state", state->version, CHR_FOLLOW_STATE_VERSION))
        return st;
    return guarded(who, [&] {
        impl(follower)->state(state);
        return CHR_OK;
    });
}

}  // extern "C"
