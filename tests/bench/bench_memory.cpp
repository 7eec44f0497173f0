// Memory per token of a ring, two ways:
//   index:  the snapshot's own count of its token array and prefix index
//           (Snapshot::index_bytes(), white-box: this program links the core
//           statically, as the white-box tests do);
//   rss:    how much the process's resident memory grows when the ring is
//           built through the public API, free heap trimmed before and after
//           (node table and allocator overhead included).
// The layout promises 8 bytes of value + 4 bytes of owner per token plus a
// prefix index of at most 4 bytes per token: 12..16 bytes.
//
// One iteration and one repetition each: a second build in the same process
// would reuse already-resident heap pages and hide the growth.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>

#include "bench_support.hpp"
#include "snapshot.hpp"

namespace {

size_t resident_bytes() {
    std::FILE *f = std::fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (f) {
        if (std::fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return resident * size_t(sysconf(_SC_PAGESIZE));
}

// Builds and frees one small ring, so that what the first ring of a process
// costs once (loading the hash plugin, this thread's reader slot) is not
// charged to whichever size is measured first.
void warm_up() {
    static const bool done = [] {
        chr_ring_free(bench::build_ring(1));
        return true;
    }();
    (void)done;
}

void memory_per_token(benchmark::State &state) {
    const size_t nodes = size_t(state.range(0));
    warm_up();
    for (auto _ : state) {
        malloc_trim(0);
        const size_t before = resident_bytes();
        chr_ring *ring = bench::build_ring(nodes);
        malloc_trim(0);
        const size_t after = resident_bytes();

        chr_snapshot *snap = nullptr;
        bench::check(chr_ring_snapshot(ring, &snap), "chr_ring_snapshot");
        size_t tokens = 0;
        bench::check(chr_snapshot_token_count(snap, &tokens), "chr_snapshot_token_count");
        // chr_snapshot is the core's Snapshot, as the C API glue casts it.
        const auto *core = reinterpret_cast<const chring::Snapshot *>(snap);
        const double index_bytes = double(core->index_bytes());
        chr_snapshot_release(snap);
        chr_ring_free(ring);

        state.counters["tokens"] = double(tokens);
        state.counters["index_bytes_per_token"] = index_bytes / double(tokens);
        state.counters["rss_bytes_per_token"] = (double(after) - double(before)) / double(tokens);
    }
}

}  // namespace

BENCHMARK(memory_per_token)
    ->Arg(10)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(10000)
    ->Iterations(1)
    ->Repetitions(1)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
