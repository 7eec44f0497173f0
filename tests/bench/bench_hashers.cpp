// Per-hasher cost, three ways, for every shipped hasher (hasher_catalog.c):
//   hash_api     chr_hasher_hash() on a 24-byte key: the public call, which
//                looks the hasher up in the registry on every call;
//   hash_direct  the plugin's hash64 through its function pointer, taken
//                from the loaded plugin's own descriptor table: what a ring
//                pays per key hash;
//   ring_lookup  chr_snapshot_lookup() on a ring of 100 nodes x 160 tokens
//                built with that hasher: key hash + successor search.
// Keys: 65,536 distinct 24-byte keys "key:<20 digits>", walked in order.
#include <benchmark/benchmark.h>

#include <chring.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hasher_catalog.h"

namespace {

constexpr size_t kKeyLen = 24;
constexpr size_t kPoolSize = size_t(1) << 16;
constexpr size_t kRingNodes = 100;

struct Key {
    char bytes[kKeyLen + 1];
};

const std::vector<Key> &key_pool() {
    static const std::vector<Key> pool = [] {
        std::vector<Key> keys(kPoolSize);
        uint64_t x = 0x9E3779B97F4A7C15ull;
        for (Key &k : keys) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;  // distinct, scattered
            std::snprintf(k.bytes, sizeof k.bytes, "key:%020llu", (unsigned long long)x);
        }
        return keys;
    }();
    return pool;
}

[[noreturn]] void die(const char *what) {
    std::fprintf(stderr, "bench_hashers: %s: %s\n", what, chr_last_error());
    std::exit(1);
}

void check(chr_status st, const char *what) {
    if (st != CHR_OK) die(what);
}

// The hash64 the plugin that provides `name` exports, from its own table.
chr_hash64_fn plugin_function(const char *name) {
    size_t count = 0;
    chr_hasher_list(nullptr, nullptr, 0, &count);
    std::vector<chr_hasher_info> infos(count);
    check(chr_hasher_list(nullptr, infos.data(), infos.size(), &count), "chr_hasher_list");
    for (const chr_hasher_info &info : infos) {
        if (std::strcmp(info.name, name) != 0) continue;
        // Already loaded by libchring: RTLD_NOLOAD hands back the same copy.
        void *handle = dlopen(info.origin, RTLD_NOW | RTLD_NOLOAD);
        if (!handle) die(info.origin);
        auto entry = reinterpret_cast<chr_plugin_entry_fn>(dlsym(handle, CHR_PLUGIN_ENTRY_SYMBOL));
        if (!entry) die("no entry point");
        uint32_t n = 0;
        const chr_hasher *const *table = entry(&n);
        for (uint32_t i = 0; i < n; ++i)
            if (std::strcmp(table[i]->name, name) == 0) return table[i]->hash64;
    }
    die(name);
}

void hash_api(benchmark::State &state, const char *name) {
    const std::vector<Key> &pool = key_pool();
    size_t i = 0;
    uint64_t out = 0;
    for (auto _ : state) {
        check(chr_hasher_hash(name, pool[i++ & (kPoolSize - 1)].bytes, kKeyLen, 0, &out),
              "chr_hasher_hash");
        benchmark::DoNotOptimize(out);
    }
}

void hash_direct(benchmark::State &state, const char *name) {
    const chr_hash64_fn fn = plugin_function(name);
    const std::vector<Key> &pool = key_pool();
    size_t i = 0;
    for (auto _ : state) benchmark::DoNotOptimize(fn(pool[i++ & (kPoolSize - 1)].bytes, kKeyLen, 0));
}

void ring_lookup(benchmark::State &state, const char *name) {
    chr_options opts = CHR_OPTIONS_INIT;
    opts.hasher = name;
    chr_ring *ring = nullptr;
    check(chr_ring_new(&opts, &ring), "chr_ring_new");
    for (size_t n = 0; n < kRingNodes; ++n) {
        std::string id = "node-" + std::to_string(n);
        check(chr_ring_add(ring, id.data(), id.size(), 1, nullptr, 0, n), "chr_ring_add");
    }
    chr_snapshot *snap = nullptr;
    check(chr_ring_snapshot(ring, &snap), "chr_ring_snapshot");
    const std::vector<Key> &pool = key_pool();
    size_t i = 0;
    chr_node_view view;
    for (auto _ : state) {
        check(chr_snapshot_lookup(snap, pool[i++ & (kPoolSize - 1)].bytes, kKeyLen, &view),
              "chr_snapshot_lookup");
        benchmark::DoNotOptimize(view.index);
    }
    chr_snapshot_release(snap);
    chr_ring_free(ring);
}

}  // namespace

int main(int argc, char **argv) {
    for (size_t h = 0; h < catalog_count; ++h) {
        const char *name = catalog[h].name;
        benchmark::RegisterBenchmark((std::string("hash_api/") + name).c_str(), hash_api, name);
        benchmark::RegisterBenchmark((std::string("hash_direct/") + name).c_str(), hash_direct, name);
        benchmark::RegisterBenchmark((std::string("ring_lookup/") + name).c_str(), ring_lookup, name);
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
