// Transparent huge pages for the big buffers of a build. A 16M-token ring
// build touches about 1 GB of fresh memory; as 4 KiB pages that is one
// fault per page (about 28 us each on this project's VM: 1.8 s per
// 256 MB), as 2 MiB pages 30 ms. Where the kernel offers them only on
// request (transparent_hugepage/enabled = madvise, Debian's default) a
// buffer gets them by madvise before it is first touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace chring {

// Advises the whole 2 MiB pages inside [p, p + bytes): a hint, so a
// kernel without THP, a range under 4 MiB or another system leaves it
// as it is. Memory already touched keeps its pages.
inline void advise_huge_pages(void *p, size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    if (bytes < 2 * kHuge) return;
    const uintptr_t first = (uintptr_t(p) + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t last = (uintptr_t(p) + bytes) & ~(kHuge - 1);
    if (last > first) (void)madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

// v.reserve(n), with the new capacity advised before anything touches it.
template <class T>
void reserve_huge(std::vector<T> &v, size_t n) {
    const bool grows = n > v.capacity();
    v.reserve(n);
    if (grows) advise_huge_pages(v.data() + v.size(), (v.capacity() - v.size()) * sizeof(T));
}

}  // namespace chring
