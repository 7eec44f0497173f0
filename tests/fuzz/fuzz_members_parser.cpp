// members_parser: the CLI's members-file parser (src/cli/membership.cpp)
// against a reference reader written here from the documented format
// (src/cli/README.md, "Membership files"): the same accept/reject decision,
// the same line for the first error, the same members. Also: what the tools
// print for an id (percent_encode) reads back as the same bytes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "chring.h"
#include "membership.hpp"

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
    size_t line;
};

struct Outcome {
    bool ok = true;
    size_t bad_line = 0;  // the first rejected line, when !ok
    std::vector<Entry> members;
};

// The parser under test, behind one function: when the CLI reads its files
// with the library's ring-file parser, only this adapter changes.
Outcome parse_under_test(const std::string &text) {
    Outcome o;
    std::istringstream in(text);
    try {
        for (const chring::cli::Member &m : chring::cli::parse_membership(in, "fuzz"))
            o.members.push_back({m.id, m.weight, m.zone, m.line});
    } catch (const chring::cli::MembershipError &e) {
        o.ok = false;
        // "fuzz:LINE: reason"
        const char *what = e.what();
        CHECK(std::strncmp(what, "fuzz:", 5) == 0, "message without 'source:line': %s", what);
        char *end = nullptr;
        o.bad_line = std::strtoul(what + 5, &end, 10);
        CHECK(end && end[0] == ':' && end[1] == ' ', "message without 'source:line: ': %s", what);
        for (const char *p = what; *p; ++p)
            CHECK((unsigned char)*p >= 0x20 && *p != 0x7f, "raw control byte in the message");
    }
    return o;
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

Outcome parse_reference(const std::string &text) {
    Outcome o;
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
    return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;  // the reference's duplicate check is quadratic
    const std::string text(reinterpret_cast<const char *>(data), size);
    Outcome got = parse_under_test(text), want = parse_reference(text);
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
        CHECK(g.id == w.id && g.weight == w.weight && g.zone == w.zone && g.line == w.line,
              "member %zu differs (line %zu/%zu, weight %u/%u)", i, g.line, w.line, g.weight, w.weight);
        // What the tools print reads back as the same bytes, and is one field.
        std::string printed = chring::cli::percent_encode(g.id), back, why;
        CHECK(chring::cli::percent_decode(printed, back, why) && back == g.id, "percent_encode round trip");
        CHECK(printed.find(' ') == std::string::npos && printed.find('\t') == std::string::npos &&
                  printed[0] != '#',
              "percent_encode output is not one field");
    }
    return 0;
}
