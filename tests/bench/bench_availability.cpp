// Availability (chring.h, "Availability"): what marks cost.
//
// Lookups of 100 nodes x 160 tokens with no mark (the path every ring
// takes: one predicted branch more than before marks existed) and with 1
// of the 100 nodes down (about 1% of keys walk on to the next member of
// their replica walk), one at a time and in batches; replicas(3) with the
// same mark. And an availability-only update (chr_ring_set_down: a new
// snapshot of the same tokens, the index's chunks shared) at 100 and
// 10,000 nodes, against adding one node (a membership change) at the same
// sizes.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

using bench::Key;
using bench::KeyPool;

constexpr size_t kNodes = 100;
constexpr size_t kBatch = 1024;

// A ring of kNodes with `down` of them marked down, and a snapshot of it.
struct Marked {
    chr_ring *ring = nullptr;
    chr_snapshot *snap = nullptr;
    explicit Marked(size_t down) {
        ring = bench::build_ring(kNodes);
        for (size_t i = 0; i < down; ++i) {
            const std::string id = bench::node_id(i * 37 % kNodes);
            bench::check(chr_ring_set_down(ring, id.data(), id.size(), 1), "chr_ring_set_down");
        }
        bench::check(chr_ring_snapshot(ring, &snap), "chr_ring_snapshot");
    }
    ~Marked() {
        chr_snapshot_release(snap);
        chr_ring_free(ring);
    }
};

void snapshot_lookup(benchmark::State &state) {
    Marked m(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    chr_node_view out;
    size_t i = 0;
    for (auto _ : state) {
        const Key &k = pool[i++];
        if (chr_snapshot_lookup(m.snap, k.bytes, k.len, &out) != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        bench::consume(out.index);
    }
}

void ring_lookup(benchmark::State &state) {
    Marked m(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    chr_node_ref out;
    size_t i = 0;
    for (auto _ : state) {
        const Key &k = pool[i++];
        if (chr_ring_lookup(m.ring, k.bytes, k.len, &out) != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        bench::consume(out.index);
    }
}

void lookup_batch(benchmark::State &state) {
    Marked m(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    std::vector<const void *> keys(kBatch);
    std::vector<size_t> lens(kBatch);
    std::vector<uint32_t> owners(kBatch);
    size_t i = 0;
    for (auto _ : state) {
        state.PauseTiming();
        for (size_t j = 0; j < kBatch; ++j, ++i) {
            keys[j] = pool[i].bytes;
            lens[j] = pool[i].len;
        }
        state.ResumeTiming();
        if (chr_snapshot_lookup_batch(m.snap, keys.data(), lens.data(), kBatch, owners.data()) != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        bench::consume(owners[kBatch - 1]);
    }
    state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(kBatch));
}

void snapshot_replicas3(benchmark::State &state) {
    Marked m(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    chr_node_view out[3];
    size_t count = 0, i = 0;
    for (auto _ : state) {
        const Key &k = pool[i++];
        if (chr_snapshot_replicas(m.snap, k.bytes, k.len, 3, out, &count) != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        bench::consume(out[0].index);
    }
}

// One chr_ring_set_down a timed iteration, node 0 alternately down and up.
void set_down(benchmark::State &state) {
    chr_ring *ring = bench::build_ring(size_t(state.range(0)));
    const std::string id = bench::node_id(0);
    uint32_t down = 1;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        const chr_status st = chr_ring_set_down(ring, id.data(), id.size(), down);
        state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (st != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        down ^= 1;
    }
    chr_ring_free(ring);
}

// The same sizes' membership change, for scale: one node added, then removed (untimed).
void add_one_node(benchmark::State &state) {
    chr_ring *ring = bench::build_ring(size_t(state.range(0)));
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        const chr_status st = chr_ring_add(ring, "newcomer", 8, 1, nullptr, 0, 0);
        state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (st != CHR_OK || chr_ring_remove(ring, "newcomer", 8) != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
    }
    chr_ring_free(ring);
}

}  // namespace

// Arg: nodes marked down of the 100.
BENCHMARK(snapshot_lookup)->Arg(0)->Arg(1);
BENCHMARK(ring_lookup)->Arg(0)->Arg(1);
BENCHMARK(lookup_batch)->Arg(0)->Arg(1);
BENCHMARK(snapshot_replicas3)->Arg(0)->Arg(1);
// Arg: nodes in the ring.
BENCHMARK(set_down)->Arg(100)->Arg(10000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(add_one_node)->Arg(100)->Arg(10000)->UseManualTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
