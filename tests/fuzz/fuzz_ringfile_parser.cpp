// ringfile_parser: the library's ring-file reader (src/ringfile, through
// chr_ring_new_from_text and its internal parser) against a reference
// reader and writer written here from docs/ring-file.md alone.
//
// The input's first byte picks the options a plain member list is created
// with (bits 0-2) and, rarely, a line of 65,535..65,537 bytes put in front
// (bits 3-6: the line limit); the rest is the file. For every input:
//   - the internal parser and the reference agree on accept / reject and on
//     the line of the first error; the reference knows every problem of that
//     line, and the message must name one of them ("fuzz:LINE: reason", no
//     raw control byte); accepted files give the same directives (values and
//     lines) and members (ids, weights, zones, lines);
//   - chr_ring_new_from_text agrees too, including the rules a ring adds
//     (a compatibility placement's own hasher, hashers that are not
//     available, weights ketama-unweighted refuses, the token limit, a
//     %%fingerprint that does not match), and an accepted file gives the
//     ring the reference describes: options, members, weights, zones, tags
//     (= position), info fields;
//   - the availability directives (%%down, %%panic-threshold,
//     %%availability) are read as the reference reads them, mark exactly the
//     members named, and a %%availability that does not match is refused;
//   - chr_ring_export writes exactly the canonical text the reference
//     writes for that ring (directive order, member order, minimal escapes),
//     and reading the export back gives the same fingerprint and the same
//     bytes again.
// Rings over kTokenBudget tokens are not built (the parser is still
// compared): building them is what would be slow, not parsing.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "chring.h"
#include "ring_checks.hpp"
#include "ringfile/ringfile.hpp"

namespace {

using ring_checks::export_text;
using ring_checks::fingerprint_of;
using ring_checks::own_hasher;
constexpr const char *kHarness = "ringfile_parser";

constexpr size_t kTokenBudget = 1000;
constexpr const char *kName = "fuzz";

// ---- the reference reader, from docs/ring-file.md --------------------------

bool control(unsigned char c) { return c < 0x20 || c == 0x7f; }
bool blank(char c) { return c == ' ' || c == '\t'; }
int hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

struct Member {
    std::string id, zone;
    uint32_t weight = 0;
    size_t line = 0;
};

// What a file says (section 4): each directive's value and line (0: absent).
struct Ref {
    bool ok = true;
    chr_status status = CHR_OK;
    size_t line = 0;                  // the error's line (0: the file as a whole)
    std::vector<std::string> reasons;  // the message names one of these
    size_t version_line = 0, placement_line = 0, hasher_line = 0, seed_line = 0, tpw_line = 0,
           revision_line = 0, fingerprint_line = 0, panic_line = 0, availability_line = 0;
    uint32_t panic = CHR_PANIC_THRESHOLD_DEFAULT;
    uint64_t availability = 0;
    std::vector<Member> downs;  // %%down lines: the id and line (no weight, no zone)
    int32_t placement = CHR_PLACEMENT_NATIVE;
    std::string hasher;  // as written; "" when absent
    uint64_t seed = 0, revision = 0, fingerprint = 0;
    uint32_t tpw = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    std::vector<Member> members;
    size_t options_line() const {
        size_t first = 0;
        for (size_t l : {placement_line, hasher_line, seed_line, tpw_line})
            if (l && (!first || l < first)) first = l;
        return first;
    }
};

// Decodes an id or zone field (section 3): every problem in it is noted.
std::string decode(const std::string &field, std::vector<std::string> &problems) {
    std::string out;
    for (size_t i = 0; i < field.size(); ++i) {
        unsigned char c = (unsigned char)field[i];
        if (control(c)) {
            problems.push_back("raw control byte");
            continue;
        }
        if (c != '%') {
            out.push_back(char(c));
            continue;
        }
        if (i + 2 < field.size() && hex((unsigned char)field[i + 1]) >= 0 &&
            hex((unsigned char)field[i + 2]) >= 0) {
            out.push_back(char(hex((unsigned char)field[i + 1]) * 16 + hex((unsigned char)field[i + 2])));
            i += 2;
        } else {
            problems.push_back("is not followed by two hex digits");
        }
    }
    return out;
}

// A directive's number (section 4): digits, no sign, no leading zero, in
// [lo, hi]. Returns the problems (empty: `value` is set).
std::vector<std::string> number(const std::string &v, uint64_t lo, uint64_t hi, uint64_t &value) {
    if (v[0] == '-' || v[0] == '+') return {"has a sign"};
    for (char c : v)
        if (c < '0' || c > '9') return {"is not a decimal number"};
    std::vector<std::string> problems;
    if (v.size() > 1 && v[0] == '0') problems.push_back("has a leading zero");
    size_t first = v.find_first_not_of('0');
    const std::string max = "18446744073709551615";
    std::string sig = first == std::string::npos ? "0" : v.substr(first);
    bool overflow = sig.size() > max.size() || (sig.size() == max.size() && sig > max);
    if (overflow) {
        problems.push_back("overflows 64 bits");
        return problems;
    }
    value = std::strtoull(sig.c_str(), nullptr, 10);
    if (problems.empty() && (value < lo || value > hi)) problems.push_back("is out of range");
    return problems;
}

bool hasher_name(const std::string &v) {
    if (v.empty() || v.size() > CHR_HASHER_NAME_MAX) return false;
    for (char c : v)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')) return false;
    return true;
}

int32_t placement_of(const std::string &v) {
    if (v == "native") return CHR_PLACEMENT_NATIVE;
    if (v == "ketama") return CHR_PLACEMENT_KETAMA;
    if (v == "ketama-unweighted") return CHR_PLACEMENT_KETAMA_UNWEIGHTED;
    if (v == "nginx") return CHR_PLACEMENT_NGINX;
    return -1;
}

Ref reject(Ref r, size_t line, std::vector<std::string> reasons) {
    r.ok = false;
    r.status = CHR_EFORMAT;
    r.line = line;
    r.reasons = std::move(reasons);
    return r;
}

// Sections 1-4: the syntax of the whole file.
Ref read_reference(const std::string &text) {
    Ref r;
    if (text.size() > CHR_RINGFILE_SIZE_MAX) return reject(r, 0, {"bytes (limit"});
    if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) return reject(r, 1, {"byte order mark"});
    size_t nul = text.find('\0');
    if (nul != std::string::npos)
        return reject(r, 1 + size_t(std::count(text.begin(), text.begin() + long(nul), '\n')), {"NUL byte"});
    std::map<std::string, size_t> ids;
    bool any_directive = false;
    size_t n = 0;
    for (size_t start = 0; start < text.size(); ) {
        size_t lf = text.find('\n', start);
        size_t end = lf == std::string::npos ? text.size() : lf;
        std::string line = text.substr(start, end - start);
        start = end + 1;
        ++n;
        if (line.size() > CHR_RINGFILE_LINE_MAX) return reject(r, n, {"bytes long (limit 65536)"});
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::vector<std::string> f;
        for (size_t i = 0; i < line.size();) {
            if (blank(line[i])) {
                ++i;
                continue;
            }
            if (line[i] == '#') break;  // a field starting with '#': a comment
            size_t s = i;
            while (i < line.size() && !blank(line[i])) ++i;
            f.push_back(line.substr(s, i - s));
        }
        if (f.empty()) continue;
        std::vector<std::string> problems;
        if (f[0].compare(0, 2, "%%") == 0) {
            const std::string name = f[0].substr(2);
            if (!r.members.empty()) problems.push_back("after the first member");
            if (name.empty()) {
                problems.push_back("without a directive name");
                return reject(r, n, problems);
            }
            if (name == "down") {  // repeatable: one member's id a line
                if (f.size() != 2) problems.push_back(f.size() < 2 ? " needs a value" : " takes one id");
                Member d;
                d.line = n;
                if (f.size() == 2) {
                    d.id = decode(f[1], problems);
                    if (problems.empty() && d.id.empty()) problems.push_back("id is empty");
                    if (d.id.size() > CHR_NODE_ID_MAX) problems.push_back("bytes long (1..256 allowed)");
                    for (const Member &e : r.downs)
                        if (problems.empty() && e.id == d.id)
                            problems.push_back("(first on line " + std::to_string(e.line) + ")");
                }
                if (!problems.empty()) return reject(r, n, problems);
                r.downs.push_back(d);
                any_directive = true;
                continue;
            }
            size_t *slot = name == "ring-file" ? &r.version_line : name == "placement" ? &r.placement_line
                           : name == "hasher" ? &r.hasher_line : name == "seed" ? &r.seed_line
                           : name == "tokens-per-weight" ? &r.tpw_line : name == "revision" ? &r.revision_line
                           : name == "fingerprint" ? &r.fingerprint_line
                           : name == "panic-threshold" ? &r.panic_line
                           : name == "availability" ? &r.availability_line : nullptr;
            if (!slot) {
                problems.push_back("unknown directive");
                return reject(r, n, problems);
            }
            if (*slot) problems.push_back("duplicate %%" + name + " (first on line " + std::to_string(*slot) + ")");
            if (f.size() != 2) problems.push_back(f.size() < 2 ? " needs a value" : " takes one value");
            if (slot == &r.version_line && any_directive) problems.push_back("must be the first directive");
            if (f.size() == 2) {
                const std::string &v = f[1];
                uint64_t value = 0;
                std::vector<std::string> vp;
                if (slot == &r.version_line) {
                    vp = number(v, 0, UINT64_MAX, value);
                    if (vp.empty() && value != 1) vp.push_back("is not supported");
                } else if (slot == &r.placement_line) {
                    r.placement = placement_of(v);
                    if (r.placement < 0) vp.push_back("is not one of native, ketama, ketama-unweighted, nginx");
                } else if (slot == &r.hasher_line) {
                    r.hasher = v;
                    if (!hasher_name(v)) vp.push_back("is not a hasher name");
                } else if (slot == &r.seed_line) {
                    vp = number(v, 0, UINT64_MAX, r.seed);
                } else if (slot == &r.tpw_line) {
                    vp = number(v, 1, CHR_TOKENS_PER_WEIGHT_MAX, value);
                    r.tpw = uint32_t(value);
                } else if (slot == &r.revision_line) {
                    vp = number(v, 0, UINT64_MAX, r.revision);
                } else if (slot == &r.panic_line) {
                    vp = number(v, 0, 100, value);
                    r.panic = uint32_t(value);
                } else {
                    bool good = v.size() == 18 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
                    for (size_t i = 2; good && i < v.size(); ++i) good = hex((unsigned char)v[i]) >= 0;
                    uint64_t &into = slot == &r.fingerprint_line ? r.fingerprint : r.availability;
                    if (good) into = std::strtoull(v.c_str() + 2, nullptr, 16);
                    else vp.push_back("is not 0x followed by 16 hex digits");
                }
                problems.insert(problems.end(), vp.begin(), vp.end());
            }
            if (!problems.empty()) return reject(r, n, problems);
            *slot = n;
            any_directive = true;
            continue;
        }
        if (f.size() != 2 && f.size() != 3)
            return reject(r, n, {"expected 'id weight [zone]', found " + std::to_string(f.size()) +
                                 (f.size() == 1 ? " field (the weight is required)" : " fields")});
        Member m;
        m.line = n;
        m.id = decode(f[0], problems);
        const bool id_clean = problems.empty();
        if (m.id.size() > CHR_NODE_ID_MAX)
            problems.push_back("id is " + std::to_string(m.id.size()) + " bytes long (1..256 allowed)");
        const std::string &w = f[1];
        if (w.find_first_not_of("0123456789") != std::string::npos) {
            bool control = false;  // a control byte in a weight is named as such
            for (unsigned char c : w) control = control || c < 0x20 || c == 0x7f;
            problems.push_back(control ? "raw control byte" : "is not a whole number (0..1000000)");
        } else {
            size_t first = w.find_first_not_of('0');
            std::string sig = first == std::string::npos ? "0" : w.substr(first);
            if (sig.size() > 7 || std::strtoul(sig.c_str(), nullptr, 10) > CHR_WEIGHT_MAX)
                problems.push_back("is over the limit 1000000");
            else
                m.weight = uint32_t(std::strtoul(sig.c_str(), nullptr, 10));
        }
        if (f.size() == 3) {
            m.zone = decode(f[2], problems);
            if (m.zone.size() > CHR_ZONE_MAX)
                problems.push_back("zone is " + std::to_string(m.zone.size()) + " bytes long (0..64 allowed)");
        }
        auto it = ids.find(m.id);
        if (id_clean && it != ids.end()) problems.push_back("(first on line " + std::to_string(it->second) + ")");
        if (!problems.empty()) return reject(r, n, problems);
        ids.emplace(m.id, n);
        r.members.push_back(m);
    }
    for (const Member &d : r.downs)  // after the last line: each names a member
        if (!ids.count(d.id)) return reject(r, d.line, {"names no member of the file"});
    return r;
}

// ---- the ring the file describes (sections 4, 5, 7) -------------------------

struct Options {
    int32_t placement = CHR_PLACEMENT_NATIVE;
    std::string hasher = "xxh3";
    uint64_t seed = 0;
    uint32_t tpw = CHR_DEFAULT_TOKENS_PER_WEIGHT;
};

const char *placement_text(int32_t placement) {
    static const char *const names[] = {"native", "ketama", "ketama-unweighted", "nginx"};
    return names[placement];
}

// Tokens a member brings (section 7).
uint64_t tokens_of(const Options &o, uint32_t w) {
    switch (o.placement) {
    case CHR_PLACEMENT_KETAMA: return w ? 160 : 0;
    case CHR_PLACEMENT_KETAMA_UNWEIGHTED: return uint64_t(w) * 100;
    case CHR_PLACEMENT_NGINX: return uint64_t(w) * 160;
    default: return uint64_t(w) * o.tpw;
    }
}

std::map<std::string, bool> g_available;
bool available(const std::string &name) {
    auto it = g_available.find(name);
    if (it != g_available.end()) return it->second;
    uint64_t h;
    bool yes = chr_hasher_hash(name.c_str(), "", 0, 0, &h) == CHR_OK;
    if (g_available.size() < 4096) g_available[name] = yes;
    return yes;
}

// What a ring adds to the syntax: every error it may report instead of
// building the ring (any one of them is right: the document orders the
// line checks, not these).
struct Refusal {
    chr_status status;
    size_t line;
    const char *reason;
};

std::vector<Refusal> ring_refusals(const Ref &r, const Options &o, uint64_t &tokens) {
    std::vector<Refusal> out;
    tokens = 0;
    if (r.options_line()) {
        if (o.placement != CHR_PLACEMENT_NATIVE && !r.hasher.empty() && r.hasher != own_hasher(o.placement))
            out.push_back({CHR_EFORMAT, r.hasher_line, "is defined with hasher"});
        else if (!available(o.hasher))
            out.push_back({CHR_ENOHASHER, r.hasher_line ? r.hasher_line : r.options_line(),
                           ": no hasher of that name is registered"});
    }
    for (const Member &m : r.members) {
        if (o.placement == CHR_PLACEMENT_KETAMA_UNWEIGHTED && m.weight > 1) {
            out.push_back({CHR_EFORMAT, m.line, "is out of range for placement ketama-unweighted"});
            break;
        }
        tokens += tokens_of(o, m.weight);
        if (tokens > CHR_TOKENS_MAX) {
            out.push_back({CHR_EFORMAT, m.line, "tokens (the limit"});
            break;
        }
    }
    return out;
}

// ---- the reference writer (section 6) --------------------------------------

// Length of the valid UTF-8 sequence (U+0080..U+10FFFF, shortest form, no
// surrogate) starting at s[i], or 0.
size_t utf8_at(const std::string &s, size_t i) {
    unsigned char c = (unsigned char)s[i];
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || i + len > s.size()) return 0;
    uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; ++k) {
        unsigned char d = (unsigned char)s[i + k];
        if ((d & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (d & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    return len;
}

std::string canonical_field(const std::string &bytes) {
    std::string out;
    for (size_t i = 0; i < bytes.size();) {
        unsigned char c = (unsigned char)bytes[i];
        size_t len = c < 0x80 ? 1 : utf8_at(bytes, i);
        if (len == 3 && bytes.compare(i, 3, "\xEF\xBB\xBF") == 0) len = 0;  // U+FEFF: each byte %XX
        if (len == 0 || control(c) || c == ' ' || c == '%' || (c == '#' && i == 0)) {
            char esc[4];
            std::snprintf(esc, sizeof esc, "%%%02X", c);
            out += esc;
            ++i;
            continue;
        }
        out.append(bytes, i, len);
        i += len;
    }
    return out;
}

// The availability part of the state a ring shows: what the canonical text
// writes after %%fingerprint.
struct Marks {
    uint32_t panic = CHR_PANIC_THRESHOLD_DEFAULT;
    std::vector<std::string> down;  // in id byte order
    uint64_t digest = 0;
};

std::string canonical(const Options &o, std::vector<Member> members, uint64_t fingerprint, bool with_revision,
                      uint64_t revision, const Marks &marks) {
    char fp[32];
    std::snprintf(fp, sizeof fp, "0x%016llx", (unsigned long long)fingerprint);
    std::string t = "%%ring-file 1\n%%placement " + std::string(placement_text(o.placement)) + "\n%%hasher " +
                    o.hasher + "\n%%seed " + std::to_string(o.seed) + "\n%%tokens-per-weight " +
                    std::to_string(o.tpw) + "\n";
    if (with_revision) t += "%%revision " + std::to_string(revision) + "\n";
    t += "%%fingerprint " + std::string(fp) + "\n";
    if (marks.digest) {
        if (marks.panic != CHR_PANIC_THRESHOLD_DEFAULT) t += "%%panic-threshold " + std::to_string(marks.panic) + "\n";
        for (const std::string &id : marks.down) t += "%%down " + canonical_field(id) + "\n";
        char digest[32];
        std::snprintf(digest, sizeof digest, "0x%016llx", (unsigned long long)marks.digest);
        t += "%%availability " + std::string(digest) + "\n";
    }
    if (o.placement == CHR_PLACEMENT_NATIVE)  // compatibility placements: file order (= tag order)
        std::sort(members.begin(), members.end(), [](const Member &a, const Member &b) { return a.id < b.id; });
    for (const Member &m : members) {
        t += canonical_field(m.id) + " " + std::to_string(m.weight);
        if (!m.zone.empty()) t += " " + canonical_field(m.zone);
        t += "\n";
    }
    return t;
}

// ---- checks ------------------------------------------------------------------

void check_message(const Ref &want, const char *what) {
    const char *msg = chr_last_error();
    std::string prefix = want.line ? std::string(kName) + ":" + std::to_string(want.line) + ": " : std::string(kName) + ": ";
    CHECK(std::strncmp(msg, prefix.c_str(), prefix.size()) == 0, "%s: message '%s' does not start '%s'", what, msg,
          prefix.c_str());
    bool named = false;
    for (const std::string &reason : want.reasons) named = named || std::strstr(msg, reason.c_str());
    CHECK(named, "%s: message '%s' names none of the %zu problems of line %zu (first: '%s')", what, msg,
          want.reasons.size(), want.line, want.reasons[0].c_str());
    for (const char *p = msg; *p; ++p) CHECK(!control((unsigned char)*p), "%s: raw control byte in the message", what);
    // The same failure as data: the file's name and line, the reason after the prefix.
    chr_error_info info = CHR_ERROR_INFO_INIT;
    CHECK(chr_last_error_info(&info) == CHR_OK && (info.flags & CHR_ERROR_HAS_LINE) && info.line == want.line &&
              std::strcmp(info.source, kName) == 0 && std::strcmp(info.reason, msg + prefix.size()) == 0,
          "%s: the error record (line %u, source '%s', reason '%s') is not the message's", what, info.line,
          info.source, info.reason);
}

// The internal parser against the reference (syntax only).
void check_parser(const std::string &text, const Ref &want) {
    chring::ringfile::File f;
    size_t line = 12345;
    chr_status st = chring::ringfile::parse(text, kName, "chr_ring_new_from_text", f, &line);
    CHECK((st == CHR_OK) == want.ok, "parser %s, reference %s (reference line %zu, parser line %zu)",
          st == CHR_OK ? "accepts" : "rejects", want.ok ? "accepts" : "rejects", want.line, line);
    if (!want.ok) {
        CHECK(st == CHR_EFORMAT && line == want.line, "parser: status %d line %zu, reference line %zu", st, line,
              want.line);
        check_message(want, "parser");
        return;
    }
    CHECK(line == 0, "error line %zu on success", line);
    CHECK(f.format_line == want.version_line && f.placement_line == want.placement_line &&
              f.hasher_line == want.hasher_line && f.seed_line == want.seed_line && f.tokens_line == want.tpw_line &&
              f.revision_line == want.revision_line && f.fingerprint_line == want.fingerprint_line &&
              f.options_line == want.options_line(),
          "directive lines differ");
    CHECK(f.format_version == 1 && (!want.placement_line || f.placement == want.placement) &&
              f.hasher == want.hasher && f.seed == want.seed && f.tokens_per_weight == want.tpw &&
              f.revision == want.revision && f.fingerprint == want.fingerprint,
          "directive values differ");
    CHECK(f.panic_line == want.panic_line && f.panic_threshold == want.panic &&
              f.availability_line == want.availability_line && f.availability == want.availability &&
              f.down.size() == want.downs.size(),
          "availability directives differ");
    for (size_t i = 0; i < f.down.size(); ++i)
        CHECK(f.down[i].id == want.downs[i].id && f.down[i].line == want.downs[i].line, "%%down %zu differs", i);
    CHECK(f.members.size() == want.members.size(), "%zu members, reference %zu", f.members.size(),
          want.members.size());
    for (size_t i = 0; i < f.members.size(); ++i) {
        const chring::ringfile::Member &g = f.members[i];
        const Member &w = want.members[i];
        CHECK(g.id == w.id && g.zone == w.zone && g.weight == w.weight && g.line == w.line,
              "member %zu differs (line %zu/%zu, weight %u/%u)", i, g.line, w.line, g.weight, w.weight);
    }
}

// The ring a file gave: members, options (through the export), info.
void check_ring(const chr_ring *ring, const chr_ringfile_info &info, const Ref &want, const Options &o) {
    const uint64_t fp = fingerprint_of(ring);
    CHECK(info.fingerprint == fp && info.error_line == 0 && info.format_version == 1 &&
              info.members == want.members.size() && info.added == want.members.size() && info.removed == 0 &&
              info.reserved0 == 0,
          "info: fingerprint %llx/%llx members %u/%zu added %u", (unsigned long long)info.fingerprint,
          (unsigned long long)fp, info.members, want.members.size(), info.added);
    const uint32_t flags = (want.revision_line ? CHR_RINGFILE_HAS_REVISION : 0) |
                           (want.fingerprint_line ? CHR_RINGFILE_HAS_FINGERPRINT : 0) |
                           (want.options_line() ? CHR_RINGFILE_HAS_OPTIONS : 0) |
                           (!want.downs.empty() || want.panic_line || want.availability_line
                                ? CHR_RINGFILE_HAS_AVAILABILITY : 0);
    CHECK(info.flags == flags && info.revision == want.revision, "info flags %x, want %x; revision", info.flags,
          flags);
    if (want.fingerprint_line) CHECK(fp == want.fingerprint, "accepted a %%fingerprint that does not match");
    // The availability state: the members named down, the threshold, the digest.
    Marks marks;
    marks.panic = want.panic;
    for (const Member &d : want.downs) marks.down.push_back(d.id);
    std::sort(marks.down.begin(), marks.down.end());
    chr_availability_info avail = CHR_AVAILABILITY_INFO_INIT;
    CHECK(chr_ring_availability(ring, &avail) == CHR_OK && avail.down == marks.down.size() &&
              avail.panic_threshold == want.panic && info.availability == avail.digest &&
              info.down == want.downs.size() && info.panic_threshold == want.panic &&
              (avail.digest == 0) == (marks.down.empty() && want.panic == CHR_PANIC_THRESHOLD_DEFAULT),
          "availability: %u down, threshold %u, digest %llx/%llx", avail.down, avail.panic_threshold,
          (unsigned long long)avail.digest, (unsigned long long)info.availability);
    marks.digest = avail.digest;
    if (want.availability_line) CHECK(avail.digest == want.availability, "accepted an %%availability that does not match");

    // Members in id order, each with tag = its position in the file.
    std::vector<size_t> order(want.members.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return want.members[a].id < want.members[b].id; });
    std::vector<chr_node_ref> refs(want.members.size() + 1);
    size_t count = 0;
    CHECK(chr_ring_nodes(ring, refs.data(), refs.size(), &count) == CHR_OK && count == want.members.size(),
          "chr_ring_nodes: %zu nodes, want %zu", count, want.members.size());
    chr_snapshot *snap = nullptr;
    CHECK(chr_ring_snapshot(ring, &snap) == CHR_OK, "chr_ring_snapshot");
    for (size_t i = 0; i < count; ++i) {
        const Member &m = want.members[order[i]];
        const chr_node_ref &r = refs[i];
        uint32_t marked = 2;
        CHECK(chr_snapshot_marked_down(snap, i, &marked) == CHR_OK &&
                  marked == (std::binary_search(marks.down.begin(), marks.down.end(), m.id) ? 1u : 0u),
              "node %zu (line %zu): marked %u", i, m.line, marked);
        CHECK(std::string(reinterpret_cast<const char *>(r.id), r.id_len) == m.id && r.weight == m.weight &&
                  std::string(reinterpret_cast<const char *>(r.zone), r.zone_len) == m.zone && r.tag == order[i],
              "node %zu (line %zu) differs: weight %u/%u tag %llu/%zu", i, m.line, r.weight, m.weight,
              (unsigned long long)r.tag, order[i]);
    }

    chr_snapshot_release(snap);
    // The canonical text, byte for byte; with a revision too.
    std::string text = export_text(ring, 0, 0);
    std::string expect = canonical(o, want.members, fp, false, 0, marks);
    CHECK(text == expect, "export differs from the reference's canonical text:\n%s---\n%s", text.c_str(),
          expect.c_str());
    const uint64_t rev = want.revision_line ? want.revision : fp;
    CHECK(export_text(ring, CHR_EXPORT_REVISION, rev) == canonical(o, want.members, fp, true, rev, marks),
          "export with a revision differs");

    // export(parse(x)) reads back as the same ring and writes the same bytes.
    Ref again = read_reference(text);
    CHECK(again.ok && again.members.size() == want.members.size() && again.fingerprint == fp,
          "the reference does not read the export back");
    chr_ring *back = nullptr;
    chr_ringfile_info info2 = CHR_RINGFILE_INFO_INIT;
    CHECK(chr_ring_new_from_text(text.data(), text.size(), kName, nullptr, &back, &info2) == CHR_OK,
          "the export does not read back");
    CHECK(fingerprint_of(back) == fp && export_text(back, 0, 0) == text, "the export reads back differently");
    chr_ring_free(back);
}

// A file refused for the value on `line` (%%fingerprint, %%availability):
// the message names the line and `reason`, and the same file with that line
// made a comment builds a ring whose value (value_of) is not `claimed` and
// is the one the message names.
void check_mismatch(const std::string &text, const Ref &want, size_t line, const char *reason,
                    const chr_options *base, uint64_t claimed,
                    uint64_t (*value_of)(chr_ring *, const chr_ringfile_info &)) {
    Ref as = want;
    as.line = line;
    as.reasons = {reason};
    check_message(as, "chr_ring_new_from_text");
    std::string message = chr_last_error();
    std::string without = text;
    size_t at = 0;
    for (size_t l = 1; l < line; ++l) at = without.find('\n', at) + 1;
    without[without.find("%%", at)] = '#';  // the line becomes a comment
    chr_ring *other = nullptr;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    CHECK(chr_ring_new_from_text(without.data(), without.size(), kName, base, &other, &info) == CHR_OK,
          "the file without line %zu is refused", line);
    const uint64_t value = value_of(other, info);
    char got[24];
    std::snprintf(got, sizeof got, "(0x%016llx)", (unsigned long long)value);
    CHECK(value != claimed && message.find(got) != std::string::npos,
          "the mismatch message '%s' does not name the ring's value %s", message.c_str(), got);
    chr_ring_free(other);
}

chr_options g_bases[5];

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
#ifdef CHR_FUZZ_PLUGIN_PATH
    setenv("CHRING_PLUGIN_PATH", CHR_FUZZ_PLUGIN_PATH, 0);  // the build's plugins: md5, crc32, ...
#endif
    for (chr_options &b : g_bases) b = CHR_OPTIONS_INIT;
    g_bases[1].tokens_per_weight = 1;
    g_bases[1].seed = 7;
    g_bases[2].placement = CHR_PLACEMENT_KETAMA;
    g_bases[3].placement = CHR_PLACEMENT_KETAMA_UNWEIGHTED;
    g_bases[4].placement = CHR_PLACEMENT_NGINX;
    for (const char *h : {"md5", "crc32"})
        if (!available(h)) {
            std::fprintf(stderr, "ringfile_parser: hasher %s is not available (CHRING_PLUGIN_PATH)\n", h);
            std::abort();
        }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || size > (1 << 16)) return 0;
    const uint8_t control_byte = data[0];
    std::string text(reinterpret_cast<const char *>(data + 1), size - 1);
    // Bits 3-6 = 1, 2, 3: a comment line of 65,536 bytes (the limit),
    // 65,537 (one over), or 65,535 and a CR (the CR counts: at the limit),
    // first. (Rarely: such inputs are slow.)
    static const size_t kLong[] = {0, CHR_RINGFILE_LINE_MAX, CHR_RINGFILE_LINE_MAX + 1, CHR_RINGFILE_LINE_MAX - 1};
    if (unsigned pick = (control_byte >> 3) & 15; pick >= 1 && pick <= 3) {
        const size_t len = kLong[pick];
        std::string line = "#" + std::string(len - 1, 'x') + (len < CHR_RINGFILE_LINE_MAX ? "\r\n" : "\n");
        text = line + text;
    }
    const unsigned base_pick = control_byte & 7;
    const chr_options *base = base_pick < 5 && base_pick ? &g_bases[base_pick] : nullptr;

    Ref want = read_reference(text);
    check_parser(text, want);

    // The options of the ring (section 4).
    Options o;
    if (want.ok && want.options_line()) {
        o.placement = want.placement_line ? want.placement : CHR_PLACEMENT_NATIVE;
        o.hasher = !want.hasher.empty() ? want.hasher : own_hasher(o.placement);
        o.seed = want.seed;
        o.tpw = want.tpw;
    } else if (base) {
        o.placement = base->placement;
        o.hasher = own_hasher(o.placement);
        o.seed = base->seed;
        o.tpw = base->tokens_per_weight;
    }
    if (o.placement != CHR_PLACEMENT_NATIVE) {  // ignored: the ring keeps the defaults
        o.seed = 0;
        o.tpw = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    }
    uint64_t tokens = 0;
    std::vector<Refusal> refusals;
    if (want.ok) {
        refusals = ring_refusals(want, o, tokens);
        if (refusals.empty() && tokens > kTokenBudget) return 0;  // valid, but slow to build
    }

    chr_ring *ring = reinterpret_cast<chr_ring *>(1);
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_status st = chr_ring_new_from_text(text.data(), text.size(), kName, base, &ring, &info);
    if (!want.ok) {
        CHECK(st == CHR_EFORMAT && info.error_line == want.line && ring == nullptr,
              "chr_ring_new_from_text: status %d line %u, reference: CHR_EFORMAT on line %zu", st, info.error_line,
              want.line);
        check_message(want, "chr_ring_new_from_text");
        return 0;
    }
    if (!refusals.empty()) {
        CHECK(st != CHR_OK && ring == nullptr, "accepted a file the ring must refuse (%s, line %zu)",
              refusals[0].reason, refusals[0].line);
        bool matched = false;
        for (const Refusal &r : refusals) {
            if (st != r.status || info.error_line != r.line) continue;
            Ref as = want;
            as.line = r.line;
            as.reasons = {r.reason};
            check_message(as, "chr_ring_new_from_text");
            matched = true;
        }
        CHECK(matched, "refused with status %d on line %u, not as the reference says (%d on line %zu: %s)", st,
              info.error_line, refusals[0].status, refusals[0].line, refusals[0].reason);
        return 0;
    }
    // A %%fingerprint or %%availability that does not match: without that
    // line the file builds a ring with another value, the one the message names.
    if (st == CHR_EFORMAT && want.fingerprint_line && info.error_line == want.fingerprint_line) {
        CHECK(ring == nullptr, "out set on failure");
        check_mismatch(text, want, want.fingerprint_line, "does not match the ring the file describes", base,
                       want.fingerprint, [](chr_ring *r, const chr_ringfile_info &) { return fingerprint_of(r); });
        return 0;
    }
    if (st == CHR_EFORMAT && want.availability_line && info.error_line == want.availability_line) {
        CHECK(ring == nullptr, "out set on failure");
        check_mismatch(text, want, want.availability_line,
                       "does not match the availability state the file describes", base, want.availability,
                       [](chr_ring *, const chr_ringfile_info &i) { return i.availability; });
        return 0;
    }
    CHECK(st == CHR_OK, "chr_ring_new_from_text refused (%d, line %u) a file the reference accepts", st,
          info.error_line);
    check_ring(ring, info, want, o);
    chr_ring_free(ring);
    return 0;
}
