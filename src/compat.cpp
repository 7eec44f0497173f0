#include "compat.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "errors.hpp"

namespace chring {
namespace compat {
namespace {

// libmemcached include/libmemcached-1.0/defaults.h
constexpr uint32_t kKetamaPointsPerServer = 160;   // MEMCACHED_POINTS_PER_SERVER_KETAMA
constexpr uint32_t kUnweightedPointsPerServer = 100;  // MEMCACHED_POINTS_PER_SERVER
constexpr unsigned kMemcachedDefaultPort = 11211;     // MEMCACHED_DEFAULT_PORT
// nginx ngx_http_upstream_hash_module.c: 160 points per unit of weight
constexpr uint32_t kNginxPointsPerWeight = 160;

uint32_t le32(const unsigned char *d) noexcept {
    return uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24;
}
uint32_t be32(const unsigned char *d) noexcept {
    return uint32_t(d[0]) << 24 | uint32_t(d[1]) << 16 | uint32_t(d[2]) << 8 | uint32_t(d[3]);
}
uint64_t to_circle(uint32_t v) noexcept { return uint64_t(v) << 32; }

bool all_digits(const std::string &s, size_t from) {
    if (from >= s.size()) return false;
    for (size_t i = from; i < s.size(); ++i)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

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
    if (colon == std::string::npos || !all_digits(id, colon + 1) || colon + 1 + 5 < id.size())
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
// single precision, as hosts.cc computes them (see docs/compat.md).
uint32_t ketama_weighted_points(uint32_t weight, float total_weight, float live_servers) {
    volatile float pct = float(weight) / total_weight;  // volatile: round to float at each step
    volatile float per4 = (pct * float(kKetamaPointsPerServer)) / 4.0f;
    volatile float x = per4 * live_servers + 1e-10f;
    return uint32_t(std::floor(float(x))) * 4;
}

// nginx: host and port of a `server` text, as ngx_http_upstream_hash_module
// splits peer->server ("unix:" prefix: no port; trailing ":digits": port).
void nginx_split(const std::string &server, std::string &host, std::string &port) {
    if (server.size() >= 5 && strncasecmp(server.c_str(), "unix:", 5) == 0) {
        host = server.substr(5);
        port.clear();
        return;
    }
    size_t colon = server.rfind(':');
    if (colon != std::string::npos && all_digits(server, colon + 1)) {
        host = server.substr(0, colon);
        port = server.substr(colon + 1);
    } else {
        host = server;
        port.clear();
    }
}

uint32_t crc32_of(const Placement &p, const void *data, size_t len) noexcept {
    unsigned char d[CHR_DIGEST_MAX];
    p.hasher->digest(data, len, d);
    return be32(d);
}

}  // namespace

const char *required_hasher(int32_t mode) noexcept {
    switch (mode) {
    case CHR_PLACEMENT_KETAMA:
    case CHR_PLACEMENT_KETAMA_UNWEIGHTED: return "md5";
    case CHR_PLACEMENT_NGINX: return "crc32";
    default: return nullptr;
    }
}

uint64_t point_bound(const Placement &p, uint32_t weight) noexcept {
    switch (p.mode) {
    // Shares of 160 * live servers in total, whatever the weights.
    case CHR_PLACEMENT_KETAMA: return weight ? kKetamaPointsPerServer : 0;
    case CHR_PLACEMENT_KETAMA_UNWEIGHTED: return uint64_t(weight) * kUnweightedPointsPerServer;
    case CHR_PLACEMENT_NGINX: return uint64_t(weight) * kNginxPointsPerWeight;
    default: return uint64_t(weight) * p.tokens_per_weight;
    }
}

chr_status check_weight(const Placement &p, uint32_t weight, const char *who) {
    if (p.mode == CHR_PLACEMENT_KETAMA_UNWEIGHTED && weight > 1)
        return fail(CHR_ERANGE,
                    "%s: weight %u is out of range for the ketama-unweighted placement (0..1; "
                    "libmemcached turns weighted for any weight > 1: use CHR_PLACEMENT_KETAMA)",
                    who, weight);
    return CHR_OK;
}

uint64_t key_position(const Placement &p, const void *key, size_t len) noexcept {
    unsigned char d[CHR_DIGEST_MAX];
    switch (p.mode) {
    case CHR_PLACEMENT_KETAMA:
    case CHR_PLACEMENT_KETAMA_UNWEIGHTED:
        p.hasher->digest(key, len, d);  // libmemcached hashkit_md5: first LE word of MD5
        return to_circle(le32(d));
    case CHR_PLACEMENT_NGINX: return to_circle(crc32_of(p, key, len));  // ngx_crc32_long
    default: return p.hasher->hash64(key, len, p.seed);
    }
}

void build_points(const Placement &p, const std::vector<Node> &nodes, std::vector<uint64_t> &values,
                  std::vector<uint32_t> &owners) {
    struct Point {
        uint64_t value;
        uint64_t tag;
        uint32_t node;
    };
    std::vector<Point> points;
    uint64_t total_weight = 0;
    uint32_t live = 0;
    for (const Node &n : nodes) {
        total_weight += n.weight;
        live += n.weight > 0;
    }

    for (uint32_t k = 0; k < nodes.size(); ++k) {
        const Node &n = nodes[k];
        if (n.weight == 0) continue;  // not live: no points, not counted in n or W
        switch (p.mode) {
        case CHR_PLACEMENT_KETAMA: {
            uint32_t count = ketama_weighted_points(n.weight, float(total_weight), float(live));
            for_each_ketama_digest(p, n.id, count / 4, [&](const unsigned char *d) {
                for (int j = 0; j < 4; ++j) points.push_back({to_circle(le32(d + 4 * j)), n.tag, k});
            });
            break;
        }
        case CHR_PLACEMENT_KETAMA_UNWEIGHTED:
            for_each_ketama_digest(p, n.id, kUnweightedPointsPerServer, [&](const unsigned char *d) {
                points.push_back({to_circle(le32(d)), n.tag, k});
            });
            break;
        case CHR_PLACEMENT_NGINX: {
            std::string host, port;
            nginx_split(n.id, host, port);
            std::string buf = host;
            buf.push_back('\0');
            buf += port;
            const size_t base = buf.size();
            buf.resize(base + 4);
            uint32_t prev = 0;
            for (uint32_t j = 0; j < n.weight * kNginxPointsPerWeight; ++j) {
                unsigned char *le = reinterpret_cast<unsigned char *>(&buf[base]);
                le[0] = uint8_t(prev), le[1] = uint8_t(prev >> 8), le[2] = uint8_t(prev >> 16),
                le[3] = uint8_t(prev >> 24);
                prev = crc32_of(p, buf.data(), buf.size());
                points.push_back({to_circle(prev), n.tag, k});
            }
            break;
        }
        default: break;
        }
    }

    // The original sorts by value with ties in configuration order (libmemcached
    // by server index, glibc's stable qsort in nginx): the tag holds that order.
    std::sort(points.begin(), points.end(), [&](const Point &a, const Point &b) {
        if (a.value != b.value) return a.value < b.value;
        if (a.tag != b.tag) return a.tag < b.tag;
        return a.node < b.node;
    });
    if (p.mode == CHR_PLACEMENT_NGINX)  // nginx keeps the first point of each value
        points.erase(std::unique(points.begin(), points.end(),
                                 [](const Point &a, const Point &b) { return a.value == b.value; }),
                     points.end());
    values.resize(points.size());
    owners.resize(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
        values[i] = points[i].value;
        owners[i] = points[i].node;
    }
}

}  // namespace compat
}  // namespace chring
