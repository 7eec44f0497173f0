// The documented limits at full speed: build, add and remove one node,
// lookups against std::lower_bound and a pointer chase over as much memory,
// index bytes per token (one snapshot, and two sharing chunks), and reader
// throughput while a writer publishes 100 changes a second, at 1,000,
// 10,000 and 100,000 nodes (160k, 1.6M, 16M tokens). Every figure that
// matters is a ratio to a reference measured in the same run. White-box
// for the memory figures (links the core, as bench_memory does).
//
//   bench_scale [max_nodes]      default 100000
//   bench_scale --builds R [nodes]
//       only builds: R builds of `nodes` (default 100000) in this process,
//       each one's wall time, then the process's peak resident memory
//       (compare libraries by alternating processes)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "bench_support.hpp"
#include "snapshot.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

template <class F>
double median_seconds(int rounds, F f) {
    std::vector<double> t;
    for (int r = 0; r < rounds; ++r) {
        const Clock::time_point start = Clock::now();
        f();
        t.push_back(seconds_since(start));
    }
    return bench::median(t);
}

const chring::Snapshot &core(const chr_snapshot *s) {
    return *reinterpret_cast<const chring::Snapshot *>(s);  // as the C API glue casts it
}

struct Keys {
    std::vector<std::string> text;
    std::vector<const void *> ptrs;
    std::vector<size_t> lens;
    std::vector<uint64_t> hashes;
    explicit Keys(size_t n) {
        // 13-19 bytes, as the figures this benchmark answers were measured
        // with: "key:" and 9-15 digits.
        std::mt19937_64 rng(42);
        for (size_t i = 0; i < n; ++i) {
            const unsigned digits = 9 + unsigned(rng() % 7);
            uint64_t low = 1;
            for (unsigned d = 1; d < digits; ++d) low *= 10;
            text.push_back("key:" + std::to_string(low + rng() % (9 * low)));
        }
        for (const std::string &k : text) {
            ptrs.push_back(k.data());
            lens.push_back(k.size());
            uint64_t h = 0;
            bench::check(chr_hasher_hash("xxh3", k.data(), k.size(), 0, &h), "chr_hasher_hash");
            hashes.push_back(h);
        }
    }
};

// ns per dependent load over a random cycle through `bytes` of memory.
double pointer_chase_ns(size_t bytes, size_t steps) {
    const size_t n = bytes / sizeof(uint64_t);
    std::vector<uint64_t> next(n);
    std::vector<uint64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
    for (size_t i = 0; i < n; ++i) next[order[i]] = order[(i + 1) % n];
    uint64_t at = order[0];
    const Clock::time_point start = Clock::now();
    for (size_t s = 0; s < steps; ++s) at = next[at];
    const double t = seconds_since(start);
    bench::consume(at);
    return t / double(steps) * 1e9;
}

// --builds: each build's time, then the peak resident memory.
void builds_only(int rounds, size_t nodes) {
    const bench::NodeBatch batch(nodes);
    for (int r = 0; r < rounds; ++r) {
        const Clock::time_point start = Clock::now();
        chr_ring_free(bench::build_ring(batch));
        std::printf("build %d of %zu nodes: %.0f ms\n", r, nodes, seconds_since(start) * 1e3);
        std::fflush(stdout);
    }
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    std::printf("peak resident memory: %ld MB\n", usage.ru_maxrss / 1024);
}

void one_size(size_t nodes) {
    const bench::NodeBatch batch(nodes);
    // Build: the first in this size (its memory new to the process), then
    // the median of later ones.
    auto build = [&] { return bench::build_ring(batch); };
    Clock::time_point start = Clock::now();
    chr_ring_free(build());
    const double first_build = seconds_since(start);
    const double warm_build = median_seconds(nodes >= 100000 ? 3 : 5, [&] { chr_ring_free(build()); });

    chr_ring *ring = build();
    const std::string extra = "node-extra";
    std::vector<double> adds, removes;
    for (int r = 0; r < 11; ++r) {
        start = Clock::now();
        bench::check(chr_ring_add(ring, extra.data(), extra.size(), 1, nullptr, 0, 0), "add");
        adds.push_back(seconds_since(start));
        start = Clock::now();
        bench::check(chr_ring_remove(ring, extra.data(), extra.size()), "remove");
        removes.push_back(seconds_since(start));
    }

    // Memory: one snapshot; two, the second one node more, sharing chunks.
    chr_snapshot *before = nullptr, *after = nullptr;
    bench::check(chr_ring_snapshot(ring, &before), "snapshot");
    bench::check(chr_ring_add(ring, extra.data(), extra.size(), 1, nullptr, 0, 0), "add");
    bench::check(chr_ring_snapshot(ring, &after), "snapshot");
    const double T = double(core(before).token_count());
    const double one = double(core(before).index_bytes()) / T;
    const double two = double(core(before).index_bytes() + core(after).index_bytes_not_in(core(before))) / T;
    // With the member tables each snapshot has its own (node table, node
    // records, slot maps): one snapshot, and the two.
    const double one_all = one + double(core(before).member_bytes()) / T;
    const double two_all = two + double(core(before).member_bytes() + core(after).member_bytes()) / T;
    chr_snapshot_release(after);
    bench::check(chr_ring_remove(ring, extra.data(), extra.size()), "remove");

    // Lookups: chr_snapshot_lookup and chr_ring_lookup (hashing included;
    // the ring's current snapshot has the same tokens again) and the batch,
    // against std::lower_bound over the same tokens (hashes precomputed).
    const Keys keys(1 << 20);
    const bench::TokenArray tokens(before);
    auto ns_per_key = [&](auto &&lookup_key) {  // lookup_key(i) for every key
        return median_seconds(3, [&] {
            for (size_t i = 0; i < keys.text.size(); ++i) lookup_key(i);
        }) / double(keys.text.size()) * 1e9;
    };
    chr_node_view view;
    const double lookup = ns_per_key([&](size_t i) {
        chr_snapshot_lookup(before, keys.ptrs[i], keys.lens[i], &view);
        bench::consume(view.index);
    });
    chr_node_ref ref;
    const double ring_lookup = ns_per_key([&](size_t i) {
        chr_ring_lookup(ring, keys.ptrs[i], keys.lens[i], &ref);
        bench::consume(ref.index);
    });
    std::vector<uint32_t> indices(1024);
    const double batch_lookup = median_seconds(3, [&] {
        for (size_t i = 0; i + 1024 <= keys.text.size(); i += 1024) {
            chr_snapshot_lookup_batch(before, &keys.ptrs[i], &keys.lens[i], 1024, indices.data());
            bench::consume(indices[0]);
        }
    }) / double(keys.text.size()) * 1e9;
    const double lower_bound = median_seconds(3, [&] {
        for (uint64_t h : keys.hashes) bench::consume(tokens.owner_at_or_after(h));
    }) / double(keys.text.size()) * 1e9;
    const double chase = pointer_chase_ns(size_t(T) * 8, 1 << 22);

    // Readers with a writer publishing 100 changes a second, against the
    // same loop with the writer idle: alternating slices of 200 ms, the
    // ratio of each busy slice to the quiet one before it, the median of
    // ten. (One quiet second then one busy second moved by +-10% between
    // runs with the host's load, more than the writer costs.)
    std::atomic<bool> writing{false}, stop{false};
    std::thread writer([&] {
        bool present = false;
        while (!stop.load()) {
            if (writing.load()) {
                if (present) bench::check(chr_ring_remove(ring, extra.data(), extra.size()), "remove");
                else bench::check(chr_ring_add(ring, extra.data(), extra.size(), 1, nullptr, 0, 0), "add");
                present = !present;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (present) bench::check(chr_ring_remove(ring, extra.data(), extra.size()), "remove");
    });
    size_t next_key = 0;
    auto reader_rate = [&] {  // lookups a second over one slice
        size_t done = 0;
        start = Clock::now();
        while (seconds_since(start) < 0.2)
            for (size_t i = 0; i < 4096; ++i, ++done) {
                const size_t k = next_key++ % keys.text.size();
                chr_ring_lookup(ring, keys.ptrs[k], keys.lens[k], &ref);
                bench::consume(ref.index);
            }
        return double(done) / seconds_since(start);
    };
    std::vector<double> busy_share;
    for (int round = 0; round < 10; ++round) {
        writing = false;
        const double quiet = reader_rate();
        writing = true;
        busy_share.push_back(reader_rate() / quiet);
    }
    stop = true;
    writer.join();
    const double busy_over_quiet = bench::median(busy_share);
    chr_snapshot_release(before);
    chr_ring_free(ring);

    std::printf("| %zu | %.0f | %.0f / %.0f | %.3f | %.3f | %.1f / %.1f | %.2fx / %.2fx | %.2fx | %.1f | %.2f | "
                "%.2f | %.2f / %.2f | %.1f%% |\n",
                nodes, T, first_build * 1e3, warm_build * 1e3, bench::median(adds) * 1e3,
                bench::median(removes) * 1e3, lookup, ring_lookup, lower_bound / lookup,
                lower_bound / ring_lookup, lower_bound / batch_lookup, lookup / chase, one, two, one_all, two_all,
                100.0 * busy_over_quiet);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc > 2 && std::strcmp(argv[1], "--builds") == 0) {
        builds_only(std::atoi(argv[2]), argc > 3 ? size_t(std::strtoull(argv[3], nullptr, 10)) : 100000);
        return 0;
    }
    const size_t max_nodes = argc > 1 ? size_t(std::strtoull(argv[1], nullptr, 10)) : 100000;
    std::printf("| nodes | tokens | build ms (first / warm) | add one ms | remove one ms | "
                "lookup ns (snapshot / ring) | lower_bound / lookup (snapshot / ring) | lower_bound / batch | "
                "lookup / chase | bytes/token | "
                "two snapshots bytes/token | with member tables, one / two | readers with writer |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t nodes : {size_t(1000), size_t(10000), size_t(100000)})
        if (nodes <= max_nodes) one_size(nodes);
    return 0;
}
