// How bytes from a caller (ids, zones, names) are spelled as text: the one
// encoder behind the ring file's field spelling (chr_ringfile_escape,
// chr_ring_export) and the ids quoted in messages (Quoted, errors.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace chring {

// The valid UTF-8 sequence (2..4 bytes, no overlongs, no surrogates, at
// most U+10FFFF) at s[i] of n bytes: its length, and its code point in
// *cp; 0 when s[i] does not start one.
size_t utf8_sequence(const unsigned char *s, size_t n, size_t i, uint32_t *cp) noexcept;

// Code points a terminal acts on instead of showing them: the C1 controls
// U+0080..U+009F and the bidirectional marks, embeddings, overrides and
// isolates (U+061C, U+200E/F, U+202A..E, U+2066..9).
bool invisible(uint32_t cp) noexcept;

// Code points every spelling of an id writes as %XX, wherever they stand:
// U+FEFF, which first in a file is a byte order mark the ring-file parser
// refuses (so a canonical file starting with that member could not be read).
bool escaped_everywhere(uint32_t cp) noexcept;

// The field spelling of bytes[0..n) (docs/ring-file.md, section 6), one
// character at a time into put(char): a byte is %XX (uppercase hex) if and
// only if it is a control byte (0x00-0x1F, 0x7F), a space, '%', a '#' at
// the start, a byte of a code point escaped_everywhere(), or not part of a
// valid UTF-8 sequence; with `hidden`, also a byte of an invisible() code
// point (what the CLI prints: CHR_ESCAPE_HIDDEN). Everything else is put as
// it is. Allocates nothing itself: a fixed buffer can be the sink.
template <class Put>
void spell_field(const void *bytes, size_t n, bool hidden, Put &&put) {
    static constexpr char kDigits[] = "0123456789ABCDEF";
    const auto *s = static_cast<const unsigned char *>(bytes);
    auto encode = [&](unsigned char c) {
        put('%');
        put(kDigits[c >> 4]);
        put(kDigits[c & 15]);
    };
    for (size_t i = 0; i < n;) {
        const unsigned char c = s[i];
        uint32_t cp = 0;
        if (size_t len = c >= 0x80 ? utf8_sequence(s, n, i, &cp) : 0) {
            const bool escape = (hidden && invisible(cp)) || escaped_everywhere(cp);
            for (size_t k = 0; k < len; ++k) {
                if (escape) encode(s[i + k]);
                else put(char(s[i + k]));
            }
            i += len;
            continue;
        }
        if (c >= 0x80 || c < 0x20 || c == 0x7f || c == ' ' || c == '%' || (i == 0 && c == '#'))
            encode(c);
        else
            put(char(c));
        ++i;
    }
}

}  // namespace chring
