// chring diff OLD NEW: what moves between two rings (docs/migration.md).
// Both files are read by the library's ring-file parser, the diff is the
// library's (chr_diff_new): per node what it had, has, gains and loses; the
// transfer matrix; the ranges of key positions that change owner; with
// --replicas, which node copies which range from where; with --keys, which
// of the given keys move.
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "keys.hpp"
#include "options.hpp"

namespace chring::cli {
namespace {

// Rows of a long list that a table for people shows unless --all.
constexpr size_t kShownRows = 20;
// Largest flows named in a node's "gained from" / "lost to" text.
constexpr size_t kNamedFlows = 3;

struct DiffFlags {
    std::string old_file, new_file;
    RingConfig ring;
    OutputFlags output;
    std::string keys_file;
    size_t replicas = 0;
    std::string policy = "nodes";
    bool all = false;
};

// A diff freed on destruction, with its two sides' members.
class Diff {
public:
    Diff(const Snapshot &old_snap, const Snapshot &new_snap) {
        check(chr_diff_new(old_snap.get(), new_snap.get(), &diff_), "diff");
        check(chr_diff_describe(diff_, &info_), "diff");
        old_nodes_ = old_snap.nodes();
        new_nodes_ = new_snap.nodes();
        ranges_.resize(size_t(info_.ranges));
        cells_.resize(size_t(info_.cells));
        size_t written = 0;
        check(chr_diff_ranges(diff_, 0, ranges_.data(), ranges_.size(), &written), "diff");
        check(chr_diff_matrix(diff_, 0, cells_.data(), cells_.size(), &written), "diff");
    }
    ~Diff() { chr_diff_free(diff_); }
    Diff(const Diff &) = delete;
    Diff &operator=(const Diff &) = delete;

    const chr_diff *get() const { return diff_; }
    const chr_diff_info &info() const { return info_; }
    const std::vector<chr_diff_range> &ranges() const { return ranges_; }
    const std::vector<chr_diff_cell> &cells() const { return cells_; }
    const std::vector<NodeInfo> &old_nodes() const { return old_nodes_; }
    const std::vector<NodeInfo> &new_nodes() const { return new_nodes_; }
    // Whether a key owned by `from` (old index) and then `to` (new index)
    // changes owner: different ids, or an owner on one side only.
    bool moves(uint32_t from, uint32_t to) const {
        if (from == CHR_DIFF_NONE || to == CHR_DIFF_NONE) return from != to;
        uint32_t same = CHR_DIFF_NONE;
        check(chr_diff_counterpart(diff_, CHR_DIFF_OLD, from, &same), "diff");
        return same != to;
    }
    // A node of one side as printed; no node (a ring without tokens) is
    // none_cell(): "-" for people, null in JSON, an empty CSV field, since
    // "-" is also a valid id (ids are never empty).
    Cell owner(int32_t side, uint32_t index) const {
        if (index == CHR_DIFF_NONE) return none_cell();
        return text_cell(printable_id((side == CHR_DIFF_OLD ? old_nodes_ : new_nodes_)[index].id));
    }

private:
    chr_diff *diff_ = nullptr;
    chr_diff_info info_ = CHR_DIFF_INFO_INIT;
    std::vector<NodeInfo> old_nodes_, new_nodes_;
    std::vector<chr_diff_range> ranges_;
    std::vector<chr_diff_cell> cells_;
};

double width_share(uint64_t first, uint64_t last) {
    return (double(last - first) + 1.0) * 0x1p-64;
}

Table summary_table(const DiffFlags &f, const LoadedRing &a, const Diff &d) {
    const chr_diff_info &info = d.info();
    Table t;
    t.key = "diff";
    t.title = "Diff";
    t.record = true;
    t.add_field("old", "old ring", text_cell(input_name(f.old_file)));
    t.add_field("new", "new ring", text_cell(input_name(f.new_file)));
    t.add_field("options", "options", text_cell(describe_options(a.config)));
    t.add_field("old_fingerprint", "old fingerprint", hex_cell(info.old_fingerprint));
    t.add_field("new_fingerprint", "new fingerprint", hex_cell(info.new_fingerprint));
    t.add_field("old_members", "old members", count_cell(info.old_nodes));
    t.add_field("new_members", "new members", count_cell(info.new_nodes));
    t.add_field("added", "added", count_cell(info.added));
    t.add_field("removed", "removed", count_cell(info.removed));
    t.add_field("moved_pct", "key space moved", percent_cell(info.moved, 4));
    t.add_field("ranges", "ranges", count_cell(info.ranges));
    return t;
}

// "a 1.20%, b 0.31%, 2 more": the largest flows of a node, with a JSON twin
// listing them all ({"node": id or null, "share_pct": x}).
Cell flows_cell(std::vector<std::pair<double, Cell>> flows) {
    std::sort(flows.begin(), flows.end(), [](const auto &x, const auto &y) {
        return x.first != y.first ? x.first > y.first : x.second.text < y.second.text;
    });
    std::string text;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (size_t i = 0; i < flows.size(); ++i) {
        list.push_back({{"node", flows[i].second.value}, {"share_pct", percent_cell(flows[i].first, 3).value}});
        if (i < kNamedFlows)
            text += (i ? ", " : "") + flows[i].second.text + " " + format_fixed(flows[i].first * 100, 2) + "%";
    }
    if (flows.size() > kNamedFlows) text += ", " + std::to_string(flows.size() - kNamedFlows) + " more";
    if (flows.empty()) text = "-";
    return {text, list};
}

// Per node of either side, in id byte order: shares before and after, what
// it gains and from whom, what it loses and to whom.
Table nodes_table(const Diff &d) {
    const auto &old_nodes = d.old_nodes(), &new_nodes = d.new_nodes();
    std::vector<std::vector<std::pair<double, Cell>>> gained_from(new_nodes.size()), lost_to(old_nodes.size());
    std::vector<double> gained(new_nodes.size(), 0.0), lost(old_nodes.size(), 0.0);
    for (const chr_diff_cell &c : d.cells()) {
        if (!d.moves(c.from, c.to)) continue;
        if (c.to != CHR_DIFF_NONE) {
            gained[c.to] += c.fraction;
            gained_from[c.to].push_back({c.fraction, d.owner(CHR_DIFF_OLD, c.from)});
        }
        if (c.from != CHR_DIFF_NONE) {
            lost[c.from] += c.fraction;
            lost_to[c.from].push_back({c.fraction, d.owner(CHR_DIFF_NEW, c.to)});
        }
    }
    Table t;
    t.key = "nodes";
    t.title = "Nodes (share of the key space before and after, what each gains and loses)";
    t.columns = {{"node", "node", false},       {"change", "change", false},
                 {"share_before_pct", "before"}, {"share_after_pct", "after"},
                 {"gained_pct", "gained"},       {"gained_from", "gained from", false},
                 {"lost_pct", "lost"},           {"lost_to", "lost to", false}};
    // Both tables are in id byte order: merge them.
    size_t i = 0, j = 0;
    while (i < old_nodes.size() || j < new_nodes.size()) {
        const bool take_old = j == new_nodes.size() || (i < old_nodes.size() && old_nodes[i].id <= new_nodes[j].id);
        const bool take_new = i == old_nodes.size() || (j < new_nodes.size() && new_nodes[j].id <= old_nodes[i].id);
        const NodeInfo *o = take_old ? &old_nodes[i] : nullptr, *n = take_new ? &new_nodes[j] : nullptr;
        std::string change = !o ? "added" : !n ? "removed" : "";
        if (o && n) {
            if (o->weight != n->weight) change = "weight " + std::to_string(o->weight) + " -> " + std::to_string(n->weight);
            if (o->zone != n->zone) change += std::string(change.empty() ? "" : ", ") + "zone changed";
        }
        t.add_row({text_cell(printable_id((o ? o : n)->id)), text_cell(change.empty() ? "-" : change),
                   o ? percent_cell(o->ownership, 3) : none_cell(), n ? percent_cell(n->ownership, 3) : none_cell(),
                   n ? percent_cell(gained[j], 3) : none_cell(), n ? flows_cell(gained_from[j]) : none_cell(),
                   o ? percent_cell(lost[i], 3) : none_cell(), o ? flows_cell(lost_to[i]) : none_cell()});
        i += take_old;
        j += take_new;
    }
    if (d.old_nodes().empty() || d.new_nodes().empty())
        t.notes.push_back("A ring without tokens owns nothing: its side of a move is shown as '-'.");
    return t;
}

// The moving cells of the transfer matrix (for people), or every cell with
// the stays marked (for scripts).
Table matrix_table(const Diff &d, Format format) {
    Table t;
    t.key = "matrix";
    t.title = "Transfer matrix (share of the key space from each old owner to each new one)";
    t.columns = {{"from", "from", false}, {"to", "to", false}, {"share_pct", "share"}, {"moves", "moves", false, false}};
    for (const chr_diff_cell &c : d.cells()) {
        const bool moves = d.moves(c.from, c.to);
        if (!moves && format == Format::table) continue;
        t.add_row({d.owner(CHR_DIFF_OLD, c.from), d.owner(CHR_DIFF_NEW, c.to),
                   percent_cell(c.fraction, 4), {moves ? "yes" : "no", nlohmann::ordered_json(moves)}});
    }
    if (format == Format::table) {
        t.notes.push_back("Only the moving cells are listed; each node keeps the rest of its old share "
                          "(JSON and CSV list the staying cells too, with moves = false).");
        if (t.rows.empty()) t.notes.push_back("Nothing moves: both rings route every key alike.");
    }
    return t;
}

// Only the first kShownRows rows of a long table for people, unless --all.
void trim(Table &t, Format format, bool all, const char *what) {
    if (format != Format::table || all || t.rows.size() <= kShownRows) return;
    const size_t hidden = t.rows.size() - kShownRows;
    t.rows.resize(kShownRows);
    t.notes.push_back(with_commas(hidden) + " more " + what + ": --all, or --format json / csv, lists them all.");
}

Table ranges_table(const Diff &d) {
    Table t;
    t.key = "ranges";
    t.title = "Ranges of key positions that change owner (first..last, both included)";
    t.columns = {{"first", "first"}, {"last", "last"}, {"from", "from", false}, {"to", "to", false}, {"share_pct", "share"}};
    for (const chr_diff_range &r : d.ranges())
        t.add_row({hex_cell(r.first), hex_cell(r.last), d.owner(CHR_DIFF_OLD, r.from), d.owner(CHR_DIFF_NEW, r.to),
                   percent_cell(width_share(r.first, r.last), 4)});
    return t;
}

int32_t policy_of(const std::string &name) {
    int32_t policy = 0;
    if (chr_replica_policy_find(name.c_str(), &policy) == CHR_OK) return policy;
    std::string names;
    const char *n = nullptr;
    for (int32_t p = 0; chr_replica_policy_name(p, &n) == CHR_OK; ++p) names += (p ? ", " : "") + std::string(n);
    throw UsageError("--policy: unknown replica policy '" + name + "' (" + names + ")");
}

Table plan_table(const Diff &d, size_t replicas, const std::string &policy) {
    chr_plan *plan = nullptr;
    check(chr_plan_new(d.get(), policy_of(policy), replicas, &plan), "replica plan");
    std::unique_ptr<chr_plan, void (*)(chr_plan *)> hold(plan, chr_plan_free);
    chr_plan_info info = CHR_PLAN_INFO_INIT;
    check(chr_plan_describe(plan, &info), "replica plan");
    std::vector<chr_plan_range> entries(size_t(info.entries));
    size_t written = 0;
    check(chr_plan_ranges(plan, 0, entries.data(), entries.size(), &written), "replica plan");
    Table t;
    t.key = "plan";
    t.title = "Replica plan: " + std::to_string(replicas) + " replicas, policy " + policy +
              " (the node that gains each range, and the old replicas that hold it)";
    t.columns = {{"first", "first"}, {"last", "last"}, {"to", "gains", false}, {"sources", "copy from", false},
                 {"share_pct", "share"}};
    for (const chr_plan_range &e : entries) {
        std::string text;
        nlohmann::ordered_json list = nlohmann::ordered_json::array();
        for (uint32_t k = 0; k < e.source_count; ++k) {
            const Cell source = d.owner(CHR_DIFF_OLD, e.sources[k]);
            text += (k ? " " : "") + source.text;
            list.push_back(source.value);
        }
        t.add_row({hex_cell(e.first), hex_cell(e.last), d.owner(CHR_DIFF_NEW, e.to),
                   {text.empty() ? "-" : text, list}, percent_cell(width_share(e.first, e.last), 4)});
    }
    t.notes.push_back("Copies to make: " + format_fixed(info.copies * 100, 4) +
                      "% of the key space, counted once per gaining node.");
    return t;
}

// The keys of the file that change owner, with a count of all.
Table keys_table(const Diff &d, const KeySet &keys, uint64_t *moved) {
    Table t;
    t.key = "moved_keys";
    t.title = "Keys that change owner";
    t.columns = {{"key", "key", false}, {"from", "from", false}, {"to", "to", false}};
    std::vector<uint32_t> from(KeySet::kBlock), to(KeySet::kBlock);
    *moved = 0;
    keys.for_each_block([&](uint64_t, const KeyBlock &block) {
        check(chr_diff_lookup_batch(d.get(), block.data.data(), block.lens.data(), block.size(), from.data(), to.data()),
              "--keys");
        for (size_t i = 0; i < block.size(); ++i) {
            if (!d.moves(from[i], to[i])) continue;
            ++*moved;
            const std::string key(static_cast<const char *>(block.data[i]), block.lens[i]);
            t.add_row({{visible(key), nlohmann::ordered_json(key)}, d.owner(CHR_DIFF_OLD, from[i]),
                       d.owner(CHR_DIFF_NEW, to[i])});
        }
    });
    return t;
}

LoadedRing load(const std::string &file, const RingConfig &config) {
    MemberSource source;
    read_ring_file(file, source);
    return build_ring(source, config);
}

void run(DiffFlags &f, const CLI::App &cmd) {
    note_given_options(cmd, f.ring);
    const Format format = parse_format(f.output.format);
    if (f.old_file == "-" && f.new_file == "-") throw UsageError("OLD and NEW cannot both be standard input");
    if (!f.keys_file.empty() && f.keys_file == "-" && (f.old_file == "-" || f.new_file == "-"))
        throw UsageError("--keys - and a ring file on standard input cannot go together");
    if (f.replicas) policy_of(f.policy);  // a bad name is a usage error before any file is read
    LoadedRing a = load(f.old_file, f.ring), b = load(f.new_file, f.ring);
    Snapshot sa = a.ring->snapshot(), sb = b.ring->snapshot();
    const Diff d(sa, sb);

    Report report;
    report.tables.push_back(summary_table(f, a, d));
    report.tables.push_back(nodes_table(d));
    report.tables.push_back(matrix_table(d, format));
    Table ranges = ranges_table(d);
    trim(ranges, format, f.all, "ranges");
    report.tables.push_back(std::move(ranges));
    if (f.replicas) {
        Table plan = plan_table(d, f.replicas, f.policy);
        trim(plan, format, f.all, "plan entries");
        report.tables.push_back(std::move(plan));
    }
    if (!f.keys_file.empty()) {
        const KeySet keys = KeySet::from_file(f.keys_file);
        uint64_t moved = 0;
        Table moved_keys = keys_table(d, keys, &moved);
        moved_keys.title += " (" + with_commas(moved) + " of " + keys.describe() + ")";
        report.tables[0].add_field("keys", "keys read", count_cell(keys.size()));
        report.tables[0].add_field("keys_moved", "keys that move", count_cell(moved));
        trim(moved_keys, format, f.all, "keys");
        report.tables.push_back(std::move(moved_keys));
    }
    write_report(report, format, std::cout);
}

}  // namespace

void add_diff_command(CLI::App &app) {
    auto flags = std::make_shared<DiffFlags>();
    CLI::App *cmd = app.add_subcommand("diff", "What moves between two rings: per node, as a matrix, as ranges");
    cmd->footer("Example: chring diff old.ring new.ring --replicas 3 --keys hot-keys.txt\n"
                "OLD and NEW are ring files or members files ('-' = stdin for one of them); the ring "
                "options apply to a file without option directives. Both must place keys alike (same "
                "placement, hasher and seed), else exit 1. See docs/migration.md.");
    cmd->add_option("old", flags->old_file, "The ring before the change")->type_name("OLD")->required();
    cmd->add_option("new", flags->new_file, "The ring after the change")->type_name("NEW")->required();
    add_ring_options(*cmd, flags->ring);
    add_output_options(*cmd, flags->output, false);
    cmd->add_option("--keys", flags->keys_file, "Also list which of these keys (one per line) change owner")
        ->type_name("FILE");
    cmd->add_option("--replicas", flags->replicas, "Also plan the copies for N replicas per key (1..16)")
        ->type_name("N")
        ->check(whole_number(1, CHR_PLAN_REPLICAS_MAX));
    cmd->add_option("--policy", flags->policy, "Replica policy of the plan: nodes (default), zones-first, nts")
        ->type_name("NAME");
    cmd->add_flag("--all", flags->all, "List every range, plan entry and key in table output (default: the first 20)");
    cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace chring::cli
