#include "membership.hpp"

#include <chring.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>

namespace chring::cli {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Length of the valid UTF-8 sequence (2..4 bytes, no overlongs, no
// surrogates) starting at s[i], or 0; its code point in *cp_out.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t *cp_out) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char b = byte(i);
    size_t len;
    uint32_t cp;
    if (b >= 0xC2 && b <= 0xDF) { len = 2; cp = b & 0x1Fu; }
    else if (b >= 0xE0 && b <= 0xEF) { len = 3; cp = b & 0x0Fu; }
    else if (b >= 0xF0 && b <= 0xF4) { len = 4; cp = b & 0x07u; }
    else return 0;
    if (i + len > s.size()) return 0;
    for (size_t k = 1; k < len; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    *cp_out = cp;
    return len;
}

// Copies `bytes` to printable text: printable ASCII and valid UTF-8 other
// than the hidden controls stay; every other byte goes through `escape`
// (ASCII for which `also` is true as well).
template <class Escape, class Also>
std::string escaped(std::string_view bytes, Escape escape, Also also) {
    std::string out;
    out.reserve(bytes.size());
    for (size_t i = 0; i < bytes.size();) {
        unsigned char c = static_cast<unsigned char>(bytes[i]);
        if (c < 0x80) {
            if (is_control(c) || also(c, i)) escape(out, c);
            else out.push_back(char(c));
            ++i;
            continue;
        }
        uint32_t cp = 0;
        size_t len = utf8_sequence(bytes, i, &cp);
        if (len && !is_hidden_control(cp)) {
            out.append(bytes.substr(i, len));
        } else {
            if (!len) len = 1;  // one stray byte at a time
            for (size_t k = 0; k < len; ++k) escape(out, static_cast<unsigned char>(bytes[i + k]));
        }
        i += len;
    }
    return out;
}

// Splits a line into whitespace-separated fields, stopping at a field that
// starts with '#'.
std::vector<std::string_view> split_fields(std::string_view line) {
    std::vector<std::string_view> fields;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_blank(line[i])) ++i;
        if (i == line.size() || line[i] == '#') break;
        size_t start = i;
        while (i < line.size() && !is_blank(line[i])) ++i;
        fields.push_back(line.substr(start, i - start));
    }
    return fields;
}

std::string decode_field(std::string_view field, const char *what, const std::string &source,
                         size_t line) {
    std::string out, why;
    if (!percent_decode(field, out, why))
        throw MembershipError(source, line, std::string(what) + " '" + visible(field) + "': " + why);
    return out;
}

std::string checked_id(std::string_view field, const std::string &source, size_t line) {
    std::string id = decode_field(field, "id", source, line);
    if (id.empty()) throw MembershipError(source, line, "id is empty");
    if (id.size() > CHR_NODE_ID_MAX)
        throw MembershipError(source, line,
                              "id is " + std::to_string(id.size()) + " bytes long (1.." +
                                  std::to_string(CHR_NODE_ID_MAX) + " allowed)");
    return id;
}

std::string checked_zone(std::string_view field, const std::string &source, size_t line) {
    std::string zone = decode_field(field, "zone", source, line);
    if (zone.size() > CHR_ZONE_MAX)
        throw MembershipError(source, line,
                              "zone is " + std::to_string(zone.size()) + " bytes long (0.." +
                                  std::to_string(CHR_ZONE_MAX) + " allowed)");
    return zone;
}

std::string where(const std::string &source, size_t line) {
    return line ? source + ":" + std::to_string(line) : source;
}

}  // namespace

bool is_hidden_control(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

MembershipError::MembershipError(const std::string &source, size_t line, const std::string &reason)
    : std::runtime_error(where(source, line) + ": " + reason) {}

// The field as typed, safe to print: control bytes, hidden controls and
// bytes that are not UTF-8 shown as \xHH.
std::string visible(std::string_view field) {
    return escaped(
        field,
        [](std::string &out, unsigned char c) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        },
        [](unsigned char, size_t) { return false; });
}

bool percent_decode(std::string_view field, std::string &out, std::string &why) {
    out.clear();
    out.reserve(field.size());
    for (size_t i = 0; i < field.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(field[i]);
        if (is_control(c)) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            why = "raw control byte 0x" + std::string(hex + 1) + " (write it as " + hex + ")";
            return false;
        }
        if (c != '%') {
            out.push_back(char(c));
            continue;
        }
        int hi = i + 1 < field.size() ? hex_value(field[i + 1]) : -1;
        int lo = i + 2 < field.size() ? hex_value(field[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            why = "'%' at byte " + std::to_string(i + 1) +
                  " is not followed by two hex digits (write a literal '%' as %25)";
            return false;
        }
        out.push_back(char(hi * 16 + lo));
        i += 2;
    }
    return true;
}

std::string percent_encode(std::string_view bytes) {
    return escaped(
        bytes,
        [](std::string &out, unsigned char c) {
            static const char digits[] = "0123456789ABCDEF";
            out.push_back('%');
            out.push_back(digits[c >> 4]);
            out.push_back(digits[c & 15]);
        },
        [](unsigned char c, size_t i) { return c == ' ' || c == '%' || (i == 0 && c == '#'); });
}

uint32_t parse_weight(std::string_view text, const std::string &source, size_t line) {
    auto bad = [&](const std::string &why) {
        return MembershipError(source, line, "weight '" + visible(text) + "' " + why);
    };
    if (text.empty()) throw bad("is empty");
    uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') throw bad("is not a whole number (0.." + std::to_string(CHR_WEIGHT_MAX) + ")");
        value = value * 10 + uint64_t(c - '0');
        if (value > CHR_WEIGHT_MAX) break;
    }
    if (value > CHR_WEIGHT_MAX) throw bad("is over the limit " + std::to_string(CHR_WEIGHT_MAX));
    return uint32_t(value);
}

std::vector<Member> parse_membership(std::istream &in, const std::string &source) {
    std::vector<Member> members;
    std::map<std::string, size_t> first_line;  // id -> line, for duplicate reports
    auto parse_line = [&](std::string &text, size_t line) {
        if (line == 1 && text.compare(0, 3, "\xEF\xBB\xBF") == 0)
            throw MembershipError(source, line,
                                  "the file starts with a UTF-8 byte-order mark (bytes EF BB BF); "
                                  "save it without one (an id cannot start with U+FEFF)");
        if (!text.empty() && text.back() == '\r') text.pop_back();  // CRLF files
        std::vector<std::string_view> fields = split_fields(text);
        if (fields.empty()) return;
        if (fields.size() < 2 || fields.size() > 3)
            throw MembershipError(source, line,
                                  "expected 'id weight [zone]', found " + std::to_string(fields.size()) +
                                      (fields.size() == 1 ? " field" : " fields") +
                                      (fields.size() == 1 ? " (the weight is required)" : ""));
        Member m;
        m.line = line;
        m.id = checked_id(fields[0], source, line);
        m.weight = parse_weight(fields[1], source, line);
        if (fields.size() == 3) m.zone = checked_zone(fields[2], source, line);
        auto [it, inserted] = first_line.emplace(m.id, line);
        if (!inserted)
            throw MembershipError(source, line,
                                  "duplicate id '" + percent_encode(m.id) + "' (first on line " +
                                      std::to_string(it->second) + ")");
        members.push_back(std::move(m));
    };
    // Read in chunks, never holding more than one line of kMembersLineMax
    // bytes or a file of kMembersFileMax: /dev/zero or a runaway generator
    // is an error with a line number, not an unbounded allocation.
    std::vector<char> chunk(64 * 1024);
    std::string text;  // the current line so far, without its LF
    size_t line = 1, total = 0;
    while (in) {
        in.read(chunk.data(), std::streamsize(chunk.size()));
        size_t got = size_t(in.gcount());
        if (got == 0) break;
        total += got;
        if (total > kMembersFileMax)
            throw MembershipError(source, line,
                                  "the file is larger than " + std::to_string(kMembersFileMax) +
                                      " bytes (64 MiB), the limit for a membership file");
        for (size_t i = 0; i < got;) {
            const void *nl = std::memchr(chunk.data() + i, '\n', got - i);
            size_t end = nl ? size_t(static_cast<const char *>(nl) - chunk.data()) : got;
            text.append(chunk.data() + i, end - i);
            if (text.size() > kMembersLineMax)
                throw MembershipError(source, line,
                                      "the line is longer than " + std::to_string(kMembersLineMax) +
                                          " bytes (64 KiB), the limit for a line");
            if (!nl) break;
            parse_line(text, line);
            text.clear();
            ++line;
            i = end + 1;
        }
    }
    if (in.bad()) throw MembershipError(source, line, "read error");
    if (!text.empty()) parse_line(text, line);  // a last line without LF
    return members;
}

std::vector<Member> load_membership(const std::string &path) {
    if (path == "-") return parse_membership(std::cin, "<stdin>");
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw MembershipError(path, 0, "is a directory, not a membership file");
    std::ifstream file(path, std::ios::binary);
    if (!file) throw MembershipError(path, 0, "cannot open membership file: " + std::string(std::strerror(errno)));
    return parse_membership(file, path);
}

Member parse_member_spec(std::string_view spec, uint32_t default_weight, const std::string &source) {
    Member m;
    m.weight = default_weight;
    size_t eq = spec.find('=');
    m.id = checked_id(spec.substr(0, eq), source, 0);
    if (eq == std::string_view::npos) return m;
    std::string_view rest = spec.substr(eq + 1);
    size_t at = rest.find('@');
    m.weight = parse_weight(rest.substr(0, at), source, 0);
    if (at != std::string_view::npos) m.zone = checked_zone(rest.substr(at + 1), source, 0);
    return m;
}

}  // namespace chring::cli
