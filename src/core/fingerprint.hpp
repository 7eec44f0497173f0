// A ring's fingerprint: a 64-bit digest of its placement, members and
// tokens, equal for rings that route every key the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/membership.hpp"
#include "placement.hpp"

namespace chring {

// Accumulator over integers, not memory, so it is the same on every
// platform and byte order. Not cryptographic: it tells rings apart.
struct FingerprintMix {
    uint64_t h = 0x243F6A8885A308D3ull;
    void add(uint64_t v) noexcept {
        h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    void add_bytes(const std::string &s) noexcept;
};

// Mixed before the zones (CHR_FINGERPRINT_VERSION 2), "zones" in ASCII.
constexpr uint64_t kFingerprintZonesMark = 0x7a6f6e6573ull;

// The token array is mixed as the build goes, token k into lane k % 4 (a
// single multiply chain would bound the speed of every update by its
// latency); this adds the placement and the members around the lanes.
// A placement that is not seeded holds the default seed and
// tokens_per_weight (make_placement), so they mix as constants.
uint64_t ring_fingerprint(const Placement &p, const std::vector<Node> &nodes, size_t tokens,
                          const FingerprintMix (&lanes)[4]) noexcept;

}  // namespace chring
