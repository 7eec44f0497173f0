// The lookup index: a ring's sorted token array in the layout that makes
// successor search a few memory reads, split into chunks that snapshots
// share, and its writers (a full build, and an update that copies only the
// chunks it changes).
//
// The token array is split so the part every lookup reads is 4 bytes per
// token. The prefix index already says a token's top P value bits (its
// bucket); of the other 64 - P bits, the top R = 32 - O go in a hot record
// with the owner's slot in its low O bits (O = bits of the slot count,
// P >= O), the rest in a cold word (packed: its low P - O bits are always
// zero and not stored). A lookup compares hot records only:
// hot < key(h) (key with zero owner bits) proves value < h, and the first
// record that fails is the answer unless its R bits equal h's (probability
// 2^-R: 2^-22 at 1,000 nodes), when the cold bits decide, off the fast path.
// The answer's owner is in the record just compared.
//
// The prefix index is two-level to shrink it to one byte a bucket. Bucket
// b is in group G = b >> group_shift_; its records start at offset
// bucket_offset_[b + G] of group G's chunk: each group's offsets are
// followed by one more, its end, so a bucket's start and size come from
// one group entry and two adjacent offsets. Groups are 64 buckets (~150
// tokens) unless a skewed hasher crowds more than 255 tokens into one, then
// smaller, down to one bucket, whose end alone may be capped at 255: a size
// that big takes the exact path.
//
// The records live in chunks of 2^C consecutive groups (hot records,
// kWindow pad records, cold records), shared by every snapshot whose chunk
// is unchanged: adding a node rewrites the chunks its ~160 tokens fall in
// (and a chunk before one of them whose pads name another next owner),
// plus the small per-group arrays, instead of the whole ring. C grows with
// T (chunks of ~sqrt(T) tokens) so that an update's two costs, the chunks
// it rewrites and the per-chunk arrays it copies, stay balanced. A shared
// chunk has no reference count: the indexes an update chain made share a
// chunk at one position, in consecutive versions, so the index that goes
// frees each chunk neither of its live neighbours in the chain holds
// (commit(), "Lineage" below). An
// owner is a slot, stable across updates (snapshot.hpp maps slots to node
// indices), so a chunk stays valid when other nodes come and go.
//
// A token's position is its group and its offset in the group (Pos);
// group_start_ turns it into its rank in the whole array.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "chunk_pool.hpp"
#include "base/huge_pages.hpp"
#include "base/membership.hpp"
#include "window.hpp"

namespace chring {

class TokenIndex {
public:
    // A token's position: group << 32 | offset in the group.
    using Pos = uint64_t;
    static constexpr Pos kNoPos = ~Pos(0);
    static uint32_t group_of(Pos p) noexcept { return uint32_t(p >> 32); }
    static uint32_t offset_of(Pos p) noexcept { return uint32_t(p); }
    static Pos pos(uint32_t group, uint32_t offset) noexcept { return Pos(group) << 32 | offset; }

    TokenIndex() = default;
    TokenIndex(const TokenIndex &) = delete;
    TokenIndex &operator=(const TokenIndex &) = delete;
    // Frees the chunks no other live index holds.
    ~TokenIndex();

    // Marks a finished index as its lineage's newest: an update's result
    // after the index it was made from, a full build's as the first of a
    // lineage of its own. Call once, when the index will not change again
    // (a snapshot's constructor, before anyone else can see it); until
    // then it frees only the chunks it made.
    void commit() noexcept;

    size_t token_count() const noexcept { return tokens_; }
    // Whether T tokens keep this layout's tokens per bucket within its
    // band (an update keeps the layout only then; see Writer::Writer()).
    bool suits(size_t T) const noexcept {
        const size_t buckets = size_t(1) << prefix_bits_;
        return coarse_ ? 2 * buckets <= T && T <= 7 * buckets : buckets <= T && 2 * T <= 7 * buckets;
    }
    // Bits of the slot field: slots are < 2^owner_bits().
    unsigned owner_bits() const noexcept { return owner_bits_; }
    unsigned prefix_bits() const noexcept { return prefix_bits_; }

    // Position of the first token >= h in the total order (its offset may
    // be its group's size: the end of the group, see Walker), and the
    // record there, whose low O bits are the owner's slot: a lookup takes
    // the owner from the record the window compare just read (past a
    // group's last token, a pad record holding the next token's owner).
    // Within the bucket the compares hold for a prefix of its n records;
    // records past the bucket belong to later buckets and compare
    // meaninglessly and are masked off (window_rank_x2): no branch on the data.
    struct Found {
        Pos pos;
        uint32_t record;
        const uint32_t *at;  // where the record is (a Walker starts there)
    };
    Found locate(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        const uint64_t group = h >> group_of_hash_shift_;  // b >> group_shift_, one step sooner
        const BucketOffset *offset = bucket_offset_.data() + b + group;
        const uint32_t lo = offset[0];
        const uint32_t n = uint32_t(offset[1] - offset[0]);  // capped at 255: then n > kWindow
        // h's 32 bits below its bucket (P <= 24), owner bits cleared
        const uint32_t key = uint32_t(h >> key_shift_) & ~owner_mask_;
        const uint32_t *r = hot_of_group_[group] + lo;
        if (__builtin_expect(n > kWindow, 0)) return locate_wide(b, h, r, key, n);
        const size_t c2 = window_rank_x2(r, key, n);
        const uint32_t record = record_at_rank_x2(r, c2);
        // A tie: the record's hot bits equal the key's ((r ^ bias) - key ==
        // r - (key ^ bias)), and it is in the bucket. Tested in this order:
        // the first is almost never true, the second often, and unpredictably.
        if (__builtin_expect(record - (key ^ kWindowBias) <= owner_mask_, 0) && c2 < 2 * n)
            return locate_exactly(b, h);
        return {pos(uint32_t(group), lo + uint32_t(c2 / 2)), record, r + c2 / 2};
    }
    // Slot of the owner of the first token >= h, wrapping.
    uint32_t slot_at_hash(uint64_t h) const noexcept { return locate(h).record & owner_mask_; }
    // Slot of the owner of the token at p.
    uint32_t slot_at(Pos p) const noexcept { return hot_of_group_[group_of(p)][offset_of(p)] & owner_mask_; }
    // The first token's position (requires T > 0).
    Pos first() const noexcept { return settle(0); }
    // The position of the token of rank i in [0, T) (O(log groups)).
    Pos at_rank(size_t i) const noexcept;
    uint64_t token_value(Pos p) const noexcept;  // O(log group): rebuilt from bucket and record

    // For a batch of lookups: loads the index entries of h's bucket, then
    // its window (32 bytes, which may span two lines), ahead of locate(h).
    // Not the second window of a coarse ring's bigger buckets: loading it
    // for every key made 16M-token batches 3% slower.
    // Always inline: a prefetch is no side effect to GCC, so a prefetch
    // function left out of line by the early inliner is found pure and its
    // calls deleted as useless (GCC 12 did so to prefetch_window when it
    // grew by one operation: the batch lost its window prefetches and was
    // 2.5x slower at 16M tokens).
    __attribute__((always_inline)) void prefetch_bucket(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        __builtin_prefetch(&hot_of_group_[b >> group_shift_]);
        __builtin_prefetch(&bucket_offset_[offset_index(b)]);
    }
    __attribute__((always_inline)) void prefetch_window(uint64_t h) const noexcept {
        const uint64_t b = h >> prefix_shift_;
        const uint32_t *window = hot_of_group_[b >> group_shift_] + bucket_offset_[offset_index(b)];
        __builtin_prefetch(window);
        __builtin_prefetch(window + kWindow - 1);
    }

    // Walks the tokens clockwise from a position, one slot at a time (the
    // replica walks): the group's records and end are kept at hand, so a
    // step is an increment and a compare.
    class Walker {
    public:
        // From p, which may be its group's end (as locate() returns it).
        Walker(const TokenIndex &index, Pos p) noexcept
            : index_(index), rec_(index.hot_of_group_[group_of(p)] + offset_of(p)),
              chunk_(index.chunk_of(group_of(p))), mask_(index.owner_mask_),
              pad_bits_(~kWindowBias | index.owner_mask_), record_(*rec_) {
            if (__builtin_expect(looks_like_pad(), 0)) skip_pads();
        }
        // From what locate() found: its record is already loaded, so the
        // walk's first step waits on nothing but the window compare.
        Walker(const TokenIndex &index, const Found &f) noexcept
            : index_(index), rec_(f.at), chunk_(index.chunk_of(group_of(f.pos))), mask_(index.owner_mask_),
              pad_bits_(~kWindowBias | index.owner_mask_), record_(f.record) {
            if (__builtin_expect(looks_like_pad(), 0)) skip_pads();
        }
        uint32_t slot() const noexcept { return record_ & mask_; }
        void next() noexcept {
            record_ = *++rec_;
            if (__builtin_expect(looks_like_pad(), 0)) skip_pads();
        }

    private:
        // A chunk's groups are contiguous, so a walk only stops at the
        // chunk's end, on its pads, whose value bits are all ones: no end
        // pointer to load and compare. A token whose value bits are all
        // ones looks the same, and is told apart by the chunk's size.
        // ((r ^ bias) | mask) == ~0, one operation shorter.
        bool looks_like_pad() const noexcept { return (record_ | mask_) == pad_bits_; }
        void skip_pads() noexcept {
            const uint32_t *base = index_.chunks_[chunk_];
            if (rec_ < base + header_of(base)->n) return;  // a token
            do chunk_ = chunk_ + 1 < index_.chunks_.size() ? chunk_ + 1 : 0;  // the next chunk with tokens
            while (header_of(index_.chunks_[chunk_])->n == 0);
            rec_ = index_.chunks_[chunk_];
            record_ = *rec_;
        }
        const TokenIndex &index_;
        const uint32_t *rec_;
        size_t chunk_;
        const uint32_t mask_;  // a copy: the caller's stores could alias index_'s
        const uint32_t pad_bits_;  // a pad record's bits, its slot's set
        uint32_t record_;  // *rec_, loaded once a step
    };

    // Calls f(value, slot) for every token in order.
    template <class F>
    void for_each_token(F &&f) const;

    // Chunks: how many, and the groups of chunk c are [c << C, (c + 1) << C).
    unsigned chunk_shift() const noexcept { return chunk_shift_; }
    // Position of the first token at or after group g (wrapping), and of
    // the last token before it (wrapping). Require T > 0.
    Pos first_from_group(size_t g) const noexcept { return settle(pos(uint32_t(g), 0)); }
    Pos last_before_group(size_t g) const noexcept;

    // Bytes of chunks plus index (for the memory-per-token report); bytes
    // of the chunks this index does not share with `other`.
    size_t index_bytes() const noexcept;
    size_t bytes_not_in(const TokenIndex &other) const noexcept;

    class Writer;
    class Updater;
    class Cursor;

private:
    // A chunk: its header, then the hot records of its groups (n, then
    // kWindow pads); and, where the header points, their cold records
    // packed W = 32 - (P - O) bits each (the cold word's low P - O bits
    // are always zero: the value's bits below those are the bucket's),
    // plus slack for 8-byte reads. A build puts the cold records in blocks
    // of their own, made after every hot block, so that the hot records of
    // its chunks lie together: lookups, which read hot records only, then
    // share their lines and pages with no cold bytes (2-3.5% faster at
    // 1,000 nodes; tests/bench/HISTORY.md, "In-process A/B; hot and cold
    // blocks"). An update's few new chunks keep them in the same block,
    // right after the pads (one allocation each).
    struct ChunkHeader {
        unsigned char *cold;      // the cold records (null until a build makes their block)
        uint32_t n : 24;          // tokens (at most 255 a group)
        uint32_t cold_shift : 6;  // P - O (< 24)
        uint32_t source : 2;      // a chunk_pool::Source (the cold block's too)
    };
    static ChunkHeader *header_of(const uint32_t *base) noexcept {
        return const_cast<ChunkHeader *>(reinterpret_cast<const ChunkHeader *>(base) - 1);
    }
    // A chunk for n tokens, hot records unset, cold
    // ones zero in the same block (with `with_cold`; else none yet:
    // make_cold()), from `source`. Throws bad_alloc.
    static uint32_t *new_chunk(uint32_t n, unsigned cold_shift, chunk_pool::Source source, bool with_cold = true);
    // Gives a chunk made without cold records a zeroed block of its own
    // for them; throws bad_alloc.
    static unsigned char *make_cold(const uint32_t *base);
    // Where a chunk's cold records are when they share its block.
    static unsigned char *inline_cold(const uint32_t *base) noexcept {
        return reinterpret_cast<unsigned char *>(const_cast<uint32_t *>(base) + header_of(base)->n + kWindow);
    }
    // Where this index's chunks come from: huge-page slabs for chunks of
    // several groups, past 2M tokens, where the ring is big enough to miss
    // the TLB; else a build's from the heap (its chunks lie in order; from
    // small slabs lookups measured 6% slower at 1,000 nodes), an update's
    // from small slabs.
    chunk_pool::Source build_source() const noexcept {
        return chunk_shift_ > 0 ? chunk_pool::Source::huge_slabs : chunk_pool::Source::heap;
    }
    chunk_pool::Source update_source() const noexcept {
        return chunk_shift_ > 0 ? chunk_pool::Source::huge_slabs : chunk_pool::Source::small_slabs;
    }
    static void free_chunk(const uint32_t *base) noexcept;
    static size_t cold_bytes(uint32_t n, unsigned cold_shift) noexcept {
        return (size_t(n) * (32 - cold_shift) + 7) / 8 + 8;
    }
    static size_t hot_bytes(uint32_t n) noexcept {
        return sizeof(ChunkHeader) + (size_t(n) + kWindow) * sizeof(uint32_t);
    }
    static const unsigned char *cold_of_chunk(const uint32_t *base) noexcept { return header_of(base)->cold; }
    // The cold word of a chunk's token j, and storing it (OR-ing into the
    // zeroed stream, in any order). Little-endian: one 8-byte load holds
    // the 32 bits at any bit offset.
    static uint32_t cold_word(const unsigned char *cold, size_t j, unsigned cold_shift) noexcept {
        const size_t bit = j * (32 - cold_shift);
        uint64_t w;
        std::memcpy(&w, cold + bit / 8, sizeof w);
        return uint32_t(w >> (bit % 8)) << cold_shift;  // bits past the W are the next words: shifted out
    }
    static void put_cold_word(unsigned char *cold, size_t j, unsigned cold_shift, uint32_t word) noexcept {
        const size_t bit = j * (32 - cold_shift);
        uint64_t w;
        std::memcpy(&w, cold + bit / 8, sizeof w);
        w |= uint64_t(word >> cold_shift) << (bit % 8);
        std::memcpy(cold + bit / 8, &w, sizeof w);
    }
    // What a chunk takes from its allocator (a pool block is rounded up).
    static size_t chunk_footprint(const uint32_t *base) noexcept;
    size_t chunk_of(size_t g) const noexcept { return g >> chunk_shift_; }
    // Group g's first token's index in its chunk.
    size_t chunk_index_of_group(size_t g) const noexcept {
        return size_t(hot_of_group_[g] - chunks_[chunk_of(g)]);
    }

    // Token (v, slot)'s hot record and cold word under P = prefix_bits,
    // the owner mask and R = hot_bits = 32 - O.
    static void encode(uint64_t v, uint32_t slot, unsigned prefix_bits, uint32_t owner_mask,
                       unsigned hot_bits, uint32_t &hot, uint32_t &cold) noexcept {
        const uint64_t rest = v << prefix_bits;
        hot = ((uint32_t(rest >> 32) & ~owner_mask) | slot) ^ kWindowBias;
        cold = uint32_t(rest << hot_bits >> 32);
    }
    // Bytes of the per-group and per-bucket arrays (each snapshot has its own).
    size_t array_bytes() const noexcept {
        return (hot_of_group_.size() + chunks_.size()) * sizeof(void *) +
               group_start_.size() * sizeof(uint32_t) + bucket_offset_.size() * sizeof(BucketOffset);
    }

    // p, or the next group's first token (wrapping) when p is at its group's end.
    Pos settle(Pos p) const noexcept {
        uint32_t g = group_of(p);
        if (__builtin_expect(g < groups() && offset_of(p) < group_size(g), 1)) return p;
        do g = g + 1 < groups() ? g + 1 : 0;
        while (group_size(g) == 0);
        return pos(g, 0);
    }
    size_t groups() const noexcept { return hot_of_group_.size(); }
    uint32_t group_size(size_t g) const noexcept { return group_start_[g + 1] - group_start_[g]; }
    // locate() for a bucket of more than kWindow records (n, capped at
    // 255), from the same inputs: two window compares up to 2 kWindow,
    // the exact path beyond. Out of line: a ring of up to 256K tokens
    // comes here for ~0.1% of its keys, a coarse one for 1-15%.
    Found locate_wide(uint64_t b, uint64_t h, const uint32_t *r, uint32_t key, uint32_t n) const noexcept;
    Found locate_exactly(uint64_t b, uint64_t h) const noexcept {
        const uint32_t g = uint32_t(b >> group_shift_);
        const uint32_t i = exact_position(b, h << prefix_bits_);
        return {pos(g, i), hot_of_group_[g][i], hot_of_group_[g] + i};
    }
    // Offset of bucket b's first token in its group's chunk, for b in [0, 2^P].
    uint32_t bucket_offset(uint64_t b) const noexcept { return bucket_offset_[offset_index(b)]; }
    // Where bucket b's offset is in bucket_offset_: each group before it
    // adds one entry, its end. (locate() computes this from the hash itself.)
    size_t offset_index(uint64_t b) const noexcept { return size_t(b + (b >> group_shift_)); }
    // Token i of group g's value without its bucket bits: (value << P), exactly.
    uint64_t rest_of(size_t g, uint32_t i) const noexcept {
        const uint32_t cold = cold_word(cold_of_chunk(chunks_[chunk_of(g)]), chunk_index_of_group(g) + i,
                                        prefix_bits_ - owner_bits_);
        return uint64_t((hot_of_group_[g][i] ^ kWindowBias) & ~owner_mask_) << 32 | uint64_t(cold) << owner_bits_;
    }
    // The end of bucket b in its group: the next bucket's offset, or the
    // group's size after its last bucket (whose stored end may be capped).
    uint32_t bucket_end(uint64_t b) const noexcept {
        if (((b + 1) & ((uint64_t(1) << group_shift_) - 1)) == 0) return group_size(size_t(b >> group_shift_));
        return bucket_offset_[offset_index(b) + 1];
    }
    // Offset of the first token of bucket b whose rest_of() is >= rest, or
    // the bucket's end, by full comparison: for buckets bigger than the
    // window and for ties in the hot bits.
    uint32_t exact_position(uint64_t b, uint64_t rest) const noexcept;
    // The pad record after a group whose next token is owned by `slot`:
    // hot bits all ones, below no key.
    uint32_t pad_record(uint32_t slot) const noexcept { return (~owner_mask_ | slot) ^ kWindowBias; }
    // Slot of the first token after chunk c's last group (wrapping). Requires T > 0.
    uint32_t slot_after_chunk(size_t c) const noexcept {
        const uint32_t last = uint32_t(((c + 1) << chunk_shift_) - 1);
        return slot_at(settle(pos(last, group_size(last))));
    }
    // Sets chunk c's pads (it must be this index's own) for T > 0.
    void set_pads(size_t c) noexcept {
        uint32_t *base = const_cast<uint32_t *>(chunks_[c]);
        const uint32_t n = header_of(base)->n;
        std::fill(base + n, base + n + kWindow, pad_record(tokens_ ? slot_after_chunk(c) : 0));
    }
    // Frees the chunks this index made and empties it; for an index not
    // yet committed (a build or update that failed, or starts over).
    void clear() noexcept;
    // Whether this index holds chunk `c` at position k.
    bool holds(size_t k, const uint32_t *c) const noexcept { return k < chunks_.size() && chunks_[k] == c; }
    // Under an update (Updater::apply()): shares `base`'s chunks if base
    // is its lineage's newest index; false if it is not (a full build then).
    bool share_from(const TokenIndex &base) noexcept;

    using BucketOffset = uint8_t;
    static constexpr unsigned kMaxGroupShift = 6;
    static constexpr uint32_t kMaxOffset = 255;
    // Rings of this many tokens and more get coarse buckets (Writer::Writer()).
    static constexpr size_t kCoarseTokens = size_t(1) << 18;

    size_t tokens_ = 0;  // T
    // Per group: its hot records in its chunk (sorted by (value, owner's
    // node order)), and its first token's rank (groups + 1 entries; the
    // last is T). Per chunk: its records (the chunk's reference).
    HugeArray<const uint32_t *> hot_of_group_;
    HugeArray<uint32_t> group_start_;
    HugeArray<const uint32_t *> chunks_;
    unsigned chunk_shift_ = 0;  // C: 2^C groups a chunk
    HugeArray<BucketOffset> bucket_offset_;  // 2^P + 2^P / group + 1 entries
    unsigned group_shift_ = 0;         // <= P - 1, so that the next one is < 64
    unsigned group_of_hash_shift_ = 63;  // 64 - P + group_shift_
    unsigned prefix_bits_ = 1;   // P
    bool coarse_ = false;        // 3-6 tokens a bucket, not 1.5-3 (Writer::Writer())
    unsigned prefix_shift_ = 63; // 64 - P
    unsigned key_shift_ = 31;    // 32 - P
    unsigned owner_bits_ = 1;    // O
    uint32_t owner_mask_ = 1;    // 2^O - 1

    // Lineage: the committed indexes of one update chain, oldest to newest.
    // Each was made from the one before it, so a chunk is held by a run
    // of consecutive indexes, at the same position in each (an update
    // keeps the chunk layout). An index that goes frees the chunks that
    // neither its older nor its newer live neighbour holds: if any other
    // live index holds one, one of those two does. The links change, and
    // are read, under the mutex; a committed index's chunks never change.
    struct Lineage {
        std::mutex mutex;
    };
    std::shared_ptr<Lineage> lineage_;  // set by a build (its own) or an update (its base's)
    TokenIndex *older_ = nullptr, *newer_ = nullptr;  // committed: live neighbours in the lineage
    const TokenIndex *base_ = nullptr;  // an update not yet committed: the index it shares with
    bool committed_ = false;
};

// Reads the tokens in order one at a time, so that a caller can walk two
// rings side by side (a diff). The bucket of the current token is tracked
// as the walk goes: the next bucket's start is compared once per token,
// plus once per empty bucket passed, so a whole walk is O(T + 2^P) = O(T).
class TokenIndex::Cursor {
public:
    // From the first token of group `first_group` on (the whole ring by default).
    explicit Cursor(const TokenIndex &index, uint32_t first_group = 0) noexcept : index_(index) {
        if (index_.tokens_) enter_group(first_group);
        else done_ = true;
    }
    uint32_t group() const noexcept { return group_; }
    bool done() const noexcept { return done_; }
    // The current token (requires !done()): its position, value and slot.
    Pos position() const noexcept { return pos(group_, i_); }
    uint64_t value() const noexcept { return value_; }
    uint32_t slot() const noexcept { return hot_[i_] & index_.owner_mask_; }
    void next() noexcept {
        if (++i_ < n_) return settle();
        if (group_ + 1 < index_.groups()) return enter_group(group_ + 1);
        done_ = true;
    }

private:
    void enter_group(uint32_t g) noexcept {
        for (;; ++g) {
            if (g == index_.groups()) {
                done_ = true;
                return;
            }
            if (index_.group_size(g)) break;
        }
        group_ = g;
        hot_ = index_.hot_of_group_[g];
        cold_ = cold_of_chunk(index_.chunks_[index_.chunk_of(g)]);
        cold_first_ = index_.chunk_index_of_group(g);
        n_ = index_.group_size(g);
        i_ = 0;
        bucket_base_ = uint64_t(g) << index_.group_shift_;
        // Each token's bucket in the group: bucket b marked at its start, then
        // a running maximum (the last bucket starting at or before a token
        // holds it), with no branch per token. A group over kMaxOffset
        // tokens is one bucket (all zeros).
        const BucketOffset *offsets = &index_.bucket_offset_[index_.offset_index(bucket_base_)];
        const uint32_t marked = std::min<uint32_t>(n_, kMaxOffset + 1);
        std::fill(bucket_in_group_, bucket_in_group_ + marked + 1, 0);
        for (uint32_t b = 0; b < (uint32_t(1) << index_.group_shift_); ++b)
            bucket_in_group_[std::min<uint32_t>(offsets[b], marked)] = uint8_t(b);
        uint8_t running = 0;
        for (uint32_t i = 0; i < marked; ++i) {
            running = std::max(running, bucket_in_group_[i]);
            bucket_in_group_[i] = running;
        }
        settle();
    }
    void settle() noexcept {
        const uint32_t cold = cold_word(cold_, cold_first_ + i_, index_.prefix_bits_ - index_.owner_bits_);
        const uint64_t rest = uint64_t((hot_[i_] ^ kWindowBias) & ~index_.owner_mask_) << 32 |
                              uint64_t(cold) << index_.owner_bits_;
        const uint32_t bucket = bucket_in_group_[std::min<uint32_t>(i_, kMaxOffset)];
        value_ = (bucket_base_ + bucket) << index_.prefix_shift_ | rest >> index_.prefix_bits_;
    }
    const TokenIndex &index_;
    const uint32_t *hot_ = nullptr;
    const unsigned char *cold_ = nullptr;  // the group's chunk's cold stream
    size_t cold_first_ = 0;                // the group's first token's index in it
    uint32_t group_ = 0, i_ = 0, n_ = 0;
    uint64_t bucket_base_ = 0;  // the group's first bucket
    uint64_t value_ = 0;
    bool done_ = false;
    uint8_t bucket_in_group_[kMaxOffset + 2];  // per token of the group: its bucket in the group
};

template <class F>
void TokenIndex::for_each_token(F &&f) const {
    for (Cursor c(*this); !c.done(); c.next()) f(c.value(), c.slot());
}

// Fills a TokenIndex with T tokens given in (value, owner) order.
class TokenIndex::Writer {
public:
    // Sizes the layout for T tokens over owners < `slots`. Its records
    // (8 bytes a token: token k's hot and cold words at 8k) go to
    // `records` when given; else to `spare` when that is big enough (a
    // sort's scratch: its pages are faulted in already, and at 16M tokens
    // new ones cost more than filling them); else to a buffer of its own.
    // `records` may be the array of 16-byte Tokens the caller adds, in
    // order, and nothing else: record k then lands on tokens already read.
    Writer(TokenIndex &index, size_t T, size_t slots, HugeArray<Token> spare = {}, void *records = nullptr);

    // The next token; also counts its bucket. Inline: once per token of
    // every build.
    void add(uint64_t v, uint32_t o) noexcept {
        encode(v, o, bits_, owner_mask_, hot_bits_, rec_[2 * k_], rec_[2 * k_ + 1]);
        ++start_[(v >> shift_) + 1];
        ++k_;
    }
    // Tokens added so far.
    size_t count() const noexcept { return k_; }

    // After the last token: the prefix index, and the records split into
    // chunks, with their pads. May throw bad_alloc (the index is left empty).
    void finish();

private:
    TokenIndex &index_;
    const size_t T_;
    size_t k_ = 0;
    HugeArray<uint32_t> start_vec_;  // tokens per bucket, then first token per bucket
    HugeArray<Token> records_;  // its own records, when not given any
    // Raw pointers and copies: add() stores through uint32_t pointers,
    // which could alias uint32_t members and force reloads.
    uint32_t *start_, *rec_;  // rec_: (hot, cold) word pairs, before the split into chunks
    unsigned bits_, shift_, hot_bits_;  // P, 64 - P, R
    uint32_t owner_mask_;
};

// Makes an index from a base index by dropping the tokens of some slots
// and inserting fresh ones, rewriting only the groups where either happens
// (and, for their pads, the groups before them): every other chunk is
// shared with the base.
class TokenIndex::Updater {
public:
    // `dropped[s]` is nonzero for each slot whose tokens go; `dropped_values`
    // holds (at least) the values of those tokens, in any order; `fresh`
    // the new tokens as (value, slot), sorted by (value, rank[slot]);
    // `rank[s]` orders slots for equal values (the new node order).
    struct Change {
        const std::vector<uint8_t> &dropped;
        const std::vector<uint64_t> &dropped_values;
        const std::vector<Token> &fresh;
        const std::vector<uint32_t> &rank;
    };
    // False if the change does not fit the base's layout (a group over 255
    // tokens, or no token left): then build afresh. Fills `dirty` with the
    // chunks rewritten (sorted), and arc_delta[slot] with what the owned
    // arcs of each slot gained less what they lost (modulo 2^128; a
    // dropped slot's losses are not counted). Requires a base with at least
    // two token values. May throw bad_alloc; `out` is then left empty.
    // Its phases (Pass, token_index.cpp): the dirty chunks found; `out`
    // made the base's copy without them; each dirty chunk rewritten (its
    // fresh tokens placed and dropped records found in the base, then
    // merged with the kept records in runs, the arcs inside the chunk and
    // the changed groups' bucket offsets with them); the group starts; the
    // arcs whose predecessor is in another chunk; the pads.
    static bool apply(const TokenIndex &base, const Change &change, TokenIndex &out,
                      std::vector<uint32_t> &dirty, std::vector<u128> &arc_delta);

private:
    class Pass;  // one apply()'s state and phases
};

}  // namespace chring
