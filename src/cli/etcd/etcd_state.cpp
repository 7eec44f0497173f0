#include "etcd_state.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
#include <set>
#include <vector>

#include "../options.hpp"
#include "../spelling.hpp"
#include "availability.hpp"
#include "etcd_client.hpp"

namespace chring::cli::etcd {

namespace {

// The name the library gives the text in its messages; replaced by keys.
constexpr const char *kName = "<etcd>";

std::string hex_byte(unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%02X", unsigned(c));
    return buf;
}

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// The option directive lines of the canonical ring file of a ring with
// options `config`, in the file's order: the directives that, read alone as
// a ring file, set a ring's options (CHR_RINGFILE_HAS_OPTIONS). The library
// says which directives those are; the etcd layout holds exactly them.
std::vector<std::string> option_lines(const RingConfig &config) {
    const std::string text = Ring(config).snapshot().export_text(0, 0);
    const chr_options base = config.options();  // its plugin_dir finds the hasher again
    std::vector<std::string> lines;
    for (size_t start = 0; start < text.size();) {
        const size_t end = std::min(text.find('\n', start), text.size());
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        chr_ring *ring = nullptr;
        chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
        chr_status st = chr_ring_new_from_text(line.data(), line.size(), "<options>", &base, &ring, &info);
        chr_ring_free(ring);
        if (st == CHR_ENOMEM) throw std::bad_alloc();
        if (st == CHR_OK && (info.flags & CHR_RINGFILE_HAS_OPTIONS)) lines.push_back(line);
    }
    return lines;
}

// The option directives' names ("%%placement", ...): each option line's first field.
const std::vector<std::string> &option_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> all;
        for (const std::string &line : option_lines(RingConfig())) all.push_back(line.substr(0, line.find(' ')));
        return all;
    }();
    return names;
}

// "%%placement, %%hasher, %%seed or %%tokens-per-weight".
std::string option_names_text() {
    const std::vector<std::string> &names = option_names();
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return text;
}

// Each options line: blank, a comment, or one of the option directives.
std::string options_problem(size_t line, std::string_view text) {
    for (size_t i = 0; i < text.size(); ++i) {
        unsigned char c = uint8_t(text[i]);
        if ((c < 0x20 && c != '\t') || c == 0x7F)
            return "line " + std::to_string(line) + ": raw control byte 0x" + hex_byte(c);
    }
    size_t start = text.find_first_not_of(" \t");
    if (start == std::string_view::npos || text[start] == '#') return "";
    size_t end = text.find_first_of(" \t", start);
    std::string_view name = text.substr(start, end == std::string_view::npos ? end : end - start);
    for (const std::string &known : option_names())
        if (name == known) return "";
    return "line " + std::to_string(line) + ": " + quoted_bounded(name) + " is not an option directive (" +
           option_names_text() + ")";
}

// What the library's last refusal says, without its "name: " prefix.
std::string last_reason(chr_status st) {
    chr_error_info error = CHR_ERROR_INFO_INIT;
    std::string reason = chr_last_error_info(&error) == CHR_OK ? error.reason : "";
    return reason.empty() ? chr_strerror(st) : reason;
}

// The layout's own rule for a key's id field, beyond the member line's: the
// key's last part stands for exactly one field of the line, so it is not
// empty and holds no blank (in a line, a blank would end the id there).
std::string id_field_problem(std::string_view field) {
    if (field.empty()) return "the id field is empty";
    const size_t blank = field.find_first_of(" \t");
    if (blank == std::string_view::npos) return "";
    return "the id field " + quoted_bounded(field) + " has a blank at byte " + std::to_string(blank + 1) +
           " (a key's id field is one field of the member line: write a space as %20)";
}

// Reads the member line "<id field> <value>" as the ring-file parser reads
// a member line (chr_ringfile_parse_member) into `m`: "" or why it is not one.
std::string member_line_problem(std::string_view id_field, std::string_view value, chr_ringfile_member &m) {
    if (std::string why = id_field_problem(id_field); !why.empty()) return why;
    std::string line;
    line.reserve(id_field.size() + 1 + value.size());
    line.append(id_field.data(), id_field.size()).append(1, ' ').append(value.data(), value.size());
    m = CHR_RINGFILE_MEMBER_INIT;
    const chr_status st = chr_ringfile_parse_member(line.data(), line.size(), kName, &m);
    if (st == CHR_ENOMEM) throw std::bad_alloc();
    return st == CHR_OK ? "" : last_reason(st);
}

// member_line_problem, throwing CliError "WHAT: reason".
chr_ringfile_member read_member_line(std::string_view id_field, std::string_view value, const std::string &what) {
    chr_ringfile_member m = CHR_RINGFILE_MEMBER_INIT;
    if (std::string why = member_line_problem(id_field, value, m); !why.empty()) throw CliError(what + ": " + why);
    return m;
}

std::string id_of(const chr_ringfile_member &m) { return std::string(reinterpret_cast<const char *>(m.id), m.id_len); }
std::string zone_of(const chr_ringfile_member &m) {
    return std::string(reinterpret_cast<const char *>(m.zone), m.zone_len);
}

}  // namespace

Layout::Layout(std::string prefix) : prefix_(std::move(prefix)) {
    if (prefix_.empty()) throw UsageError("--prefix: the prefix is empty (e.g. --prefix /chring/cache)");
    if (prefix_.back() == '/')
        throw UsageError("--prefix '" + prefix_ + "' ends with '/': give it without (the keys are PREFIX/members/ID and PREFIX/options)");
}

std::string Layout::range_end() const { return prefix_range_end(range_begin()); }

bool Layout::is_member_key(const std::string &key) const { return starts_with(key, members_dir()); }

bool Layout::is_kept_by_apply(const std::string &key) const {
    return key == guard_key() || key == panic_threshold_key() || starts_with(key, down_dir()) ||
           starts_with(key, health_dir());
}

std::string Layout::shown(std::string_view key) const {
    const std::string dir = members_dir(), begin = range_begin();
    const std::string &whole = starts_with(key, dir) ? dir : begin;
    if (!starts_with(key, whole)) return visible_bounded(key, 128);
    return visible(whole) + visible_bounded(key.substr(whole.size()), 128);
}

Built build_ring(const Layout &layout, const State &state, const char *plugin_dir) {
    Built b;
    std::string text;
    std::vector<std::string> line_key;  // what line n + 1 of `text` came from
    const std::string options_key = layout.options_key();
    const std::string dir = layout.members_dir();
    // An empty first line: no key's bytes start the text, so a member key
    // with a raw U+FEFF (put by etcdctl or an older chring) is read as on
    // any other line, not refused as a byte order mark with the whole state.
    text += '\n';
    line_key.push_back(visible(layout.prefix()));

    auto options = state.find(options_key);
    if (options != state.end()) {
        const std::string &v = options->second;
        size_t start = 0, line = 0;
        while (start < v.size()) {
            size_t end = v.find('\n', start);
            if (end == std::string::npos) end = v.size();
            std::string_view l = std::string_view(v).substr(start, end - start);
            if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
            ++line;
            if (std::string why = options_problem(line, l); !why.empty()) {
                b.error = layout.shown(options_key) + ": " + why;
                return b;
            }
            text.append(l.data(), l.size());
            text += '\n';
            line_key.push_back(layout.shown(options_key) + " (line " + std::to_string(line) + ")");
            start = end + 1;
        }
    }
    const std::string guard_key = layout.guard_key();
    const std::string health_dir = layout.health_dir(), down_dir = layout.down_dir();
    const std::string threshold_key = layout.panic_threshold_key();
    auto availability = std::make_shared<Availability>();
    if (std::string why = read_availability(layout, state, *availability); !why.empty()) {
        b.error = why;
        return b;
    }
    for (const auto &[key, value] : state) {
        if (key == options_key || key == guard_key || key == threshold_key || starts_with(key, health_dir) ||
            starts_with(key, down_dir))
            continue;
        if (!starts_with(key, dir)) {
            b.error = layout.shown(key) + ": neither a member (" + layout.shown(dir) + "ID), the options (" +
                      layout.shown(options_key) + "), the guard (" + layout.shown(guard_key) + "), a down mark (" +
                      layout.shown(down_dir) + "ID), the panic threshold (" + layout.shown(threshold_key) +
                      ") nor a health report (" + layout.shown(health_dir) + "NAME)";
            return b;
        }
        std::string_view field = std::string_view(key).substr(dir.size());
        chr_ringfile_member member = CHR_RINGFILE_MEMBER_INIT;
        if (std::string why = member_line_problem(field, value, member); !why.empty()) {
            b.error = layout.shown(key) + ": " + why;
            return b;
        }
        text.append(field.data(), field.size());
        text += ' ';
        text += value;
        text += '\n';
        line_key.push_back(layout.shown(key));
        ++b.members;
    }

    chr_options base;
    check(chr_options_init(&base, CHR_OPTIONS_VERSION), "");
    base.plugin_dir = plugin_dir;
    chr_ring *ring = nullptr;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    chr_status st = chr_ring_new_from_text(text.data(), text.size(), kName, &base, &ring, &info);
    if (st != CHR_OK) {
        // The library's reason, without its "<etcd>:LINE: ": the key replaces it.
        chr_error_info error = CHR_ERROR_INFO_INIT;
        std::string reason = chr_last_error_info(&error) == CHR_OK ? error.reason : "";
        if (reason.empty()) reason = chr_strerror(st);
        // A duplicate (id or directive) names its first key instead of the
        // first line of a text the user never sees.
        const uint32_t first = (error.flags & CHR_ERROR_HAS_OTHER_LINE) ? error.other_line : 0;
        const std::string first_line = " (first on line " + std::to_string(first) + ")";
        if (first >= 1 && first <= line_key.size() && reason.size() > first_line.size() &&
            reason.compare(reason.size() - first_line.size(), first_line.size(), first_line) == 0)
            reason.replace(reason.size() - first_line.size(), first_line.size(),
                           " (first as " + line_key[first - 1] + ")");
        const uint32_t line = info.error_line;
        const std::string where =
            line >= 1 && line <= line_key.size() ? line_key[line - 1] : visible(layout.prefix());
        b.error = where + ": " + reason;
        b.members = 0;
        return b;
    }
    b.ring = std::make_unique<Ring>(ring);
    b.fingerprint = info.fingerprint;
    std::set<std::string> members;
    for (const NodeInfo &n : b.ring->snapshot().nodes()) members.insert(n.id);
    compute_down(*availability, members);
    apply_availability(b.ring->get(), *availability);
    b.availability = std::move(availability);
    return b;
}

std::string decode_id(std::string_view id_field, const std::string &what) {
    return id_of(read_member_line(id_field, "0", what));
}

MemberEntry parse_member(const std::string &id_field, const std::string &value, const std::string &what) {
    const chr_ringfile_member m = read_member_line(id_field, value, what);
    return canonical_member(id_of(m), m.weight, zone_of(m));
}

MemberEntry canonical_member(const std::string &id, uint32_t weight, const std::string &zone) {
    MemberEntry m;
    m.id = id;
    m.zone = zone;
    m.weight = weight;
    m.id_field = canonical_field(id);
    m.value = std::to_string(weight) + (zone.empty() ? "" : " " + canonical_field(zone));
    return m;
}

std::string options_value(const Snapshot &snap) {
    std::string value;
    for (const std::string &line : option_lines(snap.options())) value += line + "\n";
    return value;
}

}  // namespace chring::cli::etcd
