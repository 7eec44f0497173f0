// The extern "C" entry points of ring files (chring.h, "Ring files";
// src/ringfile, docs/ring-file.md) and their glue: rings made from or
// changed by a ring file's text or path, rings and snapshots exported as
// one, the field spelling, and one member line read alone. Same rules as
// capi_ring.cpp: each is noexcept, checks its arguments with validate.hpp
// and runs what can throw through guarded().
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "chring.h"
#include "base/errors.hpp"
#include "capi_handles.hpp"
#include "firewall.hpp"
#include "ring.hpp"
#include "ringfile/ringfile.hpp"
#include "base/validate.hpp"

namespace {

using chring::check_buffer;
using chring::check_bytes;
using chring::fail;
using chring::guarded;
using chring::impl;
using chring::null_arg;
using chring::Ring;
using chring::Snapshot;
using chring::too_small;

chr_status check_info(const char *who, chr_ringfile_info *info) {
    return info ? chring::check_version(who, "info", info->version, CHR_RINGFILE_INFO_VERSION)
                : CHR_OK;
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
chr_status load_text(const char *who, std::string_view text, const std::string &name, chr_ring *ring,
                     const chr_options *base, chr_ring **out, chr_ringfile_info *info) {
    chring::ringfile::File f;
    chring::ringfile::Outcome o;
    size_t line = 0;
    chr_status st = chring::ringfile::parse(text, name, who, f, &line);
    if (st != CHR_OK) {
        o.error_line = line;
    } else if (ring) {
        st = chring::ringfile::apply(*impl(ring), f, who, o);
    } else {
        Ring *r = nullptr;
        st = chring::ringfile::create(f, base, who, &r, o);
        *out = reinterpret_cast<chr_ring *>(r);
    }
    chring::ringfile::describe(f, o, st, info);
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
chr_status load_source(const char *who, const Source &src, chr_ring *ring, const chr_options *base,
                       chr_ring **out, chr_ringfile_info *info) {
    if (!src.is_file)
        return load_text(who, std::string_view(src.text ? src.text : "", src.len),
                         src.name ? src.name : "<text>", ring, base, out, info);
    std::string text;
    if (chr_status st = chring::ringfile::read_file(src.path, who, text)) {
        if (info) chr_ringfile_info_init(info, info->version);
        return st;
    }
    return load_text(who, text, src.path, ring, base, out, info);
}

// chr_ring_new_from_text and chr_ring_new_from_file.
chr_status create_from(const char *who, const Source &src, const chr_options *base,
                       chr_ring **out, chr_ringfile_info *info) {
    if (!out) return null_arg(who, "out");
    *out = nullptr;
    if (chr_status st = check_source(who, src)) return st;
    if (chr_status st = check_info(who, info)) return st;
    if (chr_status st = check_base(who, base)) return st;
    return guarded(who, [&] { return load_source(who, src, nullptr, base, out, info); });
}

// chr_ring_apply_text and chr_ring_apply_file.
chr_status apply_from(const char *who, chr_ring *ring, const Source &src, chr_ringfile_info *info) {
    if (!ring) return null_arg(who, "ring");
    if (chr_status st = check_source(who, src)) return st;
    if (chr_status st = check_info(who, info)) return st;
    return guarded(who, [&] { return load_source(who, src, ring, nullptr, nullptr, info); });
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
    return chring::init_versioned("chr_ringfile_info_init", "info", info, version,
                                   CHR_RINGFILE_INFO_VERSION);
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
                                              what ? what : "field", out, why)) {
            chring::ErrorWhere where;  // the message names the field, not the function
            where.function = who;
            return chring::fail_at(where, CHR_EFORMAT, "%s", why.c_str());
        }
        return copy_out(who, out, buf, capacity, out_len, "decoded bytes");
    });
}

CHR_API chr_status chr_ringfile_member_init(chr_ringfile_member *member, uint32_t version) noexcept {
    return chring::init_versioned("chr_ringfile_member_init", "member", member, version,
                                   CHR_RINGFILE_MEMBER_VERSION);
}

CHR_API chr_status chr_ringfile_parse_member(const char *line, size_t len, const char *name,
                                             chr_ringfile_member *out) noexcept {
    static const char *who = "chr_ringfile_parse_member";
    if (!out) return null_arg(who, "out");
    if (chr_status st = chring::check_version(who, "out", out->version, CHR_RINGFILE_MEMBER_VERSION))
        return st;
    chr_ringfile_member_init(out, out->version);  // version 1 is the whole struct
    if (chr_status st = check_bytes(who, "line", line, len)) return st;
    return guarded(who, [&] {
        chring::ringfile::Member m;
        chr_status st = chring::ringfile::parse_member_line(std::string_view(line ? line : "", len),
                                                            name ? name : "<text>", who, m);
        if (st != CHR_OK) return st;
        out->weight = m.weight;
        out->id_len = uint32_t(m.id.size());
        std::memcpy(out->id, m.id.data(), m.id.size());
        out->zone_len = uint32_t(m.zone.size());
        if (!m.zone.empty()) std::memcpy(out->zone, m.zone.data(), m.zone.size());
        return CHR_OK;
    });
}

}  // extern "C"
