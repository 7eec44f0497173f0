#include "spelling.hpp"

#include <chring.h>

#include <cstdio>
#include <new>

namespace chring::cli {
namespace {

// chr_ringfile_escape into a string; 3 bytes per input byte always fit.
std::string escaped(std::string_view bytes, uint32_t flags) {
    std::string out(bytes.size() * 3 + 1, '\0');
    size_t len = 0;
    if (chr_ringfile_escape(bytes.data(), bytes.size(), flags, out.data(), out.size(), &len) != CHR_OK)
        throw std::bad_alloc();  // only CHR_ENOMEM is possible with these arguments
    out.resize(len);
    return out;
}

bool plain(std::string_view text) {
    for (char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
    return true;
}

int hex_value(char c) { return c <= '9' ? c - '0' : c - 'A' + 10; }

}  // namespace

std::string printable_id(std::string_view bytes) { return escaped(bytes, CHR_ESCAPE_HIDDEN); }

std::string canonical_field(std::string_view bytes) { return escaped(bytes, 0); }

// The terminal-safe spelling is the library's (CHR_ESCAPE_HIDDEN: every
// byte to hide is %XX, and every literal '%' is %25), shown as typed: the
// escapes of the printable bytes ' ', '#' and '%' are undone and every
// other %XX is written \xXX.
std::string visible(std::string_view text) {
    if (plain(text)) return std::string(text);
    const std::string spelled = escaped(text, CHR_ESCAPE_HIDDEN);
    std::string out;
    out.reserve(spelled.size());
    for (size_t i = 0; i < spelled.size(); ++i) {
        if (spelled[i] != '%') {  // two hex digits always follow a '%'
            out.push_back(spelled[i]);
            continue;
        }
        const char byte = char(hex_value(spelled[i + 1]) * 16 + hex_value(spelled[i + 2]));
        if (byte == ' ' || byte == '#' || byte == '%') {
            out.push_back(byte);
        } else {
            out += "\\x";
            out.append(spelled, i + 1, 2);
        }
        i += 2;
    }
    return out;
}

namespace {

// The bytes of `text` shown by visible_bounded(): `max`, less the bytes of a
// UTF-8 sequence the cut would split.
size_t shown_length(std::string_view text, size_t max) {
    if (text.size() <= max) return text.size();
    size_t cut = max;
    while (cut > 0 && max - cut < 3 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80 ? max : cut;
}

std::string length_text(size_t bytes) { return " (" + std::to_string(bytes) + " bytes)"; }

}  // namespace

std::string visible_bounded(std::string_view text, size_t max) {
    if (text.size() <= max) return visible(text);
    return visible(text.substr(0, shown_length(text, max))) + "..." + length_text(text.size());
}

std::string quoted_bounded(std::string_view text, size_t max) {
    if (text.size() <= max) return "'" + visible(text) + "'";
    return "'" + visible(text.substr(0, shown_length(text, max))) + "...'" + length_text(text.size());
}

bool decode_field(std::string_view field, const char *what, std::string &out, std::string &why) {
    out.assign(field.size() + 1, '\0');
    size_t len = 0;
    chr_status st = chr_ringfile_unescape(field.data(), field.size(), what, out.data(), out.size(), &len);
    if (st == CHR_ENOMEM) throw std::bad_alloc();
    if (st != CHR_OK) {
        why = chr_last_error();
        return false;
    }
    out.resize(len);
    return true;
}

bool decode_member_field(std::string_view field, MemberField kind, std::string &out, std::string &why) {
    const bool id = kind == MemberField::id;
    const char *what = id ? "id" : "zone";
    if (!decode_field(field, what, out, why)) return false;
    const size_t min = id ? 1 : 0, max = id ? CHR_NODE_ID_MAX : CHR_ZONE_MAX;
    if (out.size() >= min && out.size() <= max) return true;
    why = out.empty() ? std::string(what) + " is empty"
                      : std::string(what) + " is " + std::to_string(out.size()) + " bytes long (" +
                            std::to_string(min) + ".." + std::to_string(max) + " allowed)";
    return false;
}

namespace {

// The length of the C1 or bidirectional control that starts at text[i]
// of valid UTF-8 text, with its code point in *cp; 0 if none starts there.
// Which code points those are is the library's to say: the sequences
// chr_ringfile_escape writes as %XX with CHR_ESCAPE_HIDDEN and not without.
size_t hidden_control_at(std::string_view text, size_t i, uint32_t *cp) {
    const unsigned lead = static_cast<unsigned char>(text[i]);
    const size_t len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (len == 0 || i + len > text.size()) return 0;
    char hidden[16], plain[16];
    size_t hidden_len = 0, plain_len = 0;
    if (chr_ringfile_escape(text.data() + i, len, CHR_ESCAPE_HIDDEN, hidden, sizeof hidden, &hidden_len) != CHR_OK ||
        chr_ringfile_escape(text.data() + i, len, 0, plain, sizeof plain, &plain_len) != CHR_OK)
        throw std::bad_alloc();  // only CHR_ENOMEM is possible with these arguments
    if (std::string_view(hidden, hidden_len) == std::string_view(plain, plain_len)) return 0;
    uint32_t c = lead & (0x7Fu >> len);
    for (size_t k = 1; k < len; ++k) c = c << 6 | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
    *cp = c;
    return len;
}

}  // namespace

std::string escape_hidden_controls(std::string_view text, bool json) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        uint32_t cp = 0;
        const size_t len = hidden_control_at(text, i, &cp);
        if (!len) {
            out.push_back(text[i++]);
            continue;
        }
        if (json) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04X", unsigned(cp));
            out += esc;
        } else {
            out += printable_id(text.substr(i, len));
        }
        i += len;
    }
    return out;
}

}  // namespace chring::cli
