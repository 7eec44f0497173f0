// Transparent huge pages for the big buffers of a build. A 16M-token ring
// build touches about 1 GB of fresh memory; as 4 KiB pages that is one
// fault per page (about 28 us each on this project's VM: 1.8 s per
// 256 MB), as 2 MiB pages 30 ms. Where the kernel offers them only on
// request (transparent_hugepage/enabled = madvise, Debian's default) a
// buffer gets them by madvise before it is first touched.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
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
    static constexpr bool kOverAligned = alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    HugePageAllocator() noexcept = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U> &) noexcept {}
    T *allocate(size_t n) {
        if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
        const size_t bytes = n * sizeof(T);
        if (bytes < kHugePage) {
            if (kOverAligned) return static_cast<T *>(::operator new(bytes, std::align_val_t(alignof(T))));
            return static_cast<T *>(::operator new(bytes));
        }
        void *p = ::operator new(bytes, std::align_val_t(kHugePage));
        advise_huge_pages(p, bytes);
        return static_cast<T *>(p);
    }
    void deallocate(T *p, size_t n) noexcept {
        if (n * sizeof(T) >= kHugePage) ::operator delete(static_cast<void *>(p), std::align_val_t(kHugePage));
        else if (kOverAligned) ::operator delete(static_cast<void *>(p), std::align_val_t(alignof(T)));
        else ::operator delete(static_cast<void *>(p));
    }
    template <class U>
    bool operator==(const HugePageAllocator<U> &) const noexcept { return true; }
    template <class U>
    bool operator!=(const HugePageAllocator<U> &) const noexcept { return false; }
};

// An array of a trivially copyable T from HugePageAllocator, copied and
// grown with memcpy and memset: the index's per-group arrays, which an
// update copies (std::vector with an allocator of its own constructs
// element by element, a loop GCC leaves unvectorized at -O2), and a
// build's scratch, made uninitialized (every element is written before
// it is read; zeroed, it would be written twice). Operations that
// allocate may throw bad_alloc and leave it as it was.
template <class T>
class HugeArray {
    static_assert(std::is_trivially_copyable<T>::value, "copied with memcpy");

public:
    HugeArray() noexcept = default;
    // n elements, uninitialized.
    explicit HugeArray(size_t n) : p_(n ? HugePageAllocator<T>().allocate(n) : nullptr), n_(n) {}
    HugeArray(const HugeArray &o) { *this = o; }
    HugeArray(HugeArray &&o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
    HugeArray &operator=(const HugeArray &o) {
        if (this != &o) {
            T *p = o.n_ ? HugePageAllocator<T>().allocate(o.n_) : nullptr;
            if (o.n_) std::memcpy(static_cast<void *>(p), o.p_, o.n_ * sizeof(T));
            reset(p, o.n_);
        }
        return *this;
    }
    HugeArray &operator=(HugeArray &&o) noexcept {
        if (this != &o) {
            reset(o.p_, o.n_);
            o.p_ = nullptr, o.n_ = 0;
        }
        return *this;
    }
    ~HugeArray() { reset(nullptr, 0); }

    size_t size() const noexcept { return n_; }
    T *data() noexcept { return p_; }
    const T *data() const noexcept { return p_; }
    T &operator[](size_t i) noexcept { return p_[i]; }
    const T &operator[](size_t i) const noexcept { return p_[i]; }
    T *begin() noexcept { return p_; }
    T *end() noexcept { return p_ + n_; }
    const T *begin() const noexcept { return p_; }
    const T *end() const noexcept { return p_ + n_; }

    // n elements: the first min(n, size()) kept, the rest zero bytes.
    void resize(size_t n) {
        if (n == n_) return;
        T *p = n ? HugePageAllocator<T>().allocate(n) : nullptr;
        const size_t kept = n < n_ ? n : n_;
        if (kept) std::memcpy(static_cast<void *>(p), p_, kept * sizeof(T));
        if (n > kept) std::memset(static_cast<void *>(p + kept), 0, (n - kept) * sizeof(T));
        reset(p, n);
    }
    // n copies of v.
    void assign(size_t n, const T &v) {
        if (n != n_) {
            T *p = n ? HugePageAllocator<T>().allocate(n) : nullptr;
            reset(p, n);
        }
        std::fill(p_, p_ + n_, v);
    }
    // Empty, its memory freed.
    void clear() noexcept { reset(nullptr, 0); }

private:
    void reset(T *p, size_t n) noexcept {
        if (p_) HugePageAllocator<T>().deallocate(p_, n_);
        p_ = p;
        n_ = n;
    }
    T *p_ = nullptr;
    size_t n_ = 0;
};

// v.reserve(n), with the new capacity advised before anything touches it.
template <class T, class Allocator>
void reserve_huge(std::vector<T, Allocator> &v, size_t n) {
    const bool grows = n > v.capacity();
    v.reserve(n);
    if (grows) advise_huge_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

}  // namespace chring
