// Zone-aware replicas against the plain walk: chr_snapshot_replicas(3)
// (nodes) vs chr_snapshot_replicas_policy(3) under zones-first and NTS, on
// the same keys and rings of N nodes x 160 tokens (weight 1), in
//   even:   3 zones of N/3 nodes (node i in zone i % 3), and
//   skewed: 3 zones where zone c holds 1 node in 10 (the walk reaches
//           zone c later: the zone policies' slow case), and
//   zoneless: no zones (one shared zone: every policy is the plain walk).
// The argument is N; the topology is in the name.
#include <benchmark/benchmark.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

using bench::Key;
using bench::KeyPool;

// A ring of `nodes` zoned nodes, built once per (topology, size).
enum Topology { even, skewed, zoneless };

const chr_snapshot *zoned_snapshot(Topology topology, size_t nodes) {
    static std::mutex lock;
    static std::map<std::pair<Topology, size_t>, chr_snapshot *> snaps;  // kept for the process
    std::lock_guard<std::mutex> hold(lock);
    chr_snapshot *&snap = snaps[{topology, nodes}];
    if (snap) return snap;
    bench::NodeBatch batch(nodes);
    static const char *const zones[] = {"a", "b", "c"};
    for (size_t i = 0; i < nodes && topology != zoneless; ++i) {
        const size_t zone = topology == skewed ? (i % 10 == 0 ? 2 : i % 2) : i % 3;
        batch.changes[i].zone = zones[zone];
        batch.changes[i].zone_len = 1;
    }
    chr_ring *ring = bench::build_ring(batch);
    bench::check(chr_ring_snapshot(ring, &snap), "chr_ring_snapshot");
    chr_ring_free(ring);
    return snap;
}

template <int32_t Policy, Topology Zones>
void replicas3(benchmark::State &state) {
    const chr_snapshot *snap = zoned_snapshot(Zones, size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    static bench::ResultSlots<chr_node_view, 3> out;
    size_t count = 0, i = 0;
    for (auto _ : state) {
        const Key &k = pool[i];
        chr_node_view *owners = out[i++];
        const chr_status st =
            Policy < 0 ? chr_snapshot_replicas(snap, k.bytes, k.len, 3, owners, &count)
                       : chr_snapshot_replicas_policy(snap, k.bytes, k.len, Policy, 3, owners, &count);
        if (st != CHR_OK) {
            state.SkipWithError(chr_last_error());
            break;
        }
        bench::consume(owners[count - 1].index);
    }
}

// -1: chr_snapshot_replicas itself (the nodes policy's own entry point)
void nodes_even(benchmark::State &s) { replicas3<-1, even>(s); }
void zones_first_even(benchmark::State &s) { replicas3<CHR_REPLICAS_ZONES_FIRST, even>(s); }
void nts_even(benchmark::State &s) { replicas3<CHR_REPLICAS_NTS, even>(s); }
void nodes_skewed(benchmark::State &s) { replicas3<-1, skewed>(s); }
void zones_first_skewed(benchmark::State &s) { replicas3<CHR_REPLICAS_ZONES_FIRST, skewed>(s); }
void nts_skewed(benchmark::State &s) { replicas3<CHR_REPLICAS_NTS, skewed>(s); }
void nodes_zoneless(benchmark::State &s) { replicas3<-1, zoneless>(s); }
void zones_first_zoneless(benchmark::State &s) { replicas3<CHR_REPLICAS_ZONES_FIRST, zoneless>(s); }

}  // namespace

BENCHMARK(nodes_even)->Arg(30)->Arg(300)->Arg(3000);
BENCHMARK(zones_first_even)->Arg(30)->Arg(300)->Arg(3000);
BENCHMARK(nts_even)->Arg(30)->Arg(300)->Arg(3000);
BENCHMARK(nodes_skewed)->Arg(30)->Arg(300)->Arg(3000);
BENCHMARK(zones_first_skewed)->Arg(30)->Arg(300)->Arg(3000);
BENCHMARK(nts_skewed)->Arg(30)->Arg(300)->Arg(3000);
BENCHMARK(nodes_zoneless)->Arg(30)->Arg(300)->Arg(3000);
BENCHMARK(zones_first_zoneless)->Arg(30)->Arg(300)->Arg(3000);

BENCHMARK_MAIN();
