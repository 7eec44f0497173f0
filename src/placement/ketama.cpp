// libmemcached's ketama, weighted (CHR_PLACEMENT_KETAMA, also twemproxy's
// `distribution: ketama`) and unweighted (CHR_PLACEMENT_KETAMA_UNWEIGHTED),
// reproduced bit for bit: docs/compat.md.
#include <cmath>
#include <cstdlib>
#include <string>

#include "compat_points.hpp"
#include "base/errors.hpp"
#include "placement.hpp"

namespace chring {
namespace {

using compat::le32;
using compat::Point;
using compat::to_circle;

// libmemcached include/libmemcached-1.0/defaults.h
constexpr uint32_t kKetamaPointsPerServer = 160;   // MEMCACHED_POINTS_PER_SERVER_KETAMA
constexpr uint32_t kUnweightedPointsPerServer = 100;  // MEMCACHED_POINTS_PER_SERVER
constexpr unsigned kMemcachedDefaultPort = 11211;     // MEMCACHED_DEFAULT_PORT
constexpr uint32_t kMd5DigestSize = 16;

// libmemcached stores an IPv6 host without its brackets.
std::string without_brackets(const std::string &host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
    return host;
}

// libmemcached's per-point string prefix for a server given as "host",
// "host:port", "[v6]", "[v6]:port" or "/unix/socket" (hosts.cc update_continuum:
// "%s-%u" when the port is 11211, else "%s:%u-%u"; unix sockets have port 0).
std::string ketama_prefix(const std::string &id) {
    if (!id.empty() && id[0] == '/') return id + ":0";
    size_t colon = id.rfind(':');
    if (colon == std::string::npos || !compat::all_digits(id, colon + 1) || colon + 1 + 5 < id.size())
        return without_brackets(id);  // no port: libmemcached's default, 11211, is elided
    std::string host = without_brackets(id.substr(0, colon));
    unsigned long port = std::strtoul(id.c_str() + colon + 1, nullptr, 10);
    if (port == kMemcachedDefaultPort) return host;
    return host + ":" + std::to_string(port);
}

// Per-point strings "<prefix>-N" for N < count, each digested.
template <class Emit>
void for_each_ketama_digest(const Placement &p, const std::string &id, uint32_t count, Emit &&emit) {
    std::string s = ketama_prefix(id) + "-";
    const size_t base = s.size();
    unsigned char digest[CHR_DIGEST_MAX];
    for (uint32_t n = 0; n < count; ++n) {
        s.resize(base);
        s += std::to_string(n);
        p.hasher->digest(s.data(), s.size(), digest);
        emit(digest);
    }
}

// libmemcached weighted ketama: the points of each live server in IEEE
// single precision, as hosts.cc computes them.
uint32_t ketama_weighted_points(uint32_t weight, float total_weight, float live_servers) {
    volatile float pct = float(weight) / total_weight;  // volatile: round to float at each step
    volatile float per4 = (pct * float(kKetamaPointsPerServer)) / 4.0f;
    volatile float x = per4 * live_servers + 1e-10f;
    return uint32_t(std::floor(float(x))) * 4;
}

// libmemcached hashkit_md5: a key's position is the first LE word of its MD5.
uint64_t md5_position(const Placement &p, const void *key, size_t len) noexcept {
    unsigned char d[CHR_DIGEST_MAX];
    p.hasher->digest(key, len, d);
    return to_circle(le32(d));
}

// Shares of 160 * live servers in total, whatever the weights.
uint64_t weighted_bound(const Placement &, uint32_t weight) noexcept {
    return weight ? kKetamaPointsPerServer : 0;
}

uint64_t unweighted_bound(const Placement &, uint32_t weight) noexcept {
    return uint64_t(weight) * kUnweightedPointsPerServer;
}

chr_status unweighted_weight(uint32_t weight, const char *who) {
    if (weight > 1)
        return fail(CHR_ERANGE,
                    "%s: weight %u is out of range for the ketama-unweighted placement (0..1; "
                    "libmemcached turns weighted for any weight > 1: use CHR_PLACEMENT_KETAMA)",
                    who, weight);
    return CHR_OK;
}

void weighted_points(const Placement &p, const std::vector<Node> &nodes, std::vector<Token> &out) {
    uint64_t total_weight = 0;
    uint32_t live = 0;
    for (const Node &n : nodes) {
        total_weight += n.weight;
        live += n.weight > 0;
    }
    std::vector<Point> points;
    for (uint32_t k = 0; k < nodes.size(); ++k) {
        const Node &n = nodes[k];
        if (n.weight == 0) continue;  // not live: no points, not counted in n or W
        uint32_t count = ketama_weighted_points(n.weight, float(total_weight), float(live));
        for_each_ketama_digest(p, n.id, count / 4, [&](const unsigned char *d) {
            for (int j = 0; j < 4; ++j) points.push_back({to_circle(le32(d + 4 * j)), n.tag, k});
        });
    }
    compat::finish_points(points, false, out);
}

void unweighted_points(const Placement &p, const std::vector<Node> &nodes, std::vector<Token> &out) {
    std::vector<Point> points;
    for (uint32_t k = 0; k < nodes.size(); ++k) {
        const Node &n = nodes[k];
        if (n.weight == 0) continue;
        for_each_ketama_digest(p, n.id, kUnweightedPointsPerServer, [&](const unsigned char *d) {
            points.push_back({to_circle(le32(d)), n.tag, k});
        });
    }
    compat::finish_points(points, false, out);
}

}  // namespace

const PlacementOps ketama_placement = {
    CHR_PLACEMENT_KETAMA, "ketama", "libmemcached weighted ketama / twemproxy ketama (md5)",
    "md5", kMd5DigestSize, false, weighted_bound, nullptr, md5_position, nullptr, weighted_points,
};

const PlacementOps ketama_unweighted_placement = {
    CHR_PLACEMENT_KETAMA_UNWEIGHTED, "ketama-unweighted",
    "libmemcached ketama with MD5 hash, every weight 1 (or 0)",
    "md5", kMd5DigestSize, false, unweighted_bound, unweighted_weight, md5_position, nullptr,
    unweighted_points,
};

}  // namespace chring
