// Copy-on-write update cost: adding or removing one node of a ring (a new
// snapshot is built beside the old one and published), and building a
// whole ring from scratch in one chr_ring_apply batch. Only the measured
// call is timed (manual time); the call that undoes it is not.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "bench_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;

const std::string extra_node = "node-extra";

// Times `measured`, then runs `undo` untimed; stops the run on a failure.
template <class Measured, class Undo>
void timed_rounds(benchmark::State &state, Measured measured, Undo undo) {
    for (auto _ : state) {
        Clock::time_point start = Clock::now();
        chr_status st = measured();
        Clock::time_point stop = Clock::now();
        if (st == CHR_OK) st = undo();
        if (st != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
    }
}

chr_status add_extra(chr_ring *ring) {
    return chr_ring_add(ring, extra_node.data(), extra_node.size(), 1, nullptr, 0, 0);
}

chr_status remove_extra(chr_ring *ring) {
    return chr_ring_remove(ring, extra_node.data(), extra_node.size());
}

void add_one_node(benchmark::State &state) {
    chr_ring *ring = bench::shared_ring(size_t(state.range(0)));
    timed_rounds(state, [&] { return add_extra(ring); }, [&] { return remove_extra(ring); });
}

void remove_one_node(benchmark::State &state) {
    chr_ring *ring = bench::shared_ring(size_t(state.range(0)));
    bench::check(add_extra(ring), "chr_ring_add");
    timed_rounds(state, [&] { return remove_extra(ring); }, [&] { return add_extra(ring); });
    bench::check(remove_extra(ring), "chr_ring_remove");
}

void build_from_scratch(benchmark::State &state) {
    const bench::NodeBatch batch(size_t(state.range(0)));
    chr_ring *ring = nullptr;
    bench::check(chr_ring_new(nullptr, &ring), "chr_ring_new");
    timed_rounds(
        state,
        [&] { return chr_ring_apply(ring, batch.changes.data(), batch.changes.size(), nullptr); },
        [&] {
            chr_ring_free(ring);
            return chr_ring_new(nullptr, &ring);
        });
    chr_ring_free(ring);
}

}  // namespace

BENCHMARK(add_one_node)->Arg(100)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(remove_one_node)->Arg(100)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(build_from_scratch)->Arg(100)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
