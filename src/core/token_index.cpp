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

bool TokenIndex::Updater::apply(const TokenIndex &base, const Change &change, TokenIndex &out,
                                std::vector<uint32_t> &dirty, std::vector<u128> &arc_delta) {
    const unsigned chunk_of_hash_shift = base.group_of_hash_shift_ + base.chunk_shift_;
    const size_t chunks = base.chunks_.size();
    dirty.clear();
    dirty.reserve(change.dropped_values.size() + change.fresh.size());
    for (uint64_t v : change.dropped_values) dirty.push_back(uint32_t(v >> chunk_of_hash_shift));
    for (const Token &t : change.fresh) dirty.push_back(uint32_t(t.value >> chunk_of_hash_shift));
    std::sort(dirty.begin(), dirty.end());
    dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
    if (base.tokens_ == 0 || chunks < 2) return false;

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
    // The chunks kept are shared; a rewritten one is null until its copy is
    // made (so that clearing `out` on failure frees only what it made).
    std::vector<uint8_t> is_dirty(chunks, 0);
    for (uint32_t c : dirty) is_dirty[c] = 1;
    out.chunks_ = base.chunks_;
    for (uint32_t c : dirty) out.chunks_[c] = nullptr;

    const unsigned gs = base.group_shift_, C = base.chunk_shift_;
    const size_t groups_per_chunk = size_t(1) << C, buckets_per_group = size_t(1) << gs;
    std::vector<uint32_t> new_size(base.groups(), UINT32_MAX);
    std::vector<Pos> followers;
    arc_delta.assign(change.rank.size(), 0);
    // A rewritten chunk is the base's records copied in runs between its
    // change points (each fresh token's insertion point, each dropped
    // record), as they are encoded: no token is decoded but those next to
    // a change, whose arcs it alters.
    const uint32_t mask = base.owner_mask_;
    const unsigned P = base.prefix_bits_, hot_bits = 32 - base.owner_bits_, cold_shift = P - base.owner_bits_;
    const size_t cold_bits = 32 - cold_shift;  // a packed cold word's width
    std::vector<uint64_t> gone(change.dropped_values);
    std::sort(gone.begin(), gone.end());
    struct Insert {
        uint32_t group, at;  // before base record `at` of the group
    };
    std::vector<Insert> inserts;
    struct Drop {
        Pos at;           // a base record that goes
        uint32_t bucket;  // its bucket in its group
        bool operator<(const Drop &o) const noexcept { return at < o.at; }
        bool operator==(const Drop &o) const noexcept { return at == o.at; }
    };
    std::vector<Drop> drops;  // in order
    // Per rewritten chunk: whether its first record is the base's, whose
    // arc changes only if its predecessor (outside the chunk) did; whether
    // its last record is the base's, kept, so the token after it keeps its
    // predecessor.
    std::vector<uint8_t> head_kept(chunks, 0), tail_kept(chunks, 0);
    const Token *f = change.fresh.data(), *f_end = f + change.fresh.size();
    const uint64_t *d = gone.data(), *d_end = d + gone.size();
    int64_t tokens = int64_t(base.tokens_);
    try {
        for (uint32_t c : dirty) {
            const size_t g0 = size_t(c) << C, g1 = g0 + groups_per_chunk;
            const Token *fc = f;
            while (f != f_end && (f->value >> chunk_of_hash_shift) == c) ++f;
            // Where each fresh token goes: before the first kept record of
            // its bucket that it precedes (a dropped one's rank means nothing).
            inserts.clear();
            for (const Token *t = fc; t != f; ++t) {
                const uint64_t b = t->value >> base.prefix_shift_;
                const uint32_t g = uint32_t(b >> gs), end = base.bucket_end(b);
                const uint64_t rest = t->value << P;
                const uint32_t *hot = base.hot_of_group_[g];
                uint32_t at = base.bucket_offset(b);
                for (; at < end; ++at) {
                    const uint32_t slot = hot[at] & mask;
                    if (change.dropped[slot]) continue;
                    const uint64_t r = base.rest_of(g, at);
                    if (rest < r || (rest == r && change.rank[t->owner] < change.rank[slot])) break;
                }
                inserts.push_back({g, at});
            }
            // The dropped records, found from their values.
            drops.clear();
            for (; d != d_end && (*d >> chunk_of_hash_shift) == c; ++d) {
                const uint64_t b = *d >> base.prefix_shift_;
                const uint32_t g = uint32_t(b >> gs), end = base.bucket_end(b);
                const uint32_t *hot = base.hot_of_group_[g];
                for (uint32_t i = base.bucket_offset(b); i < end; ++i)
                    if (change.dropped[hot[i] & mask] && base.rest_of(g, i) == *d << P)
                        drops.push_back({pos(g, i), uint32_t(b & (buckets_per_group - 1))});
            }
            std::sort(drops.begin(), drops.end());
            drops.erase(std::unique(drops.begin(), drops.end()), drops.end());

            const uint32_t base_n = base.group_start_[g1] - base.group_start_[g0];
            const size_t n_new = base_n + size_t(f - fc) - drops.size();
            uint32_t *chunk = new_chunk(uint32_t(n_new), cold_shift, out.update_source());
            out.chunks_[c] = chunk;
            uint32_t *hot_out = chunk;
            unsigned char *cold_out = const_cast<unsigned char *>(cold_of_chunk(chunk));
            const unsigned char *cold_in = cold_of_chunk(base.chunks_[c]);
            tokens += int64_t(n_new) - int64_t(base_n);

            // Arcs. The last record written and the last base record passed
            // are the next kept record's new and old predecessors; when they
            // differ (a change between them) its arc changes. Before the
            // chunk's first record, the old one is outside the chunk, and the
            // new arc of that first record is added at the end (its new
            // predecessor may be in a chunk not yet rewritten).
            // Only fresh tokens between two kept records (no drop): the
            // second one's arc shrinks by exactly what the fresh ones took,
            // with no need to decode its value.
            bool written = false, same = true, fresh_last = false, dropped_since = false;
            uint64_t fresh_value = 0;
            Pos last_written = kNoPos, last_passed = kNoPos;
            // The record a run ends on is the next fresh token's predecessor
            // and then the next kept record's old one: decoded once.
            Pos decoded = kNoPos;
            uint64_t decoded_value = 0;
            auto value_at = [&](Pos p) {
                if (p != decoded) {
                    decoded = p;
                    decoded_value = base.token_value(p);
                }
                return decoded_value;
            };
            auto old_pred = [&]() { return value_at(last_passed != kNoPos ? last_passed : base.last_before_group(g0)); };
            auto new_pred = [&]() { return fresh_last ? fresh_value : value_at(last_written); };
            size_t ins = 0, drp = 0, count = 0;
            for (size_t g = g0; g < g1; ++g) {
                const uint32_t n = base.group_size(g);
                const uint32_t *hot = base.hot_of_group_[g];
                const size_t cold_first = base.chunk_index_of_group(g);  // the group's first cold word
                const size_t group_begin = count, ins_begin = ins, drp_begin = drp;
                out.hot_of_group_[g] = chunk + group_begin;
                uint32_t next = 0;  // the group's next base record
                auto copy_to = [&](uint32_t to) {  // the kept records [next, to)
                    if (next == to) return;
                    if (!written && same) {
                        head_kept[c] = 1;
                    } else if (!same) {
                        const uint32_t slot = hot[next] & mask;
                        if (written && !dropped_since) {  // new_pred() is the last fresh value
                            arc_delta[slot] -= u128(uint64_t(fresh_value - old_pred()));
                        } else {
                            const uint64_t v = base.token_value(pos(uint32_t(g), next));
                            if (!written) arc_delta[slot] -= u128(v - old_pred());
                            else arc_delta[slot] += u128(v - new_pred()) - u128(v - old_pred());
                        }
                    }
                    std::copy(hot + next, hot + to, hot_out + count);
                    copy_cold_bits(cold_in, (cold_first + next) * cold_bits, cold_out, count * cold_bits,
                                   size_t(to - next) * cold_bits);
                    count += to - next;
                    last_written = last_passed = pos(uint32_t(g), to - 1);
                    written = same = true;
                    fresh_last = dropped_since = false;
                    next = to;
                };
                for (;;) {
                    const bool inserting = ins < inserts.size() && inserts[ins].group == g;
                    const bool dropping = drp < drops.size() && group_of(drops[drp].at) == g;
                    if (!inserting && !dropping) break;
                    if (inserting && (!dropping || inserts[ins].at <= offset_of(drops[drp].at))) {
                        copy_to(inserts[ins].at);
                        const Token &t = fc[ins++];
                        if (written) arc_delta[t.owner] += u128(t.value - new_pred());
                        uint32_t word;
                        encode(t.value, t.owner, P, mask, hot_bits, hot_out[count], word);
                        put_cold_word(cold_out, count, cold_shift, word);
                        ++count;
                        written = fresh_last = true;
                        same = false;
                        fresh_value = t.value;
                    } else {
                        const uint32_t at = offset_of(drops[drp++].at);
                        copy_to(at);
                        last_passed = pos(uint32_t(g), at);
                        same = false;
                        dropped_since = true;
                        next = at + 1;
                    }
                }
                copy_to(n);
                new_size[g] = uint32_t(count - group_begin);
                if (new_size[g] > kMaxOffset) {
                    out.clear();
                    return false;
                }
                if (ins == ins_begin && drp == drp_begin) continue;  // its offsets as they were
                // A bucket starts past the fresh tokens of the buckets
                // before it, less the dropped records before its start (the
                // sums fit a byte: the group has at most 255 records).
                const uint64_t b0 = uint64_t(g) << gs;
                const BucketOffset *was = &base.bucket_offset_[base.offset_index(b0)];
                BucketOffset *now = &out.bucket_offset_[out.offset_index(b0)];
                auto fresh_bucket = [&](size_t j) { return uint32_t((fc[j].value >> base.prefix_shift_) - b0); };
#if defined(__SSE2__)
                if (buckets_per_group == 64) {
                    // Per change, the lanes past its bucket move by one: a
                    // compare a 16-bucket block, no loop over buckets.
                    const __m128i lanes = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                    __m128i moved[4] = {};
                    auto past = [&](uint32_t k, int q) {  // all ones in the lanes of block q past bucket k
                        return _mm_cmpgt_epi8(_mm_add_epi8(lanes, _mm_set1_epi8(char(16 * q))), _mm_set1_epi8(char(k)));
                    };
                    for (size_t j = ins_begin; j < ins; ++j)
                        for (int q = 0; q < 4; ++q) moved[q] = _mm_sub_epi8(moved[q], past(fresh_bucket(j), q));
                    for (size_t k = drp_begin; k < drp; ++k)
                        for (int q = 0; q < 4; ++q) moved[q] = _mm_add_epi8(moved[q], past(drops[k].bucket, q));
                    for (int q = 0; q < 4; ++q) {
                        const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i *>(was) + q);
                        _mm_storeu_si128(reinterpret_cast<__m128i *>(now) + q, _mm_add_epi8(w, moved[q]));
                    }
                } else
#endif
                {  // counted per bucket, then summed
                    int16_t moved[(size_t(1) << kMaxGroupShift) + 1] = {};
                    for (size_t j = ins_begin; j < ins; ++j) ++moved[fresh_bucket(j) + 1];
                    for (size_t k = drp_begin; k < drp; ++k) --moved[drops[k].bucket + 1];
                    int shift = 0;
                    for (size_t i = 1; i < buckets_per_group; ++i) {
                        shift += moved[i];
                        now[i] = BucketOffset(int(was[i]) + shift);
                    }
                }
                now[buckets_per_group] = BucketOffset(new_size[g]);
            }
            tail_kept[c] = written && same;
        }
    } catch (...) {
        out.clear();
        throw;
    }
    if (tokens <= 0) {
        out.clear();
        return false;
    }
    out.tokens_ = size_t(tokens);
    out.group_start_[0] = 0;
    for (size_t g = 0; g < base.groups(); ++g)
        out.group_start_[g + 1] = out.group_start_[g] + (new_size[g] != UINT32_MAX ? new_size[g] : base.group_size(g));

    // The arcs whose predecessor is in another chunk: each rewritten chunk's
    // first new token, and the first token after a rewritten chunk when it
    // is in a chunk left as it was (its predecessor may have changed).
    // The token before chunk c is the same in base and out (no decoding)
    // when the chunk before has tokens and is shared, or was rewritten with
    // its last record kept.
    const size_t groups = base.groups();
    auto pred_kept = [&](size_t c) {
        const size_t prev = (c ? c : chunks) - 1;
        const bool has_tokens =
            out.group_start_[std::min((prev + 1) << C, groups)] != out.group_start_[prev << C];
        return has_tokens && (!is_dirty[prev] || tail_kept[prev]);
    };
    for (uint32_t c : dirty) {
        const size_t g0 = size_t(c) << C;
        const Pos first = out.first_from_group(g0);
        if (out.group_of(first) >> C == c && !(head_kept[c] && pred_kept(c))) {  // tokens, maybe a new arc
            const uint64_t pred = out.token_value(out.last_before_group(g0));
            if (!head_kept[c]) {
                arc_delta[out.slot_at(first)] += u128(out.token_value(first) - pred);
            } else {
                const uint64_t old = base.token_value(base.last_before_group(g0));
                if (old != pred) {
                    const uint64_t v = out.token_value(first);
                    arc_delta[out.slot_at(first)] += u128(v - pred) - u128(v - old);
                }
            }
        }
        const size_t next = (size_t(c) + 1) % chunks;
        if (is_dirty[next]) continue;
        const Pos after = out.first_from_group((next << C) % groups);
        const size_t after_chunk = out.group_of(after) >> C;
        if (is_dirty[after_chunk] || (after_chunk == next && pred_kept(next))) continue;
        followers.push_back(after);  // once, though several chunks may precede it
    }
    std::sort(followers.begin(), followers.end());
    followers.erase(std::unique(followers.begin(), followers.end()), followers.end());
    for (Pos p : followers) {
        const size_t g = out.group_of(p);
        const uint64_t base_pred = base.token_value(base.last_before_group(g));
        const uint64_t new_pred = out.token_value(out.last_before_group(g));
        if (new_pred == base_pred) continue;
        const uint64_t v = out.token_value(p);
        arc_delta[out.slot_at(p)] += u128(v - new_pred) - u128(v - base_pred);
    }

    // Pads: each rewritten chunk's own, and any chunk before one whose pads
    // now name another owner (back over empty chunks to the first with
    // tokens), copied first if shared. A chunk whose first record was kept
    // leaves those pads as they were.
    for (uint32_t c : dirty) out.set_pads(c);
    try {
        for (uint32_t c : dirty) {
            if (head_kept[c]) continue;
            size_t q = c;
            for (size_t steps = 0; steps < chunks; ++steps) {
                q = q ? q - 1 : chunks - 1;
                if (is_dirty[q]) break;
                const uint32_t *old = out.chunks_[q];
                const uint32_t n = header_of(old)->n;
                if (old[n] != out.pad_record(out.slot_after_chunk(q))) {
                    const unsigned cold_shift = header_of(old)->cold_shift;
                    uint32_t *copy = new_chunk(n, cold_shift, out.update_source());
                    std::memcpy(copy, old, (size_t(n) + kWindow) * sizeof(uint32_t));
                    std::memcpy(header_of(copy)->cold, cold_of_chunk(old), cold_bytes(n, cold_shift));
                    for (size_t g = q << C; g < (q + 1) << C; ++g) out.hot_of_group_[g] = copy + (out.hot_of_group_[g] - old);
                    out.chunks_[q] = copy;
                    if (!base.holds(q, old)) free_chunk(old);  // else the base's, as it was
                    out.set_pads(q);
                }
                if (n) break;
            }
        }
    } catch (...) {
        out.clear();
        throw;
    }
    return true;
}

}  // namespace chring
