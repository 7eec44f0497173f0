#include "base/validate.hpp"

namespace chring {

chr_status null_arg(const char *who, const char *what) {
    return fail(CHR_EINVAL, "%s: %s is NULL", who, what);
}

chr_status null_bytes(const char *who, const char *what, size_t len) {
    return fail(CHR_EINVAL, "%s: %s is NULL with length %zu", who, what, len);
}

chr_status null_key(const char *who, size_t len) { return len ? null_bytes(who, "key", len) : CHR_OK; }

chr_status check_id(const char *who, const void *id, size_t len) {
    if (chr_status st = check_bytes(who, "id", id, len)) return st;
    if (len == 0) return fail(CHR_EINVAL, "%s: node id is empty (1..%d bytes)", who, CHR_NODE_ID_MAX);
    if (len > CHR_NODE_ID_MAX)
        return fail(CHR_ERANGE, "%s: node id is %zu bytes (1..%d allowed)", who, len, CHR_NODE_ID_MAX);
    return CHR_OK;
}

chr_status check_buffer(const char *who, const void *out, size_t capacity) {
    if (!out && capacity) return fail(CHR_EINVAL, "%s: out is NULL with capacity %zu", who, capacity);
    return CHR_OK;
}

chr_status too_small(const char *who, const void *out, size_t capacity, size_t needed,
                     const char *what) {
    if (!out && capacity == 0) return CHR_ERANGE;  // a size query: chr_last_error() untouched
    return fail(CHR_ERANGE, "%s: capacity %zu is less than the %zu %s", who, capacity, needed, what);
}

chr_status empty_ring(const char *who) {
    return fail(CHR_EEMPTY, "%s: the ring has no node with tokens", who);
}

chr_status check_version(const char *who, const char *what, uint32_t version, uint32_t current) {
    if (version >= 1 && version <= current) return CHR_OK;
    return fail(CHR_EVERSION, "%s: %s%sversion %u is not supported (1..%u)", who, what,
                *what ? " " : "", version, current);
}

chr_status check_index(const char *who, size_t index, size_t count, const char *what) {
    if (index >= count)
        return fail(CHR_ERANGE, "%s: index %zu is past the %zu %s", who, index, count, what);
    return CHR_OK;
}

chr_status check_change(const char *who, const chr_change &c, size_t index) {
    if (c.op != CHR_OP_ADD && c.op != CHR_OP_REMOVE && c.op != CHR_OP_SET_WEIGHT)
        return fail(CHR_EINVAL, "%s: change %zu has unknown op %u (1..3)", who, index, c.op);
    if (chr_status st = check_id(who, c.id, c.id_len)) return st;
    if (c.op != CHR_OP_REMOVE && c.weight > CHR_WEIGHT_MAX)
        return fail(CHR_ERANGE, "%s: weight %u is out of range (0..%u)", who, c.weight, CHR_WEIGHT_MAX);
    if (c.op == CHR_OP_ADD) {
        if (chr_status st = check_bytes(who, "zone", c.zone, c.zone_len)) return st;
        if (c.zone_len > CHR_ZONE_MAX)
            return fail(CHR_ERANGE, "%s: zone is %zu bytes (0..%d allowed)", who, c.zone_len,
                        CHR_ZONE_MAX);
    }
    return CHR_OK;
}

chr_status read_options(const char *who, const chr_options *opts, chr_options *out) {
    chr_options o = CHR_OPTIONS_INIT;
    if (opts) {
        if (chr_status st = check_version(who, "options", opts->version, CHR_OPTIONS_VERSION))
            return st;
        o = *opts;  // version 1 is the whole struct today; later versions copy by version
    }
    if (o.tokens_per_weight < 1 || o.tokens_per_weight > CHR_TOKENS_PER_WEIGHT_MAX)
        return fail(CHR_ERANGE, "%s: tokens_per_weight %u is out of range (1..%u)", who,
                    o.tokens_per_weight, CHR_TOKENS_PER_WEIGHT_MAX);
    if (o.reserved0 != 0) return fail(CHR_EINVAL, "%s: options.reserved0 must be 0", who);
    *out = o;
    return CHR_OK;
}

}  // namespace chring
