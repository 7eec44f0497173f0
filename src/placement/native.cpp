// The native placement: weight * tokens_per_weight tokens at
// H(id "#" i, seed) with the ring's hasher, keys at H(key, seed). Changing
// one node regenerates only its tokens, which the snapshot merges with the
// kept ones: exact minimal disruption.
#include <cstring>

#include "huge_pages.hpp"
#include "placement.hpp"
#include "radix_sort.hpp"

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

void fresh_tokens(const Placement &p, const MembershipDelta &delta, std::vector<Token> &tokens) {
    const uint32_t tpw = p.tokens_per_weight;
    const uint64_t seed = p.seed;
    const chr_hash64_fn hash64 = p.hasher->hash64;
    size_t total = 0;
    for (size_t k = 0; k < delta.nodes.size(); ++k)
        if (delta.regenerate[k]) total += size_t(delta.nodes[k].weight) * tpw;

    tokens.clear();
    reserve_huge(tokens, total);
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
