// Single-threaded lookup cost at 10, 100 and 1,000 nodes x 160 tokens:
// chring through the ring handle and through a snapshot, replicas(3), and
// the two references that bound it: the xxh3 key hash alone (the floor)
// and a plain std::lower_bound over the same sorted token array.
// libmemcached's ketama lookup (bench_ketama.cpp) is linked into the same
// program.
#include <benchmark/benchmark.h>

#include <string>

#include "bench_support.hpp"

namespace {

using bench::Key;
using bench::KeyPool;

// Holds a snapshot of the shared ring for the length of one benchmark run.
class SnapshotHold {
public:
    explicit SnapshotHold(size_t nodes) {
        bench::check(chr_ring_snapshot(bench::shared_ring(nodes), &snap_), "chr_ring_snapshot");
    }
    ~SnapshotHold() { chr_snapshot_release(snap_); }
    SnapshotHold(const SnapshotHold &) = delete;
    SnapshotHold &operator=(const SnapshotHold &) = delete;
    const chr_snapshot *get() const { return snap_; }

private:
    chr_snapshot *snap_ = nullptr;
};

// Stops the run with chr_last_error() when a call under test fails.
bool failed(benchmark::State &state, chr_status st) {
    if (st == CHR_OK) return false;
    state.SkipWithError(chr_last_error());
    return true;
}

void xxh3_alone(benchmark::State &state) {
    const KeyPool &pool = KeyPool::get();
    size_t i = 0;
    for (auto _ : state) bench::consume(bench::key_hash(pool[i++]));
}

void std_lower_bound(benchmark::State &state) {
    SnapshotHold snap(size_t(state.range(0)));
    const bench::TokenArray tokens(snap.get());
    std::string mismatch = bench::compare_with_reference(snap.get(), tokens, 100000);
    if (!mismatch.empty()) {
        state.SkipWithError(mismatch.c_str());
        return;
    }
    const KeyPool &pool = KeyPool::get();
    size_t i = 0;
    for (auto _ : state)
        bench::consume(tokens.owner_at_or_after(bench::key_hash(pool[i++])));
}

void ring_lookup(benchmark::State &state) {
    const chr_ring *ring = bench::shared_ring(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    static bench::ResultSlots<chr_node_ref> out;
    size_t i = 0;
    for (auto _ : state) {
        const Key &k = pool[i];
        chr_node_ref *owner = out[i++];
        if (failed(state, chr_ring_lookup(ring, k.bytes, k.len, owner))) break;
        bench::consume(owner->index);
    }
}

void snapshot_lookup(benchmark::State &state) {
    SnapshotHold snap(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    static bench::ResultSlots<chr_node_view> out;
    size_t i = 0;
    for (auto _ : state) {
        const Key &k = pool[i];
        chr_node_view *owner = out[i++];
        if (failed(state, chr_snapshot_lookup(snap.get(), k.bytes, k.len, owner))) break;
        bench::consume(owner->index);
    }
}

void ring_replicas3(benchmark::State &state) {
    const chr_ring *ring = bench::shared_ring(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    static bench::ResultSlots<chr_node_ref, 3> out;
    size_t count = 0, i = 0;
    for (auto _ : state) {
        const Key &k = pool[i];
        chr_node_ref *owners = out[i++];
        if (failed(state, chr_ring_replicas(ring, k.bytes, k.len, 3, owners, &count))) break;
        bench::consume(owners[count - 1].index);
    }
}

void snapshot_replicas3(benchmark::State &state) {
    SnapshotHold snap(size_t(state.range(0)));
    const KeyPool &pool = KeyPool::get();
    static bench::ResultSlots<chr_node_view, 3> out;
    size_t count = 0, i = 0;
    for (auto _ : state) {
        const Key &k = pool[i];
        chr_node_view *owners = out[i++];
        if (failed(state, chr_snapshot_replicas(snap.get(), k.bytes, k.len, 3, owners, &count)))
            break;
        bench::consume(owners[count - 1].index);
    }
}

}  // namespace

BENCHMARK(xxh3_alone);
BENCHMARK(std_lower_bound)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(ring_lookup)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(snapshot_lookup)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(ring_replicas3)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(snapshot_replicas3)->Arg(10)->Arg(100)->Arg(1000);

BENCHMARK_MAIN();
