// chring sim: "what moves if I do this?" — routes a key set before and after
// a batch of membership changes and counts what moved, where, and whether
// anything moved that did not have to (collateral).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "keys.hpp"
#include "moves.hpp"
#include "options.hpp"
#include "sim_load.hpp"
#include "spelling.hpp"
#include "stats.hpp"
#include "svg.hpp"

namespace chring::cli {
namespace {

struct SimFlags {
    MembershipFlags members;
    RingConfig ring;
    std::vector<std::string> placements;
    std::vector<std::string> add, remove, reweight;
    uint64_t keys = 1000000;
    std::string key_file;
    size_t flows = 10;
    OutputFlags output;
    LoadSimFlags load;
    std::vector<Change> changes;  // in command-line order, filled before run()
};

std::string change_text(const Change &c) {
    std::string id = printable_id(c.member.id);
    switch (c.op) {
    case CHR_OP_ADD: return "add " + id + " (weight " + std::to_string(c.member.weight) + ")";
    case CHR_OP_REMOVE: return "remove " + id;
    default: return "reweight " + id + " to " + std::to_string(c.member.weight);
    }
}

std::string op_text(const Universe &u, size_t i) {
    int64_t b = u.weight_before[i], a = u.weight_after[i];
    if (b < 0) return "added";
    if (a < 0) return "removed";
    if (a != b) return "weight " + std::to_string(b) + " -> " + std::to_string(a);
    return "";
}

// Runs one placement: route, change, route again.
Movement simulate_ring(const SimFlags &f, LoadedRing &loaded, const KeySet &keys, Universe &u, Progress &progress) {
    const std::string &placement = loaded.config.placement;
    Snapshot before = loaded.ring->snapshot();
    loaded.ring->apply(f.changes);
    Snapshot after = loaded.ring->snapshot();
    if (before.token_count() == 0 || after.token_count() == 0)
        throw CliError(std::string(before.token_count() == 0 ? "before" : "after") +
                       " the changes no node has a weight above 0: there is nothing to route keys to");

    // The universe is the same for every placement; fill it on the first.
    if (u.ids.empty()) {
        for (const NodeInfo &m : loaded.members) u.intern(m.id);  // membership order first
        for (const Change &c : f.changes) u.intern(c.member.id);
        u.record(before, after);
    }

    Movement m("ring (" + placement + ")", u.ids.size());
    std::vector<uint32_t> owner_before(KeySet::kBlock), owner_after(KeySet::kBlock);
    keys.for_each_block([&](uint64_t, const KeyBlock &block) {
        before.lookup_batch(block.data.data(), block.lens.data(), block.size(), owner_before.data());
        after.lookup_batch(block.data.data(), block.lens.data(), block.size(), owner_after.data());
        m.count_owners(owner_before.data(), owner_after.data(), block.size(), u);
        progress.advance(block.size());
    });
    return m;
}

// hash % N over the nodes with weight > 0, in membership order; survivors
// keep their order, added nodes are appended.
Movement simulate_modulo(const RingConfig &config, const KeySet &keys, const Universe &u, Progress &progress) {
    std::vector<size_t> before, after;
    for (size_t i = 0; i < u.ids.size(); ++i) {  // universe order = membership, then changes
        if (u.weight_before[i] > 0) before.push_back(i);
        if (u.weight_after[i] > 0) after.push_back(i);
    }
    Movement m("hash % N", u.ids.size());
    m.is_ring = false;
    if (before.empty() || after.empty()) return m;
    keys.for_each_block([&](uint64_t, const KeyBlock &block) {
        for (size_t i = 0; i < block.size(); ++i) {
            uint64_t h = hash_bytes(config.effective_hasher(), config.seed, block.data[i], block.lens[i]);
            m.count(before[h % before.size()], after[h % after.size()], u);
        }
        progress.advance(block.size());
    });
    return m;
}

Table setup_table(const SimFlags &f, const std::vector<LoadedRing> &rings, const KeySet &keys, const Universe &u) {
    Table t;
    t.key = "setup";
    t.title = "Simulation";
    t.add_field("members", "members",
                text_cell(f.members.describe() + ": " + std::to_string(rings[0].members.size()) +
                          " nodes, total weight " + std::to_string(u.total_before)));
    std::string changes;
    for (const Change &c : f.changes) changes += (changes.empty() ? "" : "; ") + change_text(c);
    t.add_field("changes", "changes", text_cell(changes));
    t.add_field("keys", "keys", text_cell(keys.describe()));
    std::string hashers;
    for (const LoadedRing &r : rings)
        hashers += (hashers.empty() ? "" : ", ") + r.config.effective_hasher() + " (" + r.config.placement + ")";
    t.add_field("hasher", "hasher", text_cell(hashers));
    t.add_field("tokens_per_weight", "tokens per weight", count_cell(rings[0].config.tokens_per_weight));
    t.add_field("seed", "seed", count_cell(rings[0].config.seed));
    return t;
}

Table moves_table(const std::vector<Movement> &moves, double ideal, uint64_t total_keys) {
    Table t;
    t.key = "moves";
    t.title = "Keys moved";
    t.columns = {{"scheme", "scheme", false},   {"moved", "keys moved"},
                 {"moved_pct", "moved"},        {"ideal_ratio", "vs ideal"},
                 {"collateral", "collateral"},  {"collateral_pct", "collateral %", true, false}};
    for (const Movement &m : moves) {
        double fraction = total_keys ? double(m.moved) / double(total_keys) : 0;
        t.add_row({text_cell(m.scheme), count_cell(m.moved), percent_cell(fraction, 2),
                   ideal > 0 ? ratio_cell(fraction / ideal, 2) : none_cell(), count_cell(m.collateral),
                   percent_cell(total_keys ? double(m.collateral) / double(total_keys) : 0, 2)});
    }
    t.add_row({text_cell("ideal minimum"), count_cell(uint64_t(ideal * double(total_keys) + 0.5)),
               percent_cell(ideal, 2), ratio_cell(1, 2), none_cell(), none_cell()});
    t.notes.push_back("'ideal minimum' is the least any weight-proportional scheme must move: the share gained by "
                      "the nodes that gained share. 'collateral' counts keys that moved although their old node "
                      "did not shrink and their new node did not grow; native placement guarantees 0.");
    t.notes.push_back("'hash % N' is the naive alternative for reference: unweighted, over the nodes with weight > 0 "
                      "in membership order; removed nodes drop out and added ones are appended.");
    return t;
}

Table flows_table(const std::vector<Movement> &moves, const Universe &u, size_t limit, uint64_t total_keys,
                  bool several) {
    Table t;
    t.key = "flows";
    t.title = "Where the moved keys went (largest flows)";
    t.columns = {{"scheme", "scheme", false, several}, {"from", "from", false}, {"to", "to", false},
                 {"keys", "keys"}, {"pct", "of all keys"}};
    for (const Movement &m : moves) {
        if (!m.is_ring) continue;
        std::vector<std::pair<uint64_t, uint64_t>> flows(m.flows.begin(), m.flows.end());
        std::sort(flows.begin(), flows.end(), [](const auto &a, const auto &b) {
            return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        uint64_t shown = 0;
        for (size_t i = 0; i < flows.size() && i < limit; ++i) {
            size_t from = size_t(flows[i].first / u.ids.size()), to = size_t(flows[i].first % u.ids.size());
            t.add_row({text_cell(m.scheme), text_cell(printable_id(u.ids[from])), text_cell(printable_id(u.ids[to])),
                       count_cell(flows[i].second), percent_cell(double(flows[i].second) / double(total_keys), 2)});
            shown += flows[i].second;
        }
        if (flows.size() > limit)
            t.add_row({text_cell(m.scheme), text_cell("(" + std::to_string(flows.size() - limit) + " more flows)"),
                       text_cell(""), count_cell(m.moved - shown),
                       percent_cell(double(m.moved - shown) / double(total_keys), 2)});
    }
    return t;
}

Table nodes_table(const std::vector<Movement> &moves, const Universe &u, uint64_t total_keys, bool several) {
    Table t;
    t.key = "nodes";
    t.title = "Per node (key shares before and after)";
    t.columns = {{"scheme", "scheme", false, several},
                 {"node", "node", false},
                 {"change", "change", false},
                 {"weight_before", "weight before", true, false},
                 {"weight_after", "weight"},
                 {"fair_after_pct", "fair share"},
                 {"keys_before_pct", "keys before"},
                 {"keys_after_pct", "keys after"},
                 {"delta_pp", "delta (pp)"},
                 {"load_after", "after / fair"}};
    auto weight = [](int64_t w) { return w < 0 ? none_cell() : count_cell(uint64_t(w)); };
    for (const Movement &m : moves) {
        if (!m.is_ring) continue;
        for (size_t i = 0; i < u.ids.size(); ++i) {
            double before = double(m.keys_before[i]) / double(total_keys);
            double after = double(m.keys_after[i]) / double(total_keys);
            double fair = u.fair_after(i);
            Cell delta = real_cell((after - before) * 100, 2);
            if (after > before) delta.text = "+" + delta.text;
            t.add_row({text_cell(m.scheme), text_cell(printable_id(u.ids[i])), text_cell(op_text(u, i)),
                       weight(u.weight_before[i]), weight(u.weight_after[i]), percent_cell(fair, 2),
                       percent_cell(before, 2), percent_cell(after, 2), delta,
                       fair > 0 ? ratio_cell(after / fair, 3) : none_cell()});
        }
    }
    return t;
}

Table balance_table(const std::vector<Movement> &moves, const Universe &u, uint64_t total_keys) {
    Table t;
    t.key = "balance";
    t.title = "Balance of key shares (nodes with weight > 0)";
    t.columns = {{"scheme", "scheme", false}, {"state", "state", false}, {"nodes", "nodes"},
                 {"min_pct", "min share"},    {"max_pct", "max share"},  {"stdev_pp", "stdev (pp)"},
                 {"max_load", "max / fair"}};
    for (const Movement &m : moves) {
        for (int after = 0; after < 2; ++after) {
            std::vector<double> shares, loads;
            for (size_t i = 0; i < u.ids.size(); ++i) {
                double fair = after ? u.fair_after(i) : u.fair_before(i);
                if (fair <= 0) continue;
                double share = double(after ? m.keys_after[i] : m.keys_before[i]) / double(total_keys);
                shares.push_back(share);
                loads.push_back(share / fair);
            }
            Spread s = spread_of(shares), l = spread_of(loads);
            t.add_row({text_cell(m.scheme), text_cell(after ? "after" : "before"), count_cell(shares.size()),
                       percent_cell(s.min, 2), percent_cell(s.max, 2), real_cell(s.stdev * 100, 3),
                       ratio_cell(l.max, 3)});
        }
    }
    t.notes.push_back("'max / fair' is the busiest node's key share over its fair share by weight: 1.000x is a "
                      "perfectly even ring.");
    return t;
}

void draw(const std::string &path, const std::vector<Movement> &moves, const Universe &u, double ideal,
          uint64_t total_keys) {
    std::vector<BarChart> charts;
    for (const Movement &m : moves) {
        if (!m.is_ring) continue;
        BarChart c;
        char head[200];
        std::snprintf(head, sizeof head, "%s: %.2f%% of keys moved (ideal %.2f%%), collateral %llu", m.scheme.c_str(),
                      100.0 * double(m.moved) / double(total_keys), 100 * ideal, (unsigned long long)m.collateral);
        c.title = head;
        c.series = {"before", "after"};
        c.fair_label = "fair share after";
        for (size_t i = 0; i < u.ids.size() && i < 40; ++i)
            c.rows.push_back({printable_id(u.ids[i]) + (op_text(u, i).empty() ? "" : " *"),
                              {double(m.keys_before[i]) / double(total_keys), double(m.keys_after[i]) / double(total_keys)},
                              u.fair_after(i), i});
        charts.push_back(std::move(c));
    }
    double height = 30;
    for (const BarChart &c : charts) height += bars_height(c) + 20;
    Svg svg(760, height);
    double y = 10;
    for (const BarChart &c : charts) y += draw_bars(svg, 10, y, 740, c) + 20;
    svg.text(10, height - 8, "* changed by the simulation" + std::string(u.ids.size() > 40 ? "; first 40 nodes shown" : ""),
             11, "start", "fill=\"#555\"");
    svg.save(path);
}

// The operations in the order they were given, so "--remove a --add a=2"
// replaces a node and "--add x --reweight x=3" grows a new one.
std::vector<Change> changes_in_order(const CLI::App &cmd, const SimFlags &f, size_t members_count) {
    std::vector<Change> out;
    size_t next_add = 0, next_remove = 0, next_reweight = 0;
    for (const CLI::Option *opt : cmd.parse_order()) {
        const std::string name = opt->get_name();
        if (name == "--add") {
            const std::string &spec = f.add.at(next_add++);
            // Tagged as the next position in the server list (compat placements break ties by it).
            out.push_back({CHR_OP_ADD, member_from_flag(spec, 1, "--add"), "--add " + spec,
                           uint64_t(members_count + next_add - 1)});
        } else if (name == "--remove") {
            const std::string &spec = f.remove.at(next_remove++);
            if (spec.find('=') != std::string::npos)
                throw UsageError("--remove " + spec + ": give only the id (no '=WEIGHT')");
            out.push_back({CHR_OP_REMOVE, member_from_flag(spec, 0, "--remove"), "--remove " + spec});
        } else if (name == "--reweight") {
            const std::string &spec = f.reweight.at(next_reweight++);
            if (spec.find('=') == std::string::npos || spec.find('@') != std::string::npos)
                throw UsageError("--reweight " + spec + ": expected ID=WEIGHT");
            out.push_back({CHR_OP_SET_WEIGHT, member_from_flag(spec, 0, "--reweight"), "--reweight " + spec});
        }
    }
    return out;
}

void run(SimFlags &f, const CLI::App &cmd) {
    note_given_options(cmd, f.ring);
    Format format = parse_format(f.output.format);
    std::vector<std::string> placements = f.placements.empty() ? std::vector<std::string>{f.ring.placement} : f.placements;
    for (const std::string &p : placements) placement_mode(p);  // unknown names fail before any work
    if (f.key_file == "-" && f.members.file == "-")
        throw UsageError("the ring file and the key file cannot both come from stdin");
    // One ring per placement; without --placement, a ring file's %%placement.
    const MemberSource source = f.members.read();
    std::vector<LoadedRing> rings;
    for (const std::string &p : placements) {
        RingConfig config = f.ring;
        config.placement = p;
        rings.push_back(build_ring(source, config));
    }
    f.changes = changes_in_order(cmd, f, rings[0].members.size());
    if (!f.load.workload.empty()) {
        if (!f.changes.empty() || rings.size() > 1 || !f.key_file.empty())
            throw UsageError("--workload simulates load on one ring as it is: it does not take --add, --remove, "
                             "--reweight, --key-file or several --placement");
        run_load_sim(f.load, rings[0], f.members.describe(), f.output);
        return;
    }
    if (f.changes.empty())
        throw UsageError("nothing to simulate: give --add, --remove or --reweight (see 'chring sim --help'; "
                       "'chring inspect' shows a membership as it is)");
    KeySet keys = f.key_file.empty() ? KeySet::synthetic(f.keys) : KeySet::from_file(f.key_file);
    if (keys.size() == 0) throw UsageError("--keys must be at least 1");
    // hash % N hashes with the flags' hasher, or the ring file's when it sets the options.
    const RingConfig &modulo = rings[0].info.flags & CHR_RINGFILE_HAS_OPTIONS ? rings[0].config : f.ring;

    Universe u;
    std::vector<Movement> moves;
    {
        Progress progress("chring sim", keys.size() * (rings.size() + 1));
        for (LoadedRing &r : rings) moves.push_back(simulate_ring(f, r, keys, u, progress));
        moves.push_back(simulate_modulo(modulo, keys, u, progress));
    }
    double ideal = u.ideal_fraction();
    bool several = rings.size() > 1;

    Report report;
    report.tables.push_back(setup_table(f, rings, keys, u));
    report.tables.push_back(moves_table(moves, ideal, keys.size()));
    report.tables.push_back(flows_table(moves, u, f.flows, keys.size(), several));
    report.tables.push_back(nodes_table(moves, u, keys.size(), several));
    report.tables.push_back(balance_table(moves, u, keys.size()));
    if (!f.output.svg.empty()) draw(f.output.svg, moves, u, ideal, keys.size());
    write_report(report, format, std::cout);
}

}  // namespace

void add_sim_command(CLI::App &app) {
    auto flags = std::make_shared<SimFlags>();
    CLI::App *cmd = app.add_subcommand("sim", "Simulate membership changes (keys moved, collateral moves, balance) or request load (--workload: bounded loads)");
    cmd->footer("Examples:\n  chring sim --nodes 10 --add node-11 --add node-12\n"
                "  chring sim -m members.txt --remove cache-3 --reweight cache-1=2 --keys 5000000\n"
                "  chring sim --nodes 10 --workload zipf:1.1 --requests 1000000 --in-flight 1000 --balance 1.25\n"
                "Changes apply as one batch, in the order given. Ids with '=' or '@' are written %3D / %40.");
    add_membership_options(*cmd, flags->members, true);
    cmd->add_option("--add", flags->add, "Add a node ID[=WEIGHT[@ZONE]] (weight 1 by default; repeatable)")
        ->type_name("SPEC")
        ->allow_extra_args(false);
    cmd->add_option("--remove", flags->remove, "Remove a node (repeatable)")->type_name("ID")->allow_extra_args(false);
    cmd->add_option("--reweight", flags->reweight, "Change a node's weight (repeatable)")->type_name("ID=WEIGHT")->allow_extra_args(false);
    cmd->add_option("--keys", flags->keys, "Number of synthetic keys key-0, key-1, ...")
        ->type_name("N")
        ->check(whole_number(1, uint64_t(1) << 32))
        ->capture_default_str();
    cmd->add_option("--key-file", flags->key_file, "Route these keys instead, one per line ('-' = stdin; at most 256 MiB, keys up to 64 KiB)")->type_name("FILE");
    cmd->add_option("--flows", flags->flows, "How many of the largest from -> to flows to list")
        ->type_name("N")
        ->check(whole_number(0, uint64_t(1) << 32))
        ->capture_default_str();
    add_load_options(*cmd, flags->load);
    add_ring_options(*cmd, flags->ring, &flags->placements);
    add_output_options(*cmd, flags->output, true);
    cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace chring::cli
