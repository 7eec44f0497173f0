// How bytes from the user, a file or the ring are shown and read back.
// Ids and zones use the library's field spelling (chr_ringfile_escape,
// chr_ringfile_unescape: docs/ring-file.md), so what the CLI prints a ring
// file reads back; anything else that reaches a terminal goes through
// visible(). None of them lets a control sequence through.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chring::cli {

// An id or zone as printed: its ring-file field spelling with the C1 and
// bidirectional controls %XX too (CHR_ESCAPE_HIDDEN). A ring file or
// --node reads it back to the same bytes.
std::string printable_id(std::string_view bytes);

// The canonical field spelling of `bytes`, as chr_ring_export writes ids.
std::string canonical_field(std::string_view bytes);

// Text as typed (keys, file names, messages), safe on a terminal: control
// bytes (C0, DEL), the C1 controls U+0080..U+009F, the bidirectional
// controls (U+061C, U+200E/F, U+202A..E, U+2066..9) and bytes that are not
// valid UTF-8 become \xHH, one per byte; everything else is copied.
std::string visible(std::string_view text);

// visible() of at most `max` bytes of `text` (cut at a character boundary),
// then, if it was longer, "... (N bytes)": a message that quotes a key, an
// id or a value stays short whatever its size. 64, as the library quotes.
constexpr size_t kShownMax = 64;
std::string visible_bounded(std::string_view text, size_t max = kShownMax);
// The same in quotes: 'text', or 'tex...' (N bytes).
std::string quoted_bounded(std::string_view text, size_t max = kShownMax);

// One field decoded as a ring file's member line decodes it (%XX). False
// with the library's message ("<what> '<field>': reason") in `why`.
bool decode_field(std::string_view field, const char *what, std::string &out, std::string &why);

// A member's id or zone field decoded and held to the ring's length limits
// (an id 1..CHR_NODE_ID_MAX bytes, a zone 0..CHR_ZONE_MAX), with the ring-file
// parser's wording: false with "id is empty", "zone is 65 bytes long (0..64
// allowed)" or decode_field's reason in `why`.
enum class MemberField { id, zone };
bool decode_member_field(std::string_view field, MemberField kind, std::string &out, std::string &why);

// Valid UTF-8 text (JSON from nlohmann, a canonical ring file) with every
// C1 and bidirectional control escaped: each byte %XX (`json` false: a ring
// file so spelled reads back the same), or the code point \uXXXX (`json`).
std::string escape_hidden_controls(std::string_view text, bool json);

}  // namespace chring::cli
