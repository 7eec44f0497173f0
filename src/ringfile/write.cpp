// The canonical ring file and its JSON twin, written from a snapshot.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "base/spelling.hpp"
#include "ringfile/ringfile.hpp"
#include "snapshot.hpp"

namespace chring {
namespace ringfile {
namespace {

// Members in canonical order: by id bytes (the snapshot's order) for
// native placement; by tag, then id, for the compatibility placements,
// whose ties follow the configuration order the tags record.
std::vector<size_t> member_order(const Snapshot &s) {
    std::vector<size_t> order(s.node_count());
    std::iota(order.begin(), order.end(), size_t(0));
    if (s.placement()->ops->mode != CHR_PLACEMENT_NATIVE)
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return s.node(a).tag < s.node(b).tag; });
    return order;
}

std::string base64(std::string_view bytes) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        uint32_t v = uint32_t(static_cast<unsigned char>(bytes[i])) << 16;
        if (i + 1 < bytes.size()) v |= uint32_t(static_cast<unsigned char>(bytes[i + 1])) << 8;
        if (i + 2 < bytes.size()) v |= uint32_t(static_cast<unsigned char>(bytes[i + 2]));
        out.push_back(digits[v >> 18 & 63]);
        out.push_back(digits[v >> 12 & 63]);
        out.push_back(i + 1 < bytes.size() ? digits[v >> 6 & 63] : '=');
        out.push_back(i + 2 < bytes.size() ? digits[v & 63] : '=');
    }
    return out;
}

// A JSON string of an escaped field: it holds no control byte and is
// valid UTF-8, so only '"' and '\' need a backslash.
void json_string(std::string &out, std::string_view text) {
    out.push_back('"');
    for (char c : text) {
        if (c == '"' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    out.push_back('"');
}

// The availability directives after %%fingerprint: none when nothing is
// marked and the threshold is the default (such a file is byte for byte
// what it was before availability existed).
template <class Out>
void availability_lines(const Snapshot &s, Out &&line) {
    if (s.availability_digest() == 0) return;
    if (s.panic_threshold() != CHR_PANIC_THRESHOLD_DEFAULT)
        line("panic-threshold", std::to_string(s.panic_threshold()));
    for (size_t i = 0; i < s.node_count(); ++i)  // in id byte order
        if (s.marked(i)) line("down", escape_field(s.node(i).id));
    line("availability", hex64(s.availability_digest()));
}

}  // namespace

std::string hex64(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string escape_field(std::string_view bytes, bool hidden) {
    std::string out;
    out.reserve(bytes.size());
    spell_field(bytes.data(), bytes.size(), hidden, [&](char c) { out.push_back(c); });
    return out;
}

std::string canonical_text(const Snapshot &s, uint32_t flags, uint64_t revision) {
    const Placement &p = *s.placement();
    std::string out;
    out.reserve(160 + s.node_count() * 24);
    out += "%%ring-file " + std::to_string(CHR_RINGFILE_FORMAT_VERSION) + "\n";
    out += std::string("%%placement ") + placement_name(p.ops->mode) + "\n";
    out += "%%hasher " + p.hasher->name + "\n";
    out += "%%seed " + std::to_string(p.seed) + "\n";
    out += "%%tokens-per-weight " + std::to_string(p.tokens_per_weight) + "\n";
    if (flags & CHR_EXPORT_REVISION) out += "%%revision " + std::to_string(revision) + "\n";
    out += "%%fingerprint " + hex64(s.fingerprint()) + "\n";
    availability_lines(s, [&](const char *name, const std::string &value) {
        out += "%%" + std::string(name) + " " + value + "\n";
    });
    for (size_t i : member_order(s)) {
        const Node &n = s.node(i);
        out += escape_field(n.id);
        out.push_back(' ');
        out += std::to_string(n.weight);
        if (!n.zone.empty()) {
            out.push_back(' ');
            out += escape_field(n.zone);
        }
        out.push_back('\n');
    }
    return out;
}

std::string json_text(const Snapshot &s, uint32_t flags, uint64_t revision) {
    const Placement &p = *s.placement();
    std::string out;
    out.reserve(256 + s.node_count() * 64);
    out += "{\"format\":\"chring-ring-file\",\"version\":" + std::to_string(CHR_RINGFILE_FORMAT_VERSION);
    out += std::string(",\"placement\":\"") + placement_name(p.ops->mode) + "\"";
    out += ",\"hasher\":";
    json_string(out, p.hasher->name);
    out += ",\"seed\":\"" + std::to_string(p.seed) + "\"";
    out += ",\"tokens_per_weight\":" + std::to_string(p.tokens_per_weight);
    if (flags & CHR_EXPORT_REVISION) out += ",\"revision\":\"" + std::to_string(revision) + "\"";
    out += ",\"fingerprint\":\"" + hex64(s.fingerprint()) + "\"";
    if (s.availability_digest() != 0) {
        out += ",\"panic_threshold\":" + std::to_string(s.panic_threshold());
        out += ",\"down\":[";
        bool first_down = true;
        for (size_t i = 0; i < s.node_count(); ++i)
            if (s.marked(i)) {
                if (!first_down) out += ",";
                first_down = false;
                json_string(out, escape_field(s.node(i).id));
            }
        out += "],\"availability\":\"" + hex64(s.availability_digest()) + "\"";
    }
    out += ",\"members\":[";
    bool first = true;
    for (size_t i : member_order(s)) {
        const Node &n = s.node(i);
        out += first ? "\n" : ",\n";
        first = false;
        out += "{\"id\":";
        json_string(out, escape_field(n.id));
        out += ",\"id_base64\":\"" + base64(n.id) + "\"";
        out += ",\"weight\":" + std::to_string(n.weight);
        out += ",\"zone\":";
        json_string(out, escape_field(n.zone));
        out += ",\"zone_base64\":\"" + base64(n.zone) + "\"}";
    }
    out += first ? "]}\n" : "\n]}\n";
    return out;
}

}  // namespace ringfile
}  // namespace chring
