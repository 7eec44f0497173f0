#include "chunk_pool.hpp"

#include <cstdint>
#include <mutex>
#include <new>

#include "base/huge_pages.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define CHRING_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHRING_ASAN 1
#endif
#endif
#if defined(CHRING_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace chring::chunk_pool {
namespace {

// Slab sizes by source (none from the heap); each aligned to its size.
constexpr size_t kSlabBytes[3] = {0, size_t(64) << 10, kHugePage};
constexpr size_t kSlabHeader = 64;
constexpr size_t kBlockHeader = 16;      // keeps payloads 16-byte aligned
constexpr unsigned kClasses = 16 * 12;   // classes up to 2^18 bytes

size_t slab_bytes(Source source) noexcept { return kSlabBytes[unsigned(source)]; }
size_t max_payload(Source source) noexcept { return slab_bytes(source) / 8; }  // bigger: straight from the heap

// Payload sizes: multiples of 16 up to 256, then 16 steps a power of two.
size_t class_size(size_t bytes) noexcept {
    bytes = (bytes + 15) & ~size_t(15);
    if (bytes <= 256) return bytes;
    const unsigned top = 63 - unsigned(__builtin_clzll(bytes));  // 2^top <= bytes
    const size_t step = size_t(1) << (top - 4);
    return (bytes + step - 1) & ~(step - 1);
}
unsigned class_index(size_t size) noexcept {  // size: a class_size()
    if (size <= 256) return unsigned(size / 16);
    const unsigned top = 63 - unsigned(__builtin_clzll(size));
    return 16 * (top - 7) + unsigned(size >> (top - 4)) - 16;
}
size_t size_of_class(unsigned c) noexcept {
    if (c <= 16) return size_t(c) * 16;
    const unsigned top = c / 16 + 7;
    return (size_t(16) + c % 16) << (top - 4);
}

struct alignas(16) BlockHeader {
    uint32_t cls;  // its size, for walking an empty slab
};
static_assert(sizeof(BlockHeader) == kBlockHeader, "payloads stay 16-byte aligned");
struct FreeBlock {  // a free block's payload
    FreeBlock *prev, *next;
};

// Under AddressSanitizer a free block is poisoned past its free-list links,
// so that a read of a chunk freed too early is reported, as the heap's are.
void poison_free_block(void *payload, size_t size) noexcept {
#if defined(CHRING_ASAN)
    ASAN_POISON_MEMORY_REGION(static_cast<unsigned char *>(payload) + sizeof(FreeBlock), size - sizeof(FreeBlock));
#else
    (void)payload, (void)size;
#endif
}
void unpoison(void *payload, size_t size) noexcept {
#if defined(CHRING_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(payload, size);
#else
    (void)payload, (void)size;
#endif
}

struct Slab {  // at the start of each slab
    size_t live;  // blocks in use
    size_t bump;  // where the next new block goes
};

struct Pool {  // one per kind of slab
    std::mutex mu;
    FreeBlock *free[kClasses] = {};
    Slab *current = nullptr;  // where new blocks are carved
    size_t slabs = 0;
};

// Never destroyed: a ring destroyed by a static destructor may still give
// back its chunks after this file's statics are gone.
Pool &pool(Source slabs) noexcept {
    alignas(Pool) static unsigned char storage[2][sizeof(Pool)];
    static Pool *p[2] = {new (storage[0]) Pool, new (storage[1]) Pool};
    return *p[unsigned(slabs) - 1];
}

BlockHeader *header_of(void *payload) noexcept {
    return reinterpret_cast<BlockHeader *>(static_cast<unsigned char *>(payload) - kBlockHeader);
}
Slab *slab_of(void *payload, Source kind) noexcept {
    return reinterpret_cast<Slab *>(uintptr_t(payload) & ~uintptr_t(slab_bytes(kind) - 1));
}
void push(Pool &p, unsigned c, void *payload) noexcept {
    FreeBlock *f = static_cast<FreeBlock *>(payload);
    f->prev = nullptr;
    f->next = p.free[c];
    if (f->next) f->next->prev = f;
    p.free[c] = f;
}
void unlink(Pool &p, unsigned c, FreeBlock *f) noexcept {
    if (f->prev) f->prev->next = f->next;
    else p.free[c] = f->next;
    if (f->next) f->next->prev = f->prev;
}

// Every block of an empty slab is on a free list: take them off, then
// give the slab back.
void drop_slab(Pool &p, Slab *slab, Source kind) noexcept {
    unsigned char *base = reinterpret_cast<unsigned char *>(slab);
    for (size_t at = kSlabHeader; at < slab->bump;) {
        BlockHeader *h = reinterpret_cast<BlockHeader *>(base + at);
        unlink(p, h->cls, reinterpret_cast<FreeBlock *>(h + 1));
        at += kBlockHeader + size_of_class(h->cls);
    }
    if (p.current == slab) p.current = nullptr;
    --p.slabs;
    unpoison(slab, slab_bytes(kind));
    ::operator delete(static_cast<void *>(slab), std::align_val_t(slab_bytes(kind)));
}

}  // namespace

size_t block_bytes(size_t bytes, Source kind) noexcept {
    const size_t size = class_size(bytes);
    return size > max_payload(kind) ? bytes : kBlockHeader + size;
}

void *allocate(size_t bytes, Source kind) {
    const size_t size = class_size(bytes);
    if (size > max_payload(kind)) return ::operator new(bytes);
    const unsigned c = class_index(size);
    Pool &p = pool(kind);
    std::lock_guard<std::mutex> lock(p.mu);
    // A free block of the class, or of the next (at most 1/16 bigger).
    for (unsigned k = c; k < kClasses && k <= c + 1; ++k) {
        if (FreeBlock *f = p.free[k]) {
            unlink(p, k, f);
            ++slab_of(f, kind)->live;
            unpoison(f, size_of_class(k));
            return f;
        }
    }
    const size_t slab = slab_bytes(kind);
    if (!p.current || p.current->bump + kBlockHeader + size > slab) {
        void *raw = ::operator new(slab, std::align_val_t(slab));  // may throw: nothing changed
        if (kind == Source::huge_slabs) advise_huge_pages(raw, slab);
        p.current = new (raw) Slab{0, kSlabHeader};
        ++p.slabs;
    }
    Slab *carve = p.current;
    BlockHeader *h = reinterpret_cast<BlockHeader *>(reinterpret_cast<unsigned char *>(carve) + carve->bump);
    h->cls = c;
    carve->bump += kBlockHeader + size;
    ++carve->live;
    return h + 1;
}

void release(void *block, size_t bytes, Source kind) noexcept {
    if (class_size(bytes) > max_payload(kind)) {
        ::operator delete(block);
        return;
    }
    Pool &p = pool(kind);
    std::lock_guard<std::mutex> lock(p.mu);
    const unsigned c = header_of(block)->cls;
    push(p, c, block);
    poison_free_block(block, size_of_class(c));
    Slab *slab = slab_of(block, kind);
    if (--slab->live == 0) drop_slab(p, slab, kind);
}

size_t slab_count() noexcept {
    size_t slabs = 0;
    for (Source kind : {Source::small_slabs, Source::huge_slabs}) {
        Pool &p = pool(kind);
        std::lock_guard<std::mutex> lock(p.mu);
        slabs += p.slabs;
    }
    return slabs;
}

}  // namespace chring::chunk_pool
