// The lookup index: a ring's sorted token array in the layout that makes
// successor search a few memory reads, and its writer.
//
// The token array is split so the part every lookup reads is 4 bytes per
// token. The prefix index already says a token's top P value bits (its
// bucket); of the other 64 - P bits, the top R = 32 - O go in hot_ with
// the owner in its low O bits (O = bits of the node count, P >= O), the
// rest in cold_. A lookup compares hot records only: hot < key(h) (key
// with zero owner bits) proves value < h, and the first record that fails
// is the answer unless its R bits equal h's (probability 2^-R: 2^-22 at
// 1,000 nodes), when the cold bits decide, off the fast path. The answer's
// owner is in the record just compared. At 1,000 nodes the hot part and
// the index are 0.8 MB, which stays in this machine's L2 (2 MB) where
// 8- or 12-byte tokens spilled to L3.
//
// The prefix index is two-level to shrink it to one byte a bucket. Bucket
// b is in group G = b >> group_shift_ and starts at group_start_[G] +
// bucket_offset_[b + G]: each group's offsets are followed by one more,
// its end (the next group's start), so a bucket's start and size come
// from one group entry and two adjacent offsets. Groups are 64 buckets
// (~150 tokens) unless a skewed hasher crowds more than 255 tokens into
// one, then smaller, down to one bucket, whose end alone may be capped
// at 255: a size that big takes the exact path, which reads the bounds
// from group_start_.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "window.hpp"

namespace chring {

class TokenIndex {
public:
    size_t token_count() const noexcept { return tokens_; }

    // Index in [0, T] of the first token >= h in the total order, T if h is
    // above every token, and the record there, whose low O bits are the
    // owner: a lookup takes the owner from the record the window compare
    // just read. Within the bucket the compares hold for a prefix of its n
    // records; records past the bucket belong to later buckets and compare
    // meaninglessly and are masked off (window_rank_x2): no branch on the data.
    struct Found {
        uint32_t index;
        uint32_t record;
    };
    Found locate(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        const uint64_t group = h >> group_of_hash_shift_;  // b >> group_shift_, one step sooner
        const BucketOffset *offset = bucket_offset_.data() + b + group;
        const uint32_t lo = group_start_[group] + offset[0];
        const uint32_t n = uint32_t(offset[1] - offset[0]);  // capped at 255: then n > kWindow
        // h's 32 bits below its bucket (P <= 24), owner bits cleared
        const uint32_t key = uint32_t(h >> key_shift_) & ~owner_mask_;
        const uint32_t *r = hot_.data() + lo;
        if (__builtin_expect(n > kWindow, 0)) return locate_exactly(b, h);
        const size_t c2 = window_rank_x2(r, key, n);
        const uint32_t record = record_at_rank_x2(r, c2);
        // A tie: the record's hot bits equal the key's ((r ^ bias) - key ==
        // r - (key ^ bias)), and it is in the bucket. Tested in this order:
        // the first is almost never true, the second often, and unpredictably.
        if (__builtin_expect(record - (key ^ kWindowBias) <= owner_mask_, 0) && c2 < 2 * n)
            return locate_exactly(b, h);
        return {lo + uint32_t(c2 / 2), record};
    }
    // Index of the first token >= h, wrapping to 0. Requires T > 0.
    uint32_t successor(uint64_t h) const noexcept {
        const uint32_t i = locate(h).index;
        return i == tokens_ ? 0 : i;
    }
    // Owner of the first token >= h, wrapping (the pad record at T owns the wrap).
    uint32_t owner_at_hash(uint64_t h) const noexcept { return locate(h).record & owner_mask_; }
    // Owner of token i; i == T is a pad record holding the owner of token 0.
    uint32_t owner_at(size_t i) const noexcept { return hot_[i] & owner_mask_; }
    uint64_t token_value(size_t i) const noexcept;  // O(log T): rebuilt from bucket and record

    // For a batch of lookups: loads the index entries of h's bucket, then
    // its window (32 bytes, which may span two lines), ahead of locate(h).
    void prefetch_bucket(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        __builtin_prefetch(&group_start_[b >> group_shift_]);
        __builtin_prefetch(&bucket_offset_[offset_index(b)]);
    }
    void prefetch_window(uint64_t h) const noexcept {
        const uint32_t *window = &hot_[bucket_start(h >> prefix_shift_)];
        __builtin_prefetch(window);
        __builtin_prefetch(window + kWindow - 1);
    }

    // Calls f(value, owner) for every token in order (for the update merge).
    // A token's top P bits are its bucket's number: the bucket holding token
    // i is the last one starting at or before i, found as a running maximum
    // over bucket numbers marked at their starts (a loop over each bucket's
    // tokens instead costs a mispredicted exit per bucket).
    template <class F>
    void for_each_token(F &&f) const {
        std::vector<uint32_t> bucket_at(tokens_ + 1, 0);  // the largest bucket starting at i
        const uint64_t buckets = uint64_t(1) << prefix_bits_;
        for (uint64_t b = 0; b < buckets; ++b) bucket_at[bucket_start(b)] = uint32_t(b);
        uint64_t b = 0;
        for (size_t i = 0; i < tokens_; ++i) {
            b = std::max<uint64_t>(b, bucket_at[i]);
            f(b << prefix_shift_ | rest_of(i) >> prefix_bits_, owner_at(i));
        }
    }

    // Bytes of token array plus index (for the memory-per-token report).
    size_t index_bytes() const noexcept;

    class Writer;
    class Cursor;

private:
    Found locate_exactly(uint64_t b, uint64_t h) const noexcept {
        const uint32_t i = exact_position(b, h << prefix_bits_);
        return {i, hot_[i]};
    }
    // First token of bucket b, for b in [0, 2^P] (2^P gives T).
    uint32_t bucket_start(uint64_t b) const noexcept {
        return group_start_[b >> group_shift_] + bucket_offset_[offset_index(b)];
    }
    // Where bucket b's offset is in bucket_offset_: each group before it
    // adds one entry, its end. (locate() computes this from the hash itself.)
    size_t offset_index(uint64_t b) const noexcept { return size_t(b + (b >> group_shift_)); }
    // Token i's value without its bucket bits: (value << P), exactly.
    uint64_t rest_of(size_t i) const noexcept {
        return uint64_t((hot_[i] ^ kWindowBias) & ~owner_mask_) << 32 | uint64_t(cold_[i]) << owner_bits_;
    }
    // The first token of bucket b whose rest_of() is >= rest, or the
    // bucket's end, by full comparison: for buckets bigger than the window
    // and for ties in the hot bits.
    uint32_t exact_position(uint64_t b, uint64_t rest) const noexcept;

    using BucketOffset = uint8_t;
    static constexpr unsigned kMaxGroupShift = 6;

    size_t tokens_ = 0;  // T
    // Tokens sorted by (value, owner) (owner order is id order), as above;
    // hot_ has kWindow pads holding the owner of token 0.
    std::vector<uint32_t> hot_;
    std::vector<uint32_t> cold_;
    std::vector<uint32_t> group_start_;  // 2^P / group + 1 entries; the last is T
    std::vector<BucketOffset> bucket_offset_;  // 2^P + 2^P / group + 1 entries
    unsigned group_shift_ = 0;         // <= P - 1, so that the next one is < 64
    unsigned group_of_hash_shift_ = 63;  // 64 - P + group_shift_
    unsigned prefix_bits_ = 1;   // P
    unsigned prefix_shift_ = 63; // 64 - P
    unsigned key_shift_ = 31;    // 32 - P
    unsigned owner_bits_ = 1;    // O
    uint32_t owner_mask_ = 1;    // 2^O - 1
};

// Reads the tokens in order one at a time, so that a caller can walk two
// rings side by side (a diff). The bucket of token i is tracked as i grows:
// the next bucket's start is compared once per token, plus once per empty
// bucket passed, so a whole walk is O(T + 2^P) = O(T), without the
// per-token binary search of token_value().
class TokenIndex::Cursor {
public:
    explicit Cursor(const TokenIndex &index) noexcept : index_(index) {
        if (index_.tokens_) settle();
    }
    bool done() const noexcept { return i_ == index_.tokens_; }
    // The current token (requires !done()): its position, value and owner.
    size_t position() const noexcept { return i_; }
    uint64_t value() const noexcept { return value_; }
    uint32_t owner() const noexcept { return index_.owner_at(i_); }
    void next() noexcept {
        if (++i_ < index_.tokens_) settle();
    }

private:
    void settle() noexcept {
        while (next_start_ <= i_) next_start_ = index_.bucket_start(++bucket_ + 1);
        value_ = bucket_ << index_.prefix_shift_ | index_.rest_of(i_) >> index_.prefix_bits_;
    }
    const TokenIndex &index_;
    size_t i_ = 0;
    uint64_t bucket_ = ~uint64_t(0);  // the bucket holding token i_ (the first ++ makes it 0)
    size_t next_start_ = 0;           // bucket_start(bucket_ + 1)
    uint64_t value_ = 0;
};

// Fills a TokenIndex with T tokens given in (value, owner) order.
class TokenIndex::Writer {
public:
    // Sizes the layout for T tokens over `nodes` owners.
    Writer(TokenIndex &index, size_t T, size_t nodes);

    // The next token; also counts its bucket. Inline: once per token of
    // every update.
    void add(uint64_t v, uint32_t o) noexcept {
        const uint64_t rest = v << bits_;
        hot_[k_] = ((uint32_t(rest >> 32) & ~owner_mask_) | o) ^ kWindowBias;
        cold_[k_] = uint32_t(rest << hot_bits_ >> 32);
        ++start_[(v >> shift_) + 1];
        ++k_;
    }
    // Tokens added so far.
    size_t count() const noexcept { return k_; }

    // After the last token: the wrap's pad records and the prefix index.
    void finish();

private:
    TokenIndex &index_;
    const size_t T_;
    size_t k_ = 0;
    std::vector<uint32_t> start_vec_;  // tokens per bucket, then first token per bucket
    // Raw pointers and copies: add() stores through uint32_t pointers,
    // which could alias uint32_t members and force reloads.
    uint32_t *start_, *hot_, *cold_;
    unsigned bits_, shift_, hot_bits_;  // P, 64 - P, R
    uint32_t owner_mask_;
};

}  // namespace chring
