// The ring file format (docs/ring-file.md): parsing, validation, the
// canonical text and its JSON twin, and the difference between a file and a
// ring as one batch. The one reader every embedding uses, through the C API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chring.h"

namespace chring {
class Snapshot;
class Ring;

namespace ringfile {

struct Member {
    std::string id;    // decoded bytes, 1..CHR_NODE_ID_MAX
    std::string zone;  // decoded bytes, 0..CHR_ZONE_MAX
    uint32_t weight = 0;
    size_t line = 0;   // 1-based line in the file
};

// A parsed file. `*_line` is the directive's line, 0 when it is absent.
struct File {
    std::string name;  // names the file in messages
    uint32_t format_version = CHR_RINGFILE_FORMAT_VERSION;
    size_t format_line = 0;
    // The option directives; when none is present (options_line == 0) the
    // caller's options (creating) or the ring's (applying) apply.
    size_t options_line = 0;  // the first option directive's line
    int32_t placement = CHR_PLACEMENT_NATIVE;
    size_t placement_line = 0;
    std::string hasher;  // "" when absent: the placement's own
    size_t hasher_line = 0;
    uint64_t seed = 0;
    size_t seed_line = 0;
    uint32_t tokens_per_weight = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    size_t tokens_line = 0;
    uint64_t revision = 0;
    size_t revision_line = 0;
    uint64_t fingerprint = 0;
    size_t fingerprint_line = 0;
    std::vector<Member> members;  // in file order: position = tag
    // Availability (chring.h, "Availability"): the %%down lines (id and
    // line, in file order), %%panic-threshold, %%availability (the digest
    // the ring must have).
    struct Down {
        std::string id;
        size_t line = 0;
    };
    std::vector<Down> down;
    uint32_t panic_threshold = CHR_PANIC_THRESHOLD_DEFAULT;
    size_t panic_line = 0;
    uint64_t availability = 0;
    size_t availability_line = 0;
};

// Every failure below is recorded with fail_at() (base/errors.hpp): `who`
// is the entry point, the file's name the source, and the message
// "name:line: reason" ("name: reason" for the file as a whole).

// Parses `text`. On a malformed file returns CHR_EFORMAT, with the line in
// *error_line and in the record, and the earlier line of a conflict
// (duplicate id or directive) and the id of a member line in the record.
chr_status parse(std::string_view text, const std::string &name, const char *who, File &out,
                 size_t *error_line);

// Reads one member line alone (chr_ringfile_parse_member) with the
// parser's own reading of a file's member line: the same member, or the
// same refusal, as a file holding that line would give (the file's own
// checks aside: its size, a byte order mark at its start). A blank,
// comment or directive line, or one with a CR or LF, is refused too. On
// failure returns CHR_EFORMAT, recorded with `name` as the source, no
// line, and the decoded id as the member once it is known; `out.line` is 0.
chr_status parse_member_line(std::string_view line, const std::string &name, const char *who, Member &out);

// What a follower compares between two looks at a file: its identity,
// size and times (chring.h, "Following a ring file"), or the errno of a
// file that cannot be looked at.
struct FileStamp {
    uint64_t dev = 0, ino = 0, size = 0;
    int64_t mtime_sec = 0, mtime_nsec = 0, ctime_sec = 0, ctime_nsec = 0;
    int error = 0;  // errno of a failed stat(); the other fields are then 0

    bool operator==(const FileStamp &o) const noexcept {
        return dev == o.dev && ino == o.ino && size == o.size && mtime_sec == o.mtime_sec &&
               mtime_nsec == o.mtime_nsec && ctime_sec == o.ctime_sec && ctime_nsec == o.ctime_nsec &&
               error == o.error;
    }
    bool operator!=(const FileStamp &o) const noexcept { return !(*this == o); }
};

// The stamp of the file at `path` now (stat(), following symbolic links).
FileStamp stamp_of(const char *path) noexcept;

// Reads a whole regular file of at most CHR_RINGFILE_SIZE_MAX bytes (open,
// fstat, bounded reads). CHR_EIO for a file that cannot be read or is not a
// regular file, CHR_EFORMAT for one over the size limit; `path` is the
// source. With `stamp`, the stamp of the open file the text was read from.
chr_status read_file(const char *path, const char *who, std::string &text, FileStamp *stamp = nullptr);

// The placement's name in files ("native", "ketama", ...), nullptr if unknown.
const char *placement_name(int32_t mode) noexcept;

// The canonical text (flags: CHR_EXPORT_*) of a snapshot.
std::string canonical_text(const Snapshot &s, uint32_t flags, uint64_t revision);
std::string json_text(const Snapshot &s, uint32_t flags, uint64_t revision);

// "0x" and 16 hex digits: %%fingerprint and %%availability values.
std::string hex64(uint64_t v);

// The field spelling of bytes (spell_field(), base/spelling.hpp): the
// canonical one, or with `hidden` the C1 and bidirectional controls %XX too.
std::string escape_field(std::string_view bytes, bool hidden = false);

// Decodes one id or zone field (%XX escapes; a raw control byte or a '%'
// without two hex digits is refused). On failure returns false with the
// reason in `why`, naming the field as "<what> '<field>'".
bool unescape_field(std::string_view field, const char *what, std::string &out, std::string &why);

// What a load or an apply did, for chr_ringfile_info.
struct Outcome {
    uint32_t added = 0, removed = 0, reweighted = 0, replaced = 0;
    uint64_t fingerprint = 0, availability = 0;
    size_t error_line = 0;
};

// A new ring from a parsed file; `base` gives the options when the file
// has no option directive (NULL = the library's defaults), and always the
// plugin directory. The caller has checked base->version.
chr_status create(const File &f, const chr_options *base, const char *who, Ring **out,
                  Outcome &outcome);

// The file applied to `ring` as one batch under its writer lock; options
// that differ from the ring's are CHR_EOPTIONS. A failure changes nothing.
chr_status apply(Ring &ring, const File &f, const char *who, Outcome &outcome);

// The CHR_RINGFILE_HAS_* bits of the directives `f` holds (or, of a file
// refused halfway, held before its fault).
inline uint32_t directive_flags(const File &f) noexcept {
    return (f.revision_line ? CHR_RINGFILE_HAS_REVISION : 0u) |
           (f.fingerprint_line ? CHR_RINGFILE_HAS_FINGERPRINT : 0u) |
           (f.options_line ? CHR_RINGFILE_HAS_OPTIONS : 0u) |
           (!f.down.empty() || f.panic_line || f.availability_line ? CHR_RINGFILE_HAS_AVAILABILITY : 0u);
}

// What a create or an apply of `f` reports in chr_ringfile_info (`info`
// may be NULL; its version was checked): everything on success, only the
// error line on failure.
void describe(const File &f, const Outcome &o, chr_status st, chr_ringfile_info *info);

}  // namespace ringfile
}  // namespace chring
