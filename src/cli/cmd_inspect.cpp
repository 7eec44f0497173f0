// chring inspect: what a membership becomes as a ring — members, weights,
// tokens, the exact share of the circle each owns, the fingerprint.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "options.hpp"
#include "picture.hpp"
#include "stats.hpp"

namespace chring::cli {
namespace {

struct InspectFlags {
    MembershipFlags members;
    RingConfig ring;
    OutputFlags output;
    bool tokens = false;
};

bool any_zone(const std::vector<NodeInfo> &nodes) {
    for (const NodeInfo &n : nodes)
        if (!n.zone.empty()) return true;
    return false;
}

Table summary_table(const InspectFlags &f, const RingConfig &config, const Snapshot &snap,
                    const std::vector<NodeInfo> &nodes) {
    size_t with_tokens = 0;
    for (const NodeInfo &n : nodes) with_tokens += n.tokens > 0;
    Table t;
    t.key = "ring";
    t.title = "Ring";
    t.add_field("members", "members", text_cell(f.members.describe()));
    t.add_field("nodes", "nodes", count_cell(nodes.size()));
    t.add_field("nodes_with_tokens", "nodes with tokens", count_cell(with_tokens));
    t.add_field("tokens", "tokens", count_cell(snap.token_count()));
    t.add_field("hasher", "hasher", text_cell(config.effective_hasher()));
    t.add_field("placement", "placement", text_cell(config.placement));
    t.add_field("tokens_per_weight", "tokens per weight", count_cell(config.tokens_per_weight));
    t.add_field("seed", "seed", count_cell(config.seed));
    t.add_field("fingerprint", "fingerprint", hex_cell(snap.fingerprint()));
    return t;
}

Table nodes_table(const std::vector<NodeInfo> &nodes) {
    uint64_t total_weight = 0;
    for (const NodeInfo &n : nodes) total_weight += n.weight;
    Table t;
    t.key = "nodes";
    t.title = "Nodes (ids in byte order)";
    t.columns = {{"node", "node", false},
                 {"zone", "zone", false, any_zone(nodes)},
                 {"weight", "weight"},
                 {"tokens", "tokens"},
                 {"ownership_pct", "owns"},
                 {"fair_pct", "fair share"},
                 {"load", "owns / fair"}};
    for (const NodeInfo &n : nodes) {
        double fair = total_weight ? double(n.weight) / double(total_weight) : 0;
        t.add_row({text_cell(printable_id(n.id)), text_cell(n.zone.empty() ? "" : printable_id(n.zone)),
                   count_cell(n.weight), count_cell(n.tokens), percent_cell(n.ownership, 2),
                   percent_cell(fair, 2), fair > 0 ? ratio_cell(n.ownership / fair, 3) : none_cell()});
    }
    t.notes.push_back("'owns' is the exact fraction of the 2^64 circle whose keys go to the node; "
                      "'fair share' is its weight over the total weight.");
    return t;
}

Table balance_table(const std::vector<NodeInfo> &nodes) {
    uint64_t total_weight = 0;
    for (const NodeInfo &n : nodes) total_weight += n.weight;
    std::vector<double> loads;
    std::vector<double> tokens;
    for (const NodeInfo &n : nodes) {
        if (n.weight == 0) continue;
        loads.push_back(n.ownership / (double(n.weight) / double(total_weight)));
        tokens.push_back(n.tokens);
    }
    Spread load = spread_of(loads);
    const bool any = !loads.empty();
    Table t;
    t.key = "balance";
    t.title = "Balance (owns / fair share, nodes with tokens)";
    t.add_field("min_load", "lightest node", any ? ratio_cell(load.min, 3) : none_cell());
    t.add_field("max_load", "busiest node", any ? ratio_cell(load.max, 3) : none_cell());
    t.add_field("load_stdev", "stdev", any ? real_cell(load.stdev, 4) : none_cell());
    Spread tok = spread_of(tokens);
    if (!tokens.empty() && tok.min == tok.max && tok.min > 0)
        t.add_field("expected_stdev", "expected stdev 1/sqrt(tokens)", real_cell(1.0 / std::sqrt(tok.min), 4));
    return t;
}

Table tokens_table(const Snapshot &snap, const std::vector<NodeInfo> &nodes) {
    Table t;
    t.key = "tokens";
    t.title = "Tokens (sorted; each owns the arc from the previous token up to it)";
    t.columns = {{"index", "#"}, {"token", "token"}, {"node", "node", false}, {"arc_pct", "arc"}};
    const size_t count = snap.token_count();
    uint64_t last_value = 0;
    uint32_t last_owner = 0;
    if (count) snap.token(count - 1, last_value, last_owner);
    uint64_t previous = last_value;
    for (size_t i = 0; i < count; ++i) {
        uint64_t value;
        uint32_t owner;
        snap.token(i, value, owner);
        uint64_t arc = value - previous;  // wraps for token 0, as the ring does
        double fraction = count == 1 ? 1.0 : std::ldexp(double(arc), -64);
        t.add_row({count_cell(i), hex_cell(value), text_cell(printable_id(nodes[owner].id)),
                   percent_cell(fraction, 4)});
        previous = value;
    }
    return t;
}

void draw(const std::string &path, const Snapshot &snap, const std::vector<NodeInfo> &nodes,
          const RingConfig &config) {
    uint64_t total_weight = 0;
    for (const NodeInfo &n : nodes) total_weight += n.weight;
    BarChart bars;
    bars.title = "Share of the key space per node";
    bars.fair_label = "fair share by weight";
    for (size_t i = 0; i < nodes.size() && i < 40; ++i)
        bars.rows.push_back({printable_id(nodes[i].id), {nodes[i].ownership},
                             total_weight ? double(nodes[i].weight) / double(total_weight) : 0, i});
    const double ring_w = 420, bars_w = 480;
    const double height = std::max(500.0, bars_height(bars) + 40);
    Svg svg(ring_w + bars_w + 40, height);
    draw_ring(svg, 210, 250, 170,
              ring_picture(snap, "The ring",
                           config.placement + " placement, " + config.effective_hasher()));
    draw_bars(svg, ring_w + 10, 20, bars_w, bars);
    if (nodes.size() > 40)
        svg.text(ring_w + 10, height - 10, "(first 40 of " + std::to_string(nodes.size()) + " nodes)", 12);
    svg.save(path);
}

void run(InspectFlags &f, const CLI::App &cmd) {
    note_given_options(cmd, f.ring);
    Format format = parse_format(f.output.format);
    LoadedRing loaded = f.members.load(f.ring);
    Snapshot snap = loaded.ring->snapshot();
    std::vector<NodeInfo> nodes = snap.nodes();
    if (snap.token_count() == 0)
        warn("the ring has no node with tokens (" + loaded.why_no_tokens + "): every lookup in it fails");

    Report report;
    report.tables.push_back(summary_table(f, loaded.config, snap, nodes));
    report.tables.push_back(nodes_table(nodes));
    report.tables.push_back(balance_table(nodes));
    if (f.tokens) report.tables.push_back(tokens_table(snap, nodes));
    if (!f.output.svg.empty()) draw(f.output.svg, snap, nodes, loaded.config);
    write_report(report, format, std::cout);
}

}  // namespace

void add_inspect_command(CLI::App &app) {
    auto flags = std::make_shared<InspectFlags>();
    CLI::App *cmd = app.add_subcommand("inspect", "Members, weights, tokens, ownership per node, fingerprint");
    cmd->footer("Example: chring inspect -m members.txt --tokens");
    add_membership_options(*cmd, flags->members, true);
    add_ring_options(*cmd, flags->ring);
    cmd->add_flag("--tokens", flags->tokens, "Also dump the sorted token table");
    add_output_options(*cmd, flags->output, true);
    cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace chring::cli
