// Migration plans: chr_diff_new between a ring and the same ring after a
// change, at 1,000 nodes (160,000 tokens) and 100,000 nodes (16,000,000
// tokens, the CHR_TOKENS_MAX scale), for one added node and for a batch of
// 10 changes; and chr_plan_new for 3 replicas at 160,000 tokens. Each
// iteration makes the diff (or plan) and frees it; the snapshots are made
// once. The goal for the largest diff is under 1 s on a 2-core machine.
// Report CPU time (the "CPU" column): it is what the walk costs, whatever
// else the machine runs.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

// A snapshot of a ring of `nodes` nodes before and after `changes`.
struct Pair {
    chr_snapshot *before = nullptr, *after = nullptr;
    Pair(size_t nodes, const std::vector<chr_change> &changes) {
        chr_ring *ring = bench::build_ring(nodes);
        bench::check(chr_ring_snapshot(ring, &before), "chr_ring_snapshot");
        bench::check(chr_ring_apply(ring, changes.data(), changes.size(), nullptr), "chr_ring_apply");
        bench::check(chr_ring_snapshot(ring, &after), "chr_ring_snapshot");
        chr_ring_free(ring);
    }
    ~Pair() {
        chr_snapshot_release(before);
        chr_snapshot_release(after);
    }
};

// Keeps the ids of a batch alive.
struct Changes {
    std::vector<std::string> ids;
    std::vector<chr_change> list;
    // One added node (kind 0), or 10 changes: 4 adds, 3 removes, 3 reweights.
    Changes(size_t nodes, int kind) {
        ids.reserve(10);
        const size_t count = kind == 0 ? 1 : 10;
        for (size_t k = 0; k < count; ++k) {
            const int op = kind == 0 ? 0 : int(k % 3);
            ids.push_back(op == 0 ? "node-new-" + std::to_string(k) : bench::node_id(k * (nodes / 10)));
            const std::string &id = ids.back();
            list.push_back(chr_change{op == 0 ? uint32_t(CHR_OP_ADD) : op == 1 ? uint32_t(CHR_OP_REMOVE)
                                                                             : uint32_t(CHR_OP_SET_WEIGHT),
                                      op == 2 ? 3u : 1u, id.data(), id.size(), nullptr, 0, k});
        }
    }
};

void diff(benchmark::State &state) {
    const size_t nodes = size_t(state.range(0));
    const Changes changes(nodes, int(state.range(1)));
    const Pair pair(nodes, changes.list);
    size_t tokens = 0;
    bench::check(chr_snapshot_token_count(pair.before, &tokens), "chr_snapshot_token_count");
    chr_diff_info info = CHR_DIFF_INFO_INIT;
    for (auto _ : state) {
        chr_diff *d = nullptr;
        bench::check(chr_diff_new(pair.before, pair.after, &d), "chr_diff_new");
        bench::check(chr_diff_describe(d, &info), "chr_diff_describe");
        bench::consume(info.ranges);
        chr_diff_free(d);
    }
    state.counters["tokens"] = double(tokens);
    state.counters["ranges"] = double(info.ranges);
    state.counters["moved_pct"] = info.moved * 100;
    state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(2 * tokens));  // tokens walked
}

void plan(benchmark::State &state) {
    const size_t nodes = size_t(state.range(0));
    const Changes changes(nodes, int(state.range(1)));
    const Pair pair(nodes, changes.list);
    chr_diff *d = nullptr;
    bench::check(chr_diff_new(pair.before, pair.after, &d), "chr_diff_new");
    chr_plan_info info = CHR_PLAN_INFO_INIT;
    for (auto _ : state) {
        chr_plan *p = nullptr;
        bench::check(chr_plan_new(d, 0, 3, &p), "chr_plan_new");
        bench::check(chr_plan_describe(p, &info), "chr_plan_describe");
        bench::consume(info.entries);
        chr_plan_free(p);
    }
    chr_diff_free(d);
    state.counters["entries"] = double(info.entries);
    state.counters["copies_pct"] = info.copies * 100;
}

}  // namespace

// Args: nodes (160 tokens each), change (0: one node added, 1: 10 changes).
BENCHMARK(diff)->ArgNames({"nodes", "change"})->Args({1000, 0})->Args({1000, 1})
    ->Args({100000, 0})->Args({100000, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(plan)->ArgNames({"nodes", "change"})->Args({1000, 0})->Args({1000, 1})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
