#include "base/errors.hpp"

#include "base/spelling.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <cstring>

namespace chring {
namespace {

// This thread's last failure. Plain zero-initialized thread-local storage:
// no constructor, no destructor, a fresh thread reads status CHR_OK and
// empty strings; fixed sizes, so that recording (CHR_ENOMEM too) never
// needs memory.
//
// Small on purpose: libchring's thread-locals are static TLS (reclaim.hpp's
// initial-exec slot pointer marks the library so), and a library loaded by
// dlopen (LuaJIT's ffi.load, Python's ctypes, an nginx module's dependency)
// gets its static TLS from glibc's small reserve, about 1.6 KB here. The
// record (about 1 KB) and discovery.cpp's skip list (512 bytes) take what the
// 512-byte message and a 1 KB skip list took before; keep the total there.
constexpr size_t kMessageMax = 512;  // the message with its NUL, as chr_last_error() always had
constexpr size_t kTextSize = 688;    // the message, then the source's copy
struct Record {
    chr_status status;
    uint32_t flags;  // CHR_ERROR_HAS_*
    uint32_t line, other_line;
    uint64_t change_index;
    uint16_t reason_at;   // the reason is text + reason_at
    uint16_t source_at;   // with CHR_ERROR_HAS_SOURCE: the source is text + source_at
    uint16_t member_len;  // with CHR_ERROR_HAS_MEMBER
    char function[32];    // "" when unknown; the longest entry point has 28 characters
    char text[kTextSize]; // the message (NUL-terminated, at most kMessageMax with it), then the source
    unsigned char member[CHR_NODE_ID_MAX];
};
thread_local Record tls_record;

static_assert(sizeof(Record) <= 1008, "the record's share of the library's static TLS (see above)");
static_assert(sizeof(Record) <= PreserveLastError::kRecordSize && alignof(Record) <= 8,
              "PreserveLastError must hold the record");

// `text` (n bytes) into `out` of `size` bytes, cut to fit, NUL-terminated;
// the bytes written without the NUL.
size_t copy_cut(char *out, size_t size, const char *text, size_t n) noexcept {
    n = std::min(n, size - 1);
    std::memcpy(out, text, n);
    out[n] = '\0';
    return n;
}

uint32_t line_number(size_t line) noexcept { return uint32_t(std::min<size_t>(line, UINT32_MAX)); }

// The length of the entry point's name `who` starts with ("chr_ring_add",
// also in "chr_plugin_load: /path"); 0 if it starts with none.
size_t function_length(const char *who) noexcept {
    if (std::strncmp(who, "chr_", 4) != 0) return 0;
    size_t n = 4;
    while ((who[n] >= 'a' && who[n] <= 'z') || (who[n] >= '0' && who[n] <= '9') || who[n] == '_') ++n;
    return n;
}

// Starts a new record: every optional field cleared; `function` (n bytes)
// names the entry point.
Record &begin(chr_status status, const char *function, size_t n) noexcept {
    Record &r = tls_record;
    r.status = status;
    r.flags = 0;
    r.line = r.other_line = 0;
    r.change_index = 0;
    r.reason_at = r.source_at = r.member_len = 0;
    copy_cut(r.function, sizeof r.function, function ? function : "", function ? n : 0);
    return r;
}

}  // namespace

chr_status fail(chr_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const char *who = nullptr;
    if (std::strncmp(fmt, "%s: ", 4) == 0) {
        va_list first;
        va_copy(first, ap);
        who = va_arg(first, const char *);
        va_end(first);
    }
    const size_t function = who ? function_length(who) : 0;
    Record &r = begin(status, who, function);
    std::vsnprintf(r.text, kMessageMax, fmt, ap);
    va_end(ap);
    // The reason follows "<function>: " (or the internal caller's "<who>: ").
    if (who) r.reason_at = uint16_t(std::min((function ? function : std::strlen(who)) + 2, std::strlen(r.text)));
    return status;
}

chr_status fail_at(const ErrorWhere &where, chr_status status, const char *fmt, ...) {
    Record &r = begin(status, where.function, where.function ? std::strlen(where.function) : 0);
    size_t at = 0;
    if (where.source) {
        const int n = where.has_line && where.line ? std::snprintf(r.text, kMessageMax, "%s:%zu: ", where.source, where.line)
                                 : std::snprintf(r.text, kMessageMax, "%s: ", where.source);
        at = std::min(n < 0 ? 0 : size_t(n), kMessageMax - 1);
    }
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(r.text + at, kMessageMax - at, fmt, ap);
    va_end(ap);
    r.reason_at = uint16_t(at);
    if (where.source) {
        r.flags |= CHR_ERROR_HAS_SOURCE | (where.has_line ? CHR_ERROR_HAS_LINE : 0u);
        r.line = where.has_line ? line_number(where.line) : 0;
        r.source_at = uint16_t(std::strlen(r.text) + 1);
        copy_cut(r.text + r.source_at, kTextSize - r.source_at, where.source, std::strlen(where.source));
    }
    if (where.other_line) {
        r.flags |= CHR_ERROR_HAS_OTHER_LINE;
        r.other_line = line_number(where.other_line);
    }
    if (where.member) note_member(where.member, where.member_len);
    if (where.has_change) note_change(where.change_index);
    return status;
}

void note_member(const void *id, size_t len) noexcept {
    if (!id || len == 0 || len > CHR_NODE_ID_MAX) return;
    Record &r = tls_record;
    std::memcpy(r.member, id, len);
    r.member_len = uint16_t(len);
    r.flags |= CHR_ERROR_HAS_MEMBER;
}

void note_change(uint64_t index) noexcept {
    tls_record.change_index = index;
    tls_record.flags |= CHR_ERROR_HAS_CHANGE;
}

const char *last_error() noexcept { return tls_record.text; }

void last_error_info(chr_error_info *info) noexcept {
    // Version 1 is the whole struct today; later versions fill by version.
    const Record &r = tls_record;
    const bool source = r.flags & CHR_ERROR_HAS_SOURCE, member = r.flags & CHR_ERROR_HAS_MEMBER;
    info->status = r.status;
    info->flags = r.flags;
    info->line = r.line;
    info->other_line = r.other_line;
    info->reserved0 = 0;
    info->change_index = r.change_index;
    info->function = r.function;
    info->message = r.text;
    info->reason = r.text + r.reason_at;
    info->source = source ? r.text + r.source_at : "";
    info->member = member ? r.member : nullptr;
    info->member_len = member ? r.member_len : 0;
}

void recorded_failure(RecordedFailure *out) noexcept {
    const Record &r = tls_record;
    out->status = r.status;
    const char *reason = r.text + r.reason_at;
    copy_cut(out->reason, sizeof out->reason, reason, std::strlen(reason));
    out->member_len = (r.flags & CHR_ERROR_HAS_MEMBER) ? r.member_len : 0;
    std::memcpy(out->member, r.member, out->member_len);
}

PreserveLastError::PreserveLastError() noexcept { std::memcpy(saved_, &tls_record, sizeof tls_record); }
PreserveLastError::~PreserveLastError() { std::memcpy(&tls_record, saved_, sizeof tls_record); }

const char *status_text(chr_status status) noexcept {
    switch (status) {
    case CHR_OK: return "success";
    case CHR_EINVAL: return "invalid argument";
    case CHR_ENOMEM: return "out of memory";
    case CHR_ERANGE: return "value out of range or buffer too small";
    case CHR_EEXIST: return "already exists";
    case CHR_ENOENT: return "no such node";
    case CHR_EEMPTY: return "ring has no node with tokens";
    case CHR_EVERSION: return "unsupported struct version";
    case CHR_ENOHASHER: return "no such hasher";
    case CHR_ENOTSUP: return "not supported by this build";
    case CHR_EINTERNAL: return "internal error";
    case CHR_EPLUGIN_NOFILE: return "plugin file not found or unreadable";
    case CHR_EPLUGIN_NOTSO: return "plugin file is not a loadable shared object";
    case CHR_EPLUGIN_SYMBOL: return "plugin entry point not found";
    case CHR_EPLUGIN_ABI: return "plugin ABI version not supported";
    case CHR_EPLUGIN_DESC: return "malformed hasher descriptor";
    case CHR_EPLUGIN_UNTRUSTED: return "plugin refused: file or directory not trusted";
    case CHR_EFORMAT: return "malformed ring file";
    case CHR_EOPTIONS: return "ring file options differ from the ring's";
    case CHR_EIO: return "ring file cannot be read";
    case CHR_EINCOMPATIBLE: return "snapshots place keys differently";
    default: return "unknown status";
    }
}

Quoted::Quoted(const void *bytes, size_t len) noexcept {
    const size_t n = len < kQuotedInput ? len : kQuotedInput;
    char *out = text_;
    spell_field(bytes, n, true, [&](char c) { *out++ = c; });
    if (len > n) out = std::strcpy(out, "...") + 3;
    *out = '\0';
}

}  // namespace chring
