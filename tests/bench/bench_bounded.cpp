// Bounded-load lookups against the plain lookup, and the tracker, at 10,
// 100 and 1,000 nodes of weight 1 (docs/bounded-loads.md).
//
// Rows (interleaved by Google Benchmark in one run, so the ratios compare
// lookups measured under the same machine load):
//   plain/N               chr_snapshot_lookup: the reference
//   bounded_idle/N        chr_snapshot_lookup_bounded, every load 0 (the
//                         home always has room: one probe)
//   bounded_90/N          the same at 90% load: the loads are a fixed
//                         vector summing to L = 9 * N, every node holding
//                         L / N = 9 except a tenth of them (chosen by a
//                         fixed hash) held at their capacity, so keys homed
//                         there spill (factor 1.25)
//   tracker/N             chr_tracker_acquire + chr_tracker_release of one
//                         request, nothing else in flight
// Counters (exact, not timed): probes = nodes compared per lookup.
#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

struct Scene {
    chr_snapshot *snap = nullptr;
    size_t nodes;
    std::vector<uint64_t> idle, busy;
    explicit Scene(size_t n) : nodes(n), idle(n, 0), busy(n, 9) {
        bench::check(chr_ring_snapshot(bench::shared_ring(n), &snap), "chr_ring_snapshot");
        // A tenth of the nodes full: their load is their capacity at L.
        uint64_t total = 9 * n;
        std::vector<uint32_t> w(n, 1);
        std::vector<uint64_t> caps(n);
        chr_bound_options o = CHR_BOUND_OPTIONS_INIT;
        bench::check(chr_bound_capacities(w.data(), n, total, &o, caps.data()), "chr_bound_capacities");
        for (size_t i = 0; i < n; ++i) {
            uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
            h ^= h >> 31;
            if (h % 10 == 0) busy[i] = caps[i];
        }
    }
    ~Scene() { chr_snapshot_release(snap); }
};

Scene &scene(size_t n) {
    static Scene s10(10), s100(100), s1000(1000);
    return n == 10 ? s10 : n == 100 ? s100 : s1000;
}

void plain(benchmark::State &state) {
    Scene &s = scene(size_t(state.range(0)));
    const bench::KeyPool &keys = bench::KeyPool::get();
    size_t i = 0;
    chr_node_view v;
    for (auto _ : state) {
        const bench::Key &k = keys[i++];
        benchmark::DoNotOptimize(chr_snapshot_lookup(s.snap, k.bytes, k.len, &v));
        benchmark::DoNotOptimize(v.index);
    }
}

void bounded(benchmark::State &state, bool busy) {
    Scene &s = scene(size_t(state.range(0)));
    const bench::KeyPool &keys = bench::KeyPool::get();
    const std::vector<uint64_t> &loads = busy ? s.busy : s.idle;
    chr_bound_options o = CHR_BOUND_OPTIONS_INIT;
    size_t i = 0;
    uint64_t probes = 0;
    chr_node_view v;
    chr_bound_result r;
    for (auto _ : state) {
        const bench::Key &k = keys[i++];
        benchmark::DoNotOptimize(chr_snapshot_lookup_bounded(s.snap, k.bytes, k.len, loads.data(),
                                                             nullptr, s.nodes, &o, &v, &r));
        probes += r.probes;
    }
    state.counters["probes"] = double(probes) / double(state.iterations());
}

void tracker(benchmark::State &state) {
    Scene &s = scene(size_t(state.range(0)));
    const bench::KeyPool &keys = bench::KeyPool::get();
    chr_tracker *t = nullptr;
    bench::check(chr_tracker_new(0, &t), "chr_tracker_new");
    chr_bound_options o = CHR_BOUND_OPTIONS_INIT;
    size_t i = 0;
    chr_ticket ticket;
    for (auto _ : state) {
        const bench::Key &k = keys[i++];
        benchmark::DoNotOptimize(chr_tracker_acquire(t, s.snap, k.bytes, k.len, &o, nullptr, nullptr, &ticket));
        benchmark::DoNotOptimize(chr_tracker_release(t, &ticket));
    }
    chr_tracker_free(t);
}

void bounded_idle(benchmark::State &state) { bounded(state, false); }
void bounded_90(benchmark::State &state) { bounded(state, true); }

}  // namespace

BENCHMARK(plain)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(bounded_idle)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(bounded_90)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(tracker)->Arg(10)->Arg(100)->Arg(1000);

BENCHMARK_MAIN();
