// chring inspect: what a membership becomes as a ring — members, weights,
// tokens, the exact share of the circle each owns, the fingerprint.
#include <iostream>
#include <memory>

#include "availability.hpp"
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
    size_t replicas = 3;
    std::string policy;  // empty: zones-first when the ring has zones, else nodes
};

// A node holding a copy of more than this times its weight's share of the
// copies is reported (a zone with less weight than the others).
constexpr double kReplicaShareWarn = 1.5;

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
    add_availability_fields(t, snap.availability());
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
    const bool marks = any_marked(nodes);
    if (marks) t.columns.push_back({"state", "state", false});
    for (const NodeInfo &n : nodes) {
        double fair = total_weight ? double(n.weight) / double(total_weight) : 0;
        std::vector<Cell> row = {text_cell(printable_id(n.id)), text_cell(n.zone.empty() ? "" : printable_id(n.zone)),
                                 count_cell(n.weight), count_cell(n.tokens), percent_cell(n.ownership, 2),
                                 percent_cell(fair, 2), fair > 0 ? ratio_cell(n.ownership / fair, 3) : none_cell()};
        if (marks) row.push_back(state_cell(n));
        t.add_row(std::move(row));
    }
    if (marks)
        t.notes.push_back("'owns' counts tokens: the keys of a member marked down go to the next available "
                          "member of each key's replica walk while it is down.");
    t.notes.push_back("'owns' is the exact fraction of the 2^64 circle whose keys go to the node; "
                      "'fair share' is its weight over the total weight.");
    return t;
}

// Each node's replica share under a policy, against its weight's share of
// the copies (n x weight / total weight, at most all keys); warns about the
// nodes above kReplicaShareWarn times it.
Table replica_table(const Snapshot &snap, const std::vector<NodeInfo> &nodes, size_t n,
                    const std::string &policy) {
    const std::vector<double> shares = snap.replica_shares(replica_policy(policy), n);
    uint64_t total_weight = 0;
    size_t with_tokens = 0;
    for (const NodeInfo &node : nodes) {
        total_weight += node.weight;
        with_tokens += node.tokens > 0;
    }
    const size_t copies = std::min(n, with_tokens);
    Table t;
    t.key = "replica_shares";
    t.title = "Replica shares (" + std::to_string(n) + " replicas, policy " + policy + ")";
    t.columns = {{"node", "node", false},
                 {"zone", "zone", false, any_zone(nodes)},
                 {"weight", "weight"},
                 {"replica_pct", "holds a copy of"},
                 {"weight_share_pct", "weight's share"},
                 {"load", "holds / weight's"}};
    std::vector<std::string> heavy;
    for (size_t i = 0; i < nodes.size(); ++i) {
        const NodeInfo &node = nodes[i];
        const double fair = total_weight ? std::min(1.0, double(copies) * double(node.weight) / double(total_weight)) : 0;
        const bool over = fair > 0 && shares[i] > kReplicaShareWarn * fair;
        t.add_row({text_cell(printable_id(node.id)), text_cell(node.zone.empty() ? "" : printable_id(node.zone)),
                   count_cell(node.weight), percent_cell(shares[i], 2), percent_cell(fair, 2),
                   fair > 0 ? ratio_cell(shares[i] / fair, 3) : none_cell()});
        if (over)
            heavy.push_back(printable_id(node.id) + (node.zone.empty() ? "" : " (zone " + printable_id(node.zone) + ")") +
                            " holds a copy of " + percent_cell(shares[i], 2).text + " of the keys, " +
                            ratio_cell(shares[i] / fair, 2).text + " its weight's share (" +
                            percent_cell(fair, 2).text + ")");
    }
    t.notes.push_back("'holds a copy of' is the exact fraction of keys for which the node is among the first " +
                      std::to_string(n) + " replicas (policy " + policy +
                      "); 'weight's share' is replicas x weight / total weight, at most 100%.");
    const size_t shown = std::min<size_t>(heavy.size(), 5);
    const char *why = policy == "nodes" ? ": its tokens own more of the circle than its weight's share"
                                        : ": its zone has less weight than the others";
    for (size_t i = 0; i < shown; ++i) warn(heavy[i] + why);
    if (heavy.size() > shown)
        warn(std::to_string(heavy.size() - shown) + " more nodes hold over " + ratio_cell(kReplicaShareWarn, 1).text +
             " their weight's share of the copies");
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
    // Replica shares: asked for, or a ring with zones (where the zone
    // policies give some nodes more copies than their weight).
    if (cmd.count("--replicas") || cmd.count("--policy") || any_zone(nodes)) {
        const std::string policy = !f.policy.empty() ? f.policy : any_zone(nodes) ? "zones-first" : "nodes";
        if (snap.token_count()) report.tables.push_back(replica_table(snap, nodes, f.replicas, policy));
    }
    if (f.tokens) report.tables.push_back(tokens_table(snap, nodes));
    if (!f.output.svg.empty()) draw(f.output.svg, snap, nodes, loaded.config);
    write_report(report, format, std::cout);
}

}  // namespace

void add_inspect_command(CLI::App &app) {
    auto flags = std::make_shared<InspectFlags>();
    CLI::App *cmd = app.add_subcommand("inspect", "Members, weights, tokens, ownership per node, fingerprint");
    cmd->footer("Examples: chring inspect -m members.txt --tokens\n"
                "  chring inspect -m members.txt --replicas 3 --policy zones-first");
    add_membership_options(*cmd, flags->members, true);
    add_ring_options(*cmd, flags->ring);
    cmd->add_flag("--tokens", flags->tokens, "Also dump the sorted token table");
    cmd->add_option("--replicas", flags->replicas,
                    "Replica shares for N replicas (shown for a ring with zones, or when asked)")
        ->type_name("N")
        ->check(whole_number(1, CHR_NODES_MAX))
        ->capture_default_str();
    cmd->add_option("--policy", flags->policy,
                    "Replica policy of the shares (default: zones-first for a ring with zones, else nodes)")
        ->type_name("nodes|zones-first|nts")
        ->check(CLI::IsMember(replica_policy_names()).description(""));
    add_output_options(*cmd, flags->output, true);
    cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace chring::cli
