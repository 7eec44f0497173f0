// The extern "C" entry points of availability (chring.h, "Availability"):
// marking members down and up, the panic threshold, the state a snapshot
// holds. Each noexcept, arguments checked with validate.hpp, whatever can
// throw run through guarded() (firewall.hpp).
#include <cstddef>
#include <string>
#include <vector>

#include "chring.h"
#include "base/errors.hpp"
#include "base/validate.hpp"
#include "capi_handles.hpp"
#include "firewall.hpp"
#include "ring.hpp"

namespace {

using chring::fail;
using chring::guarded;
using chring::impl;
using chring::Marks;
using chring::null_arg;
using chring::Snapshot;

chr_status no_member(const char *who, const void *id, size_t len) {
    const chr_status st = fail(CHR_ENOENT, "%s: no node '%s' in the ring", who,
                               chring::Quoted(id, len).c_str());
    chring::note_member(id, len);
    return st;
}

chr_status check_info(const char *who, const chr_availability_info *info) {
    if (!info) return null_arg(who, "info");
    return chring::check_version(who, "info", info->version, CHR_AVAILABILITY_INFO_VERSION);
}

void fill_info(const Snapshot &s, chr_availability_info *info) {
    // Version 1 is the whole struct today; later versions fill by version.
    *info = {info->version,
             s.panic() ? 1u : 0u,
             s.panic_threshold(),
             uint32_t(s.marked_count()),
             s.down_weight(),
             s.total_weight(),
             s.availability_digest()};
}

}  // namespace

extern "C" {

CHR_API chr_status chr_availability_info_init(chr_availability_info *info, uint32_t version) noexcept {
    return chring::init_versioned("chr_availability_info_init", "info", info, version,
                                   CHR_AVAILABILITY_INFO_VERSION,
                                   chr_availability_info CHR_AVAILABILITY_INFO_INIT);
}

CHR_API chr_status chr_ring_set_down(chr_ring *ring, const void *id, size_t id_len,
                                     uint32_t down) noexcept {
    static const char *who = "chr_ring_set_down";
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = chring::check_id(who, id, id_len)) return st;
    return guarded(who, [&] {
        const std::string key(static_cast<const char *>(id), id_len);
        return impl(ring)->set_marks([&](const Snapshot &base, Marks &marks) {
            const int64_t i = base.find(key);
            if (i < 0) return no_member(who, id, id_len);
            marks.down[size_t(i)] = down != 0;
            return CHR_OK;
        });
    });
}

CHR_API chr_status chr_ring_set_availability(chr_ring *ring, const void *const *ids,
                                             const size_t *id_lens, size_t count,
                                             uint32_t panic_threshold) noexcept {
    static const char *who = "chr_ring_set_availability";
    if (!ring) return null_arg(who, "ring");
    if (count && (!ids || !id_lens))
        return fail(CHR_EINVAL, "%s: ids and id_lens must not be NULL when count is %zu", who, count);
    if (panic_threshold > 100)
        return fail(CHR_ERANGE, "%s: panic_threshold %u is over 100 (a percentage)", who, panic_threshold);
    for (size_t i = 0; i < count; ++i)
        if (chr_status st = chring::check_id(who, ids[i], id_lens[i])) {
            chring::note_change(i);
            return st;
        }
    return guarded(who, [&] {
        std::vector<std::string> keys;
        keys.reserve(count);
        for (size_t i = 0; i < count; ++i) keys.emplace_back(static_cast<const char *>(ids[i]), id_lens[i]);
        return impl(ring)->set_marks([&](const Snapshot &base, Marks &marks) {
            marks.panic_threshold = panic_threshold;
            std::fill(marks.down.begin(), marks.down.end(), 0);
            for (size_t i = 0; i < count; ++i) {
                const int64_t k = base.find(keys[i]);
                if (k < 0) {
                    const chr_status st = no_member(who, ids[i], id_lens[i]);
                    chring::note_change(i);
                    return st;
                }
                marks.down[size_t(k)] = 1;
            }
            return CHR_OK;
        });
    });
}

CHR_API chr_status chr_ring_availability(const chr_ring *ring, chr_availability_info *info) noexcept {
    static const char *who = "chr_ring_availability";
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = check_info(who, info)) return st;
    return impl(ring)->read(who, [&](const Snapshot &s) {
        fill_info(s, info);
        return CHR_OK;
    });
}

CHR_API chr_status chr_snapshot_availability(const chr_snapshot *snap,
                                             chr_availability_info *info) noexcept {
    static const char *who = "chr_snapshot_availability";
    if (!snap) return null_arg(who, "snap");
    if (chr_status st = check_info(who, info)) return st;
    fill_info(*impl(snap), info);
    return CHR_OK;
}

CHR_API chr_status chr_snapshot_marked_down(const chr_snapshot *snap, size_t index,
                                            uint32_t *marked) noexcept {
    static const char *who = "chr_snapshot_marked_down";
    if (!snap) return null_arg(who, "snap");
    if (!marked) return null_arg(who, "marked");
    const Snapshot &s = *impl(snap);
    if (chr_status st = chring::check_index(who, index, s.node_count(), "members")) return st;
    *marked = s.marked(index) ? 1u : 0u;
    return CHR_OK;
}

}  // extern "C"
