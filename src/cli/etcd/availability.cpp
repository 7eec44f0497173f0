#include "availability.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <new>

#include "../spelling.hpp"
#include "quorum.hpp"

namespace chring::cli::etcd {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// A note is one line of text: no raw control byte but a tab, bounded.
std::string note_problem(std::string_view note) {
    if (note.size() > kNoteMax)
        return "the note is " + std::to_string(note.size()) + " bytes, over " + std::to_string(kNoteMax);
    for (size_t i = 0; i < note.size(); ++i) {
        const unsigned char c = uint8_t(note[i]);
        if ((c < 0x20 && c != '\t') || c == 0x7F) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "%02X", unsigned(c));
            return std::string("the note has a raw control byte 0x") + hex + " at byte " + std::to_string(i + 1) +
                   " (a down mark's value is one line of text)";
        }
    }
    return "";
}

// "50", " 50\n": a whole percent 0..100, blanks around it allowed.
bool parse_percent(std::string_view text, uint32_t &out) {
    const size_t start = text.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos) return false;
    const size_t end = text.find_last_not_of(" \t\r\n") + 1;
    const std::string_view digits = text.substr(start, end - start);
    if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string_view::npos)
        return false;
    const unsigned long v = std::stoul(std::string(digits));
    if (v > 100) return false;
    out = uint32_t(v);
    return true;
}

// A checker's value: {"down": [id field, ...], ...}; "" or why it is ignored.
std::string read_view(const std::string &value, CheckerView &v) {
    nlohmann::json j = nlohmann::json::parse(value, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return "not a JSON object";
    auto down = j.find("down");
    if (down == j.end() || !down->is_array()) return "no \"down\" list";
    for (const nlohmann::json &field : *down) {
        if (!field.is_string()) return "an entry of \"down\" is not a string";
        try {
            v.down.insert(decode_id(field.get<std::string>(), "\"down\" entry " + quoted_bounded(field.get<std::string>())));
        } catch (const CliError &e) {
            return e.what();
        }
    }
    if (auto h = j.find("host"); h != j.end() && h->is_string()) v.host = h->get<std::string>();
    if (auto u = j.find("updated"); u != j.end() && u->is_string()) v.updated = u->get<std::string>();
    if (auto p = j.find("pid"); p != j.end() && p->is_number_integer()) v.pid = p->get<int64_t>();
    return "";
}

std::string percent(double share) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", share * 100.0);
    std::string s = buf;
    while (s.back() == '0') s.pop_back();  // 75.00 -> 75, 62.50 -> 62.5
    if (s.back() == '.') s.pop_back();
    return s + "%";
}

}  // namespace

bool DownMember::by_checkers() const { return checkers > 0 && votes >= quorum_of(checkers); }

std::string DownMember::why() const {
    std::string why;
    if (marked) why = "operator mark (" + visible_bounded(note, 128) + ")";
    if (by_checkers())
        why += (why.empty() ? "" : "; ") + std::string("checkers ") + std::to_string(votes) + "/" +
               std::to_string(checkers);
    return why;
}

std::vector<std::string> Availability::ignored() const {
    std::vector<std::string> out;
    for (const CheckerView &v : checkers)
        if (!v.readable) out.push_back(v.key + ": " + v.problem);
    return out;
}

std::string Availability::down_text() const {
    std::string text;
    for (const DownMember &d : down) text += (text.empty() ? "" : ", ") + printable_id(d.id);
    return text.empty() ? "none" : text;
}

const DownMember *Availability::find(const std::string &id) const {
    for (const DownMember &d : down)
        if (d.id == id) return &d;
    return nullptr;
}

std::string read_availability(const Layout &layout, const State &state, Availability &out) {
    out = Availability();
    const std::string down_dir = layout.down_dir(), health_dir = layout.health_dir();
    if (auto t = state.find(layout.panic_threshold_key()); t != state.end()) {
        if (!parse_percent(t->second, out.threshold))
            return layout.shown(t->first) + ": " + quoted_bounded(t->second) +
                   " is not a whole percent 0..100 (the panic threshold)";
        out.threshold_set = true;
    }
    for (auto it = state.lower_bound(down_dir); it != state.end() && starts_with(it->first, down_dir); ++it) {
        OperatorMark m;
        m.key = it->first;
        m.note = it->second;
        const std::string shown = layout.shown(it->first);
        try {
            m.id = decode_id(std::string_view(it->first).substr(down_dir.size()), shown);
        } catch (const CliError &e) {
            return e.what();
        }
        if (std::string why = note_problem(m.note); !why.empty()) return shown + ": " + why;
        out.marks.push_back(std::move(m));
    }
    for (auto it = state.lower_bound(health_dir); it != state.end() && starts_with(it->first, health_dir); ++it) {
        CheckerView v;
        v.key = layout.shown(it->first);
        std::string why;
        const std::string field = it->first.substr(health_dir.size());
        if (!decode_field(field, "name", v.name, why)) v.name = field;
        v.problem = read_view(it->second, v);
        v.readable = v.problem.empty();
        if (!v.readable) v.down.clear();
        out.checkers.push_back(std::move(v));
    }
    return "";
}

void compute_down(Availability &a, const std::set<std::string> &members) {
    std::vector<std::set<std::string>> views;
    for (const CheckerView &v : a.checkers)
        if (v.readable) views.push_back(v.down);
    std::map<std::string, DownMember> down;
    for (const auto &[id, votes] : quorum_down(views)) {
        if (!members.count(id)) continue;
        DownMember &d = down[id];
        d.id = id;
        d.votes = votes;
        d.checkers = views.size();
    }
    for (const OperatorMark &m : a.marks) {
        if (!members.count(m.id)) continue;  // a member removed while marked
        DownMember &d = down[m.id];
        d.id = m.id;
        d.marked = true;
        d.note = m.note;
        d.checkers = views.size();
        d.votes = 0;
        for (const std::set<std::string> &v : views) d.votes += v.count(m.id);
    }
    a.down.clear();
    for (auto &[id, d] : down) a.down.push_back(std::move(d));
}

void apply_availability(chr_ring *ring, Availability &a) {
    std::vector<const void *> ids;
    std::vector<size_t> lens;
    for (const DownMember &d : a.down) {
        ids.push_back(d.id.data());
        lens.push_back(d.id.size());
    }
    const chr_status st = chr_ring_set_availability(ring, ids.data(), lens.data(), ids.size(), a.threshold);
    if (st == CHR_ENOMEM) throw std::bad_alloc();
    check(st, "the availability state");
    a.info = CHR_AVAILABILITY_INFO_INIT;
    check(chr_ring_availability(ring, &a.info), "the availability state");
}

std::string weight_text(const chr_availability_info &info) {
    const double share = info.total_weight ? double(info.down_weight) / double(info.total_weight) : 0.0;
    return std::to_string(info.down_weight) + " of " + std::to_string(info.total_weight) + " members' weight down (" +
           percent(share) + (info.panic ? " > " : " <= ") + std::to_string(info.panic_threshold) + "%)";
}

}  // namespace chring::cli::etcd
