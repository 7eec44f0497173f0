// The native placement: weight * tokens_per_weight tokens at
// H(id "#" i, seed) with the ring's hasher, keys at H(key, seed). Changing
// one node regenerates only its tokens, which the snapshot merges with the
// kept ones: exact minimal disruption.
#include <algorithm>
#include <cstring>
#include <utility>

#include "placement.hpp"

namespace chring {
namespace {

// Writes the decimal digits of v at p; returns the number written.
size_t put_decimal(char *p, uint32_t v) noexcept {
    char tmp[10];
    size_t n = 0;
    do {
        tmp[n++] = char('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; ++i) p[i] = tmp[n - 1 - i];
    return n;
}

void sort_tokens(std::vector<Token> &tokens) {
    // Hash values are close to uniform, so one counting pass on the top bits
    // places every token within a bucket of ~1, and an insertion sort
    // finishes: O(T) expected instead of std::sort's O(T log T) (a 1,000-node
    // ring builds in a third of the time). Skewed hashers only make buckets
    // bigger, which std::sort then handles: the result is the same order.
    const size_t n = tokens.size();
    if (n < 4096) {
        std::sort(tokens.begin(), tokens.end());
        return;
    }
    unsigned bits = 1;
    while (bits < 24 && (size_t(1) << (bits + 1)) <= n) ++bits;
    const unsigned shift = 64 - bits;
    std::vector<uint32_t> start((size_t(1) << bits) + 1, 0);
    for (const Token &t : tokens) ++start[(t.value >> shift) + 1];
    for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    std::vector<Token> sorted(n);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (const Token &t : tokens) sorted[fill[t.value >> shift]++] = t;
    for (size_t b = 0; b + 1 < start.size(); ++b) {
        Token *first = sorted.data() + start[b], *last = sorted.data() + start[b + 1];
        if (last - first > 32) {
            std::sort(first, last);
            continue;
        }
        for (Token *p = first + 1; p < last; ++p)  // insertion sort: ~1-2 tokens per bucket
            for (Token *q = p; q > first && *q < q[-1]; --q) std::swap(*q, q[-1]);
    }
    tokens.swap(sorted);
}

void fresh_tokens(const Placement &p, const MembershipDelta &delta, std::vector<Token> &tokens) {
    const uint32_t tpw = p.tokens_per_weight;
    const uint64_t seed = p.seed;
    const chr_hash64_fn hash64 = p.hasher->hash64;
    size_t total = 0;
    for (size_t k = 0; k < delta.nodes.size(); ++k)
        if (delta.regenerate[k]) total += size_t(delta.nodes[k].weight) * tpw;

    tokens.clear();
    tokens.reserve(total);
    char buf[CHR_NODE_ID_MAX + 1 + 10];
    for (size_t k = 0; k < delta.nodes.size(); ++k) {
        if (!delta.regenerate[k]) continue;
        const Node &node = delta.nodes[k];
        const uint32_t count = node.weight * tpw;  // bounded by CHR_TOKENS_MAX (checked by the ring)
        std::memcpy(buf, node.id.data(), node.id.size());
        buf[node.id.size()] = '#';
        char *digits = buf + node.id.size() + 1;
        for (uint32_t t = 0; t < count; ++t) {
            size_t len = node.id.size() + 1 + put_decimal(digits, t);
            tokens.push_back({hash64(buf, len, seed), uint32_t(k)});
        }
    }
    sort_tokens(tokens);
}

uint64_t native_bound(const Placement &p, uint32_t weight) noexcept {
    return uint64_t(weight) * p.tokens_per_weight;
}

uint64_t native_position(const Placement &p, const void *key, size_t len) noexcept {
    return p.hasher->hash64(key, len, p.seed);
}

}  // namespace

const PlacementOps native_placement = {
    CHR_PLACEMENT_NATIVE, "native",
    "weight x tokens_per_weight tokens at H(id \"#\" i); exact minimal disruption",
    nullptr, 0, true, native_bound, nullptr, native_position, fresh_tokens, nullptr,
};

}  // namespace chring
