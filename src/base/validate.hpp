// Argument checks of the C API, in one place: each returns CHR_OK or
// records the message and returns the status (see errors.hpp). The entry
// points (api/capi_*.cpp) and the batch (Ring::apply, which checks each change
// as it reaches it) both use these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "chring.h"
#include "base/errors.hpp"

namespace chring {

chr_status null_arg(const char *who, const char *what);

// A NULL pointer with a nonzero length; `what` names the argument.
chr_status null_bytes(const char *who, const char *what, size_t len);

// A NULL key: CHR_OK when `len` is 0 (the empty key), else the error.
__attribute__((noinline, cold)) chr_status null_key(const char *who, size_t len);

// Inline: on every lookup. Only the pointer is tested here; the length test
// lives in the out-of-line null_key(), so the common path is one test and
// one not-taken branch (with `!key && len` inline, GCC tested the length
// first and jumped out of line for every real key: 2-3 instructions more
// per lookup, tests/bench/ab_instructions.sh).
inline chr_status check_key(const char *who, const void *key, size_t len) {
    if (__builtin_expect(key == nullptr, 0)) return null_key(who, len);
    return CHR_OK;
}

inline chr_status check_bytes(const char *who, const char *what, const void *p, size_t len) {
    if (!p && len) return null_bytes(who, what, len);
    return CHR_OK;
}

// A node id: not NULL with a length, 1..CHR_NODE_ID_MAX bytes.
chr_status check_id(const char *who, const void *id, size_t len);

// A caller buffer of `capacity` entries: NULL only with capacity 0.
chr_status check_buffer(const char *who, const void *out, size_t capacity);

// CHR_ERANGE: `needed` entries do not fit in `capacity` (what: "members").
// A size query (out NULL, capacity 0) is not a failure: no message then.
chr_status too_small(const char *who, const void *out, size_t capacity, size_t needed,
                     const char *what);

chr_status empty_ring(const char *who);

// CHR_EVERSION unless 1 <= version <= current: the `version` field of a
// versioned struct; `what` names the struct in the message ("options",
// "info"), or is "" when the call has only that struct.
chr_status check_version(const char *who, const char *what, uint32_t version, uint32_t current);

// Bytes of version `version` of a versioned struct (docs/compatibility.md,
// "How structs grow"): the whole struct, but for those that grew, whose
// older versions end where the fields a version added start.
template <class T>
inline size_t versioned_size(uint32_t) noexcept { return sizeof(T); }
template <>
inline size_t versioned_size<chr_ringfile_info>(uint32_t version) noexcept {
    return version >= 2 ? sizeof(chr_ringfile_info) : offsetof(chr_ringfile_info, availability);
}
template <>
inline size_t versioned_size<chr_follow_state>(uint32_t version) noexcept {
    return version >= 2 ? sizeof(chr_follow_state) : offsetof(chr_follow_state, applied_availability);
}

// *out = value, but only the fields of out->version (already checked),
// which it keeps: a caller of an older version has a shorter struct.
template <class T>
void write_versioned(T *out, const T &value) noexcept {
    const uint32_t version = out->version;
    std::memcpy(static_cast<void *>(out), &value, versioned_size<T>(version));
    out->version = version;
}

// The body of every chr_x_init(): *out = `defaults` (the X_INIT value)
// with the caller's `version`, after the NULL and version checks. `what`
// names the argument in the NULL message ("opts", "info").
template <class T>
chr_status init_versioned(const char *who, const char *what, T *out, uint32_t version, uint32_t current,
                          const T &defaults = T{}) {
    if (!out) return null_arg(who, what);
    if (chr_status st = check_version(who, "", version, current)) return st;
    out->version = version;
    write_versioned(out, defaults);
    return CHR_OK;
}

// CHR_ERANGE unless index < count (what: "members", "tokens").
chr_status check_index(const char *who, size_t index, size_t count, const char *what);

// A batch change's own fields (op, id, weight, zone), before the ring
// checks it against the membership; `index` names it in messages.
chr_status check_change(const char *who, const chr_change &c, size_t index);

// `opts` (NULL: the defaults) as a current chr_options: version, ranges and
// reserved fields checked. The placement is checked by make_placement().
chr_status read_options(const char *who, const chr_options *opts, chr_options *out);

}  // namespace chring
