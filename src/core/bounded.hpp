// Bounded-load lookups: the capacity formula (HAProxy's
// chash_server_is_eligible, in integers) and the choice of a node with room
// along a spill order. Shared by the pure lookup over caller loads and the
// tracker's acquire (tracker.hpp); docs/bounded-loads.md states the rules.
#pragma once

#include <cstdint>

#include "chring.h"
#include "snapshot.hpp"

namespace chring {

__extension__ typedef unsigned __int128 bound_u128;

// The options of one bounded lookup, checked. bounded == false: no load
// bound, only availability (every capacity unlimited).
struct BoundParams {
    bool bounded = false;
    uint32_t factor_pct = 125;
    uint32_t spill = CHR_SPILL_REPLICAS;
    uint32_t max_probes = 0;
    uint64_t slack = 0;
};

// `opts` (NULL: no bound) checked into `p`.
chr_status read_bound_options(const char *who, const chr_bound_options *opts, BoundParams &p);

inline uint64_t saturate(bound_u128 v) noexcept {
    return v > UINT64_MAX ? UINT64_MAX : uint64_t(v);
}

// ceil((L + 1) * factor / 100): the slots shared by all candidates.
inline uint64_t bound_total_slots(uint64_t total_load, uint32_t factor_pct) noexcept {
    // 64-bit arithmetic while it cannot overflow (factor_pct < 2^17): a
    // 128-bit division is a library call, several times a lookup's cost.
    if (total_load < (uint64_t(1) << 46)) return ((total_load + 1) * factor_pct + 99) / 100;
    return saturate(((bound_u128(total_load) + 1) * factor_pct + 99) / 100);
}

// Capacity of a candidate of weight w > 0 whose predecessors weigh `before`,
// out of W: its whole share of the slots plus its cumulative part of the
// remainder, at least 1, plus slack.
inline uint64_t bound_capacity(uint64_t total_slots, uint64_t W, uint64_t before, uint64_t w,
                               uint64_t slack) noexcept {
    const uint64_t per = total_slots / W, rem = total_slots % W;
    if (W <= UINT32_MAX) {  // before + w <= W and rem < W: the products fit in 64 bits
        uint64_t cap = w * per + ((before + w) * rem) / W - (before * rem) / W;
        if (cap == 0) cap = 1;
        return cap + slack < cap ? UINT64_MAX : cap + slack;
    }
    bound_u128 cap = bound_u128(w) * per + (bound_u128(before + w) * rem) / W -
                     (bound_u128(before) * rem) / W;
    if (cap == 0) cap = 1;
    return saturate(cap + slack);
}

// L, the load a bound shares out: load(i) summed over the snapshot's
// members only (not a node that left it with requests in flight, nor
// another ring's), and every load's bits or-ed for one range test; in four
// independent lanes. The one place L is computed, for the pure lookup over
// caller loads and the tracker's acquire alike.
struct MemberLoads {
    uint64_t total = 0, bits = 0;
};
template <class Load>
MemberLoads member_loads(const Snapshot &s, Load &&load) {
    const size_t n = s.node_count();
    uint64_t sum[4] = {0, 0, 0, 0}, bits[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (size_t j = 0; j < 4; ++j) {
            const uint64_t v = load(uint32_t(i + j));
            sum[j] += v;
            bits[j] |= v;
        }
    for (; i < n; ++i) {
        const uint64_t v = load(uint32_t(i));
        sum[0] += v;
        bits[0] |= v;
    }
    return {sum[0] + sum[1] + sum[2] + sum[3], bits[0] | bits[1] | bits[2] | bits[3]};
}

struct BoundChoice {
    uint32_t index = 0, home = 0, probes = 0, flags = 0;
    uint64_t load = 0, capacity = 0;
};

// choose_bounded() with `home`, the key's owner (chr_snapshot_lookup's answer).
template <class Load, class Up>
bool choose_bounded_from(const Snapshot &s, uint64_t h, uint32_t home, const BoundParams &p,
                         uint64_t total_load, bool all_up, Load &&load, Up &&up, BoundChoice &c) {
    const size_t n = s.node_count();
    auto available = [&](uint32_t i) { return s.candidate_weight(i) > 0 && (all_up || up(i)); };
    uint64_t W = s.weight_before(n);
    if (!all_up) {
        W = 0;
        for (uint32_t i = 0; i < n; ++i)
            if (available(i)) W += s.candidate_weight(i);
        if (W == 0) return false;
    }
    // Weight of the available candidates before i.
    auto before = [&](uint32_t i) {
        if (all_up) return s.weight_before(i);
        uint64_t b = 0;
        for (uint32_t j = 0; j < i; ++j)
            if (available(j)) b += s.candidate_weight(j);
        return b;
    };
    const uint64_t slots = p.bounded ? bound_total_slots(total_load, p.factor_pct) : 0;
    auto capacity = [&](uint32_t i) {
        return p.bounded ? bound_capacity(slots, W, before(i), s.candidate_weight(i), p.slack)
                         : UINT64_MAX;
    };

    c = BoundChoice{};
    c.home = home;
    bool have_best = false;
    BoundChoice best;
    auto take = [&](const BoundChoice &b, uint32_t flags) {
        const uint32_t probes = c.probes, home = c.home;
        c = b;
        c.probes = probes;
        c.home = home;
        c.flags = flags | (c.index != home ? CHR_BOUND_SPILLED : 0);
    };
    // Compares node i with its capacity: true once the choice is made.
    auto probe = [&](uint32_t i) {
        ++c.probes;
        BoundChoice here;
        here.index = i;
        here.load = load(i);
        here.capacity = capacity(i);
        if (here.load < here.capacity) {
            take(here, 0);
            return true;
        }
        // Lowest load/capacity so far (capacities are >= 1).
        if (!have_best || bound_u128(here.load) * best.capacity < bound_u128(best.load) * here.capacity) {
            best = here;
            have_best = true;
        }
        if (p.max_probes && c.probes >= p.max_probes) {
            take(best, CHR_BOUND_OVER);
            return true;
        }
        return false;
    };

    if (available(c.home) && probe(c.home)) return true;
    bool done = false;
    if (p.spill == CHR_SPILL_SHUFFLE) {
        // Members in the order start, start + stride, ... (mod n) with the
        // stride coprime to n: a permutation, both drawn from the key's hash.
        uint64_t z = h ^ 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        uint64_t i = uint32_t(z) % n, stride = 1;
        if (n > 2) {
            stride = 1 + (z >> 32) % (n - 1);
            auto gcd = [](uint64_t a, uint64_t b) {
                while (b) {
                    const uint64_t t = a % b;
                    a = b;
                    b = t;
                }
                return a;
            };
            while (gcd(stride, n) != 1) stride = stride % (n - 1) + 1;
        }
        for (size_t k = 0; k < n && !done; ++k) {
            if (i != c.home && available(uint32_t(i))) done = probe(uint32_t(i));
            i += stride;
            if (i >= n) i -= n;
        }
    } else {
        s.walk_owners(h, [&](uint32_t o) {
            if (o == c.home || !available(o)) return false;
            return done = probe(o);
        });
    }
    // Unreachable without max_probes (the capacities add up to more than
    // the load); kept so that a bug cannot leave the choice empty.
    if (!done) {
        if (!have_best) return false;
        take(best, CHR_BOUND_OVER);
    }
    return true;
}

// Chooses a node for key hash h of a snapshot with tokens. load(i): node i's
// in-flight count; up(i): whether it is available, never called when all_up.
// total_load: L, member_loads(s, load).total. Returns false when no node with
// tokens is available. The snapshot's members down now are unavailable too,
// unless that leaves none: then its marks are as if not there.
template <class Load, class Up>
bool choose_bounded(const Snapshot &s, uint64_t h, const BoundParams &p, uint64_t total_load,
                    bool all_up, Load &&load, Up &&up, BoundChoice &c) {
    const uint32_t home = s.owner_at_hash(h);
    if (__builtin_expect(s.routing_around(), 0)) {
        auto up_now = [&](uint32_t i) { return !s.down_now(i) && (all_up || up(i)); };
        if (choose_bounded_from(s, h, home, p, total_load, false, load, up_now, c)) return true;
    }
    return choose_bounded_from(s, h, home, p, total_load, all_up, load, up, c);
}

}  // namespace chring
