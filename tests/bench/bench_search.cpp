// Successor-search layouts over the same sorted token array, each including
// the xxh3 key hash, at 10, 100 and 1,000 nodes x 160 tokens: the study
// behind the core's fast path (snapshot.hpp, Snapshot::position). Every
// layout is checked against std::lower_bound on 100,000 keys before it is
// timed, and reports its memory as the counter bytes_per_token. Each lookup
// is one call to a function that is not inlined into the timing loop, as a
// library call is not: inlined, the compiler and the CPU overlap consecutive
// lookups further than any caller of chr_snapshot_lookup can (the 4-value
// window at 1,000 nodes: 14 ns inlined, 22 ns called), which flattered the
// layouts with more memory traffic.
//
//   lower_bound         std::lower_bound over values, owners beside them
//   branchless_binary   the same search without data-dependent branches
//   eytzinger           values in BFS (Eytzinger) order, branchless descent
//                       with the next levels prefetched (Khuong & Morin)
//   prefix_plus2        a bucket table on the top ceil(log2 T)+2 bits, then
//                       lower_bound in the bucket (4-8 buckets a token)
//   prefix_window       floor(log2 T) bits (<= 4 bytes per token), then a
//                       branchless count over a 4-value window, owners in
//                       their own array (chring's first fast path)
//   prefix_window_u16   the same with 16-bit owners (node counts <= 65,536)
//   prefix_window_packed  the same with value and owner in one 12-byte record
//   prefix_records      the same with one 8-byte record (value << P) | owner:
//                       the bucket implies the top P value bits
//   prefix_hot_cold<4>  4-byte hot records (the next 32 - O value bits and
//                       the O-bit owner) in a 4-record window, the rest of
//                       each value in a cold array read only on a tie of the
//                       hot bits (chring's layout before; simplified here: a
//                       one-level index)
//   prefix_hot_cold<8>  chring's: the same with the core's 8-record window
//                       over buckets of 1.5-3 tokens, half as many buckets
//   chring_snapshot     chr_snapshot_lookup, the real thing
//   chring_batch        chr_snapshot_lookup_batch, 1,024 keys per call
#include <benchmark/benchmark.h>

#include <algorithm>
#include <emmintrin.h>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "window.hpp"  // the core's window compare, for the hot/cold layout

namespace {

using bench::KeyPool;
using bench::TokenArray;

constexpr size_t kCheckedKeys = 100000;

unsigned floor_log2(size_t n) { return unsigned(63 - __builtin_clzll(n)); }

// The prefix width of the window layouts (and of the core): one bucket per
// 1-2 tokens, 1..24 bits.
unsigned window_prefix_bits(size_t T) { return std::max(1u, std::min(24u, floor_log2(T))); }

// start[b] = the first token whose top `bits` bits are >= b, for every b
// (the bucket table of the prefix layouts); sets `shift` to 64 - bits.
template <class ValueOf>
std::vector<uint32_t> bucket_starts(size_t T, unsigned bits, unsigned &shift, ValueOf value_of) {
    shift = 64 - bits;
    std::vector<uint32_t> start((size_t(1) << bits) + 1, 0);
    for (size_t k = 0; k < T; ++k) ++start[(value_of(k) >> shift) + 1];
    for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    return start;
}

// Owner at index i, wrapping past the end to token 0.
template <class Owners>
uint32_t wrap_owner(const Owners &owners, size_t i) {
    return owners[i == owners.size() ? 0 : i];
}

struct LowerBound {
    const TokenArray &t;
    explicit LowerBound(const TokenArray &tokens) : t(tokens) {}
    uint32_t operator()(uint64_t h) const { return t.owner_at_or_after(h); }
    double bytes_per_token() const { return 12; }
};

struct BranchlessBinary {
    const TokenArray &t;
    explicit BranchlessBinary(const TokenArray &tokens) : t(tokens) {}
    uint32_t operator()(uint64_t h) const {
        const uint64_t *base = t.values.data();
        size_t n = t.values.size();
        while (n > 1) {
            const size_t half = n / 2;
            base = base[half - 1] < h ? base + half : base;  // cmov, no branch on the data
            n -= half;
        }
        const size_t i = size_t(base - t.values.data()) + (*base < h);
        return wrap_owner(t.owners, i);
    }
    double bytes_per_token() const { return 12; }
};

struct Eytzinger {
    std::vector<uint64_t> values;  // 1-based BFS order; values[0] unused
    std::vector<uint32_t> owners;  // by BFS position
    uint32_t first_owner;          // the wrap target: owner of the smallest token
    explicit Eytzinger(const TokenArray &t)
        : values(t.values.size() + 1), owners(t.values.size() + 1), first_owner(t.owners[0]) {
        size_t next = 0;
        fill(t, 1, next);
    }
    void fill(const TokenArray &t, size_t k, size_t &next) {
        if (k >= values.size()) return;
        fill(t, 2 * k, next);
        values[k] = t.values[next];
        owners[k] = t.owners[next++];
        fill(t, 2 * k + 1, next);
    }
    uint32_t operator()(uint64_t h) const {
        size_t k = 1;
        const size_t n = values.size();
        while (k < n) {
            __builtin_prefetch(values.data() + 16 * k);  // four levels ahead
            k = 2 * k + (values[k] < h);
        }
        k >>= __builtin_ffsll((long long)~k);  // undo the trailing right turns
        return k == 0 ? first_owner : owners[k];
    }
    double bytes_per_token() const { return 12; }
};

struct PrefixPlus2 {
    const TokenArray &t;
    std::vector<uint32_t> start;
    unsigned shift;
    explicit PrefixPlus2(const TokenArray &tokens) : t(tokens) {
        const size_t T = t.values.size();
        const unsigned bits = floor_log2(T) + (T & (T - 1) ? 1 : 0) + 2;
        start = bucket_starts(T, bits, shift, [&](size_t k) { return t.values[k]; });
    }
    uint32_t operator()(uint64_t h) const {
        const uint64_t b = h >> shift;
        const uint64_t *first = t.values.data();
        const size_t i = size_t(std::lower_bound(first + start[b], first + start[b + 1], h) - first);
        return wrap_owner(t.owners, i);
    }
    double bytes_per_token() const { return 12 + 4.0 * double(start.size()) / double(t.values.size()); }
};

template <class Owner>
struct PrefixWindow {
    std::vector<uint64_t> values;  // T values then 4 sentinels
    std::vector<Owner> owners;
    std::vector<uint32_t> start;
    unsigned shift;
    size_t T;
    explicit PrefixWindow(const TokenArray &t)
        : values(t.values), owners(t.owners.begin(), t.owners.end()), T(t.values.size()) {
        values.resize(T + 4, UINT64_MAX);
        start = bucket_starts(T, window_prefix_bits(T), shift,
                              [&](size_t k) { return values[k]; });
    }
    uint32_t operator()(uint64_t h) const {
        const uint64_t b = h >> shift;
        uint32_t lo = start[b];
        const uint32_t hi = start[b + 1];
        if (hi - lo <= 4) {
            const uint64_t *v = values.data() + lo;
            lo += uint32_t(v[0] < h) + uint32_t(v[1] < h) + uint32_t(v[2] < h) + uint32_t(v[3] < h);
        } else {
            lo = uint32_t(std::lower_bound(values.data() + lo, values.data() + hi, h) - values.data());
        }
        return owners[lo == T ? 0 : lo];
    }
    double bytes_per_token() const {
        return 8 + double(sizeof(Owner)) + 4.0 * double(start.size()) / double(T);
    }
};

// prefix_window_packed: value and owner side by side in one 12-byte record,
// so the window's cache line also holds the answer's owner.
struct PrefixWindowPacked {
    struct __attribute__((packed)) Token {
        uint64_t value;
        uint32_t owner;
    };
    std::vector<Token> tokens;  // T tokens then 4 sentinels
    std::vector<uint32_t> start;
    unsigned shift;
    size_t T;
    explicit PrefixWindowPacked(const TokenArray &t) : T(t.values.size()) {
        for (size_t i = 0; i < T; ++i) tokens.push_back({t.values[i], t.owners[i]});
        tokens.resize(T + 4, Token{UINT64_MAX, 0});
        start = bucket_starts(T, window_prefix_bits(T), shift,
                              [&](size_t k) { return tokens[k].value; });
    }
    uint32_t operator()(uint64_t h) const {
        const uint64_t b = h >> shift;
        uint32_t lo = start[b];
        const uint32_t hi = start[b + 1];
        if (hi - lo <= 4) {
            const Token *v = tokens.data() + lo;
            lo += uint32_t(v[0].value < h) + uint32_t(v[1].value < h) + uint32_t(v[2].value < h) +
                  uint32_t(v[3].value < h);
        } else {
            while (lo < hi && tokens[lo].value < h) ++lo;
        }
        return tokens[lo == T ? 0 : lo].owner;
    }
    double bytes_per_token() const { return 12 + 4.0 * double(start.size()) / double(T); }
};

// prefix_records: one 8-byte record per token, (value << P) | owner. Within
// a bucket, record < (h << P) exactly when value < h; records past the
// bucket compare meaninglessly, so the count stops at the first failure,
// capped at the bucket's size.
struct PrefixRecords {
    std::vector<uint64_t> records;  // T records then 4 pads (owner of token 0)
    std::vector<uint32_t> start;
    unsigned shift, bits;
    uint64_t owner_mask;
    explicit PrefixRecords(const TokenArray &t) {
        const size_t T = t.values.size();
        bits = window_prefix_bits(T);
        start = bucket_starts(T, bits, shift, [&](size_t k) { return t.values[k]; });
        owner_mask = (uint64_t(1) << bits) - 1;
        for (size_t i = 0; i < T; ++i) records.push_back((t.values[i] << bits) | t.owners[i]);
        records.resize(T + 4, t.owners[0]);
    }
    uint32_t operator()(uint64_t h) const {
        const uint64_t b = h >> shift;
        const uint32_t lo = start[b], n = start[b + 1] - lo;
        const uint64_t key = h << bits;
        const uint64_t *r = records.data() + lo;
        uint32_t i = 0;
        if (n > 4) {
            while (i < n && r[i] < key) ++i;
        } else {
            const uint32_t below = uint32_t(r[0] < key) | uint32_t(r[1] < key) << 1 |
                                   uint32_t(r[2] < key) << 2 | uint32_t(r[3] < key) << 3;
            i = std::min(uint32_t(__builtin_ctz(~below)), n);
        }
        return uint32_t(r[i] & owner_mask);
    }
    double bytes_per_token() const { return 8 + 4.0 * double(start.size()) / double(records.size() - 4); }
};

// Where key falls among the first n of the W hot records at r, for the
// hot/cold layouts: the core's compare for its window of 8, an SSE2 compare
// on one vector for the 4-record window chring used before.
template <unsigned W>
uint32_t hot_rank(const uint32_t *r, uint32_t key, uint32_t n) {
    static_assert(W == 4 || W == chring::kWindow, "the two windows studied (the core's is 8)");
    if (W == chring::kWindow) return chring::window_rank_x2(r, key, n) / 2;
    const __m128i k = _mm_set1_epi32(int32_t(key ^ chring::kWindowBias));
    const uint32_t below = uint32_t(_mm_movemask_ps(
        _mm_castsi128_ps(_mm_cmpgt_epi32(k, _mm_loadu_si128(reinterpret_cast<const __m128i *>(r))))));
    return std::min(uint32_t(__builtin_ctz(~below)), n);
}

// prefix_hot_cold: the record split in two. hot = the top 32 - O bits of
// (value << P) with the owner in the low O bits; cold = the next 32. The
// window compares hot records only; the first failing one is the answer
// unless its hot bits equal the key's, then the cold bits decide. W = 4:
// P = floor(log2 T), 1-2 tokens a bucket (chring's layout before); W = 8:
// P = floor(log2(T / 1.5)), 1.5-3 tokens a bucket (the core's now).
template <unsigned W>
struct PrefixHotCold {
    std::vector<uint32_t> hot, cold;
    std::vector<uint32_t> start;
    unsigned shift, bits, owner_bits = 1;
    uint32_t owner_mask;
    explicit PrefixHotCold(const TokenArray &t) {
        const size_t T = t.values.size();
        const uint32_t nodes = *std::max_element(t.owners.begin(), t.owners.end()) + 1;
        while ((uint32_t(1) << owner_bits) < nodes) ++owner_bits;
        const unsigned prefix = W == 4 ? window_prefix_bits(T) : window_prefix_bits(T * 2 / 3);
        bits = std::max(owner_bits, prefix);
        start = bucket_starts(T, bits, shift, [&](size_t k) { return t.values[k]; });
        owner_mask = (uint32_t(1) << owner_bits) - 1;
        for (size_t i = 0; i < T; ++i) {
            const uint64_t rest = t.values[i] << bits;
            hot.push_back(((uint32_t(rest >> 32) & ~owner_mask) | t.owners[i]) ^ chring::kWindowBias);
            cold.push_back(uint32_t(rest << (32 - owner_bits) >> 32));
        }
        hot.resize(T + W, (~owner_mask | t.owners[0]) ^ chring::kWindowBias);
    }
    uint64_t rest_of(size_t i) const {
        return uint64_t((hot[i] ^ chring::kWindowBias) & ~owner_mask) << 32 | uint64_t(cold[i]) << owner_bits;
    }
    uint32_t operator()(uint64_t h) const {
        const uint64_t b = h >> shift;
        const uint32_t lo = start[b], n = start[b + 1] - lo;
        const uint64_t rest = h << bits;
        const uint32_t key = uint32_t(rest >> 32) & ~owner_mask;
        const uint32_t *r = hot.data() + lo;
        uint32_t i = 0;
        if (n <= W) {
            i = hot_rank<W>(r, key, n);
            if (!((i < n) & ((r[i] ^ chring::kWindowBias) - key <= owner_mask))) return r[i] & owner_mask;
            i = 0;
        }
        while (i < n && rest_of(lo + i) < rest) ++i;
        return r[i] & owner_mask;
    }
    double bytes_per_token() const { return 8 + 4.0 * double(start.size()) / double(cold.size()); }
};

// One lookup, as a call (see the top of this file).
template <class Layout>
__attribute__((noinline)) uint32_t call_layout(const Layout &layout, const bench::Key &key) {
    return layout(bench::key_hash(key));
}

// Times `Layout` built over the token array of an N-node ring.
template <class Layout>
void search(benchmark::State &state) {
    chr_snapshot *snap = nullptr;
    bench::check(chr_ring_snapshot(bench::shared_ring(size_t(state.range(0))), &snap),
                 "chr_ring_snapshot");
    const TokenArray tokens(snap);
    chr_snapshot_release(snap);
    const Layout layout(tokens);
    const KeyPool &pool = KeyPool::get();
    for (size_t i = 0; i < kCheckedKeys; ++i) {
        const uint64_t h = bench::key_hash(pool[i]);
        if (layout(h) != tokens.owner_at_or_after(h)) {
            state.SkipWithError("layout disagrees with std::lower_bound");
            return;
        }
    }
    size_t i = 0;
    for (auto _ : state) bench::consume(call_layout(layout, pool[i++]));
    state.counters["bytes_per_token"] = layout.bytes_per_token();
}

void chring_snapshot(benchmark::State &state) {
    chr_snapshot *snap = nullptr;
    bench::check(chr_ring_snapshot(bench::shared_ring(size_t(state.range(0))), &snap),
                 "chr_ring_snapshot");
    const KeyPool &pool = KeyPool::get();
    static bench::ResultSlots<chr_node_view> out;
    size_t i = 0;
    for (auto _ : state) {
        const bench::Key &k = pool[i];
        chr_node_view *owner = out[i++];
        bench::check(chr_snapshot_lookup(snap, k.bytes, k.len, owner), "chr_snapshot_lookup");
        bench::consume(owner->index);
    }
    chr_snapshot_release(snap);
}

void chring_batch(benchmark::State &state) {
    constexpr size_t kBatch = 1024;
    chr_snapshot *snap = nullptr;
    bench::check(chr_ring_snapshot(bench::shared_ring(size_t(state.range(0))), &snap),
                 "chr_ring_snapshot");
    const KeyPool &pool = KeyPool::get();
    std::vector<const void *> keys(kBatch);
    std::vector<size_t> lens(kBatch);
    std::vector<uint32_t> owners(kBatch);
    size_t i = 0;
    for (auto _ : state) {
        state.PauseTiming();
        for (size_t j = 0; j < kBatch; ++j, ++i) keys[j] = pool[i].bytes, lens[j] = pool[i].len;
        state.ResumeTiming();
        bench::check(chr_snapshot_lookup_batch(snap, keys.data(), lens.data(), kBatch, owners.data()),
                     "chr_snapshot_lookup_batch");
        benchmark::DoNotOptimize(owners.data());
    }
    state.SetItemsProcessed(int64_t(state.iterations() * kBatch));  // report per key
    chr_snapshot_release(snap);
}

}  // namespace

BENCHMARK_TEMPLATE(search, LowerBound)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, BranchlessBinary)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, Eytzinger)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, PrefixPlus2)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, PrefixWindow<uint32_t>)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, PrefixWindow<uint16_t>)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, PrefixWindowPacked)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, PrefixRecords)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, PrefixHotCold<4>)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_TEMPLATE(search, PrefixHotCold<8>)->Arg(10)->Arg(100)->Arg(1000);  // 8 = chring::kWindow
BENCHMARK(chring_snapshot)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK(chring_batch)->Arg(10)->Arg(100)->Arg(1000);

BENCHMARK_MAIN();
