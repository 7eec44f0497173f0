// nginx `hash $key consistent;` (ngx_http_upstream_hash_module),
// CHR_PLACEMENT_NGINX, reproduced bit for bit: docs/compat.md.
#include <strings.h>

#include <string>

#include "compat_points.hpp"
#include "placement.hpp"

namespace chring {
namespace {

using compat::Point;
using compat::to_circle;

constexpr uint32_t kNginxPointsPerWeight = 160;  // 160 points per unit of weight
constexpr uint32_t kCrc32DigestSize = 4;

uint32_t be32(const unsigned char *d) noexcept {
    return uint32_t(d[0]) << 24 | uint32_t(d[1]) << 16 | uint32_t(d[2]) << 8 | uint32_t(d[3]);
}

// Host and port of a `server` text, as ngx_http_upstream_hash_module splits
// peer->server ("unix:" prefix: no port; trailing ":digits": port).
void nginx_split(const std::string &server, std::string &host, std::string &port) {
    if (server.size() >= 5 && strncasecmp(server.c_str(), "unix:", 5) == 0) {
        host = server.substr(5);
        port.clear();
        return;
    }
    size_t colon = server.rfind(':');
    if (colon != std::string::npos && compat::all_digits(server, colon + 1)) {
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

// ngx_crc32_long of the key.
uint64_t crc32_position(const Placement &p, const void *key, size_t len) noexcept {
    return to_circle(crc32_of(p, key, len));
}

uint64_t nginx_bound(const Placement &, uint32_t weight) noexcept {
    return uint64_t(weight) * kNginxPointsPerWeight;
}

// Chained CRC-32 of host "\0" port and the previous point, little-endian.
void nginx_points(const Placement &p, const std::vector<Node> &nodes, std::vector<Token> &out) {
    std::vector<Point> points;
    for (uint32_t k = 0; k < nodes.size(); ++k) {
        const Node &n = nodes[k];
        if (n.weight == 0) continue;
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
    }
    compat::finish_points(points, true, out);  // nginx keeps the first point of each value
}

}  // namespace

const PlacementOps nginx_placement = {
    CHR_PLACEMENT_NGINX, "nginx", "nginx 'hash $key consistent' (crc32)",
    "crc32", kCrc32DigestSize, false, nginx_bound, nullptr, crc32_position, nullptr, nginx_points,
};

}  // namespace chring
