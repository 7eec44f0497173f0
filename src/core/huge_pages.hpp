// Transparent huge pages for the big buffers of a build. A 16M-token ring
// build touches about 1 GB of fresh memory; as 4 KiB pages that is one
// fault per page (about 28 us each on this project's VM: 1.8 s per
// 256 MB), as 2 MiB pages 30 ms. Where the kernel offers them only on
// request (transparent_hugepage/enabled = madvise, Debian's default) a
// buffer gets them by madvise before it is first touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace chring {

// Advises the whole 2 MiB pages inside [p, p + bytes): a hint, so a
// kernel without THP, a range under 4 MiB or another system leaves it
// as it is. Memory already touched keeps its pages.
constexpr size_t kHugePage = size_t(2) << 20;

inline void advise_huge_pages(void *p, size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t kHuge = kHugePage;
    if (bytes < kHuge) return;
    const uintptr_t first = (uintptr_t(p) + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t last = (uintptr_t(p) + bytes) & ~(kHuge - 1);
    if (last > first) (void)madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

// For the arrays an index or a snapshot keeps (and copies at each update):
// one of 2 MiB or more starts on a 2 MiB boundary and has its whole huge
// pages advised, so reading it at random does not miss the TLB on every
// access and copying it faults a few pages instead of thousands. The
// allocation is not rounded up: the tail past its last whole huge page
// stays small pages, so a snapshot kept alive costs no more than its bytes.
// Smaller arrays are ordinary.
template <class T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() noexcept = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U> &) noexcept {}
    T *allocate(size_t n) {
        if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
        const size_t bytes = n * sizeof(T);
        if (bytes < kHugePage) return static_cast<T *>(::operator new(bytes));
        void *p = ::operator new(bytes, std::align_val_t(kHugePage));
        advise_huge_pages(p, bytes);
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t n) noexcept {
        if (n * sizeof(T) < kHugePage) ::operator delete(static_cast<void *>(p));
        else ::operator delete(static_cast<void *>(p), std::align_val_t(kHugePage));
    }
    template <class U>
    bool operator==(const HugePageAllocator<U> &) const noexcept { return true; }
    template <class U>
    bool operator!=(const HugePageAllocator<U> &) const noexcept { return false; }
};

template <class T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

// n elements left uninitialized (every one is written before it is read),
// from HugePageAllocator: a build's scratch, which would otherwise be
// zeroed only to be overwritten.
template <class T>
class HugeBuffer {
public:
    HugeBuffer() noexcept = default;
    explicit HugeBuffer(size_t n) : p_(HugePageAllocator<T>().allocate(n)), n_(n) {}
    HugeBuffer(HugeBuffer &&o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
    HugeBuffer &operator=(HugeBuffer &&o) noexcept {
        if (this != &o) {
            reset();
            p_ = o.p_, n_ = o.n_;
            o.p_ = nullptr, o.n_ = 0;
        }
        return *this;
    }
    ~HugeBuffer() { reset(); }
    T *data() const noexcept { return p_; }
    size_t size() const noexcept { return n_; }
    void reset() noexcept {
        if (p_) HugePageAllocator<T>().deallocate(p_, n_);
        p_ = nullptr;
        n_ = 0;
    }

private:
    T *p_ = nullptr;
    size_t n_ = 0;
};

// v.reserve(n), with the new capacity advised before anything touches it.
template <class T>
void reserve_huge(std::vector<T> &v, size_t n) {
    const bool grows = n > v.capacity();
    v.reserve(n);
    if (grows) advise_huge_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

}  // namespace chring
