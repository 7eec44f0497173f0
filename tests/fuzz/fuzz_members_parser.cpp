// members_parser: the library's ring-file parser (chr_ring_new_from_text,
// src/ringfile), which every tool and binding reads members files with,
// against a reference reader written here from the documented format of a
// file without directives (docs/ring-file.md): the same accept/reject
// decision, the same line for the first error, the same members in the
// same order. Also: an id's spelling (chr_ringfile_escape, canonical and
// for a terminal) is one field and reads back as the same bytes
// (chr_ringfile_unescape). Inputs with a directive line (`%%name`) run
// through the parser but are not compared: tests/ringfile covers them.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "chring.h"

namespace {

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            std::fprintf(stderr, "members_parser: check failed at line %d: %s\n  ", __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                               \
            std::fprintf(stderr, "\n");                                                      \
            std::abort();                                                                    \
        }                                                                                    \
    } while (0)

struct Entry {
    std::string id;
    uint32_t weight;
    std::string zone;
    size_t line;  // the reference's; the ring does not keep lines
};

struct Outcome {
    bool ok = true;
    size_t bad_line = 0;  // the first rejected line, when !ok
    std::vector<Entry> members;
};

// The parser under test, behind one function.
Outcome parse_under_test(const std::string &text) {
    Outcome o;
    chr_ring *ring = reinterpret_cast<chr_ring *>(&o);  // must be reset to NULL on failure
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_status st = chr_ring_new_from_text(text.data(), text.size(), "fuzz", nullptr, &ring, &info);
    if (st != CHR_OK) {
        CHECK(st == CHR_EFORMAT, "status %d (%s): %s", st, chr_strerror(st), chr_last_error());
        CHECK(ring == nullptr, "a failed call left a ring");
        o.ok = false;
        o.bad_line = info.error_line;
        // "fuzz:LINE: reason", or "fuzz: reason" for the file as a whole (line 0)
        const char *what = chr_last_error();
        char prefix[40];
        if (o.bad_line) std::snprintf(prefix, sizeof prefix, "fuzz:%zu: ", o.bad_line);
        else std::snprintf(prefix, sizeof prefix, "fuzz: ");
        CHECK(std::strncmp(what, prefix, std::strlen(prefix)) == 0, "message not '%s...': %s", prefix, what);
        for (const char *p = what; *p; ++p)
            CHECK((unsigned char)*p >= 0x20 && *p != 0x7f, "raw control byte in the message");
        return o;
    }
    size_t count = 0;
    CHECK(chr_ring_node_count(ring, &count) == CHR_OK, "node count: %s", chr_last_error());
    CHECK(info.members == count, "info says %u members, the ring has %zu", info.members, count);
    std::vector<chr_node_ref> refs(count);
    CHECK(chr_ring_nodes(ring, refs.data(), count, &count) == CHR_OK, "nodes: %s", chr_last_error());
    // A member's tag is its position in the file.
    std::sort(refs.begin(), refs.end(),
              [](const chr_node_ref &a, const chr_node_ref &b) { return a.tag < b.tag; });
    for (size_t i = 0; i < refs.size(); ++i) {
        CHECK(refs[i].tag == i, "member %zu has tag %llu", i, (unsigned long long)refs[i].tag);
        o.members.push_back({std::string(reinterpret_cast<const char *>(refs[i].id), refs[i].id_len),
                             refs[i].weight,
                             std::string(reinterpret_cast<const char *>(refs[i].zone), refs[i].zone_len),
                             0});
    }
    chr_ring_free(ring);
    return o;
}

// An id's spelling, canonical or for a terminal: one field that decodes back.
void check_spelling(const std::string &id, uint32_t flags) {
    char spelled[3 * CHR_NODE_ID_MAX + 1];
    size_t n = 0;
    CHECK(chr_ringfile_escape(id.data(), id.size(), flags, spelled, sizeof spelled, &n) == CHR_OK,
          "escape: %s", chr_last_error());
    const std::string printed(spelled, n);
    CHECK(!printed.empty() && printed.find(' ') == std::string::npos &&
              printed.find('\t') == std::string::npos && printed[0] != '#',
          "the spelling (flags %u) is not one field", flags);
    char back[CHR_NODE_ID_MAX + 1];
    CHECK(chr_ringfile_unescape(printed.data(), printed.size(), "id", back, sizeof back, &n) == CHR_OK &&
              std::string(back, n) == id,
          "the spelling (flags %u) does not read back", flags);
}

// ---- the reference reader, from the documented format ----------------------

bool ref_control(unsigned char c) { return c < 0x20 || c == 0x7f; }
int ref_hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// %XX decoding; raw control bytes and a '%' without two hex digits fail.
bool ref_decode(const std::string &f, std::string &out) {
    out.clear();
    for (size_t i = 0; i < f.size(); ++i) {
        unsigned char c = (unsigned char)f[i];
        if (ref_control(c)) return false;
        if (c == '%') {
            if (i + 2 >= f.size()) return false;  // fewer than two bytes follow
            int hi = ref_hex((unsigned char)f[i + 1]), lo = ref_hex((unsigned char)f[i + 2]);
            if (hi < 0 || lo < 0) return false;
            out.push_back(char(hi << 4 | lo));
            i += 2;
        } else {
            out.push_back(char(c));
        }
    }
    return true;
}

bool ref_weight(const std::string &f, uint32_t &w) {
    if (f.empty()) return false;
    uint64_t v = 0;
    for (char c : f) {
        if (c < '0' || c > '9') return false;
        if (v <= CHR_WEIGHT_MAX) v = v * 10 + uint64_t(c - '0');
    }
    if (v > CHR_WEIGHT_MAX) return false;
    w = uint32_t(v);
    return true;
}

// A line whose first field starts with "%%": a directive.
bool has_directive(const std::string &text) {
    size_t start = 0;
    while (start < text.size()) {
        size_t i = start;
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
        if (text.compare(i, 2, "%%") == 0) return true;
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) break;
        start = nl + 1;
    }
    return false;
}

Outcome parse_reference(const std::string &text) {
    Outcome o;
    auto reject_at = [&](size_t line) {
        o.ok = false;
        o.bad_line = line;
        o.members.clear();
        return o;
    };
    // The file as a whole first: a byte order mark (line 1), then a NUL
    // byte anywhere (its line): not text.
    if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) return reject_at(1);
    if (size_t nul = text.find('\0'); nul != std::string::npos)
        return reject_at(1 + size_t(std::count(text.begin(), text.begin() + long(nul), '\n')));
    // Lines end with LF; the last one may have none. A CR right before the
    // end of a line is not part of it.
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        size_t end = nl == std::string::npos ? text.size() : nl;
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    for (size_t n = 0; n < lines.size(); ++n) {
        std::string line = lines[n];
        if (!line.empty() && line.back() == '\r') line.pop_back();
        // Fields: runs of bytes other than space and tab; one starting with
        // '#' ends the line.
        std::vector<std::string> fields;
        std::string cur;
        bool in_field = false, comment = false;
        for (size_t i = 0; i < line.size() && !comment; ++i) {
            char c = line[i];
            if (c == ' ' || c == '\t') {
                if (in_field) fields.push_back(cur);
                in_field = false;
                cur.clear();
            } else if (!in_field && c == '#') {
                comment = true;
            } else {
                in_field = true;
                cur.push_back(c);
            }
        }
        if (in_field) fields.push_back(cur);
        if (fields.empty()) continue;
        auto reject = [&] {
            o.ok = false;
            o.bad_line = n + 1;
            o.members.clear();
            return o;
        };
        if (fields.size() != 2 && fields.size() != 3) return reject();
        Entry e;
        e.line = n + 1;
        if (!ref_decode(fields[0], e.id) || e.id.empty() || e.id.size() > CHR_NODE_ID_MAX) return reject();
        if (!ref_weight(fields[1], e.weight)) return reject();
        if (fields.size() == 3 && (!ref_decode(fields[2], e.zone) || e.zone.size() > CHR_ZONE_MAX))
            return reject();
        for (const Entry &prev : o.members)
            if (prev.id == e.id) return reject();  // reported on the second line
        o.members.push_back(e);
    }
    // A well-formed file whose ring would be too large: the first member
    // that takes the native ring's tokens (weight x 160) over the limit.
    uint64_t tokens = 0;
    for (const Entry &e : o.members) {
        tokens += uint64_t(e.weight) * CHR_DEFAULT_TOKENS_PER_WEIGHT;
        if (tokens > CHR_TOKENS_MAX) return reject_at(e.line);
    }
    return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;  // the reference's duplicate check is quadratic
    const std::string text(reinterpret_cast<const char *>(data), size);
    Outcome got = parse_under_test(text);
    if (has_directive(text)) return 0;  // not this reference's format
    Outcome want = parse_reference(text);
    CHECK(got.ok == want.ok, "parser %s, reference %s (reference line %zu, parser line %zu)",
          got.ok ? "accepts" : "rejects", want.ok ? "accepts" : "rejects", want.bad_line, got.bad_line);
    if (!got.ok) {
        CHECK(got.bad_line == want.bad_line, "rejected on line %zu, reference line %zu", got.bad_line,
              want.bad_line);
        return 0;
    }
    CHECK(got.members.size() == want.members.size(), "%zu members, reference %zu", got.members.size(),
          want.members.size());
    for (size_t i = 0; i < got.members.size(); ++i) {
        const Entry &g = got.members[i], &w = want.members[i];
        CHECK(g.id == w.id && g.weight == w.weight && g.zone == w.zone,
              "member %zu differs (reference line %zu, weight %u/%u)", i, w.line, g.weight, w.weight);
        check_spelling(g.id, 0);
        check_spelling(g.id, CHR_ESCAPE_HIDDEN);
    }
    return 0;
}
