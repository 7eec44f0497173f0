// Placements: how a ring turns its members into points on the 64-bit
// circle and where a key lands. Each placement is one row of operations
// (PlacementOps), defined in its own file (native.cpp, ketama.cpp,
// nginx.cpp) and listed once in placement.cpp; the rest of the library asks
// the row, never the mode number. Depends on the membership types and the
// hasher registry only, not on the snapshot that uses it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "chring.h"
#include "plugin/registry.hpp"
#include "base/huge_pages.hpp"
#include "base/membership.hpp"
#include "xxh3_inline.hpp"

namespace chring {

struct Placement;

struct PlacementOps {
    int32_t mode;          // CHR_PLACEMENT_*
    const char *name;      // as chr_placement_info names it
    const char *summary;   // one line for help texts
    const char *hasher;    // the hasher it is defined with; nullptr: any
    uint32_t digest_size;  // the exact digest size it needs from that hasher; 0: none
    bool seeded;           // seed and tokens_per_weight change its points
    // An upper bound on the points a node of this weight adds (for the limits).
    uint64_t (*point_bound)(const Placement &p, uint32_t weight) noexcept;
    // CHR_OK, or CHR_ERANGE if it cannot take this weight; nullptr: any weight.
    chr_status (*check_weight)(uint32_t weight, const char *who);
    // Where a key lands on the circle.
    uint64_t (*key_position)(const Placement &p, const void *key, size_t len) noexcept;
    // Exactly one of the two builds is set. fresh_tokens: the tokens of the
    // nodes `delta` marks for regeneration, sorted, which the snapshot
    // merges with the kept ones (minimal disruption). all_points: every
    // point of the membership, in the order the original system sorts them,
    // duplicates removed where it removes them (the systems reproduced
    // rebuild every point on any change, and so does this).
    // `spare`, when not null, receives the sort's scratch memory, already
    // faulted in, for the build to reuse (it may stay empty).
    void (*fresh_tokens)(const Placement &p, const MembershipDelta &delta, FreshTokens &out,
                         HugeArray<Token> *spare);
    void (*all_points)(const Placement &p, const std::vector<Node> &nodes, std::vector<Token> &out);
};

extern const PlacementOps native_placement;             // native.cpp
extern const PlacementOps ketama_placement;             // ketama.cpp
extern const PlacementOps ketama_unweighted_placement;  // ketama.cpp
extern const PlacementOps nginx_placement;              // nginx.cpp

// The row of `mode` / of the placement called `name`, or nullptr.
const PlacementOps *find_placement(int32_t mode) noexcept;
const PlacementOps *find_placement(const char *name) noexcept;
// CHR_ENOTSUP: no placement `mode` in this library.
chr_status no_placement(const char *who, int32_t mode);

// What decides where tokens and keys land; fixed for a ring's lifetime.
struct Placement {
    HasherPtr hasher;
    uint64_t seed = 0;
    uint32_t tokens_per_weight = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    const PlacementOps *ops = &native_placement;
};
using PlacementPtr = std::shared_ptr<const Placement>;

// The ring's limit on tokens (CHR_TOKENS_MAX), in one place: a running
// bound on the tokens of a membership under placement `p`, each member
// counting its point_bound(), and whether it is over the limit. The ring
// checks it after each change of a batch; a ring file after each member
// line, to name the line that passes the limit.
class TokenTally {
public:
    explicit TokenTally(const Placement &p, uint64_t start = 0) noexcept : p_(p), total_(start) {}
    void add(uint32_t weight) noexcept { total_ += p_.ops->point_bound(p_, weight); }
    void remove(uint32_t weight) noexcept { total_ -= p_.ops->point_bound(p_, weight); }
    uint64_t total() const noexcept { return total_; }
    bool over_limit() const noexcept { return total_ > CHR_TOKENS_MAX; }

private:
    const Placement &p_;
    uint64_t total_;
};

// The placement `opts` asks for (NULL: the defaults), its hasher resolved
// and checked against the placement's rule. A placement that is not seeded
// keeps the default seed and tokens_per_weight whatever `opts` says, so
// rings that differ only in what it ignores are equal, fingerprint included.
chr_status make_placement(const chr_options *opts, PlacementPtr *out, const char *who);

// Where a key lands on the circle under a placement. Copied into each ring
// and snapshot (the function pointer and seed one load away); the
// placement it points to must outlive it.
class KeyHasher {
public:
    explicit KeyHasher(const Placement &p) noexcept;  // placement.cpp
    uint64_t operator()(const void *key, size_t len) const noexcept {
        // hash64_ is the built-in's function too when inline_xxh3_: the
        // long keys' call needs no other load.
        if (__builtin_expect(inline_xxh3_ && len <= kInlineXxh3MaxKey, 1)) return xxh3_short_key(key, len, seed_);
        if (__builtin_expect(native_, 1)) return hash64_(key, len, seed_);
        return compat_position(key, len);
    }

private:
    uint64_t compat_position(const void *key, size_t len) const noexcept;  // placement.cpp
    chr_hash64_fn hash64_;
    uint64_t seed_;
    bool native_;       // native placement: keys hash with hash64_ directly
    bool inline_xxh3_;  // native with the built-in xxh3: short keys hash inline
    const Placement *placement_;
};

}  // namespace chring
