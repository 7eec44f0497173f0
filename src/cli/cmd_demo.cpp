// chring demo: the case for consistent hashing, measured live with the real
// library — what hash % N moves against the ring, how evenness follows
// 1/sqrt(tokens), where a failed node's keys go, replicas on distinct nodes,
// and the keys weighted ketama moves needlessly. Fixed scenarios, so the
// numbers can be quoted.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>

#include "commands.hpp"
#include "keys.hpp"
#include "moves.hpp"
#include "options.hpp"
#include "picture.hpp"
#include "stats.hpp"
#include "svg.hpp"

namespace chring::cli {
namespace {

struct DemoFlags {
    RingConfig ring;
    uint64_t keys = 1000000;
    OutputFlags output;
};

struct Transition {
    uint32_t from, to;
};
const Transition kTransitions[] = {{10, 9}, {10, 11}, {10, 12}, {100, 99}, {100, 101}};
const uint32_t kBalanceTokens[] = {1, 16, 64, 160, 256, 1000};
constexpr uint32_t kBalanceNodes = 100;
constexpr uint32_t kBlastNodes = 10;
constexpr uint32_t kFailedNode = 4;  // node-4 fails
const uint32_t kBlastTokens[] = {1, 16, 160};
const uint32_t kReplicaTokens[] = {16, 160};
constexpr size_t kReplicaCount = 3;

// Section 5: memcached-style servers 10.0.0.N:11211 with weight N, tagged
// with their position in the server list (0..9) as ketama requires.
constexpr uint32_t kServers = 10;
// Ketama hashes every key with MD5 (~150 ns): this many keys at most keeps
// the demo within a second.
constexpr uint64_t kKetamaKeysMax = 200000;
struct ServerChange {
    uint32_t op;      // CHR_OP_*
    uint32_t server;  // 10.0.0.<server>:11211
    uint32_t weight;  // its weight after the change
};
const ServerChange kServerChanges[] = {
    {CHR_OP_ADD, kServers + 1, 5}, {CHR_OP_REMOVE, 7, 0}, {CHR_OP_SET_WEIGHT, 4, 8}};

std::string node_name(uint32_t i) { return "node-" + std::to_string(i); }
std::string server_name(uint32_t n) { return "10.0.0." + std::to_string(n) + ":11211"; }
uint32_t server_weight(uint32_t n) { return n; }

std::vector<Member> weighted_servers() {
    std::vector<Member> servers(kServers);
    for (uint32_t i = 0; i < kServers; ++i) servers[i] = Member{server_name(i + 1), server_weight(i + 1), ""};
    return servers;
}

std::string change_label(const ServerChange &c) {
    std::string name = server_name(c.server);
    std::string was = std::to_string(server_weight(c.server)), now = std::to_string(c.weight);
    switch (c.op) {
    case CHR_OP_ADD: return "add " + name + " (weight " + now + ")";
    case CHR_OP_REMOVE: return "remove " + name + " (weight " + was + ")";
    default: return "reweight " + name + " (weight " + was + " -> " + now + ")";
    }
}

Change change_of(const ServerChange &c) {
    // An added server is tagged as the next position in the list.
    return Change{c.op, Member{server_name(c.server), c.weight, ""}, change_label(c), kServers};
}

// A node's index in a ring of kBlastNodes (ids in byte order: node-1,
// node-10, node-2, ...), which is the colour the ring pictures give it.
size_t ring_color_index(uint32_t number) {
    std::vector<std::string> ids;
    for (uint32_t i = 1; i <= kBlastNodes; ++i) ids.push_back(node_name(i));
    std::sort(ids.begin(), ids.end());
    return size_t(std::find(ids.begin(), ids.end(), node_name(number)) - ids.begin());
}

std::vector<Member> numbered_nodes(uint32_t count) {
    std::vector<Member> members(count);
    for (uint32_t i = 0; i < count; ++i) members[i].id = node_name(i + 1);
    return members;
}

// The modulo scheme's closed form: of hash values h, those with
// h mod n == h mod m stay; that is min(n,m) residues out of lcm(n,m).
double modulo_closed_form(uint32_t n, uint32_t m) {
    return 1.0 - double(std::min(n, m)) * double(std::gcd(n, m)) / (double(n) * double(m));
}

// Routes `keys` through `after` and counts what moved since `owners_before`
// (every key's owner, a node index of the snapshot `u` recorded as before).
Movement moves_after(const Universe &u, const Snapshot &after, const KeySet &keys,
                     const std::vector<uint32_t> &owners_before) {
    std::vector<uint32_t> owners_after = owners_of(after, keys, nullptr);
    Movement m("ring", u.ids.size());
    m.count_owners(owners_before.data(), owners_after.data(), owners_after.size(), u);
    return m;
}

class Demo {
public:
    Demo(const DemoFlags &f) : flags_(f), keys_(KeySet::synthetic(f.keys)) {}

    Report run() {
        auto start = std::chrono::steady_clock::now();
        Report r;
        r.header = {"chring demo: consistent hashing, measured live with libchring " + version() + ".",
                    "Every figure below comes from the real library: " + keys_.describe() + ", hasher " +
                        flags_.ring.effective_hasher() + ", seed " + std::to_string(flags_.ring.seed) + "."};
        r.tables.push_back(setup());
        r.tables.push_back(key_moves());
        r.tables.push_back(balance());
        auto [summary, detail] = blast_radius();
        r.tables.push_back(std::move(summary));
        r.tables.push_back(std::move(detail));
        r.tables.push_back(replicas());
        r.tables.push_back(ketama_moves());
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char line[160];
        std::snprintf(line, sizeof line, "Measured in %.1f s. Try your own cluster: chring sim --help.", seconds);
        r.footer.push_back(line);
        if (!flags_.output.svg.empty()) draw(flags_.output.svg);
        return r;
    }

private:
    static std::string version() {
        uint32_t v = chr_version();
        return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
    }

    RingConfig config(uint32_t tokens_per_weight) const {
        RingConfig c = flags_.ring;
        c.tokens_per_weight = tokens_per_weight;
        return c;
    }

    std::unique_ptr<Ring> ring_of(uint32_t nodes, uint32_t tokens_per_weight) const {
        auto ring = std::make_unique<Ring>(config(tokens_per_weight));
        ring->add(numbered_nodes(nodes));
        return ring;
    }

    Table setup() const {
        Table t;
        t.key = "setup";
        t.title = "Setup";
        t.add_field("library_version", "library", text_cell(version()));
        t.add_field("keys", "keys", count_cell(keys_.size()));
        t.add_field("hasher", "hasher", text_cell(flags_.ring.effective_hasher()));
        t.add_field("seed", "seed", count_cell(flags_.ring.seed));
        t.add_field("tokens_per_node", "tokens per node (unless varied)", count_cell(CHR_DEFAULT_TOKENS_PER_WEIGHT));
        return t;
    }

    // 1. hash % N against the ring when N changes.
    Table key_moves() {
        const std::vector<uint64_t> &hashes = key_hashes();
        Table t;
        t.key = "key_moves";
        t.title = "1. Keys that move when the cluster changes size";
        t.columns = {{"change", "change", false},
                     {"from", "from", true, false},
                     {"to", "to", true, false},
                     {"modulo_moved_pct", "hash % N"},
                     {"modulo_closed_form_pct", "closed form"},
                     {"ring_moved_pct", "ring"},
                     {"ideal_pct", "ideal"},
                     {"ring_collateral", "ring collateral"}};
        uint32_t base = 0;
        std::unique_ptr<Ring> before_ring;
        std::vector<uint32_t> before_owners;
        std::vector<std::string> before_ids;
        for (const Transition &tr : kTransitions) {
            if (tr.from != base) {
                base = tr.from;
                before_ring = ring_of(base, CHR_DEFAULT_TOKENS_PER_WEIGHT);
                Snapshot snap = before_ring->snapshot();
                before_owners = owners_of(snap, keys_, nullptr);
            }
            uint64_t modulo_moved = 0;
            for (uint64_t h : hashes) modulo_moved += h % tr.from != h % tr.to;

            std::unique_ptr<Ring> after_ring = ring_of(tr.to, CHR_DEFAULT_TOKENS_PER_WEIGHT);
            Snapshot before = before_ring->snapshot(), after = after_ring->snapshot();
            Universe u;
            u.record(before, after);
            Movement ring = moves_after(u, after, keys_, before_owners);
            double n = double(keys_.size());
            t.add_row({text_cell(std::to_string(tr.from) + " -> " + std::to_string(tr.to) + " nodes"),
                       count_cell(tr.from), count_cell(tr.to), percent_cell(double(modulo_moved) / n, 2),
                       percent_cell(modulo_closed_form(tr.from, tr.to), 2), percent_cell(double(ring.moved) / n, 2),
                       percent_cell(double(std::max(tr.from, tr.to) - std::min(tr.from, tr.to)) /
                                        double(std::max(tr.from, tr.to)),
                                    2),
                       count_cell(ring.collateral)});
        }
        t.notes.push_back("hash % N reshuffles almost everything: a key stays only if h mod n == h mod m, so "
                          "1 - min(n,m)*gcd(n,m)/(n*m) of the keys move (closed form). The ring (160 tokens per "
                          "node) moves about the ideal share, only onto added nodes or off the removed one: "
                          "collateral is 0 by construction, not by luck.");
        return t;
    }

    // 2. Evenness against tokens per node.
    Table balance() const {
        Table t;
        t.key = "balance";
        t.title = "2. How even is the ring? " + std::to_string(kBalanceNodes) + " nodes, share of the key space";
        t.columns = {{"tokens_per_node", "tokens per node"},
                     {"tokens", "tokens in ring"},
                     {"min_over_mean", "lightest"},
                     {"max_over_mean", "busiest"},
                     {"stdev_over_mean", "stdev / mean"},
                     {"law", "law 1/sqrt(V)"},
                     {"measured_over_law", "measured / law"}};
        std::map<uint32_t, double> busiest;
        for (uint32_t v : kBalanceTokens) {
            std::unique_ptr<Ring> ring = ring_of(kBalanceNodes, v);
            Snapshot snap = ring->snapshot();
            std::vector<double> shares;
            for (const NodeInfo &node : snap.nodes()) shares.push_back(node.ownership);
            Spread s = spread_of(shares);
            double law = 1.0 / std::sqrt(double(v));
            busiest[v] = s.max_over_mean();
            t.add_row({count_cell(v), count_cell(snap.token_count()), ratio_cell(s.min_over_mean(), 2),
                       ratio_cell(s.max_over_mean(), 2), real_cell(s.stdev_over_mean(), 3), real_cell(law, 3),
                       real_cell(s.stdev_over_mean() / law, 2)});
        }
        t.notes.push_back("Shares are exact (arc lengths of the 2^64 circle), relative to the mean 1/" +
                          std::to_string(kBalanceNodes) +
                          ". The spread shrinks as 1/sqrt(V): 16x the tokens for 4x the evenness. The busiest "
                          "node sets the capacity you must buy: here it carries " +
                          format_fixed(busiest[1], 2) + "x the mean with 1 token per node, " + format_fixed(busiest[160], 2) +
                          "x with 160 and " + format_fixed(busiest[1000], 2) + "x with 1000.");
        return t;
    }

    // 3. One node fails: who takes its keys?
    std::pair<Table, Table> blast_radius() {
        Table summary;
        summary.key = "blast_radius";
        summary.title = "3. Blast radius: " + node_name(kFailedNode) + " of " + std::to_string(kBlastNodes) +
                        " fails; who takes its keys?";
        summary.columns = {{"tokens_per_node", "tokens per node"},
                           {"failed_keys", "its keys"},
                           {"survivors_taking", "survivors taking some"},
                           {"largest_take_pct", "largest take"},
                           {"busiest_after", "busiest survivor after"}};
        Table detail;
        detail.key = "blast_radius_by_survivor";
        detail.title = "   Share of " + node_name(kFailedNode) + "'s keys taken by each survivor";
        detail.columns = {{"survivor", "survivor", false}};
        for (uint32_t v : kBlastTokens)
            detail.columns.push_back({"tokens_" + std::to_string(v) + "_pct", std::to_string(v) +
                                                                                  (v == 1 ? " token" : " tokens")});
        std::vector<std::vector<double>> taken_by_v;  // [v][survivor]
        std::vector<double> busiest_by_v;
        std::string single_heir;
        for (uint32_t v : kBlastTokens) {
            std::unique_ptr<Ring> ring = ring_of(kBlastNodes, v);
            Snapshot before = ring->snapshot();
            std::vector<uint32_t> owners_before = owners_of(before, keys_, nullptr);
            std::string failed = node_name(kFailedNode);
            ring->apply({Change{CHR_OP_REMOVE, Member{failed, 0, ""}, "remove " + failed}});
            Snapshot after = ring->snapshot();
            std::vector<uint32_t> owners_after = owners_of(after, keys_, nullptr);
            std::vector<NodeInfo> b = before.nodes(), a = after.nodes();
            uint32_t failed_index = 0;
            for (uint32_t i = 0; i < b.size(); ++i)
                if (b[i].id == failed) failed_index = i;

            std::vector<uint64_t> taken(a.size()), load(a.size());
            uint64_t failed_keys = 0;
            for (size_t k = 0; k < owners_after.size(); ++k) {
                ++load[owners_after[k]];
                if (owners_before[k] != failed_index) continue;
                ++failed_keys;
                ++taken[owners_after[k]];
            }
            // Survivors in node-1 .. node-N order (the snapshot sorts ids as bytes).
            std::vector<double> taken_share(kBlastNodes - 1);
            size_t takers = 0;
            uint64_t largest = 0, busiest = 0;
            for (size_t j = 0; j < a.size(); ++j) {
                uint32_t number = uint32_t(std::stoul(a[j].id.substr(5)));
                size_t row = number < kFailedNode ? number - 1 : number - 2;
                taken_share[row] = failed_keys ? double(taken[j]) / double(failed_keys) : 0;
                takers += taken[j] > 0;
                largest = std::max(largest, taken[j]);
                busiest = std::max(busiest, load[j]);
            }
            taken_by_v.push_back(taken_share);
            busiest_by_v.push_back(double(busiest) * double(a.size()) / double(keys_.size()));
            if (takers == 1)
                for (size_t j = 0; j < a.size(); ++j)
                    if (taken[j]) single_heir = a[j].id;
            double mean_load = double(keys_.size()) / double(a.size());
            summary.add_row({count_cell(v), count_cell(failed_keys),
                             text_cell(std::to_string(takers) + " of " + std::to_string(a.size())),
                             percent_cell(failed_keys ? double(largest) / double(failed_keys) : 0, 1),
                             ratio_cell(double(busiest) / mean_load, 2)});
            summary.rows.back()[2].value = takers;
        }
        for (uint32_t s = 0; s < kBlastNodes - 1; ++s) {
            uint32_t number = s + 1 < kFailedNode ? s + 1 : s + 2;
            std::vector<Cell> row = {text_cell(node_name(number))};
            for (const auto &shares : taken_by_v) row.push_back(percent_cell(shares[s], 1));
            detail.add_row(std::move(row));
        }
        blast_ = taken_by_v;
        const std::vector<double> &many = taken_by_v.back();
        std::string first = single_heir.empty()
                                ? "With 1 token per node, the failed node's whole arc goes to the next token's owner"
                                : "With 1 token per node, " + single_heir + " alone inherits all of " +
                                      node_name(kFailedNode) + "'s keys";
        summary.notes.push_back(first + " and ends at " + format_fixed(busiest_by_v.front(), 2) +
                                "x the mean load: the next node to fall over (a cascade). With " +
                                std::to_string(kBlastTokens[std::size(kBlastTokens) - 1]) +
                                " tokens every survivor takes a part (" +
                                format_fixed(100 * *std::min_element(many.begin(), many.end()), 1) + "% to " +
                                format_fixed(100 * *std::max_element(many.begin(), many.end()), 1) + "% each; even is " +
                                format_fixed(100.0 / double(kBlastNodes - 1), 1) + "%) and the busiest ends at " +
                                format_fixed(busiest_by_v.back(), 2) + "x.");
        return {std::move(summary), std::move(detail)};
    }

    // 4. Replicas: walking clockwise and skipping nodes already chosen.
    Table replicas() const {
        Table t;
        t.key = "replicas";
        t.title = "4. Replicas: " + std::to_string(kReplicaCount) + " copies per key on " +
                  std::to_string(kBlastNodes) + " nodes";
        t.columns = {{"tokens_per_node", "tokens per node"},
                     {"method", "method", false},
                     {"distinct_pct", "keys on 3 distinct nodes"},
                     {"doubled_pct", "keys with a node twice"},
                     {"busiest_copies", "busiest node's copies / mean"}};
        for (uint32_t v : kReplicaTokens) {
            std::unique_ptr<Ring> ring = ring_of(kBlastNodes, v);
            Snapshot snap = ring->snapshot();
            // Next 3 tokens, no skipping: exact, from the token table's arcs.
            const size_t tokens = snap.token_count();
            std::vector<uint64_t> value(tokens);
            std::vector<uint32_t> owner(tokens);
            for (size_t i = 0; i < tokens; ++i) snap.token(i, value[i], owner[i]);
            double doubled = 0;
            std::vector<double> naive_copies(kBlastNodes, 0);
            for (size_t i = 0; i < tokens; ++i) {
                double arc = std::ldexp(double(value[i] - value[(i + tokens - 1) % tokens]), -64);
                uint32_t a = owner[i], b = owner[(i + 1) % tokens], c = owner[(i + 2) % tokens];
                if (a == b || b == c || a == c) doubled += arc;
                for (uint32_t o : {a, b, c}) naive_copies[o] += arc;
            }
            t.add_row({count_cell(v), text_cell("next 3 tokens (naive)"), percent_cell(1 - doubled, 2),
                       percent_cell(doubled, 2), ratio_cell(spread_of(naive_copies).max_over_mean(), 2)});

            // chr_snapshot_replicas on every key.
            std::vector<double> copies(kBlastNodes, 0);
            uint64_t distinct = 0;
            chr_node_view views[kReplicaCount];
            keys_.for_each_block([&](uint64_t, const KeyBlock &block) {
                for (size_t k = 0; k < block.size(); ++k) {
                    size_t got = snap.replicas(block.data[k], block.lens[k], kReplicaCount, views);
                    bool unique = got == kReplicaCount;
                    for (size_t x = 0; x < got; ++x) {
                        copies[views[x].index] += 1;
                        for (size_t y = 0; y < x; ++y) unique = unique && views[x].index != views[y].index;
                    }
                    distinct += unique;
                }
            });
            double n = double(keys_.size());
            t.add_row({count_cell(v), text_cell("chring replicas"), percent_cell(double(distinct) / n, 2),
                       percent_cell(1 - double(distinct) / n, 2), ratio_cell(spread_of(copies).max_over_mean(), 2)});
        }
        t.notes.push_back("Taking the next 3 tokens clockwise often lands two copies on one node, so one failure "
                          "loses two of three copies. chr_ring_replicas walks on and skips nodes already chosen "
                          "(Dynamo's preference list): every key gets 3 different nodes.");
        return t;
    }

    // 5. Weighted ketama against native placement: same servers, same change.
    Table ketama_moves() const {
        const KeySet keys = KeySet::synthetic(std::min(keys_.size(), kKetamaKeysMax));
        const RingConfig native = config(CHR_DEFAULT_TOKENS_PER_WEIGHT);
        RingConfig ketama = flags_.ring;
        ketama.placement = "ketama";
        ketama.hasher.clear();  // its own: md5
        const std::vector<Member> servers = weighted_servers();
        std::vector<std::vector<Movement>> moves;  // [native, ketama][change]
        std::vector<double> ideal;                 // [change]
        const RingConfig *schemes[] = {&native, &ketama};
        for (const RingConfig *c : schemes) {
            Ring base(*c);
            base.add(servers);
            Snapshot before = base.snapshot();
            std::vector<uint32_t> owners_before = owners_of(before, keys, nullptr);
            moves.emplace_back();
            for (const ServerChange &change : kServerChanges) {
                Ring changed(*c);
                changed.add(servers);
                changed.apply({change_of(change)});
                Snapshot after = changed.snapshot();
                Universe u;
                u.record(before, after);
                moves.back().push_back(moves_after(u, after, keys, owners_before));
                if (c == &native) ideal.push_back(u.ideal_fraction());
            }
        }

        Table t;
        t.key = "ketama_moves";
        t.title = "5. Weighted ketama (libmemcached) vs native: one change to " + std::to_string(kServers) +
                  " servers 10.0.0.N:11211 of weight N";
        t.columns = {{"change", "change", false},
                     {"keys", "keys", true, false},
                     {"native_moved", "native moved", true, false},
                     {"native_moved_pct", "native moved"},
                     {"ketama_moved", "ketama moved", true, false},
                     {"ketama_moved_pct", "ketama moved"},
                     {"ideal_pct", "ideal"},
                     {"ketama_collateral", "ketama collateral", true, false},
                     {"ketama_collateral_pct", "ketama collateral"},
                     {"native_collateral", "native collateral"}};
        const double n = double(keys.size());
        std::vector<double> collateral, ratio;
        for (size_t i = 0; i < std::size(kServerChanges); ++i) {
            const Movement &nat = moves[0][i], &ket = moves[1][i];
            collateral.push_back(double(ket.collateral) / n);
            ratio.push_back(nat.moved ? double(ket.moved) / double(nat.moved) : 0);
            t.add_row({text_cell(change_label(kServerChanges[i])), count_cell(keys.size()), count_cell(nat.moved),
                       percent_cell(double(nat.moved) / n, 2), count_cell(ket.moved),
                       percent_cell(double(ket.moved) / n, 2), percent_cell(ideal[i], 2),
                       count_cell(ket.collateral), percent_cell(double(ket.collateral) / n, 2),
                       count_cell(nat.collateral)});
        }
        auto [least_collateral, most_collateral] = std::minmax_element(collateral.begin(), collateral.end());
        auto [least_ratio, most_ratio] = std::minmax_element(ratio.begin(), ratio.end());
        if (keys.size() < keys_.size())
            t.notes.push_back("Measured with the first " + with_commas(keys.size()) + " of the " +
                              with_commas(keys_.size()) + " keys: ketama hashes every key with MD5.");
        t.notes.push_back("Weighted ketama (hasher md5) gives each server floor(w/W*40*n)*4 points, so any change of "
                          "servers or weights recomputes every server's point count: servers that did not change "
                          "trade points, and keys with them. That collateral (keys that left a server which did not "
                          "shrink for one which did not grow) is " +
                          format_fixed(100 * *least_collateral, 2) + "% to " + format_fixed(100 * *most_collateral, 2) +
                          "% of all keys here, and ketama moves " + format_fixed(*least_ratio, 1) + "x to " +
                          format_fixed(*most_ratio, 1) + "x what native placement moves. Native tokens (" +
                          flags_.ring.effective_hasher() + ", " + std::to_string(CHR_DEFAULT_TOKENS_PER_WEIGHT) +
                          " per unit of weight) depend on their own node alone: only the changed server's keys "
                          "move, about the ideal (its change in share of the total weight). Use ketama to share a "
                          "key layout with libmemcached or twemproxy clients, not for its own sake.");
        return t;
    }

    const std::vector<uint64_t> &key_hashes() {
        if (hashes_.empty()) hashes_ = hashes_of(keys_, flags_.ring, nullptr);
        return hashes_;
    }

    // Three rings side by side, then where the failed node's keys went.
    void draw(const std::string &path) const {
        BarChart bars;
        bars.title = "When " + node_name(kFailedNode) + " fails: share of its keys each survivor takes";
        bars.series = {"1 token per node", "160 tokens per node"};
        bars.fair_label = "even spread 1/" + std::to_string(kBlastNodes - 1);
        for (uint32_t s = 0; s < kBlastNodes - 1; ++s) {
            uint32_t number = s + 1 < kFailedNode ? s + 1 : s + 2;
            bars.rows.push_back({node_name(number), {blast_.front()[s], blast_.back()[s]},
                                 1.0 / double(kBlastNodes - 1), ring_color_index(number)});
        }
        const double width = 1000;
        Svg svg(width, 440 + bars_height(bars) + 10);
        svg.text(width / 2, 30, "The same 10 nodes with 1, 16 and 160 tokens each", 18, "middle",
                 "font-weight=\"bold\"");
        const uint32_t shown[] = {1, 16, 160};
        std::vector<std::string> labels;
        for (size_t i = 0; i < 3; ++i) {
            std::unique_ptr<Ring> ring = ring_of(kBlastNodes, shown[i]);
            Snapshot snap = ring->snapshot();
            std::vector<double> shares;
            for (const NodeInfo &n : snap.nodes()) shares.push_back(n.ownership);
            char sub[96];
            std::snprintf(sub, sizeof sub, "busiest node owns %.2fx the mean", spread_of(shares).max_over_mean());
            RingPicture pic = ring_picture(snap, std::to_string(shown[i]) + (shown[i] == 1 ? " token" : " tokens") +
                                                      " per node", sub);
            labels = pic.node_labels;
            draw_ring(svg, 170 + double(i) * 330, 210, 120, pic);
        }
        draw_legend(svg, 60, 380, width - 120, labels, 40);
        draw_bars(svg, 40, 440, width - 80, bars);
        svg.save(path);
    }

    const DemoFlags &flags_;
    KeySet keys_;
    std::vector<uint64_t> hashes_;
    std::vector<std::vector<double>> blast_;  // [1 token, ..., 160 tokens][survivor]
};

void run(const DemoFlags &f) {
    Format format = parse_format(f.output.format);
    Demo demo(f);
    Report report = demo.run();
    write_report(report, format, std::cout);
}

}  // namespace

void add_demo_command(CLI::App &app) {
    auto flags = std::make_shared<DemoFlags>();
    CLI::App *cmd = app.add_subcommand("demo", "Why a consistent-hashing ring: key moves, balance, failures, "
                                               "replicas, weighted ketama's extra moves, measured live");
    cmd->footer("Runs fixed scenarios against the real library; no arguments needed. Example: chring demo --svg demo.svg");
    cmd->add_option("--keys", flags->keys, "Keys routed in each scenario")
        ->type_name("N")
        ->check(whole_number(1000, uint64_t(1) << 28))
        ->capture_default_str();
    add_hasher_options(*cmd, flags->ring);
    add_output_options(*cmd, flags->output, true);
    cmd->callback([flags] { run(*flags); });
}

}  // namespace chring::cli
