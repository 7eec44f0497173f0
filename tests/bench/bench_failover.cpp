// The failover walk when a key's owner is down, as the nginx module does it
// (bindings/nginx, ngx_http_upstream_chring_pick): the owner, then the next
// distinct nodes in ring order, asked for 2, 4, ... 32 at a time with
// chr_snapshot_replicas, stopping at the first live node or when a walk
// returns fewer nodes than asked (it has seen every node with tokens), then
// any live node. In the same run, two references: the walk it replaced (32
// replicas asked at once, whatever the first live one's distance), and the
// token-by-token walk from the key's successor to the first token of a live
// node (nginx's own `hash ... consistent`), the fewest tokens any walk in
// ring order can visit.
//
// Rows: <walk>/N/D, N nodes of weight 1 (160 tokens each), D = percent of
// nodes down (a fixed pseudo-random set), D = 100 for "all but one down".
// Counters (exact, not timed): tokens = ring tokens the walks visited per
// request (each chr_snapshot_replicas call walks again from the successor),
// tokens_max = the most for one request (of 10,000 keys),
// replicas = distinct nodes returned per request, fallback = share of
// requests that end in "any live node".
#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

constexpr size_t kMaxReplicas = 32;  // the module's NGX_HTTP_CHRING_REPLICAS

// down[i] for node index i: `percent` of the nodes, chosen by a fixed hash
// of the index; 100 keeps exactly the last node up.
std::vector<uint8_t> down_set(size_t nodes, int percent) {
    std::vector<uint8_t> down(nodes, 0);
    for (size_t i = 0; i < nodes; ++i) {
        uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 31;
        down[i] = percent >= 100 ? i + 1 < nodes : int(h % 100) < percent;
    }
    return down;
}

// What one request's walk did; summed over requests for the counters.
struct Walked {
    size_t tokens = 0;      // ring tokens visited (simulated on the token array)
    size_t tokens_max = 0;  // the most one request visited
    size_t replicas = 0;  // distinct nodes returned
    size_t fallbacks = 0;
};

// The ring and the down set of one row, with the exact token array to count
// what the library's walks visit.
struct Scene {
    chr_snapshot *snap = nullptr;
    std::vector<uint8_t> down;
    bench::TokenArray *tokens = nullptr;
    Scene(size_t nodes, int percent) : down(down_set(nodes, percent)) {
        bench::check(chr_ring_snapshot(bench::shared_ring(nodes), &snap), "chr_ring_snapshot");
        tokens = new bench::TokenArray(snap);
    }
    ~Scene() {
        delete tokens;
        chr_snapshot_release(snap);
    }
    Scene(const Scene &) = delete;
    Scene &operator=(const Scene &) = delete;

    // The token at or after the key's hash, wrapping (the successor rule).
    size_t successor(const bench::Key &key) const {
        const std::vector<uint64_t> &v = tokens->values;
        const size_t at = size_t(std::lower_bound(v.begin(), v.end(), bench::key_hash(key)) - v.begin());
        return at == v.size() ? 0 : at;
    }
    // Tokens a replica walk visits to collect `want` distinct nodes, clamped
    // as the library clamps it to the nodes with tokens (every node here):
    // its cost, which the API does not report.
    size_t tokens_for(size_t at, size_t want) const {
        const size_t t = tokens->values.size();
        want = std::min(want, down.size());
        uint32_t seen[kMaxReplicas];
        size_t distinct = 0, step = 0;
        for (; step < t && distinct < want; ++step) {
            const uint32_t o = tokens->owners[(at + step) % t];
            if (std::find(seen, seen + distinct, o) == seen + distinct) seen[distinct++] = o;
        }
        return step;
    }
};

// A pick: the chosen node index (UINT32_MAX: none) and what it looked at.
// `doubling`: the module's walk (2, 4, ... 32); else the replaced one (32).
uint32_t pick(const Scene &scene, const bench::Key &key, bool doubling, Walked &walked,
              bool count_tokens) {
    chr_node_view views[kMaxReplicas];
    bench::check(chr_snapshot_lookup(scene.snap, key.bytes, key.len, &views[0]), "chr_snapshot_lookup");
    const size_t at = count_tokens ? scene.successor(key) : 0;
    walked.tokens += count_tokens;
    walked.replicas += 1;
    if (!scene.down[views[0].index]) return views[0].index;
    size_t seen = 1;
    for (size_t want = doubling ? 2 : kMaxReplicas;; want = std::min(want * 2, kMaxReplicas)) {
        size_t count = 0;
        bench::check(chr_snapshot_replicas(scene.snap, key.bytes, key.len, want, views, &count),
                     "chr_snapshot_replicas");
        if (count_tokens) walked.tokens += scene.tokens_for(at, want);
        walked.replicas += count - seen;
        for (size_t i = seen; i < count; ++i)
            if (!scene.down[views[i].index]) return views[i].index;
        if (count < want || want == kMaxReplicas) break;
        seen = count;
    }
    // Any live node, as the module's round robin over the tier's peers.
    walked.fallbacks += 1;
    for (size_t i = 0; i < scene.down.size(); ++i)
        if (!scene.down[i]) return uint32_t(i);
    return UINT32_MAX;
}

// The counters come from the first 10,000 keys, outside the timed loop.
void report(benchmark::State &state, const Walked &walked, size_t requests) {
    state.counters["tokens"] = double(walked.tokens) / double(requests);
    state.counters["tokens_max"] = double(walked.tokens_max);
    state.counters["replicas"] = double(walked.replicas) / double(requests);
    state.counters["fallback"] = double(walked.fallbacks) / double(requests);
}

constexpr size_t kCounted = 10000;

void replica_walk(benchmark::State &state, bool doubling) {
    const Scene scene(size_t(state.range(0)), int(state.range(1)));
    const bench::KeyPool &pool = bench::KeyPool::get();
    Walked counted, ignored;
    for (size_t k = 0; k < kCounted; ++k) {
        const size_t before = counted.tokens;
        pick(scene, pool[k], doubling, counted, true);
        counted.tokens_max = std::max(counted.tokens_max, counted.tokens - before);
    }
    size_t i = 0;
    for (auto _ : state) bench::consume(pick(scene, pool[i++], doubling, ignored, false));
    report(state, counted, kCounted);
}

void failover_walk(benchmark::State &state) { replica_walk(state, true); }
void replicas32_walk(benchmark::State &state) { replica_walk(state, false); }

// Token after token from the successor until one of a live node.
uint32_t token_pick(const Scene &scene, const bench::Key &key, Walked &walked) {
    const size_t t = scene.tokens->values.size();
    const size_t at = scene.successor(key);
    for (size_t step = 0; step < t; ++step) {
        ++walked.tokens;
        const uint32_t o = scene.tokens->owners[(at + step) % t];
        if (!scene.down[o]) return o;
    }
    return UINT32_MAX;
}

void token_walk(benchmark::State &state) {
    const Scene scene(size_t(state.range(0)), int(state.range(1)));
    const bench::KeyPool &pool = bench::KeyPool::get();
    // The reference must find the ring's owners: checked before timing.
    for (size_t k = 0; k < kCounted; ++k) {
        chr_node_view view;
        bench::check(chr_snapshot_lookup(scene.snap, pool[k].bytes, pool[k].len, &view), "chr_snapshot_lookup");
        if (scene.tokens->owners[scene.successor(pool[k])] != view.index) {
            state.SkipWithError("token_walk: the reference successor disagrees with chr_snapshot_lookup");
            return;
        }
    }
    Walked counted, ignored;
    for (size_t k = 0; k < kCounted; ++k) {
        const size_t before = counted.tokens;
        counted.replicas += token_pick(scene, pool[k], counted) != UINT32_MAX;
        counted.tokens_max = std::max(counted.tokens_max, counted.tokens - before);
    }
    size_t i = 0;
    for (auto _ : state) bench::consume(token_pick(scene, pool[i++], ignored));
    report(state, counted, kCounted);
}

void walk_args(benchmark::internal::Benchmark *b) {
    for (int nodes : {10, 100, 1000})
        for (int percent : {0, 50, 90, 100}) b->Args({nodes, percent});
}

}  // namespace

BENCHMARK(failover_walk)->Apply(walk_args);
BENCHMARK(replicas32_walk)->Apply(walk_args);
BENCHMARK(token_walk)->Apply(walk_args);

BENCHMARK_MAIN();
