// test_ketama_disruption.cpp — suite 'compat': how many keys a membership
// or weight change moves under each placement, for the same servers and
// weights, and which placements keep chring's guarantee that only keys of
// the changed server move.
//
// For 10 and 50 servers with random weights 1..100 (seeded), three changes:
// add one server, remove one, double one weight. Over 200,000 random keys:
//   moved      - keys whose owner changed;
//   minimum    - the change of the changed server's weight share, what must
//                move (for the unweighted mode every weight counts as 1);
//   collateral - keys that moved between two servers that did not change.
// Asserted: collateral is 0 for native, ketama-unweighted and nginx (each
// server's points depend only on itself), and above 0 for weighted ketama:
// its point counts are shares of 160 * n, so any change of n or of the total
// weight recomputes every server's count (as libmemcached and twemproxy do;
// the header documents it). The table is DISRUPTION.md.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "test_util.h"
}

#include "compat_ring.hpp"

namespace {

using compat_test::Server;

constexpr size_t kKeys = 200000;
constexpr uint32_t kMaxWeight = 100;

enum class Change { add, remove, double_weight };

const char *change_name(Change c) {
    switch (c) {
    case Change::add: return "add one";
    case Change::remove: return "remove one";
    default: return "double one weight";
    }
}

struct Placement {
    int32_t mode;
    const char *name;
    bool weighted;            // false: every weight is 1 (ketama-unweighted)
    bool minimal_disruption;  // only keys of the changed server may move
};

const Placement kPlacements[] = {
    {CHR_PLACEMENT_NATIVE, "native", true, true},
    {CHR_PLACEMENT_KETAMA, "ketama", true, false},
    {CHR_PLACEMENT_KETAMA_UNWEIGHTED, "ketama-unweighted", false, true},
    {CHR_PLACEMENT_NGINX, "nginx", true, true},
};

struct Outcome {
    double moved, collateral, minimum;  // fractions of the keys / of the circle
};

std::vector<uint64_t> owners(const chr_ring *ring, const compat_test::KeyBatch &keys) {
    std::vector<uint64_t> tags;
    assert_chr_ok(compat_test::owner_tags(ring, keys, tags));
    return tags;
}

double weight_share(const std::vector<Server> &servers, size_t which) {
    double total = 0;
    for (const Server &s : servers) total += s.weight;
    return servers[which].weight / total;
}

// Applies `change` to server `victim` (or adds one, tag = servers.size())
// on a ring built from `servers`, and measures what moved.
Outcome measure(const Placement &p, std::vector<Server> servers, Change change, size_t victim,
                uint32_t added_weight, const compat_test::KeyBatch &keys) {
    if (!p.weighted) {
        for (Server &s : servers) s.weight = 1;
        added_weight = 1;
    }
    chr_ring *ring = nullptr;
    assert_chr_ok(compat_test::build_ring(p.mode, servers, &ring));
    const std::vector<uint64_t> before = owners(ring, keys);

    uint64_t changed = victim;
    std::vector<Server> after = servers;
    double minimum = 0;
    const Server &v = servers[victim];
    switch (change) {
    case Change::add:
        changed = servers.size();
        after.push_back({"added.example.net:11311", added_weight});
        assert_chr_ok(chr_ring_add(ring, after.back().id.data(), after.back().id.size(),
                                   added_weight, nullptr, 0, changed));
        minimum = weight_share(after, after.size() - 1);
        break;
    case Change::remove:
        assert_chr_ok(chr_ring_remove(ring, v.id.data(), v.id.size()));
        minimum = weight_share(servers, victim);
        break;
    case Change::double_weight:
        after[victim].weight *= 2;
        assert_chr_ok(chr_ring_set_weight(ring, v.id.data(), v.id.size(), after[victim].weight));
        minimum = weight_share(after, victim) - weight_share(servers, victim);
        break;
    }
    const std::vector<uint64_t> now = owners(ring, keys);
    chr_ring_free(ring);

    size_t moved = 0, collateral = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
        if (before[i] == now[i]) continue;
        ++moved;
        collateral += before[i] != changed && now[i] != changed;
    }
    return {double(moved) / keys.size(), double(collateral) / keys.size(), minimum};
}

std::vector<Server> random_servers(size_t count, std::mt19937_64 &rng) {
    std::uniform_int_distribution<uint32_t> weight(1, kMaxWeight);
    std::vector<Server> servers;
    for (size_t i = 0; i < count; ++i)
        servers.push_back({"cache-" + std::to_string(i) + ".example.net:11311", weight(rng)});
    return servers;
}

void print_header() {
    static bool printed = false;
    if (printed) return;
    printed = true;
    std::printf("| servers | change | placement | keys moved | minimum | collateral |\n"
                "|---:|---|---|---:|---:|---:|\n");
}

void disruption_table(size_t count, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const std::vector<Server> servers = random_servers(count, rng);
    const compat_test::KeyBatch keys = compat_test::random_keys(kKeys, 1, 32, rng());
    const size_t victim = size_t(rng() % count);
    const uint32_t added_weight = 1 + uint32_t(rng() % kMaxWeight);
    print_header();
    for (Change change : {Change::add, Change::remove, Change::double_weight}) {
        for (const Placement &p : kPlacements) {
            if (!p.weighted && change == Change::double_weight) continue;  // weights are 0 or 1
            Outcome o = measure(p, servers, change, victim, added_weight, keys);
            const uint32_t w = !p.weighted ? 1
                               : change == Change::add ? added_weight
                                                       : servers[victim].weight;
            std::printf("| %zu | %s (w=%u) | %s | %.2f %% | %.2f %% | %.2f %% |\n", count,
                        change_name(change), w, p.name, 100 * o.moved, 100 * o.minimum,
                        100 * o.collateral);
            if (p.minimal_disruption)
                assert_true(o.collateral == 0.0);
            else
                assert_true(o.collateral > 0.0);
            assert_true(o.moved > 0.0);
        }
    }
}

void ten_servers(void **) { disruption_table(10, 0xd15c0010); }
void fifty_servers(void **) { disruption_table(50, 0xd15c0050); }

}  // namespace

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ten_servers),
        cmocka_unit_test(fifty_servers),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
