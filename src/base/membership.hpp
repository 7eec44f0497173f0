// A ring's members as the core keeps them, a change of membership as the
// snapshot build takes it, and a token as placements produce them.
#pragma once

#include <cstdint>
#include <string>
#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace chring {

__extension__ typedef unsigned __int128 u128;  // arcs: one node may own all 2^64 positions

struct Node {
    std::string id;  // bytes, compared as unsigned bytes (std::string's order)
    std::string zone;
    uint64_t tag = 0;
    uint32_t weight = 0;
    uint32_t tokens = 0;     // filled by the snapshot build
    u128 arc = 0;            // filled by the snapshot build: key positions it owns, exactly
    // The share of the circle it owns, arc / 2^64 (computed, not kept: a
    // node table is copied at every update, and 16 bytes less a node
    // shows there).
    double ownership() const noexcept { return double(arc) * 0x1p-64; }
};

// The new node table plus, for each new node, where it was in the old
// table (-1 if new) and whether its tokens must be generated again.
struct MembershipDelta {
    std::vector<Node> nodes;           // sorted by id
    std::vector<int64_t> old_index;    // per node: index in the old snapshot, or -1
    std::vector<uint8_t> regenerate;   // per node: 1 if added or reweighted
    uint64_t token_bound = 0;          // the placement's point_bound summed over `nodes`
};

// A point on the circle and the node (index in the node table) it belongs
// to, ordered by (value, owner): the order of a ring's token array.
struct Token {
    uint64_t value;
    uint32_t owner;
    bool operator<(const Token &o) const noexcept {
        return value < o.value || (value == o.value && owner < o.owner);
    }
};

// Memory for a placement's fresh tokens: cache-line aligned, and a vector
// resized through it leaves its new elements uninitialized. A big build
// resizes one and writes every element once, into place (RangeSort), a
// line of four tokens at a time with streaming stores, which must not
// straddle two lines (malloc's 16-byte alignment made a 16M-token build
// 30% slower); zeroing it first would write 256 MB twice. Not
// HugePageAllocator: its 2 MiB alignment made the 2.5 MB of a 1,000-node
// build new memory at every build (6% slower); reserve_huge() advises.
template <class T>
struct TokenAllocator {
    using value_type = T;
    static constexpr std::align_val_t kAlign{64};
    TokenAllocator() noexcept = default;
    template <class U>
    TokenAllocator(const TokenAllocator<U> &) noexcept {}
    T *allocate(size_t n) {
        if (n > size_t(-1) / sizeof(T)) throw std::bad_alloc();
        return static_cast<T *>(::operator new(n * sizeof(T), kAlign));
    }
    void deallocate(T *p, size_t) noexcept { ::operator delete(static_cast<void *>(p), kAlign); }
    template <class U>
    void construct(U *p) noexcept {
        ::new (static_cast<void *>(p)) U;
    }
    template <class U, class... Args>
    void construct(U *p, Args &&...args) {
        ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
    }
    template <class U>
    bool operator==(const TokenAllocator<U> &) const noexcept { return true; }
    template <class U>
    bool operator!=(const TokenAllocator<U> &) const noexcept { return false; }
};
using FreshTokens = std::vector<Token, TokenAllocator<Token>>;

}  // namespace chring
