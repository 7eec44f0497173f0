// The membership file format (src/cli/README.md, "Membership files"): one
// node per line, `id weight [zone]`, `#` comments, %XX for awkward bytes.
// Self-contained (no chring or CLI types) so it can move into the core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace chring::cli {

struct Member {
    std::string id;    // decoded bytes, 1..CHR_NODE_ID_MAX
    uint32_t weight = 1;
    std::string zone;  // decoded bytes, 0..CHR_ZONE_MAX
    size_t line = 0;   // 1-based line in its source; 0 when it came from a flag
};

// A rejected line or flag: what() reads "source:line: reason" (or
// "source: reason" when there is no line).
class MembershipError : public std::runtime_error {
public:
    MembershipError(const std::string &source, size_t line, const std::string &reason);
};

// Limits of a membership file: bytes in one line (without its LF) and in
// the whole file. Past either, parse_membership stops with file:line.
constexpr size_t kMembersLineMax = size_t(64) << 10;  // 64 KiB
constexpr size_t kMembersFileMax = size_t(64) << 20;  // 64 MiB

// Reads a whole membership; `source` names it in errors. Throws
// MembershipError on the first bad line (duplicates name both lines), on a
// UTF-8 byte-order mark at the start (line 1), and past the limits above.
std::vector<Member> parse_membership(std::istream &in, const std::string &source);

// Opens `path` ("-" is standard input) and parses it.
std::vector<Member> load_membership(const std::string &path);

// One member from a command-line spec `ID[=WEIGHT[@ZONE]]`, fields decoded
// as in files (write a literal '=' or '@' in an id as %3D / %40).
Member parse_member_spec(std::string_view spec, uint32_t default_weight, const std::string &source);

// The weight field: decimal digits, 0..CHR_WEIGHT_MAX. Throws MembershipError.
uint32_t parse_weight(std::string_view text, const std::string &source, size_t line);

// %XX decoding of one field. Returns false with the reason in `why` for a
// malformed escape or a raw control byte.
bool percent_decode(std::string_view field, std::string &out, std::string &why);

// Code points a terminal acts on or that reorder the text around them: the
// C1 controls U+0080..U+009F (U+009B is a CSI) and the bidi marks,
// embeddings, overrides and isolates (U+061C, U+200E/F, U+202A..E, U+2066..9).
bool is_hidden_control(uint32_t cp);

// `field` as typed, safe to print on a terminal: control bytes (C0, DEL),
// the C1 controls U+0080..U+009F, the bidi controls (U+061C, U+200E/F,
// U+202A..E, U+2066..9) and bytes that are not valid UTF-8 become \xHH,
// one per byte; everything else is copied.
std::string visible(std::string_view field);

// The field spelling of `bytes`, read back by percent_decode: control bytes,
// C1 and bidi controls (as in visible), space, '%', a leading '#', and bytes
// that are not valid UTF-8 become %XX; other printable ASCII and UTF-8 stay.
std::string percent_encode(std::string_view bytes);

}  // namespace chring::cli
