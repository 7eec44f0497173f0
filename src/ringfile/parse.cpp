// The ring file reader: bounded file reads, lines, directives, members.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>

#include "base/errors.hpp"
#include "placement.hpp"
#include "ringfile/ringfile.hpp"

namespace chring {
namespace ringfile {
namespace {

// A malformed file: line (0 = the file as a whole) and what is wrong; the
// earlier line it conflicts with (0: none) and the member line's id.
struct Bad {
    Bad(size_t at, std::string reason, size_t other = 0, std::string id = {})
        : line(at), why(std::move(reason)), other_line(other), member(std::move(id)) {}
    size_t line;
    std::string why;
    size_t other_line;
    std::string member;  // empty: not a member line's error, or its id did not decode
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The field as typed, safe in a message: control bytes as \xHH, at most
// 64 bytes of it (the message buffer is small).
std::string visible(std::string_view field) {
    std::string out;
    size_t shown = std::min<size_t>(field.size(), 64);
    for (size_t i = 0; i < shown; ++i) {
        unsigned char c = static_cast<unsigned char>(field[i]);
        if (!is_control(c) && c < 0x80) {
            out.push_back(char(c));
            continue;
        }
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02X", c);
        out += hex;
    }
    if (shown < field.size()) out += "...";
    return out;
}

// Splits a line into blank-separated fields, stopping at a field that
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

std::string decode(std::string_view field, const char *what, size_t line) {
    std::string out, why;
    if (!unescape_field(field, what, out, why)) throw Bad{line, why};
    return out;
}

bool all_digits(std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// A member line's weight field. `hint`: said after a weight that is not a
// number (a reason the line may have been split where its author did not
// mean it to be).
uint32_t member_weight(std::string_view text, size_t line, const std::string &hint) {
    // As the members file always read it: digits only, leading zeros allowed.
    // Any other byte makes it not a number, however large its digits are.
    for (char ch : text) {
        // A vertical tab or form feed looks blank but does not separate fields.
        const unsigned char c = static_cast<unsigned char>(ch);
        if (!is_control(c)) continue;
        char hex[8];
        std::snprintf(hex, sizeof hex, "%02X", c);
        throw Bad{line, "weight '" + visible(text) + "': raw control byte 0x" + hex +
                            " (fields are separated by spaces and tabs only)"};
    }
    if (text.find_first_not_of("0123456789") != std::string_view::npos)
        throw Bad{line, "weight '" + visible(text) + "' is not a whole number (0.." +
                            std::to_string(CHR_WEIGHT_MAX) + ")" + hint};
    uint64_t value = 0;
    for (char c : text) {
        value = value * 10 + uint64_t(c - '0');
        if (value > CHR_WEIGHT_MAX)
            throw Bad{line, "weight '" + visible(text) + "' is over the limit " +
                                std::to_string(CHR_WEIGHT_MAX)};
    }
    return uint32_t(value);
}

bool is_directive(const std::vector<std::string_view> &fields) {
    return fields[0].size() >= 2 && fields[0][0] == '%' && fields[0][1] == '%';
}

// The member of a member line: its fields as split_fields() gives them
// (at least one, the first not a directive's), `n` its line. The one
// reading of `id weight [zone]` (docs/ring-file.md, section 3), for a file's
// lines and for chr_ringfile_parse_member's line alike.
Member read_member(const std::vector<std::string_view> &fields, size_t n) {
    if (fields.size() < 2 || fields.size() > 3)
        throw Bad{n, "expected 'id weight [zone]', found " + std::to_string(fields.size()) +
                         (fields.size() == 1
                              ? " field (the weight is required)"
                              : " fields (write a space inside an id or a zone as %20)")};
    Member m;
    m.line = n;
    m.id = decode(fields[0], "id", n);
    if (m.id.empty()) throw Bad{n, "id is empty"};
    if (m.id.size() > CHR_NODE_ID_MAX)
        throw Bad{n, "id is " + std::to_string(m.id.size()) + " bytes long (1.." +
                         std::to_string(CHR_NODE_ID_MAX) + " allowed)"};
    try {
        // "a b 1": an id with a raw space reads as id 'a', weight 'b'.
        std::string hint;
        if (fields.size() == 3 && all_digits(fields[2])) {
            const char *start = fields[0].data();
            const std::string_view both(start, size_t(fields[1].data() + fields[1].size() - start));
            const bool tab = both.find('\t') != std::string_view::npos;
            hint = "; if '" + visible(both) + "' is one id, write " +
                   (tab ? "its blanks as %20 (a space) and %09 (a tab)" : "its space as %20");
        }
        m.weight = member_weight(fields[1], n, hint);
        if (fields.size() == 3) {
            m.zone = decode(fields[2], "zone", n);
            if (m.zone.size() > CHR_ZONE_MAX)
                throw Bad{n, "zone is " + std::to_string(m.zone.size()) + " bytes long (0.." +
                                 std::to_string(CHR_ZONE_MAX) + " allowed)"};
        }
    } catch (Bad &bad) {
        bad.member = m.id;  // the line's id is known: the error is about that member
        throw;
    }
    return m;
}

constexpr const char *kBinary = "NUL byte: this is binary data, not a ring file (a ring file is text)";

std::string line_too_long(size_t bytes) {
    return "line is " + std::to_string(bytes) + " bytes long (limit " +
           std::to_string(CHR_RINGFILE_LINE_MAX) + ")";
}

// One member line read alone: the checks a file makes of each of its lines
// (no NUL, the length limit), then what its parser does with the line,
// which must be a member line. Not the checks of a file as a whole (its
// size, a byte order mark at its start: a line may come from anywhere in
// a file). Errors have no line (Bad::line 0).
Member lone_member_line(std::string_view line) {
    if (std::memchr(line.data(), '\0', line.size())) throw Bad{0, kBinary};
    if (line.size() > CHR_RINGFILE_LINE_MAX) throw Bad{0, line_too_long(line.size())};
    const size_t brk = line.find_first_of("\r\n");
    if (brk != std::string_view::npos)
        throw Bad{0, std::string(line[brk] == '\n' ? "LF" : "CR") + " at byte " + std::to_string(brk + 1) +
                         ": a member line is one line, without a line break"};
    const std::vector<std::string_view> fields = split_fields(line);
    if (fields.empty()) {
        const size_t hash = line.find('#');
        if (hash == std::string_view::npos)
            throw Bad{0, "a blank line, not a member line (expected 'id weight [zone]')"};
        const size_t end = std::min(line.find_first_of(" \t", hash), line.size());
        throw Bad{0, "a comment, not a member line: its first field '" + visible(line.substr(hash, end - hash)) +
                         "' starts with '#' (write a '#' that starts an id as %23)"};
    }
    if (is_directive(fields))
        throw Bad{0, "a directive, not a member line: its first field '" + visible(fields[0]) +
                         "' starts with '%%' (write a '%' that starts an id as %25)"};
    return read_member(fields, 0);
}

// A directive's decimal value: digits only, no sign, no leading zero.
uint64_t directive_number(std::string_view name, std::string_view text, uint64_t lo, uint64_t hi,
                          size_t line) {
    const std::string what = "%%" + std::string(name) + " '" + visible(text) + "'";
    if (!text.empty() && (text[0] == '-' || text[0] == '+'))
        throw Bad{line, what + " has a sign: write digits only"};
    if (text.find_first_not_of("0123456789") != std::string_view::npos)
        throw Bad{line, what + " is not a decimal number"};
    uint64_t value = 0;
    for (char c : text) {
        unsigned d = unsigned(c - '0');
        if (value > (UINT64_MAX - d) / 10)
            throw Bad{line, what + " overflows 64 bits (0.." + std::to_string(UINT64_MAX) + ")"};
        value = value * 10 + d;
    }
    if (text.size() > 1 && text[0] == '0')
        throw Bad{line, what + " has a leading zero (write " + std::to_string(value) + ")"};
    if (value < lo || value > hi)
        throw Bad{line, what + " is out of range (" + std::to_string(lo) + ".." +
                            std::to_string(hi) + ")"};
    return value;
}

// A %%fingerprint or %%availability value: 0x and 16 hex digits.
uint64_t directive_hex64(std::string_view name, std::string_view text, size_t line) {
    bool ok = text.size() == 18 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    uint64_t value = 0;
    for (size_t i = 2; ok && i < text.size(); ++i) {
        int d = hex_value(text[i]);
        ok = d >= 0;
        value = value << 4 | uint64_t(d < 0 ? 0 : d);
    }
    if (!ok)
        throw Bad{line, "%%" + std::string(name) + " '" + visible(text) +
                            "' is not 0x followed by 16 hex digits"};
    return value;
}

int32_t directive_placement(std::string_view text, size_t line) {
    const std::string name(text);
    if (const PlacementOps *ops = find_placement(name.c_str())) return ops->mode;
    throw Bad{line, "%%placement '" + visible(text) +
                        "' is not one of native, ketama, ketama-unweighted, nginx"};
}

std::string directive_hasher(std::string_view text, size_t line) {
    bool ok = !text.empty() && text.size() <= CHR_HASHER_NAME_MAX;
    for (char c : text)
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                    c == '-');
    if (!ok)
        throw Bad{line, "%%hasher '" + visible(text) + "' is not a hasher name (1.." +
                            std::to_string(CHR_HASHER_NAME_MAX) + " bytes of a-z 0-9 _ . -)"};
    return std::string(text);
}

constexpr const char *kDirectives =
    "ring-file, placement, hasher, seed, tokens-per-weight, revision, fingerprint, panic-threshold, "
    "availability, down";

class Parser {
public:
    explicit Parser(File &f) : f_(f) {}

    void line(std::string_view text, size_t n) {
        std::vector<std::string_view> fields = split_fields(text);
        if (fields.empty()) return;
        if (is_directive(fields))
            directive(fields, n);
        else
            member(fields, n);
    }

private:
    void directive(const std::vector<std::string_view> &fields, size_t n) {
        std::string_view name = fields[0].substr(2);
        if (name.empty()) throw Bad{n, "'%%' without a directive name (known: " + std::string(kDirectives) + ")"};
        if (!f_.members.empty())
            throw Bad{n,
                      "directive %%" + visible(name) + " after the first member (line " +
                          std::to_string(f_.members.front().line) + "): directives come first",
                      f_.members.front().line};
        if (name == "down") return down(fields, n);
        size_t *slot = slot_of(name);
        if (!slot)
            throw Bad{n, "unknown directive %%" + visible(name) + " (known: " + kDirectives + ")"};
        if (*slot)
            throw Bad{n, "duplicate %%" + std::string(name) + " (first on line " + std::to_string(*slot) + ")",
                      *slot};
        if (fields.size() != 2)
            throw Bad{n, "%%" + std::string(name) +
                             (fields.size() < 2 ? " needs a value"
                                                : " takes one value, found " +
                                                      std::to_string(fields.size() - 1))};
        if (slot == &f_.format_line && seen_any_)
            throw Bad{n,
                      "%%ring-file must be the first directive (line " + std::to_string(first_directive_) +
                          " comes before it)",
                      first_directive_};
        if (!seen_any_) first_directive_ = n;
        seen_any_ = true;
        *slot = n;
        std::string_view v = fields[1];
        if (slot == &f_.format_line) {
            uint64_t version = directive_number(name, v, 0, UINT64_MAX, n);  // any other number: not supported
            if (version != CHR_RINGFILE_FORMAT_VERSION)
                throw Bad{n, "%%ring-file " + std::to_string(version) +
                                 " is not supported (this library reads version " +
                                 std::to_string(CHR_RINGFILE_FORMAT_VERSION) + ")"};
            f_.format_version = uint32_t(version);
            return;
        }
        if (slot == &f_.revision_line) {
            f_.revision = directive_number(name, v, 0, UINT64_MAX, n);
            return;
        }
        if (slot == &f_.fingerprint_line) {
            f_.fingerprint = directive_hex64(name, v, n);
            return;
        }
        if (slot == &f_.availability_line) {
            f_.availability = directive_hex64(name, v, n);
            return;
        }
        if (slot == &f_.panic_line) {
            f_.panic_threshold = uint32_t(directive_number(name, v, 0, 100, n));
            return;
        }
        if (!f_.options_line) f_.options_line = n;
        if (slot == &f_.placement_line) f_.placement = directive_placement(v, n);
        else if (slot == &f_.hasher_line) f_.hasher = directive_hasher(v, n);
        else if (slot == &f_.seed_line) f_.seed = directive_number(name, v, 0, UINT64_MAX, n);
        else f_.tokens_per_weight = uint32_t(directive_number(name, v, 1, CHR_TOKENS_PER_WEIGHT_MAX, n));
    }

    size_t *slot_of(std::string_view name) {
        if (name == "ring-file") return &f_.format_line;
        if (name == "placement") return &f_.placement_line;
        if (name == "hasher") return &f_.hasher_line;
        if (name == "seed") return &f_.seed_line;
        if (name == "tokens-per-weight") return &f_.tokens_line;
        if (name == "revision") return &f_.revision_line;
        if (name == "fingerprint") return &f_.fingerprint_line;
        if (name == "panic-threshold") return &f_.panic_line;
        if (name == "availability") return &f_.availability_line;
        return nullptr;
    }

    // %%down <id>: repeatable, one id a line, each once.
    void down(const std::vector<std::string_view> &fields, size_t n) {
        if (fields.size() != 2)
            throw Bad{n, std::string("%%down") +
                             (fields.size() < 2 ? " needs a value (the id of a member)"
                                                : " takes one id, found " + std::to_string(fields.size() - 1) +
                                                      " fields (write a space inside an id as %20)")};
        if (!seen_any_) first_directive_ = n;
        seen_any_ = true;
        std::string id = decode(fields[1], "id", n);
        if (id.empty()) throw Bad{n, "%%down: id is empty"};
        if (id.size() > CHR_NODE_ID_MAX)
            throw Bad{n, "%%down: id is " + std::to_string(id.size()) + " bytes long (1.." +
                             std::to_string(CHR_NODE_ID_MAX) + " allowed)"};
        auto [it, fresh] = down_line_.emplace(id, n);
        if (!fresh)
            throw Bad{n,
                      "duplicate %%down '" + std::string(Quoted(id.data(), id.size()).c_str()) +
                          "' (first on line " + std::to_string(it->second) + ")",
                      it->second, id};
        f_.down.push_back({std::move(id), n});
    }

public:
    // After the last line: each %%down names a member of the file.
    void finish() {
        for (const File::Down &d : f_.down)
            if (!first_line_.count(d.id))
                throw Bad{d.line, "%%down '" + std::string(Quoted(d.id.data(), d.id.size()).c_str()) +
                                      "' names no member of the file", 0, d.id};
    }

private:

    void member(const std::vector<std::string_view> &fields, size_t n) {
        Member m = read_member(fields, n);
        if (f_.members.size() >= CHR_NODES_MAX)
            throw Bad{n, "more than " + std::to_string(CHR_NODES_MAX) + " members (the ring's limit)"};
        auto [it, fresh] = first_line_.emplace(m.id, n);
        if (!fresh)
            throw Bad{n,
                      "duplicate id '" + std::string(Quoted(m.id.data(), m.id.size()).c_str()) +
                          "' (first on line " + std::to_string(it->second) + ")",
                      it->second, m.id};
        f_.members.push_back(std::move(m));
    }

    File &f_;
    bool seen_any_ = false;
    size_t first_directive_ = 0;
    std::unordered_map<std::string, size_t> first_line_;  // id -> line, for duplicates
    std::unordered_map<std::string, size_t> down_line_;   // %%down id -> line, for duplicates
};

void parse_lines(std::string_view text, File &f) {
    if (text.size() > CHR_RINGFILE_SIZE_MAX)
        throw Bad{0, "is " + std::to_string(text.size()) + " bytes (limit " +
                         std::to_string(CHR_RINGFILE_SIZE_MAX) + ")"};
    if (text.size() >= 3 && std::memcmp(text.data(), "\xEF\xBB\xBF", 3) == 0)
        throw Bad{1, "the file starts with a UTF-8 byte order mark (EF BB BF): save it without one"};
    if (const void *nul = std::memchr(text.data(), '\0', text.size())) {
        size_t at = size_t(static_cast<const char *>(nul) - text.data());
        size_t line = 1 + size_t(std::count(text.begin(), text.begin() + long(at), '\n'));
        throw Bad{line, kBinary};
    }
    Parser p(f);
    size_t n = 0;
    for (size_t start = 0; start < text.size();) {
        ++n;
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (line.size() > CHR_RINGFILE_LINE_MAX) throw Bad{n, line_too_long(line.size())};
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files
        p.line(line, n);
        start = end + 1;
    }
    p.finish();
}

}  // namespace

bool unescape_field(std::string_view field, const char *what, std::string &out, std::string &why) {
    out.clear();
    out.reserve(field.size());
    for (size_t i = 0; i < field.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(field[i]);
        if (is_control(c)) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            why = std::string(what) + " '" + visible(field) + "': raw control byte 0x" + (hex + 1) +
                  " (write it as " + hex + ")";
            return false;
        }
        if (c != '%') {
            out.push_back(char(c));
            continue;
        }
        int hi = i + 1 < field.size() ? hex_value(field[i + 1]) : -1;
        int lo = i + 2 < field.size() ? hex_value(field[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            why = std::string(what) + " '" + visible(field) + "': '%' at byte " + std::to_string(i + 1) +
                  " is not followed by two hex digits (write a literal '%' as %25)";
            return false;
        }
        out.push_back(char(hi * 16 + lo));
        i += 2;
    }
    return true;
}

const char *placement_name(int32_t mode) noexcept {
    const PlacementOps *ops = find_placement(mode);
    return ops ? ops->name : nullptr;
}

namespace {

// A refusal recorded as the parser's: the source, the line when the text
// has lines, the earlier line of a conflict, the member line's id.
chr_status refuse(const Bad &bad, const std::string &name, const char *who, bool has_line) {
    ErrorWhere where;
    where.function = who;
    where.source = name.c_str();
    where.has_line = has_line;
    where.line = bad.line;
    where.other_line = bad.other_line;
    if (!bad.member.empty()) {
        where.member = bad.member.data();
        where.member_len = bad.member.size();
    }
    return fail_at(where, CHR_EFORMAT, "%s", bad.why.c_str());
}

}  // namespace

chr_status parse(std::string_view text, const std::string &name, const char *who, File &out,
                 size_t *error_line) {
    out = File();
    out.name = name;
    if (error_line) *error_line = 0;
    try {
        parse_lines(text, out);
        return CHR_OK;
    } catch (const Bad &bad) {
        if (error_line) *error_line = bad.line;
        return refuse(bad, name, who, true);
    }
}

chr_status parse_member_line(std::string_view line, const std::string &name, const char *who, Member &out) {
    out = Member();
    try {
        out = lone_member_line(line);
        return CHR_OK;
    } catch (const Bad &bad) {
        return refuse(bad, name, who, false);
    }
}

#if defined(_WIN32)
// MinGW's open(): binary mode (no CRLF translation); Windows has no FIFOs
// to block on and handles are not inherited unless asked.
constexpr int kOpenFlags = O_RDONLY | O_BINARY;
#else
// O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it.
constexpr int kOpenFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
#endif

namespace {

FileStamp stamp_from(const struct stat &st) noexcept {
    FileStamp s;
    s.dev = uint64_t(st.st_dev);
    s.ino = uint64_t(st.st_ino);
    s.size = uint64_t(st.st_size);
#if defined(_WIN32)
    s.mtime_sec = int64_t(st.st_mtime);
    s.ctime_sec = int64_t(st.st_ctime);
#else
    s.mtime_sec = int64_t(st.st_mtim.tv_sec);
    s.mtime_nsec = int64_t(st.st_mtim.tv_nsec);
    s.ctime_sec = int64_t(st.st_ctim.tv_sec);
    s.ctime_nsec = int64_t(st.st_ctim.tv_nsec);
#endif
    return s;
}

}  // namespace

FileStamp stamp_of(const char *path) noexcept {
    struct stat st;
    if (::stat(path, &st) != 0) {
        FileStamp s;
        s.error = errno ? errno : EIO;
        return s;
    }
    return stamp_from(st);
}

chr_status read_file(const char *path, const char *who, std::string &text, FileStamp *stamp) {
    ErrorWhere file;  // every failure is about the file as a whole
    file.function = who;
    file.source = path;

    int fd;
    do fd = ::open(path, kOpenFlags);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int e = errno;
        return fail_at(file, CHR_EIO, "cannot open the ring file: %s", std::strerror(e));
    }
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st;
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        return fail_at(file, CHR_EIO, "cannot stat the ring file: %s", std::strerror(e));
    }
    if (stamp) *stamp = stamp_from(st);
    if (S_ISDIR(st.st_mode)) return fail_at(file, CHR_EIO, "is a directory, not a ring file");
    if (!S_ISREG(st.st_mode))
        return fail_at(file, CHR_EIO, "is not a regular file (a device, FIFO or socket)");
    if (uint64_t(st.st_size) > CHR_RINGFILE_SIZE_MAX)
        return fail_at(file, CHR_EFORMAT, "is %lld bytes (limit %u)", (long long)st.st_size,
                       CHR_RINGFILE_SIZE_MAX);
    // Read to EOF, but never more than the limit: the file may grow meanwhile.
    text.clear();
    text.resize(size_t(st.st_size) + 1);
    size_t have = 0;
    for (;;) {
        if (have == text.size()) {
            if (have > CHR_RINGFILE_SIZE_MAX) break;
            text.resize(std::min<size_t>(have * 2 + 4096, size_t(CHR_RINGFILE_SIZE_MAX) + 1));
        }
        ssize_t got = ::read(fd, &text[have], text.size() - have);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            return fail_at(file, CHR_EIO, "read error: %s", std::strerror(e));
        }
        if (got == 0) break;
        have += size_t(got);
    }
    if (have > CHR_RINGFILE_SIZE_MAX)
        return fail_at(file, CHR_EFORMAT, "is more than %u bytes (the limit)", CHR_RINGFILE_SIZE_MAX);
    text.resize(have);
    return CHR_OK;
}

}  // namespace ringfile
}  // namespace chring
