// The native placement: weight * tokens_per_weight tokens at
// H(id "#" i, seed) with the ring's hasher, keys at H(key, seed). Changing
// one node regenerates only its tokens, which the snapshot merges with the
// kept ones: exact minimal disruption.
#include <algorithm>
#include <cstring>

#include "base/huge_pages.hpp"
#include "placement.hpp"
#include "base/radix_sort.hpp"

namespace chring {
namespace {

// The decimal string of a token number, counted up in place by a step
// below ten: the carry touches only the digits that change, instead of
// dividing by ten for every digit of every token.
class DecimalCounter {
public:
    // Starts at `first` (< 10), written at p (room for 10 digits).
    void start(char *p, uint32_t first) noexcept {
        p_ = p;
        p_[0] = char('0' + first);
        n_ = 1;
    }
    size_t size() const noexcept { return n_; }
    void add(uint32_t step) noexcept {  // step < 10
        p_[n_ - 1] = char(p_[n_ - 1] + step);
        for (size_t i = n_ - 1; p_[i] > '9'; --i) {
            p_[i] = char(p_[i] - 10);
            if (i == 0) {  // all nines carried out: one digit more
                std::memmove(p_ + 1, p_, n_++);
                p_[0] = '1';
                return;
            }
            ++p_[i - 1];
        }
    }

private:
    char *p_ = nullptr;
    size_t n_ = 0;
};

// Gives put(value, owner) the tokens of the nodes `delta` regenerates,
// hashing each "id#i" with `hash`.
//
// Token i's name is written kLanes tokens before it is hashed, each lane
// its own buffer: a hash read right after the name's byte stores would
// wait for them (a wide load cannot be forwarded from narrower stores),
// which took a third of a build's hashing. Flattened: GCC otherwise calls
// the built-in xxh3 for each token instead of inlining it.
template <class Hash, class Put>
__attribute__((flatten)) void generate(const MembershipDelta &delta, uint32_t tpw, Hash &&hash, Put &&put) {
    constexpr uint32_t kLanes = 8;
    struct Lane {
        char name[CHR_NODE_ID_MAX + 1 + 10];
    };
    Lane lanes[kLanes];
    DecimalCounter digits[kLanes];
    for (size_t k = 0; k < delta.nodes.size(); ++k) {
        if (!delta.regenerate[k]) continue;
        const Node &node = delta.nodes[k];
        const uint32_t count = node.weight * tpw;  // bounded by CHR_TOKENS_MAX (checked by the ring)
        const size_t prefix = node.id.size() + 1;
        const uint32_t lanes_used = std::min(count, kLanes);
        for (uint32_t j = 0; j < lanes_used; ++j) {
            std::memcpy(lanes[j].name, node.id.data(), node.id.size());
            lanes[j].name[node.id.size()] = '#';
            digits[j].start(lanes[j].name + prefix, j);
        }
        for (uint32_t t = 0; t < count; ++t) {
            const uint32_t j = t % kLanes;
            put(hash(lanes[j].name, prefix + digits[j].size()), uint32_t(k));
            digits[j].add(kLanes);
        }
    }
}

// The tokens `delta` regenerates, sorted: a big set sorted as it is made
// (RangeSort), unless a range overflows; else made, then sorted.
template <class Hash>
void make_sorted(const MembershipDelta &delta, uint32_t tpw, size_t total, Hash &&hash, FreshTokens &tokens,
                 HugeArray<Token> *spare) {
    if (RangeSort::suits(total)) {
        RangeSort sort(tokens, total);
        generate(delta, tpw, hash, [&](uint64_t value, uint32_t owner) { sort.put(value, owner); });
        if (sort.finish()) return;
    }
    tokens.clear();
    reserve_huge(tokens, total);
    generate(delta, tpw, hash, [&](uint64_t value, uint32_t owner) {
        Token &token = tokens.emplace_back();  // fields stored one by one: no 16-byte reload
        token.value = value;
        token.owner = owner;
    });
    sort_tokens(tokens, spare);
}

void fresh_tokens(const Placement &p, const MembershipDelta &delta, FreshTokens &tokens, HugeArray<Token> *spare) {
    const uint32_t tpw = p.tokens_per_weight;
    const uint64_t seed = p.seed;
    const chr_hash64_fn hash64 = p.hasher->hash64;
    size_t total = 0;
    for (size_t k = 0; k < delta.nodes.size(); ++k)
        if (delta.regenerate[k]) total += size_t(delta.nodes[k].weight) * tpw;
    // The built-in xxh3 inline for names that fit its short path, as key
    // lookups do (xxh3_inline.hpp); the same values.
    if (is_builtin_xxh3(hash64))
        make_sorted(delta, tpw, total, [&](const char *b, size_t len) { return builtin_xxh3(b, len, seed); }, tokens,
                    spare);
    else
        make_sorted(delta, tpw, total, [&](const char *b, size_t len) { return hash64(b, len, seed); }, tokens, spare);
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
