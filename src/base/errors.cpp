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
struct Record {
    chr_status status;
    uint32_t flags;  // CHR_ERROR_HAS_*
    uint32_t line, other_line;
    uint64_t change_index;
    uint32_t reason_at;   // the reason is message + reason_at
    uint32_t member_len;  // with CHR_ERROR_HAS_MEMBER
    char function[48];    // "" when unknown
    char message[512];
    char source[512];     // with CHR_ERROR_HAS_SOURCE
    unsigned char member[CHR_NODE_ID_MAX];
};
thread_local Record tls_record;

static_assert(sizeof(Record) <= PreserveLastError::kRecordSize && alignof(Record) <= 8,
              "PreserveLastError must hold the record");

// `text` into `out` of `size` bytes, cut to fit, NUL-terminated.
template <size_t N>
void copy_cut(char (&out)[N], const char *text) noexcept {
    const size_t n = std::min(std::strlen(text), N - 1);
    std::memcpy(out, text, n);
    out[n] = '\0';
}

uint32_t line_number(size_t line) noexcept { return uint32_t(std::min<size_t>(line, UINT32_MAX)); }

// Starts a new record: every optional field cleared.
Record &begin(chr_status status, const char *function) noexcept {
    Record &r = tls_record;
    r.status = status;
    r.flags = 0;
    r.line = r.other_line = 0;
    r.change_index = 0;
    r.reason_at = 0;
    r.member_len = 0;
    r.function[0] = '\0';
    if (function) copy_cut(r.function, function);
    r.source[0] = '\0';
    return r;
}

bool is_entry_point(const char *who) noexcept { return std::strncmp(who, "chr_", 4) == 0; }

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
    Record &r = begin(status, who && is_entry_point(who) ? who : nullptr);
    std::vsnprintf(r.message, sizeof r.message, fmt, ap);
    va_end(ap);
    if (who) r.reason_at = uint32_t(std::min(std::strlen(who) + 2, std::strlen(r.message)));
    return status;
}

chr_status fail_at(const ErrorWhere &where, chr_status status, const char *fmt, ...) {
    Record &r = begin(status, where.function);
    size_t at = 0;
    if (where.source) {
        copy_cut(r.source, where.source);
        r.flags |= CHR_ERROR_HAS_SOURCE | CHR_ERROR_HAS_LINE;
        r.line = line_number(where.line);
        const int n = where.line ? std::snprintf(r.message, sizeof r.message, "%s:%zu: ", where.source, where.line)
                                 : std::snprintf(r.message, sizeof r.message, "%s: ", where.source);
        at = std::min(n < 0 ? 0 : size_t(n), sizeof r.message - 1);
    }
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(r.message + at, sizeof r.message - at, fmt, ap);
    va_end(ap);
    r.reason_at = uint32_t(at);
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
    r.member_len = uint32_t(len);
    r.flags |= CHR_ERROR_HAS_MEMBER;
}

void note_change(uint64_t index) noexcept {
    tls_record.change_index = index;
    tls_record.flags |= CHR_ERROR_HAS_CHANGE;
}

const char *last_error() noexcept { return tls_record.message; }

void last_error_info(chr_error_info *info) noexcept {
    // Version 1 is the whole struct today; later versions fill by version.
    const Record &r = tls_record;
    info->status = r.status;
    info->flags = r.flags;
    info->line = r.line;
    info->other_line = r.other_line;
    info->reserved0 = 0;
    info->change_index = r.change_index;
    info->function = r.function;
    info->message = r.message;
    info->reason = r.message + r.reason_at;
    info->source = r.source;
    info->member = (r.flags & CHR_ERROR_HAS_MEMBER) ? r.member : nullptr;
    info->member_len = (r.flags & CHR_ERROR_HAS_MEMBER) ? r.member_len : 0;
}

void recorded_failure(RecordedFailure *out) noexcept {
    const Record &r = tls_record;
    out->status = r.status;
    copy_cut(out->reason, r.message + r.reason_at);
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
