#include "token_index.hpp"

#include <limits>

namespace chring {

TokenIndex::Writer::Writer(TokenIndex &index, size_t T, size_t nodes) : index_(index), T_(T) {
    // Owner field: O bits for N nodes. Prefix index on the top P bits
    // of a hash: 1.5-3 tokens per bucket (the largest P with 2^P <=
    // T / 1.5), so a bucket overflows the 8-record window with
    // probability below 0.4% and locate() reads two index entries
    // and one window. P >= O keeps the cold part within 32 bits (it only
    // matters for rings of mostly weight-0 members).
    unsigned owner_bits = 1;
    while ((size_t(1) << owner_bits) < nodes) ++owner_bits;  // <= 20: CHR_NODES_MAX is 2^20
    unsigned bits = 1;
    while (bits < 24 && (size_t(3) << bits) <= T) ++bits;  // 1.5 * 2^(bits + 1) <= T
    bits = std::max(bits, owner_bits);
    TokenIndex &s = index_;
    s.tokens_ = T;
    s.owner_bits_ = owner_bits;
    s.owner_mask_ = (uint32_t(1) << owner_bits) - 1;
    s.prefix_bits_ = bits;
    s.prefix_shift_ = 64 - bits;
    s.key_shift_ = 32 - bits;
    hot_bits_ = 32 - owner_bits;
    bits_ = bits;
    shift_ = 64 - bits;
    owner_mask_ = s.owner_mask_;
    start_vec_.assign((size_t(1) << bits) + 1, 0);
    s.hot_.resize(T + kWindow);
    s.cold_.resize(T);
    start_ = start_vec_.data();
    hot_ = s.hot_.data();
    cold_ = s.cold_.data();
}

// start_ counted tokens per bucket; summed, start[b] = the first token of
// bucket b (a histogram and a prefix sum: no data-dependent branch, 5x
// faster than walking tokens and buckets together). Then split into the
// two-level index, with the widest groups (at most 64 buckets) whose
// tokens, end included, fit a byte's offsets; with one bucket a group, a
// bigger bucket's size is capped (and takes the exact path).
void TokenIndex::Writer::finish() {
    TokenIndex &s = index_;
    const uint32_t first_owner = T_ ? s.owner_at(0) : 0;
    std::fill(s.hot_.begin() + T_, s.hot_.end(), (~s.owner_mask_ | first_owner) ^ kWindowBias);  // the wrap

    const size_t buckets = size_t(1) << s.prefix_bits_;
    std::vector<uint32_t> &start = start_vec_;
    for (size_t b = 1; b <= buckets; ++b) start[b] += start[b - 1];
    constexpr uint32_t kMaxOffset = std::numeric_limits<BucketOffset>::max();
    unsigned g = std::min(kMaxGroupShift, s.prefix_bits_ - 1);
    for (; g > 0; --g) {  // a group's end must fit too, or its last bucket's size would be cut
        bool fits = true;
        for (size_t G = 0; G < (buckets >> g) && fits; ++G)
            fits = start[(G + 1) << g] - start[G << g] <= kMaxOffset;
        if (fits) break;
    }
    s.group_shift_ = g;
    s.group_of_hash_shift_ = s.prefix_shift_ + g;
    const size_t groups = buckets >> g;
    s.group_start_.resize(groups + 1);
    s.bucket_offset_.resize(buckets + groups + 1);
    for (size_t G = 0; G <= groups; ++G) s.group_start_[G] = start[G << g];
    for (size_t b = 0; b <= buckets; ++b)
        s.bucket_offset_[s.offset_index(b)] = BucketOffset(start[b] - s.group_start_[b >> g]);
    for (size_t G = 0; G < groups; ++G)  // each group's end, after its last bucket
        s.bucket_offset_[((G + 1) << g) + G] =
            BucketOffset(std::min<uint32_t>(start[(G + 1) << g] - s.group_start_[G], kMaxOffset));
}

uint32_t TokenIndex::exact_position(uint64_t b, uint64_t rest) const noexcept {
    // Binary search: the bucket may hold every token (a constant hasher).
    uint32_t first = bucket_start(b), n = bucket_start(b + 1) - first;
    while (n > 0) {
        const uint32_t half = n / 2;
        if (rest_of(first + half) < rest) {
            first += half + 1;
            n -= half + 1;
        } else {
            n = half;
        }
    }
    return first;
}

uint64_t TokenIndex::token_value(size_t i) const noexcept {
    // Token i's bucket is the last b whose start is <= i (empty buckets
    // before it share its start).
    uint64_t lo = 0, hi = uint64_t(1) << prefix_bits_;  // bucket_start(lo) <= i < bucket_start(hi)
    while (hi - lo > 1) {
        const uint64_t mid = lo + (hi - lo) / 2;
        if (bucket_start(mid) <= i) lo = mid;
        else hi = mid;
    }
    return lo << prefix_shift_ | rest_of(i) >> prefix_bits_;
}

size_t TokenIndex::index_bytes() const noexcept {
    return (hot_.size() + cold_.size() + group_start_.size()) * sizeof(uint32_t) +
           bucket_offset_.size() * sizeof(BucketOffset);
}

}  // namespace chring
