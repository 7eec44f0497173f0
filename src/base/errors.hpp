// The error model every layer reports through: status texts, the
// per-thread record behind chr_last_error() and chr_last_error_info(), and
// how bytes from a caller (ids, names) are spelled inside a message
// (base/spelling.hpp's encoder).
#pragma once

#include <cstddef>
#include <cstdint>

#include "chring.h"

// printf-style format checking: MinGW builds use its C99 printf
// (__USE_MINGW_ANSI_STDIO, the cross file sets it), which GCC checks as
// gnu_printf; plain `printf` there means Microsoft's, without %zu.
#if defined(_WIN32)
#define CHR_PRINTF(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#else
#define CHR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#endif

namespace chring {

// Each thread's last failure is one record: the message behind
// chr_last_error() and the fields of chr_error_info (chr_last_error_info()).
// Recording never allocates: the record is fixed thread-local storage, and
// a failure resets all of it.

// Records `status` with a printf-style message for chr_last_error() and
// returns `status`, so call sites read `return fail(CHR_EINVAL, "...")`.
// A format that starts with "%s: " names its caller first (`who`): when
// `who` starts with an entry point's name ("chr_ring_add", also in
// "chr_plugin_load: /path"), that is the record's function and the reason
// is the message after "name: "; otherwise (the internal "ring file" of a
// ring file's batch) the function is unknown and the reason is the message
// after "who: ". Any other format is the reason whole.
chr_status fail(chr_status status, const char *fmt, ...) CHR_PRINTF(2, 3);

// What a failure is about, beyond its message: the record's optional
// fields. A default ErrorWhere is a failure of an unknown function.
struct ErrorWhere {
    const char *function = nullptr;  // the chr_* entry point; nullptr: unknown
    const char *source = nullptr;    // a ring file's name as given; nullptr: none
    bool has_line = true;            // false: a source without lines (one member line read alone)
    size_t line = 0;                 // with a source: the line at fault, 0 = the file as a whole
    size_t other_line = 0;           // the earlier line it conflicts with; 0: none
    const void *member = nullptr;    // a member id's bytes (1..CHR_NODE_ID_MAX); nullptr: none
    size_t member_len = 0;
    bool has_change = false;         // change_index is the batch's change at fault
    uint64_t change_index = 0;
};

// Records a failure at `where`, the one place that composes a located
// message: "source:line: reason" (line != 0), "source: reason" (line 0, or
// no line) or the reason alone (no source); the record's reason is the
// formatted text.
chr_status fail_at(const ErrorWhere &where, chr_status status, const char *fmt, ...)
    CHR_PRINTF(3, 4);

// Adds to the record of the failure just recorded (by this thread): the
// member it is about (ignored unless 1..CHR_NODE_ID_MAX bytes), or the index
// of the change of a batch that failed.
void note_member(const void *id, size_t len) noexcept;
void note_change(uint64_t index) noexcept;

const char *last_error() noexcept;

// This thread's record, as chr_last_error_info() reports it (`info` of
// version 1 or later, checked by the caller; pointers into the record).
void last_error_info(chr_error_info *info) noexcept;

// The record's reason and member as they are now, copied: for a caller
// that restates a failure (a ring file's line for a change of its batch).
struct RecordedFailure {
    chr_status status;
    char reason[512];
    unsigned char member[CHR_NODE_ID_MAX];
    size_t member_len;  // 0: none
};
void recorded_failure(RecordedFailure *out) noexcept;

// A pointer for a message as 0x%llx: "%p" prints 0x1000 with glibc but
// 0000000000001000 with MinGW, and messages read the same everywhere.
inline unsigned long long address_of(const void *p) {
    return static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p));
}

// Keeps this thread's error record (chr_last_error() and
// chr_last_error_info()) as it was across a scope whose failures are
// expected and handled (plugin discovery), so that a call that succeeds
// overall leaves it untouched.
class PreserveLastError {
public:
    static constexpr size_t kRecordSize = 1008;  // errors.cpp checks it holds the record
    PreserveLastError() noexcept;
    ~PreserveLastError();
    PreserveLastError(const PreserveLastError &) = delete;
    PreserveLastError &operator=(const PreserveLastError &) = delete;

private:
    alignas(8) unsigned char saved_[kRecordSize];
};
const char *status_text(chr_status status) noexcept;

// Caller bytes as a message shows them, spelled as the CLI spells ids
// (spell_field() with `hidden`: chr_ringfile_escape with CHR_ESCAPE_HIDDEN,
// which a ring file or --node reads back): printable ASCII and valid UTF-8
// stay as they are; controls, DEL, space, '%', a leading '#', the C1 and
// bidirectional controls, U+FEFF and bytes that are not valid UTF-8 become
// %XX. At most kQuotedInput bytes are spelled, then "...": a message stays
// bounded whatever the id. Never allocates.
class Quoted {
public:
    static constexpr size_t kQuotedInput = 64;
    Quoted(const void *bytes, size_t len) noexcept;
    const char *c_str() const noexcept { return text_; }

private:
    char text_[kQuotedInput * 3 + 4];
};

}  // namespace chring
