#include "guard.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "../options.hpp"
#include "../spelling.hpp"
#include "etcd_client.hpp"

namespace chring::cli::etcd {

namespace {

std::string percent(double share) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", share * 100.0);
    return buf;
}

// "50%", "12.5%" or "0.5": a share of the key space, 0..1; -1 when not one.
double parse_share(const std::string &text) {
    if (text.empty()) return -1;
    const bool pct = text.back() == '%';
    const std::string number = pct ? text.substr(0, text.size() - 1) : text;
    if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos ||
        std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' || number.back() == '.')
        return -1;
    double v = std::strtod(number.c_str(), nullptr) / (pct ? 100.0 : 1.0);
    return v >= 0 && v <= 1 ? v : -1;
}

size_t serving(const std::vector<NodeInfo> &nodes) {
    return size_t(std::count_if(nodes.begin(), nodes.end(), [](const NodeInfo &n) { return n.weight > 0; }));
}

const char *const kNone = "(none)";

}  // namespace

void add_guard_flags(CLI::App &cmd, GuardFlags &flags) {
    cmd.add_option("--min-members", flags.min_members,
                   "Refuse a ring with fewer members of weight > 0 than this (0 turns the guard off)")
        ->type_name("N")
        ->check(whole_number(0, CHR_NODES_MAX))
        ->capture_default_str();
    cmd.add_option("--max-moved", flags.max_moved_text,
                   "Refuse a change that moves more than this share of the keys (50% or 0.5; 100% turns it off)")
        ->type_name("SHARE")
        ->check(CLI::Validator(
            [](std::string &text) -> std::string {
                return parse_share(text) < 0 ? "'" + text + "' is not a share of the keys (0%..100%, or 0..1)"
                                             : std::string();
            },
            "", "SHARE"))
        ->capture_default_str()
        ->each([&flags](const std::string &text) { flags.max_moved = parse_share(text); });
}

ChangeEffect measure(const Snapshot *before, const Snapshot &after) {
    ChangeEffect e;
    const std::vector<NodeInfo> new_nodes = after.nodes();
    e.members_after = serving(new_nodes);
    e.fingerprint_after = after.fingerprint();
    if (!before) {
        e.moved = e.members_after ? 1.0 : 0.0;
        return e;
    }
    e.has_before = true;
    const std::vector<NodeInfo> old_nodes = before->nodes();
    e.members_before = serving(old_nodes);
    e.fingerprint_before = before->fingerprint();
    chr_diff *diff = nullptr;
    const chr_status st = chr_diff_new(before->get(), after.get(), &diff);
    if (st == CHR_EINCOMPATIBLE) {  // another placement, hasher or seed
        e.options_changed = true;
        e.moved = 1.0;
        return e;
    }
    check(st, "diff");
    struct Freed {
        chr_diff *d;
        ~Freed() { chr_diff_free(d); }
    } freed{diff};
    chr_diff_info info = CHR_DIFF_INFO_INIT;
    check(chr_diff_describe(diff, &info), "diff");
    e.moved = info.moved;
    std::vector<chr_diff_cell> cells(size_t(info.cells));
    size_t written = 0;
    check(chr_diff_matrix(diff, 0, cells.data(), cells.size(), &written), "diff");
    for (const chr_diff_cell &c : cells) {
        const std::string from = c.from == CHR_DIFF_NONE ? kNone : old_nodes[c.from].id;
        const std::string to = c.to == CHR_DIFF_NONE ? kNone : new_nodes[c.to].id;
        if (from == to) continue;
        e.flows.push_back({c.from == CHR_DIFF_NONE ? kNone : printable_id(from),
                           c.to == CHR_DIFF_NONE ? kNone : printable_id(to), c.fraction});
    }
    std::stable_sort(e.flows.begin(), e.flows.end(), [](const Flow &a, const Flow &b) { return a.share > b.share; });
    return e;
}

std::string describe_sides(const ChangeEffect &e) {
    if (!e.has_before) return std::to_string(e.members_after) + " members; fingerprint " + hex64(e.fingerprint_after);
    return "members " + std::to_string(e.members_before) + " -> " + std::to_string(e.members_after) + "; fingerprint " +
           hex64(e.fingerprint_before) + " -> " + hex64(e.fingerprint_after);
}

std::string describe(const ChangeEffect &e) {
    if (!e.has_before) return "the first ring: " + describe_sides(e);
    if (e.members_before == 0) return "gives the keys their first owners; " + describe_sides(e);
    if (e.options_changed) return "moves up to every key (the placement, hasher or seed changes); " + describe_sides(e);
    return "moves " + percent(e.moved) + " of the keys; " + describe_sides(e);
}

std::vector<std::string> flow_lines(const ChangeEffect &e, size_t max) {
    std::vector<std::string> lines;
    for (size_t i = 0; i < e.flows.size() && i < max; ++i)
        lines.push_back("  " + e.flows[i].from + " -> " + e.flows[i].to + ": " + percent(e.flows[i].share) +
                        " of the keys");
    if (e.flows.size() > max) lines.push_back("  (" + std::to_string(e.flows.size() - max) + " smaller flows)");
    return lines;
}

std::string violation(const GuardFlags &flags, const ChangeEffect &e) {
    if (e.members_after < flags.min_members)
        return std::to_string(e.members_after) + (e.members_after == 1 ? " member" : " members") +
               " of weight > 0, fewer than --min-members " + std::to_string(flags.min_members);
    // A ring without members before has no key to disrupt: the first
    // members of a new ring are not a move.
    if (e.has_before && e.members_before > 0 && e.moved > flags.max_moved + 1e-12)
        return (e.options_changed ? std::string("the placement, hasher or seed changes (every key may move)")
                                  : "moves " + percent(e.moved) + " of the keys") +
               ", over --max-moved " + percent(flags.max_moved);
    return "";
}

}  // namespace chring::cli::etcd
