#include "sim_load.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include "report.hpp"
#include "svg.hpp"

namespace chring::cli {
namespace {

struct Workload {
    std::string text;
    double zipf = 0;  // 0: uniform
};

Workload parse_workload(const std::string &w) {
    if (w == "uniform") return {w, 0};
    if (w.rfind("zipf:", 0) == 0) {
        char *end = nullptr;
        const std::string s = w.substr(5);
        double v = std::strtod(s.c_str(), &end);
        if (!s.empty() && end && *end == 0 && v > 0 && v <= 10) return {w, v};
    }
    throw UsageError("--workload " + w + ": expected 'uniform' or 'zipf:S' with 0 < S <= 10");
}

// Draws object ranks 0..n-1 with probability ~ (rank + 1)^-s (s = 0: uniform).
class Sampler {
public:
    Sampler(uint64_t n, double s, uint64_t seed) : state_(seed) {
        if (s == 0) return;
        cdf_.resize(n);
        double sum = 0;
        for (uint64_t i = 0; i < n; ++i) cdf_[i] = sum += std::pow(double(i + 1), -s);
        for (double &c : cdf_) c /= sum;
        n_ = n;
    }
    uint64_t draw(uint64_t n) {
        const uint64_t r = next();
        if (cdf_.empty()) return r % n;
        const double u = double(r >> 11) * 0x1p-53;
        return uint64_t(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin()) % n_;
    }

private:
    uint64_t next() {  // splitmix64
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t state_;
    uint64_t n_ = 0;
    std::vector<double> cdf_;
};

struct Outcome {
    std::string scheme;
    std::vector<uint64_t> peak;  // per node: the most requests it had in flight at once
    uint64_t max_load = 0;
    uint64_t away = 0;           // requests not served at home
    uint64_t probes = 0, max_probes = 0;
    uint64_t over = 0;           // placed past the probe limit over capacity (never without one)
};

// Requests arrive one at a time; each stays in flight until `in_flight`
// later ones have arrived. opts NULL: the plain ring.
Outcome replay(const Snapshot &snap, const LoadSimFlags &f, const Workload &w,
               const chr_bound_options *opts, const std::string &scheme) {
    const size_t n = snap.node_count();
    Outcome o;
    o.scheme = scheme;
    o.peak.assign(n, 0);
    std::vector<uint64_t> loads(n, 0);
    std::vector<uint32_t> fifo(size_t(f.in_flight));
    size_t head = 0, live = 0;
    Sampler sampler(f.objects, w.zipf, 20);
    char key[32];
    for (uint64_t q = 0; q < f.requests; ++q) {
        if (live == fifo.size()) {
            --loads[fifo[head]];
            head = (head + 1) % fifo.size();
            --live;
        }
        const int len = std::snprintf(key, sizeof key, "object-%llu",
                                      (unsigned long long)sampler.draw(f.objects));
        chr_node_view v;
        chr_bound_result r;
        check(chr_snapshot_lookup_bounded(snap.get(), key, size_t(len), loads.data(), nullptr, n, opts,
                                          &v, &r),
              "bounded lookup");
        const uint64_t now = ++loads[r.index];
        o.peak[r.index] = std::max(o.peak[r.index], now);
        o.max_load = std::max(o.max_load, now);
        o.away += r.index != r.home;
        o.probes += r.probes;
        o.max_probes = std::max<uint64_t>(o.max_probes, r.probes);
        o.over += (r.flags & CHR_BOUND_OVER) != 0;
        fifo[(head + live) % fifo.size()] = r.index;
        ++live;
    }
    return o;
}

void draw(const std::string &path, const std::vector<Outcome> &outcomes, const std::vector<NodeInfo> &nodes,
          const LoadSimFlags &f, uint64_t cap) {
    BarChart c;
    char head[200];
    std::snprintf(head, sizeof head, "Peak in flight per node (%s, %llu in flight; bound %.2fx: cap %llu)",
                  outcomes[0].scheme.c_str(), (unsigned long long)f.in_flight, f.balance,
                  (unsigned long long)cap);
    c.title = head;
    c.series = {outcomes[0].scheme, outcomes[1].scheme};
    c.fair_label = "cap (weighted mean x factor)";
    uint64_t weight = 0;
    for (const NodeInfo &n : nodes) weight += n.tokens ? n.weight : 0;
    const double scale = double(std::max<uint64_t>({outcomes[0].max_load, outcomes[1].max_load, cap, 1}));
    for (size_t i = 0; i < nodes.size() && i < 40; ++i) {
        const double fair = weight && nodes[i].tokens
                                ? f.balance * double(f.in_flight) * nodes[i].weight / double(weight) / scale
                                : 0;
        c.rows.push_back({printable_id(nodes[i].id),
                          {double(outcomes[0].peak[i]) / scale, double(outcomes[1].peak[i]) / scale}, fair, i});
    }
    const double height = bars_height(c) + 50;
    Svg svg(760, height);
    draw_bars(svg, 10, 10, 740, c);
    svg.text(10, height - 8,
             "bars: peak requests in flight, as a fraction of the largest peak" +
                 std::string(nodes.size() > 40 ? "; first 40 nodes shown" : ""),
             11, "start", "fill=\"#555\"");
    svg.save(path);
}

}  // namespace

void add_load_options(CLI::App &cmd, LoadSimFlags &flags) {
    cmd.add_option("--workload", flags.workload,
                   "Simulate request load instead of membership changes: 'uniform' or 'zipf:S' (e.g. zipf:1.1) "
                   "over --objects keys")
        ->type_name("SPEC");
    cmd.add_option("--requests", flags.requests, "Requests of the load simulation")
        ->type_name("N")
        ->check(whole_number(1, uint64_t(1) << 34))
        ->capture_default_str();
    cmd.add_option("--in-flight", flags.in_flight, "Requests in flight at once (each ends after N later ones arrive)")
        ->type_name("N")
        ->check(whole_number(1, uint64_t(1) << 24))
        ->capture_default_str();
    cmd.add_option("--balance", flags.balance, "Bound: at most this factor times the weighted mean load per node")
        ->type_name("F")
        ->check(CLI::Range(1.0, 1000.0))
        ->capture_default_str();
    cmd.add_option("--spill", flags.spill, "Where the overflow goes: replicas (the key's replica walk) or shuffle")
        ->type_name("ORDER")
        ->check(CLI::IsMember({"replicas", "shuffle"}))
        ->capture_default_str();
    cmd.add_option("--slack", flags.slack, "Extra requests allowed on every node above the bound")
        ->type_name("N")
        ->check(whole_number(0, CHR_LOAD_MAX))
        ->capture_default_str();
    cmd.add_option("--objects", flags.objects, "Distinct keys the workload draws from")
        ->type_name("N")
        ->check(whole_number(1, uint64_t(1) << 26))
        ->capture_default_str();
}

void run_load_sim(const LoadSimFlags &f, LoadedRing &ring, const std::string &members_text,
                  const OutputFlags &output) {
    const Format format = parse_format(output.format);
    const Workload w = parse_workload(f.workload);
    Snapshot snap = ring.ring->snapshot();
    if (snap.token_count() == 0)
        throw CliError("no node has a weight above 0: there is nothing to route requests to");
    chr_bound_options opts = CHR_BOUND_OPTIONS_INIT;
    opts.factor_pct = uint32_t(std::lround(f.balance * 100));
    opts.spill = f.spill == "shuffle" ? CHR_SPILL_SHUFFLE : CHR_SPILL_REPLICAS;
    opts.slack = f.slack;
    char bounded_name[64];
    std::snprintf(bounded_name, sizeof bounded_name, "bounded %.2fx", double(opts.factor_pct) / 100);
    std::vector<Outcome> outcomes = {replay(snap, f, w, nullptr, "plain ring"),
                                     replay(snap, f, w, &opts, bounded_name)};
    const std::vector<NodeInfo> nodes = snap.nodes();
    // The cap of an average-weight node at full load: ceil(f (M + 1) / n).
    size_t live = 0;
    for (const NodeInfo &n : nodes) live += n.tokens > 0;
    const uint64_t total_slots = ((f.in_flight + 1) * opts.factor_pct + 99) / 100;
    const uint64_t cap = (total_slots + live - 1) / live + opts.slack;

    Report report;
    Table setup;
    setup.key = "setup";
    setup.title = "Load simulation";
    setup.add_field("members", "members", text_cell(members_text + ": " + std::to_string(nodes.size()) + " nodes"));
    setup.add_field("workload", "workload",
                    text_cell(w.text + " over " + std::to_string(f.objects) + " keys"));
    setup.add_field("requests", "requests", count_cell(f.requests));
    setup.add_field("in_flight", "in flight", count_cell(f.in_flight));
    setup.add_field("balance", "balance", ratio_cell(double(opts.factor_pct) / 100, 2));
    setup.add_field("spill", "spill", text_cell(f.spill));
    setup.add_field("slack", "slack", count_cell(f.slack));
    setup.record = true;
    report.tables.push_back(setup);

    Table t;
    t.key = "load";
    t.title = "Requests in flight";
    t.columns = {{"scheme", "scheme", false}, {"max_load", "max node load"}, {"max_vs_mean", "max / mean"},
                 {"away_pct", "away from home"}, {"probes_mean", "probes / request"}, {"probes_max", "max probes"}};
    const double mean = double(f.in_flight) / double(live);
    for (const Outcome &o : outcomes)
        t.add_row({text_cell(o.scheme), count_cell(o.max_load), ratio_cell(double(o.max_load) / mean, 2),
                   percent_cell(double(o.away) / double(f.requests), 2),
                   real_cell(double(o.probes) / double(f.requests), 3), count_cell(o.max_probes)});
    t.notes.push_back("Each request stays in flight until " + std::to_string(f.in_flight) +
                      " later ones have arrived. 'max node load' is the most requests one node had at once; "
                      "the bound caps a node of average weight at " + std::to_string(cap) +
                      " = ceil(balance x (in flight + 1) / nodes) + slack. 'away from home' is the share of "
                      "requests served by another node than the key's own; 'probes' counts the nodes compared "
                      "with their capacity.");
    report.tables.push_back(t);

    Table per;
    per.key = "nodes";
    per.title = "Peak in flight per node";
    per.columns = {{"node", "node", false}, {"weight", "weight"}, {"plain", "plain ring"}, {"bounded", bounded_name}};
    for (size_t i = 0; i < nodes.size(); ++i)
        per.add_row({text_cell(printable_id(nodes[i].id)), count_cell(nodes[i].weight),
                     count_cell(outcomes[0].peak[i]), count_cell(outcomes[1].peak[i])});
    report.tables.push_back(per);
    if (!output.svg.empty()) draw(output.svg, outcomes, nodes, f, cap);
    write_report(report, format, std::cout);
}

}  // namespace chring::cli
