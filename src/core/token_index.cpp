#include "token_index.hpp"

#include <cassert>
#include <limits>
#include <new>

#include "chunk_pool.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace chring {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the cold records' packing reads 8 bytes little-endian");

namespace {

// Packs n cold words into a chunk's stream, in order, through a 64-bit
// accumulator stored 4 bytes at a time: put_cold_word() per token reloads
// the 8 bytes the previous one stored at another offset, a failed store
// forward each (the build's packing took 4x as long).
// `records`: a build's (hot, cold) word pairs, the cold word second.
void pack_cold_words(const uint32_t *records, uint32_t n, unsigned cold_shift, unsigned char *cold) noexcept {
    const unsigned bits = 32 - cold_shift;
    uint64_t acc = 0;
    unsigned filled = 0;
    for (uint32_t k = 0; k < n; ++k) {
        acc |= uint64_t(records[2 * size_t(k) + 1] >> cold_shift) << filled;
        filled += bits;
        if (filled >= 32) {
            const uint32_t low = uint32_t(acc);
            std::memcpy(cold, &low, sizeof low);
            cold += 4;
            acc >>= 32;
            filled -= 32;
        }
    }
    std::memcpy(cold, &acc, sizeof acc);  // the rest, within the stream's slack
}

// The hot words of n (hot, cold) record pairs, in order.
void copy_hot_words(const uint32_t *records, uint32_t n, uint32_t *hot) noexcept {
    uint32_t i = 0;
#if defined(__SSE2__)
    for (; i + 4 <= n; i += 4) {  // four records, two loads: their even words
        const __m128 a = _mm_loadu_ps(reinterpret_cast<const float *>(records + 2 * size_t(i)));
        const __m128 b = _mm_loadu_ps(reinterpret_cast<const float *>(records + 2 * size_t(i) + 4));
        _mm_storeu_ps(reinterpret_cast<float *>(hot + i), _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    }
#endif
    for (; i < n; ++i) hot[i] = records[2 * size_t(i)];
}

}  // namespace

uint32_t *TokenIndex::new_chunk(uint32_t n, unsigned cold_shift, chunk_pool::Source source, bool with_cold) {
    const size_t cold = with_cold ? cold_bytes(n, cold_shift) : 0;
    void *raw = chunk_pool::allocate(hot_bytes(n) + cold, source);
    ChunkHeader *h = new (raw) ChunkHeader;
    h->n = n;
    h->cold_shift = cold_shift;
    h->source = unsigned(source);
    uint32_t *base = reinterpret_cast<uint32_t *>(h + 1);
    h->cold = with_cold ? inline_cold(base) : nullptr;
    if (with_cold) std::memset(h->cold, 0, cold);
    return base;
}

unsigned char *TokenIndex::make_cold(const uint32_t *base) {
    ChunkHeader *h = header_of(base);
    const size_t bytes = cold_bytes(h->n, h->cold_shift);
    h->cold = static_cast<unsigned char *>(chunk_pool::allocate(bytes, chunk_pool::Source(h->source)));
    std::memset(h->cold, 0, bytes);
    return h->cold;
}

void TokenIndex::free_chunk(const uint32_t *base) noexcept {
    ChunkHeader *h = header_of(base);
    const chunk_pool::Source source = chunk_pool::Source(h->source);
    const size_t cold = cold_bytes(h->n, h->cold_shift), hot = hot_bytes(h->n);
    const bool one_block = h->cold == inline_cold(base);
    if (h->cold && !one_block) chunk_pool::release(h->cold, cold, source);
    h->~ChunkHeader();
    chunk_pool::release(h, one_block ? hot + cold : hot, source);
}

size_t TokenIndex::chunk_footprint(const uint32_t *base) noexcept {
    const ChunkHeader *h = header_of(base);
    const size_t hot = hot_bytes(h->n), cold = cold_bytes(h->n, h->cold_shift);
    auto taken = [h](size_t bytes) { return chunk_pool::block_bytes(bytes, chunk_pool::Source(h->source)); };
    return h->cold == inline_cold(base) ? taken(hot + cold) : taken(hot) + taken(cold);
}

TokenIndex::~TokenIndex() {
    if (!committed_) {
        clear();
        return;
    }
    std::lock_guard<std::mutex> lock(lineage_->mutex);
    for (size_t k = 0; k < chunks_.size(); ++k) {
        const uint32_t *c = chunks_[k];
        if (!(older_ && older_->holds(k, c)) && !(newer_ && newer_->holds(k, c))) free_chunk(c);
    }
    if (older_) older_->newer_ = newer_;
    if (newer_) newer_->older_ = older_;
}

void TokenIndex::clear() noexcept {
    // Not committed: what is not the base's at its position is this index's own.
    for (size_t k = 0; k < chunks_.size(); ++k) {
        const uint32_t *c = chunks_[k];
        if (c && !(base_ && base_->holds(k, c))) free_chunk(c);  // null: a chunk an update had not yet made
    }
    chunks_.clear();
    hot_of_group_.clear();
    group_start_.clear();
    bucket_offset_.clear();
    tokens_ = 0;
    base_ = nullptr;
    lineage_.reset();
}

bool TokenIndex::share_from(const TokenIndex &base) noexcept {
    if (!base.committed_) return false;
    std::lock_guard<std::mutex> lock(base.lineage_->mutex);
    // Only the newest may have a successor: a second one made from an
    // older index would hold chunks its neighbours do not.
    if (base.newer_) return false;
    lineage_ = base.lineage_;
    base_ = &base;
    return true;
}

void TokenIndex::commit() noexcept {
    if (!lineage_) return;  // never built (an index with no tokens and no chunks)
    std::lock_guard<std::mutex> lock(lineage_->mutex);
    if (base_) {
        TokenIndex &base = const_cast<TokenIndex &>(*base_);
        assert(!base.newer_ && "an update's base is its lineage's newest index");
        older_ = &base;
        base.newer_ = this;
        base_ = nullptr;
    }
    committed_ = true;
}

TokenIndex::Found TokenIndex::locate_wide(uint64_t b, uint64_t h, const uint32_t *r, uint32_t key,
                                           uint32_t n) const noexcept {
    if (n > 2 * kWindow) return locate_exactly(b, h);
    // The first kWindow records, then (when the key is above them all)
    // the next ones: r[kWindow, n) are the bucket's, and the pads after
    // the chunk's last record cover r[n, 2 kWindow).
    uint32_t first = 0;
    size_t c2 = window_rank_x2(r, key, kWindow);
    if (c2 == 2 * kWindow) {
        first = kWindow;
        c2 = window_rank_x2(r + first, key, n - first);
    }
    const uint32_t i = first + uint32_t(c2 / 2);
    const uint32_t record = r[i];
    if (record - (key ^ kWindowBias) <= owner_mask_ && i < n) return locate_exactly(b, h);  // a tie, as in locate()
    const uint32_t group = uint32_t(b >> group_shift_);
    return {pos(group, bucket_offset(b) + i), record, r + i};
}

TokenIndex::Pos TokenIndex::at_rank(size_t i) const noexcept {
    // The last group starting at or before i that holds it (empty groups
    // before it share its start).
    const size_t g = size_t(std::upper_bound(group_start_.begin(), group_start_.end() - 1, uint32_t(i)) -
                            group_start_.begin()) - 1;
    return pos(uint32_t(g), uint32_t(i - group_start_[g]));
}

TokenIndex::Pos TokenIndex::last_before_group(size_t g) const noexcept {
    for (size_t k = 0; k < groups(); ++k) {
        g = g ? g - 1 : groups() - 1;
        if (group_size(g)) return pos(uint32_t(g), group_size(g) - 1);
    }
    return kNoPos;  // no token: excluded by the caller
}

uint64_t TokenIndex::token_value(Pos p) const noexcept {
    // The token's bucket is the last b of its group whose start is <= its
    // offset (empty buckets before it share its start): starts grow, so
    // it is the number of the group's later bucket starts at or before
    // the offset, a count of 64 bytes compared at once.
    const uint32_t g = group_of(p), off = offset_of(p);
    const size_t buckets_per_group = size_t(1) << group_shift_;
    const BucketOffset *start = &bucket_offset_[offset_index(uint64_t(g) << group_shift_)];
    uint32_t k = 0;
#if defined(__SSE2__)
    if (buckets_per_group == 64) {  // start <= off where max(start, off) == off
        const __m128i o = _mm_set1_epi8(char(off));
        uint64_t at_or_before = 0;
        for (int i = 0; i < 4; ++i) {
            const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(start) + i);
            at_or_before |= uint64_t(uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(x, o), o)))) << (16 * i);
        }
        // The bits set are a prefix, start[0] = 0 among them: its length
        // less one (no popcount: not in baseline x86-64).
        k = uint32_t(~at_or_before ? trailing_zeros(~at_or_before) : 64) - 1;
    } else
#endif
    {
        for (size_t i = 1; i < buckets_per_group; ++i) k += start[i] <= off;
    }
    return ((uint64_t(g) << group_shift_) + k) << prefix_shift_ | rest_of(g, off) >> prefix_bits_;
}

uint32_t TokenIndex::exact_position(uint64_t b, uint64_t rest) const noexcept {
    // Binary search: the bucket may hold every token (a constant hasher).
    const size_t g = size_t(b >> group_shift_);
    uint32_t first = bucket_offset(b), n = bucket_end(b) - first;
    while (n > 0) {
        const uint32_t half = n / 2;
        if (rest_of(g, first + half) < rest) {
            first += half + 1;
            n -= half + 1;
        } else {
            n = half;
        }
    }
    return first;
}

size_t TokenIndex::index_bytes() const noexcept {
    size_t bytes = array_bytes();
    for (const uint32_t *c : chunks_) bytes += chunk_footprint(c);
    return bytes;
}

size_t TokenIndex::bytes_not_in(const TokenIndex &other) const noexcept {
    size_t bytes = array_bytes();
    for (size_t c = 0; c < chunks_.size(); ++c)
        if (c >= other.chunks_.size() || other.chunks_[c] != chunks_[c]) bytes += chunk_footprint(chunks_[c]);
    return bytes;
}

TokenIndex::Writer::Writer(TokenIndex &index, size_t T, size_t slots, HugeArray<Token> spare, void *records)
    : index_(index), T_(T) {
    // Owner field: O bits for the slots. Prefix index on the top P bits
    // of a hash: 1.5-3 tokens per bucket (the largest P with 2^P <=
    // T / 1.5), so a bucket overflows the 8-record window with
    // probability below 0.4% and locate() reads two index entries and
    // one window. From kCoarseTokens up, 3-6 (2^P <= T / 3): the prefix
    // index is half the size, and one that no longer fits the caches costs
    // more than the second window compare of the 1-15% of buckets over
    // eight tokens (tests/bench/HISTORY.md, "Coarse buckets for big
    // rings"). P >= O keeps the cold part within 32 bits (it only matters
    // for rings of mostly weight-0 members).
    unsigned owner_bits = 1;
    while ((size_t(1) << owner_bits) < slots) ++owner_bits;  // <= 20: CHR_NODES_MAX is 2^20
    const bool coarse = T >= kCoarseTokens;
    const size_t per_bucket_x2 = coarse ? 6 : 3;  // the band's lower end, doubled
    unsigned bits = 1;
    while (bits < 24 && (per_bucket_x2 << bits) <= T) ++bits;  // per_bucket * 2^(bits + 1) <= T
    bits = std::max(bits, owner_bits);
    auto lineage = std::make_shared<Lineage>();  // a build starts a lineage of its own
    TokenIndex &s = index_;
    s.clear();
    s.lineage_ = std::move(lineage);
    s.tokens_ = T;
    s.coarse_ = coarse;
    s.owner_bits_ = owner_bits;
    s.owner_mask_ = (uint32_t(1) << owner_bits) - 1;
    s.prefix_bits_ = bits;
    s.prefix_shift_ = 64 - bits;
    s.key_shift_ = 32 - bits;
    hot_bits_ = 32 - owner_bits;
    bits_ = bits;
    shift_ = 64 - bits;
    owner_mask_ = s.owner_mask_;
    // On huge pages (HugeArray) where the kernel offers them: at 16M
    // tokens these buffers are 200 MB, and 4 KiB page faults cost more
    // than filling them.
    start_vec_.assign((size_t(1) << bits) + 1, 0);
    const size_t record_tokens = (2 * T + 3) / 4;  // 2T words, in Token units
    if (!records) {
        records_ = spare.size() >= record_tokens ? std::move(spare) : HugeArray<Token>(record_tokens);
        records = records_.data();
    }
    start_ = start_vec_.data();
    rec_ = static_cast<uint32_t *>(records);
}

// start_ counted tokens per bucket; summed, start[b] = the first token of
// bucket b (a histogram and a prefix sum: no data-dependent branch, 5x
// faster than walking tokens and buckets together). Then split into the
// two-level index, with the widest groups (at most 64 buckets) whose
// tokens, end included, fit a byte's offsets; with one bucket a group, a
// bigger bucket's size is capped (and takes the exact path). Last, the
// records are copied into chunks of 2^C groups.
void TokenIndex::Writer::finish() {
    TokenIndex &s = index_;
    const size_t buckets = size_t(1) << s.prefix_bits_;
    HugeArray<uint32_t> &start = start_vec_;
    for (size_t b = 1; b <= buckets; ++b) start[b] += start[b - 1];
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
        s.bucket_offset_[s.offset_index(b)] = BucketOffset(std::min(start[b] - s.group_start_[b >> g], kMaxOffset));
    for (size_t G = 0; G < groups; ++G)  // each group's end, after its last bucket
        s.bucket_offset_[((G + 1) << g) + G] =
            BucketOffset(std::min<uint32_t>(start[(G + 1) << g] - s.group_start_[G], kMaxOffset));

    // One group a chunk while the chunk pointers an update copies stay
    // in cache (up to ~2M tokens); beyond, 2^C groups with
    // C = log2(T) - 20 (tests/bench/HISTORY.md, "Scale").
    unsigned group_bits = s.prefix_bits_ - g, t_bits = 0;
    while (t_bits < 63 && (size_t(1) << (t_bits + 1)) <= T_) ++t_bits;
    s.chunk_shift_ = std::min(group_bits, t_bits > 20 ? std::min(t_bits - 20, 4u) : 0u);
    const size_t chunks = groups >> s.chunk_shift_;
    const unsigned cold_shift = s.prefix_bits_ - s.owner_bits_;
    s.hot_of_group_.resize(groups);
    s.chunks_.resize(chunks);  // null until made: clear() skips them
    // Every hot block, then every cold one: from a fresh heap or slab each
    // kind lies together.
    try {
        for (size_t c = 0; c < chunks; ++c) {
            const uint32_t first = s.group_start_[c << s.chunk_shift_];
            const uint32_t n = s.group_start_[(c + 1) << s.chunk_shift_] - first;
            uint32_t *base = new_chunk(n, cold_shift, s.build_source(), false);
            s.chunks_[c] = base;
            copy_hot_words(rec_ + 2 * size_t(first), n, base);
            for (size_t G = c << s.chunk_shift_; G < (c + 1) << s.chunk_shift_; ++G)
                s.hot_of_group_[G] = base + (s.group_start_[G] - first);
        }
        for (size_t c = 0; c < chunks; ++c) {
            const uint32_t first = s.group_start_[c << s.chunk_shift_];
            pack_cold_words(rec_ + 2 * size_t(first), header_of(s.chunks_[c])->n, cold_shift, make_cold(s.chunks_[c]));
        }
    } catch (...) {
        s.clear();
        throw;
    }
    for (size_t c = 0; c < chunks; ++c) s.set_pads(c);
    start_vec_ = {};
    records_.clear();
}

namespace {

// ORs bits [from, from + n) of the packed stream `src` into `dst` at bit
// `to`, whose bits from there on are still zero (a new chunk's cold part is
// zeroed, and runs are written in order): a run of kept cold words, whose
// bit offset moves with the changes before it. Once `to` reaches a 32-bit
// boundary, each output word is one unaligned load of `src` shifted by a
// shift that stays the same for the whole run, with no read of `dst` (ORing
// 8 bytes into `dst` a step loaded bytes the previous step had just stored
// at another offset, which store forwarding cannot serve: it stalled every
// step). Reads 8 bytes at a time within the streams' 8 bytes of slack
// (cold_bytes()).
void copy_cold_bits(const unsigned char *src, size_t from, unsigned char *dst, size_t to, size_t n) noexcept {
    auto bits_at = [src](size_t bit) {
        uint64_t in;
        std::memcpy(&in, src + bit / 8, sizeof in);
        return in >> (bit % 8);  // at least 56 bits
    };
    auto low_bits = [](uint64_t x, size_t k) { return uint32_t(x & ((uint64_t(1) << k) - 1)); };
    // Up to dst's next 32-bit word: ORed into the word the bits share.
    const size_t head = std::min<size_t>(n, (32 - to % 32) % 32);
    if (head) {
        unsigned char *at = dst + to / 32 * 4;
        uint32_t word;
        std::memcpy(&word, at, sizeof word);
        word |= low_bits(bits_at(from), head) << (to % 32);
        std::memcpy(at, &word, sizeof word);
        from += head;
        to += head;
        n -= head;
    }
    unsigned char *out = dst + to / 8;
    const unsigned char *in = src + from / 8;
    const unsigned shift = unsigned(from % 8);
    const size_t words = n / 32;
    size_t k = 0;
#if defined(__SSE2__)
    // Four words a step: each 64-bit lane is its 8 bytes shifted down, ORed
    // with the next 8 shifted up (by 64 when shift is 0: zero, as SSE2
    // defines it). The second load ends at most 8 bytes past the bits read.
    const __m128i down = _mm_cvtsi32_si128(int(shift)), up = _mm_cvtsi32_si128(int(64 - shift));
    for (; k + 4 <= words; k += 4) {
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + 4 * k));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + 4 * k + 8));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + 4 * k),
                         _mm_or_si128(_mm_srl_epi64(lo, down), _mm_sll_epi64(hi, up)));
    }
#endif
    for (; k < words; ++k) {
        uint64_t x;
        std::memcpy(&x, in + 4 * k, sizeof x);
        const uint32_t word = uint32_t(x >> shift);
        std::memcpy(out + 4 * k, &word, sizeof word);
    }
    if (const size_t rest = n % 32) {  // the bits past it stay zero
        const uint32_t word = low_bits(bits_at(from + 32 * words), rest);
        std::memcpy(out + 4 * words, &word, sizeof word);
    }
}

}  // namespace

// One apply()'s state, handed from phase to phase: the base and the change,
// the index being made, the base's layout (which `out` keeps), and what
// rewriting the chunks found that the later phases need.
class TokenIndex::Updater::Pass {
public:
    Pass(const TokenIndex &base, const Change &change, TokenIndex &out, const std::vector<uint32_t> &dirty,
         std::vector<u128> &arc_delta);

    // The chunks holding a dropped or a fresh token, sorted: the ones an
    // update rewrites. First, since the caller is told them whether or
    // not the update goes ahead.
    static void find_dirty_chunks(const TokenIndex &base, const Change &change, std::vector<uint32_t> &dirty);
    // Makes `out` the base's copy with its dirty chunks missing: the same
    // layout and per-group arrays, the kept chunks shared. A rewritten
    // chunk is null until its copy is made, so that clearing `out` on
    // failure frees only what the update made. False if the base is not
    // its lineage's newest index (a full build then).
    static bool share_base(const TokenIndex &base, const std::vector<uint32_t> &dirty, TokenIndex &out);

    bool rewrite_chunk(uint32_t c);
    bool count_tokens();
    void arcs_across_chunks();
    void repad_chunks();

private:
    struct Insert {
        uint32_t group, at;  // before base record `at` of the group
    };
    struct Drop {
        Pos at;           // a base record that goes
        uint32_t bucket;  // its bucket in its group
        bool operator<(const Drop &o) const noexcept { return at < o.at; }
        bool operator==(const Drop &o) const noexcept { return at == o.at; }
    };
    class ChunkArcs;

    void place_fresh(const Token *first, const Token *end);
    void find_drops(uint32_t c);
    bool merge(uint32_t c, const Token *fc);
    void shift_bucket_offsets(size_t g, const Token *fresh, size_t n_fresh, const Drop *dropped, size_t n_dropped,
                              uint32_t size) noexcept;
    bool pred_kept(size_t c) const noexcept;

    const TokenIndex &base_;
    const Change &change_;
    TokenIndex &out_;
    const std::vector<uint32_t> &dirty_;
    std::vector<u128> &arc_delta_;
    // The base's layout: C and the group shift, a hash's chunk, the bits
    // of a record.
    const unsigned C_, gs_, chunk_of_hash_shift_, P_, hot_bits_, cold_shift_;
    const uint32_t mask_;
    const size_t chunks_, groups_, groups_per_chunk_, buckets_per_group_;
    const size_t cold_bits_;  // a packed cold word's width
    std::vector<uint8_t> is_dirty_;
    std::vector<uint32_t> new_size_;  // per group: its size in `out`, UINT32_MAX if as it was
    // The dropped values, sorted, and cursors over them and the fresh
    // tokens: each rewritten chunk, in order, takes those it holds.
    std::vector<uint64_t> gone_;
    const Token *f_, *f_end_;
    const uint64_t *d_, *d_end_;
    // The chunk being rewritten: where its fresh tokens go (in order), and
    // its dropped records (in order).
    std::vector<Insert> inserts_;
    std::vector<Drop> drops_;
    // Per rewritten chunk: whether its first record is the base's, whose
    // arc changes only if its predecessor (outside the chunk) did; whether
    // its last record is the base's, kept, so the token after it keeps its
    // predecessor.
    std::vector<uint8_t> head_kept_, tail_kept_;
    int64_t tokens_;  // out's token count, as the chunks are rewritten
};

TokenIndex::Updater::Pass::Pass(const TokenIndex &base, const Change &change, TokenIndex &out,
                                const std::vector<uint32_t> &dirty, std::vector<u128> &arc_delta)
    : base_(base), change_(change), out_(out), dirty_(dirty), arc_delta_(arc_delta), C_(base.chunk_shift_),
      gs_(base.group_shift_), chunk_of_hash_shift_(base.group_of_hash_shift_ + base.chunk_shift_),
      P_(base.prefix_bits_), hot_bits_(32 - base.owner_bits_), cold_shift_(base.prefix_bits_ - base.owner_bits_),
      mask_(base.owner_mask_), chunks_(base.chunks_.size()), groups_(base.groups()),
      groups_per_chunk_(size_t(1) << base.chunk_shift_), buckets_per_group_(size_t(1) << base.group_shift_),
      cold_bits_(32 - cold_shift_), is_dirty_(chunks_, 0), new_size_(groups_, UINT32_MAX),
      gone_(change.dropped_values), f_(change.fresh.data()), f_end_(f_ + change.fresh.size()),
      head_kept_(chunks_, 0), tail_kept_(chunks_, 0), tokens_(int64_t(base.tokens_)) {
    for (uint32_t c : dirty) is_dirty_[c] = 1;
    arc_delta.assign(change.rank.size(), 0);
    std::sort(gone_.begin(), gone_.end());
    d_ = gone_.data();
    d_end_ = d_ + gone_.size();
}

void TokenIndex::Updater::Pass::find_dirty_chunks(const TokenIndex &base, const Change &change,
                                                  std::vector<uint32_t> &dirty) {
    const unsigned chunk_of_hash_shift = base.group_of_hash_shift_ + base.chunk_shift_;
    dirty.clear();
    dirty.reserve(change.dropped_values.size() + change.fresh.size());
    for (uint64_t v : change.dropped_values) dirty.push_back(uint32_t(v >> chunk_of_hash_shift));
    for (const Token &t : change.fresh) dirty.push_back(uint32_t(t.value >> chunk_of_hash_shift));
    std::sort(dirty.begin(), dirty.end());
    dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
}

bool TokenIndex::Updater::Pass::share_base(const TokenIndex &base, const std::vector<uint32_t> &dirty,
                                           TokenIndex &out) {
    out.clear();
    if (!out.share_from(base)) return false;
    out.tokens_ = base.tokens_;
    out.chunk_shift_ = base.chunk_shift_;
    out.group_shift_ = base.group_shift_;
    out.group_of_hash_shift_ = base.group_of_hash_shift_;
    out.prefix_bits_ = base.prefix_bits_;
    out.coarse_ = base.coarse_;
    out.prefix_shift_ = base.prefix_shift_;
    out.key_shift_ = base.key_shift_;
    out.owner_bits_ = base.owner_bits_;
    out.owner_mask_ = base.owner_mask_;
    out.hot_of_group_ = base.hot_of_group_;
    out.bucket_offset_ = base.bucket_offset_;
    out.group_start_.resize(base.group_start_.size());
    out.chunks_ = base.chunks_;
    for (uint32_t c : dirty) out.chunks_[c] = nullptr;
    return true;
}

// Rewrites chunk c, the next dirty one, into a chunk of `out`: the fresh
// tokens and dropped records it holds found in the base, then merged with
// the kept records. False if a group would exceed kMaxOffset tokens.
bool TokenIndex::Updater::Pass::rewrite_chunk(uint32_t c) {
    const Token *fc = f_;
    while (f_ != f_end_ && (f_->value >> chunk_of_hash_shift_) == c) ++f_;
    place_fresh(fc, f_);
    find_drops(c);
    return merge(c, fc);
}

// Where each fresh token of the chunk goes: before the first kept record
// of its bucket that it precedes (a dropped one's rank means nothing). The
// merge then copies the kept records between these places in runs, as
// they are encoded, with no compare per record.
void TokenIndex::Updater::Pass::place_fresh(const Token *first, const Token *end) {
    inserts_.clear();
    for (const Token *t = first; t != end; ++t) {
        const uint64_t b = t->value >> base_.prefix_shift_;
        const uint32_t g = uint32_t(b >> gs_), end_of_bucket = base_.bucket_end(b);
        const uint64_t rest = t->value << P_;
        const uint32_t *hot = base_.hot_of_group_[g];
        uint32_t at = base_.bucket_offset(b);
        for (; at < end_of_bucket; ++at) {
            const uint32_t slot = hot[at] & mask_;
            if (change_.dropped[slot]) continue;
            const uint64_t r = base_.rest_of(g, at);
            if (rest < r || (rest == r && change_.rank[t->owner] < change_.rank[slot])) break;
        }
        inserts_.push_back({g, at});
    }
}

// The chunk's dropped records, found from their values, each once and in
// order (two dropped tokens of one value list it twice, and each search
// finds both records).
void TokenIndex::Updater::Pass::find_drops(uint32_t c) {
    drops_.clear();
    for (; d_ != d_end_ && (*d_ >> chunk_of_hash_shift_) == c; ++d_) {
        const uint64_t b = *d_ >> base_.prefix_shift_;
        const uint32_t g = uint32_t(b >> gs_), end = base_.bucket_end(b);
        const uint32_t *hot = base_.hot_of_group_[g];
        for (uint32_t i = base_.bucket_offset(b); i < end; ++i)
            if (change_.dropped[hot[i] & mask_] && base_.rest_of(g, i) == *d_ << P_)
                drops_.push_back({pos(g, i), uint32_t(b & (buckets_per_group_ - 1))});
    }
    std::sort(drops_.begin(), drops_.end());
    drops_.erase(std::unique(drops_.begin(), drops_.end()), drops_.end());
}

// The arcs a chunk's merge changes inside the chunk, kept as it writes.
// The last record written and the last base record passed are the next
// kept record's new and old predecessors; when they differ (a change
// between them) its arc changes. Before the chunk's first record, the old
// one is outside the chunk, and the new arc of that first record is left
// to arcs_across_chunks() (its new predecessor may be in a chunk not yet
// rewritten). Only fresh tokens between two kept records (no drop): the
// second one's arc shrinks by exactly what the fresh ones took, with no
// need to decode its value.
class TokenIndex::Updater::Pass::ChunkArcs {
public:
    ChunkArcs(const TokenIndex &base, size_t g0, std::vector<u128> &arc_delta) noexcept
        : base_(base), g0_(g0), arc_delta_(arc_delta) {}

    // Kept records, the first at `first` of slot `slot`, the last at
    // `last`, written next: the first one's arc, if its predecessor changed.
    void kept(Pos first, uint32_t slot, Pos last) noexcept {
        if (!written_ && same_) {
            head_kept_ = true;
        } else if (!same_) {
            if (written_ && !dropped_since_) {  // new_pred() is the last fresh value
                arc_delta_[slot] -= u128(uint64_t(fresh_value_ - old_pred()));
            } else {
                const uint64_t v = base_.token_value(first);
                if (!written_) arc_delta_[slot] -= u128(v - old_pred());
                else arc_delta_[slot] += u128(v - new_pred()) - u128(v - old_pred());
            }
        }
        last_written_ = last_passed_ = last;
        written_ = same_ = true;
        fresh_last_ = dropped_since_ = false;
    }
    // A fresh token written next: its arc, from the record before it in
    // the chunk (if any).
    void fresh(const Token &t) noexcept {
        if (written_) arc_delta_[t.owner] += u128(t.value - new_pred());
        written_ = fresh_last_ = true;
        same_ = false;
        fresh_value_ = t.value;
    }
    // The base record at p, dropped.
    void dropped(Pos p) noexcept {
        last_passed_ = p;
        same_ = false;
        dropped_since_ = true;
    }
    // Whether the chunk's first record is the base's; its last.
    bool head_kept() const noexcept { return head_kept_; }
    bool tail_kept() const noexcept { return written_ && same_; }

private:
    // The record a run ends on is the next fresh token's predecessor and
    // then the next kept record's old one: decoded once.
    uint64_t value_at(Pos p) noexcept {
        if (p != decoded_) {
            decoded_ = p;
            decoded_value_ = base_.token_value(p);
        }
        return decoded_value_;
    }
    uint64_t old_pred() noexcept { return value_at(last_passed_ != kNoPos ? last_passed_ : base_.last_before_group(g0_)); }
    uint64_t new_pred() noexcept { return fresh_last_ ? fresh_value_ : value_at(last_written_); }

    const TokenIndex &base_;
    const size_t g0_;  // the chunk's first group
    std::vector<u128> &arc_delta_;
    bool written_ = false, same_ = true, fresh_last_ = false, dropped_since_ = false, head_kept_ = false;
    uint64_t fresh_value_ = 0;
    Pos last_written_ = kNoPos, last_passed_ = kNoPos;
    Pos decoded_ = kNoPos;
    uint64_t decoded_value_ = 0;
};

// Writes chunk c's new records: the base's copied in runs between its
// change points (each fresh token's place, each dropped record), as they
// are encoded, the fresh ones encoded between them. No token is decoded
// but those next to a change, whose arcs it alters (ChunkArcs). Each
// group's size goes to new_size_, and a changed group's bucket offsets
// are rebuilt. False if a group would exceed kMaxOffset tokens.
bool TokenIndex::Updater::Pass::merge(uint32_t c, const Token *fc) {
    const size_t g0 = size_t(c) << C_, g1 = g0 + groups_per_chunk_;
    const uint32_t mask = mask_;
    const unsigned P = P_, hot_bits = hot_bits_, cold_shift = cold_shift_;
    const size_t cold_bits = cold_bits_;
    const uint32_t base_n = base_.group_start_[g1] - base_.group_start_[g0];
    const size_t n_new = base_n + inserts_.size() - drops_.size();
    uint32_t *chunk = new_chunk(uint32_t(n_new), cold_shift, out_.update_source());
    out_.chunks_[c] = chunk;
    uint32_t *hot_out = chunk;
    unsigned char *cold_out = const_cast<unsigned char *>(cold_of_chunk(chunk));
    const unsigned char *cold_in = cold_of_chunk(base_.chunks_[c]);
    tokens_ += int64_t(n_new) - int64_t(base_n);

    ChunkArcs arcs(base_, g0, arc_delta_);
    size_t ins = 0, drp = 0, count = 0;
    for (size_t g = g0; g < g1; ++g) {
        const uint32_t n = base_.group_size(g);
        const uint32_t *hot = base_.hot_of_group_[g];
        const size_t cold_first = base_.chunk_index_of_group(g);  // the group's first cold word
        const size_t group_begin = count, ins_begin = ins, drp_begin = drp;
        out_.hot_of_group_[g] = chunk + group_begin;
        uint32_t next = 0;  // the group's next base record
        auto copy_to = [&](uint32_t to) {  // the kept records [next, to)
            if (next == to) return;
            arcs.kept(pos(uint32_t(g), next), hot[next] & mask, pos(uint32_t(g), to - 1));
            std::copy(hot + next, hot + to, hot_out + count);
            copy_cold_bits(cold_in, (cold_first + next) * cold_bits, cold_out, count * cold_bits,
                           size_t(to - next) * cold_bits);
            count += to - next;
            next = to;
        };
        for (;;) {
            const bool inserting = ins < inserts_.size() && inserts_[ins].group == g;
            const bool dropping = drp < drops_.size() && group_of(drops_[drp].at) == g;
            if (!inserting && !dropping) break;
            if (inserting && (!dropping || inserts_[ins].at <= offset_of(drops_[drp].at))) {
                copy_to(inserts_[ins].at);
                const Token &t = fc[ins++];
                arcs.fresh(t);
                uint32_t word;
                encode(t.value, t.owner, P, mask, hot_bits, hot_out[count], word);
                put_cold_word(cold_out, count, cold_shift, word);
                ++count;
            } else {
                const uint32_t at = offset_of(drops_[drp++].at);
                copy_to(at);
                arcs.dropped(pos(uint32_t(g), at));
                next = at + 1;
            }
        }
        copy_to(n);
        const uint32_t size = uint32_t(count - group_begin);
        new_size_[g] = size;
        if (size > kMaxOffset) return false;
        if (ins == ins_begin && drp == drp_begin) continue;  // its offsets as they were
        shift_bucket_offsets(g, fc + ins_begin, ins - ins_begin, drops_.data() + drp_begin, drp - drp_begin, size);
    }
    head_kept_[c] = arcs.head_kept();
    tail_kept_[c] = arcs.tail_kept();
    return true;
}

// A changed group's bucket offsets, from the base's: a bucket starts past
// the fresh tokens of the buckets before it, less the dropped records
// before its start (the sums fit a byte: the group has at most 255
// records), and the group ends at its new size.
inline void TokenIndex::Updater::Pass::shift_bucket_offsets(size_t g, const Token *fresh, size_t n_fresh,
                                                            const Drop *dropped, size_t n_dropped,
                                                            uint32_t size) noexcept {
    const uint64_t b0 = uint64_t(g) << gs_;
    const BucketOffset *was = &base_.bucket_offset_[base_.offset_index(b0)];
    BucketOffset *now = &out_.bucket_offset_[out_.offset_index(b0)];
    const unsigned prefix_shift = base_.prefix_shift_;
    auto fresh_bucket = [&](size_t j) { return uint32_t((fresh[j].value >> prefix_shift) - b0); };
#if defined(__SSE2__)
    if (buckets_per_group_ == 64) {
        // Per change, the lanes past its bucket move by one: a compare a
        // 16-bucket block, no loop over buckets.
        const __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        __m128i moved[4] = {};
        auto past = [&](uint32_t k, int q) {  // all ones in the lanes of block q past bucket k
            return _mm_cmpgt_epi8(_mm_add_epi8(lanes, _mm_set1_epi8(char(16 * q))), _mm_set1_epi8(char(k)));
        };
        for (size_t j = 0; j < n_fresh; ++j)
            for (int q = 0; q < 4; ++q) moved[q] = _mm_sub_epi8(moved[q], past(fresh_bucket(j), q));
        for (size_t k = 0; k < n_dropped; ++k)
            for (int q = 0; q < 4; ++q) moved[q] = _mm_add_epi8(moved[q], past(dropped[k].bucket, q));
        for (int q = 0; q < 4; ++q) {
            const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i *>(was) + q);
            _mm_storeu_si128(reinterpret_cast<__m128i *>(now) + q, _mm_add_epi8(w, moved[q]));
        }
    } else
#endif
    {  // counted per bucket, then summed
        int16_t moved[(size_t(1) << kMaxGroupShift) + 1] = {};
        for (size_t j = 0; j < n_fresh; ++j) ++moved[fresh_bucket(j) + 1];
        for (size_t k = 0; k < n_dropped; ++k) --moved[dropped[k].bucket + 1];
        int shift = 0;
        for (size_t i = 1; i < buckets_per_group_; ++i) {
            shift += moved[i];
            now[i] = BucketOffset(int(was[i]) + shift);
        }
    }
    now[buckets_per_group_] = BucketOffset(size);
}

// After the last rewrite: `out`'s token count and each group's first
// token's rank, the rewritten groups at their new sizes. False if no
// token is left (a full build then).
bool TokenIndex::Updater::Pass::count_tokens() {
    if (tokens_ <= 0) return false;
    out_.tokens_ = size_t(tokens_);
    out_.group_start_[0] = 0;
    for (size_t g = 0; g < groups_; ++g)
        out_.group_start_[g + 1] =
            out_.group_start_[g] + (new_size_[g] != UINT32_MAX ? new_size_[g] : base_.group_size(g));
    return true;
}

// Whether the token before chunk c is the same in base and out (no
// decoding): the chunk before has tokens and is shared, or was rewritten
// with its last record kept.
inline bool TokenIndex::Updater::Pass::pred_kept(size_t c) const noexcept {
    const size_t prev = (c ? c : chunks_) - 1;
    const bool has_tokens =
        out_.group_start_[std::min((prev + 1) << C_, groups_)] != out_.group_start_[prev << C_];
    return has_tokens && (!is_dirty_[prev] || tail_kept_[prev]);
}

// The arcs the merge left out, whose predecessor is in another chunk: each
// rewritten chunk's first new token, and the first token after a
// rewritten chunk when it is in a chunk left as it was (its predecessor
// may have changed). Needs every chunk rewritten and the group starts.
void TokenIndex::Updater::Pass::arcs_across_chunks() {
    std::vector<Pos> followers;
    for (uint32_t c : dirty_) {
        const size_t g0 = size_t(c) << C_;
        const Pos first = out_.first_from_group(g0);
        if (out_.group_of(first) >> C_ == c && !(head_kept_[c] && pred_kept(c))) {  // tokens, maybe a new arc
            const uint64_t pred = out_.token_value(out_.last_before_group(g0));
            if (!head_kept_[c]) {
                arc_delta_[out_.slot_at(first)] += u128(out_.token_value(first) - pred);
            } else {
                const uint64_t old = base_.token_value(base_.last_before_group(g0));
                if (old != pred) {
                    const uint64_t v = out_.token_value(first);
                    arc_delta_[out_.slot_at(first)] += u128(v - pred) - u128(v - old);
                }
            }
        }
        const size_t next = (size_t(c) + 1) % chunks_;
        if (is_dirty_[next]) continue;
        const Pos after = out_.first_from_group((next << C_) % groups_);
        const size_t after_chunk = out_.group_of(after) >> C_;
        if (is_dirty_[after_chunk] || (after_chunk == next && pred_kept(next))) continue;
        followers.push_back(after);  // once, though several chunks may precede it
    }
    std::sort(followers.begin(), followers.end());
    followers.erase(std::unique(followers.begin(), followers.end()), followers.end());
    for (Pos p : followers) {
        const size_t g = out_.group_of(p);
        const uint64_t base_pred = base_.token_value(base_.last_before_group(g));
        const uint64_t new_pred = out_.token_value(out_.last_before_group(g));
        if (new_pred == base_pred) continue;
        const uint64_t v = out_.token_value(p);
        arc_delta_[out_.slot_at(p)] += u128(v - new_pred) - u128(v - base_pred);
    }
}

// The pad records: each rewritten chunk's own, and any chunk before one
// whose pads now name another owner (back over empty chunks to the first
// with tokens), copied first if shared. A chunk whose first record was
// kept leaves those pads as they were. Needs the group starts.
void TokenIndex::Updater::Pass::repad_chunks() {
    for (uint32_t c : dirty_) out_.set_pads(c);
    for (uint32_t c : dirty_) {
        if (head_kept_[c]) continue;
        size_t q = c;
        for (size_t steps = 0; steps < chunks_; ++steps) {
            q = q ? q - 1 : chunks_ - 1;
            if (is_dirty_[q]) break;
            const uint32_t *old = out_.chunks_[q];
            const uint32_t n = header_of(old)->n;
            if (old[n] != out_.pad_record(out_.slot_after_chunk(q))) {
                const unsigned cold_shift = header_of(old)->cold_shift;
                uint32_t *copy = new_chunk(n, cold_shift, out_.update_source());
                std::memcpy(copy, old, (size_t(n) + kWindow) * sizeof(uint32_t));
                std::memcpy(header_of(copy)->cold, cold_of_chunk(old), cold_bytes(n, cold_shift));
                for (size_t g = q << C_; g < (q + 1) << C_; ++g)
                    out_.hot_of_group_[g] = copy + (out_.hot_of_group_[g] - old);
                out_.chunks_[q] = copy;
                if (!base_.holds(q, old)) free_chunk(old);  // else the base's, as it was
                out_.set_pads(q);
            }
            if (n) break;
        }
    }
}

// The phases in order; each phase's comment says why it exists. Any
// failure clears `out`, which frees only the chunks the update made.
bool TokenIndex::Updater::apply(const TokenIndex &base, const Change &change, TokenIndex &out,
                                std::vector<uint32_t> &dirty, std::vector<u128> &arc_delta) {
    Pass::find_dirty_chunks(base, change, dirty);
    if (base.tokens_ == 0 || base.chunks_.size() < 2) return false;
    if (!Pass::share_base(base, dirty, out)) return false;
    try {
        Pass pass(base, change, out, dirty, arc_delta);
        for (uint32_t c : dirty)
            if (!pass.rewrite_chunk(c)) {
                out.clear();
                return false;
            }
        if (!pass.count_tokens()) {
            out.clear();
            return false;
        }
        pass.arcs_across_chunks();
        pass.repad_chunks();
    } catch (...) {
        out.clear();
        throw;
    }
    return true;
}

}  // namespace chring
