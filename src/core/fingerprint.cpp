#include "fingerprint.hpp"

namespace chring {

void FingerprintMix::add_bytes(const std::string &s) noexcept {
    add(s.size());
    uint64_t word = 0;
    unsigned n = 0;
    for (unsigned char c : s) {
        word |= uint64_t(c) << (8 * n);
        if (++n == 8) {
            add(word);
            word = 0;
            n = 0;
        }
    }
    if (n) add(word);
}

uint64_t ring_fingerprint(const Placement &p, const std::vector<Node> &nodes, size_t tokens,
                          const FingerprintMix (&lanes)[4]) noexcept {
    FingerprintMix fp;
    fp.add(uint64_t(uint32_t(p.ops->mode)));
    fp.add(p.tokens_per_weight);
    fp.add(p.seed);
    fp.add_bytes(p.hasher->name);
    fp.add(nodes.size());
    for (const Node &n : nodes) {
        fp.add_bytes(n.id);
        fp.add(n.weight);
    }
    fp.add(tokens);
    for (const FingerprintMix &lane : lanes) fp.add(lane.h);
    // Version 2: zones steer the zone replica policies, so they are mixed
    // in, after everything version 1 mixed, and only when some member has
    // one: a ring without zones keeps its version 1 fingerprint.
    bool zoned = false;
    for (const Node &n : nodes) zoned |= !n.zone.empty();
    if (zoned) {
        fp.add(kFingerprintZonesMark);
        for (const Node &n : nodes) fp.add_bytes(n.zone);
    }
    return fp.h;
}

}  // namespace chring
