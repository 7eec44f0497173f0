// api_ops: the input is a sequence of C API operations (rings with various
// options and placements, adds, removes, weight changes and batches, valid
// and not, snapshots held across later updates and across chr_ring_free,
// lookups, replicas, batch lookups, fingerprints), run against a small
// reference model. Every status is predicted by the model; every owner and
// replica list is compared with a brute-force oracle over the model's own
// token list (native placement: tokens H(id "#" i) sorted by value, then id
// bytes, successor wins, replicas skip nodes already chosen); a failed
// update must leave the fingerprint unchanged; held snapshots are re-checked
// after every later update and after the ring is freed. Skewed test hashers
// force ties, a single full bucket and tokens at both ends of the circle.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "chring.h"

namespace {

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            std::fprintf(stderr, "api_ops: check failed at line %d: %s\n  ", __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                         \
            std::fprintf(stderr, "\n  last error: %s\n", chr_last_error());            \
            std::abort();                                                              \
        }                                                                              \
    } while (0)

// Above this many tokens in a successful update the operation is skipped:
// the model regenerates every token, and the fuzzer must stay fast. Updates
// that fail on the 2^24 limit are still made (they build nothing).
// The oracle's and the checks' own loops are left out of coverage: their
// iteration counts would flood libFuzzer with features of the harness, not
// of chring.
#define ORACLE __attribute__((no_sanitize("coverage")))

constexpr size_t kTokenBudget = 3000;
constexpr size_t kMaxHeld = 4;

// ---- test hashers ---------------------------------------------------------

ORACLE uint64_t fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}
ORACLE uint64_t fnv_mix(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    uint64_t h = 0xcbf29ce484222325ull ^ fmix64(seed);
    for (size_t i = 0; i < len; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return fmix64(h);
}
// Well spread.
ORACLE uint64_t hash_spread(const void *d, size_t n, uint64_t s) { return fnv_mix(d, n, s); }
// One value for everything: every token ties, one bucket holds the ring.
ORACLE uint64_t hash_const(const void *, size_t, uint64_t s) { return fmix64(s ^ 0x5bd1e995u); }
// Four values: ties between nodes, keys landing exactly on tokens.
ORACLE uint64_t hash_few(const void *d, size_t n, uint64_t s) { return fnv_mix(d, n, s) >> 62 << 62; }
// Clustered in one prefix bucket (the top 40 bits fixed).
ORACLE uint64_t hash_bucket(const void *d, size_t n, uint64_t s) {
    return 0x5A5A5A5A5A000000ull | (fnv_mix(d, n, s) & 0xFFFF);
}
// At both ends of the circle: 0..7 and 2^64-8..2^64-1 (wrap-around).
ORACLE uint64_t hash_ends(const void *d, size_t n, uint64_t s) {
    uint64_t h = fnv_mix(d, n, s);
    return (h & 8) ? UINT64_MAX - (h & 7) : (h & 7);
}

struct TestHasher {
    const char *name;
    chr_hash64_fn fn;
};
const TestHasher kTestHashers[] = {
    {"fz-spread", hash_spread}, {"fz-const", hash_const}, {"fz-few", hash_few},
    {"fz-bucket", hash_bucket}, {"fz-ends", hash_ends},
};
constexpr size_t kNumTestHashers = sizeof kTestHashers / sizeof kTestHashers[0];

chr_hasher g_descs[kNumTestHashers];
bool g_have_xxh3, g_have_md5, g_have_crc32;

// ---- the model ------------------------------------------------------------

struct MNode {
    uint32_t weight = 0;
    std::string zone;
    uint64_t tag = 0;
};
using Members = std::map<std::string, MNode>;  // std::string order = unsigned byte order

struct Config {
    int32_t placement = CHR_PLACEMENT_NATIVE;
    uint32_t tpw = CHR_DEFAULT_TOKENS_PER_WEIGHT;
    uint64_t seed = 0;
    std::string hasher;        // resolved name
    chr_hash64_fn fn = nullptr;  // native test hasher, or nullptr for xxh3 (via the library)
};

struct Tok {
    uint64_t value;
    uint32_t node;
    bool operator<(const Tok &o) const { return value != o.value ? value < o.value : node < o.node; }
};

// What one snapshot must show.
struct Expected {
    Config cfg;
    std::vector<std::string> ids;
    std::vector<MNode> nodes;
    std::vector<uint32_t> tokens_of;
    std::vector<double> ownership;
    std::vector<Tok> tokens;
    size_t eligible = 0;
    uint64_t fingerprint = 0;
};

ORACLE uint64_t native_hash(const Config &c, const void *data, size_t len) {
    if (c.fn) return c.fn(data, len, c.seed);
    uint64_t h = 0;
    chr_status st = chr_hasher_hash(c.hasher.c_str(), data, len, c.seed, &h);
    CHECK(st == CHR_OK, "chr_hasher_hash(%s) = %d", c.hasher.c_str(), st);
    return h;
}

ORACLE uint64_t key_position(const Config &c, const void *key, size_t len) {
    if (c.placement == CHR_PLACEMENT_NATIVE) return native_hash(c, key, len);
    unsigned char d[CHR_DIGEST_MAX];
    size_t size = 0;
    const char *name = c.placement == CHR_PLACEMENT_NGINX ? "crc32" : "md5";
    chr_status st = chr_hasher_digest(name, key, len, d, sizeof d, &size);
    CHECK(st == CHR_OK, "digest %s: %d", name, st);
    uint32_t w = c.placement == CHR_PLACEMENT_NGINX
                     ? (uint32_t(d[0]) << 24 | uint32_t(d[1]) << 16 | uint32_t(d[2]) << 8 | d[3])
                     : (uint32_t(d[0]) | uint32_t(d[1]) << 8 | uint32_t(d[2]) << 16 | uint32_t(d[3]) << 24);
    return uint64_t(w) << 32;
}

// ---- the compatibility placements' rules (docs/compat.md) ----------------

ORACLE void md5(const std::string &s, unsigned char out[16]) {
    size_t size = 0;
    CHECK(chr_hasher_digest("md5", s.data(), s.size(), out, 16, &size) == CHR_OK && size == 16, "md5");
}

ORACLE uint32_t crc32_be(const std::string &s) {
    unsigned char d[4];
    size_t size = 0;
    CHECK(chr_hasher_digest("crc32", s.data(), s.size(), d, 4, &size) == CHR_OK && size == 4, "crc32");
    return uint32_t(d[0]) << 24 | uint32_t(d[1]) << 16 | uint32_t(d[2]) << 8 | d[3];
}

ORACLE bool digits_only(const std::string &s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// libmemcached's point prefix for a server text: a unix socket path gets
// ":0"; a port is the 1 to 5 digits after the last ':' (else the whole text
// is the host); brackets around the host are dropped; port 11211 is left out.
ORACLE std::string ketama_prefix(const std::string &id) {
    if (id[0] == '/') return id + ":0";
    size_t colon = id.rfind(':');
    std::string host = id, port;
    if (colon != std::string::npos && digits_only(id.substr(colon + 1)) && id.size() - colon - 1 <= 5) {
        host = id.substr(0, colon);
        port = std::to_string(std::stoul(id.substr(colon + 1)));
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    return port.empty() || port == "11211" ? host : host + ":" + port;
}

// nginx's split of a `server` text: "unix:" (any case) leaves no port, a
// trailing ":digits" is the port, else it is all host.
ORACLE void nginx_server(const std::string &id, std::string &host, std::string &port) {
    std::string lower = id.substr(0, 5);
    for (char &c : lower) c = char(std::tolower((unsigned char)c));
    port.clear();
    host = id;
    if (lower == "unix:") {
        host = id.substr(5);
        return;
    }
    size_t colon = id.rfind(':');
    if (colon != std::string::npos && digits_only(id.substr(colon + 1))) {
        host = id.substr(0, colon);
        port = id.substr(colon + 1);
    }
}

// The token bound the library checks against CHR_TOKENS_MAX.
uint64_t point_bound(const Config &c, uint32_t w) {
    switch (c.placement) {
    case CHR_PLACEMENT_KETAMA: return w ? 160 : 0;
    case CHR_PLACEMENT_KETAMA_UNWEIGHTED: return uint64_t(w) * 100;
    case CHR_PLACEMENT_NGINX: return uint64_t(w) * 160;
    default: return uint64_t(w) * c.tpw;
    }
}
uint64_t total_bound(const Config &c, const Members &m) {
    uint64_t t = 0;
    for (const auto &kv : m) t += point_bound(c, kv.second.weight);
    return t;
}

// Ownership exactly as documented: token k owns (value[k-1], value[k]],
// token 0 the wrapping arc; summed in 128 bits, scaled by 2^-64.
ORACLE void fill_ownership(Expected &e) {
    __extension__ typedef unsigned __int128 u128;
    std::vector<u128> arcs(e.nodes.size(), 0);
    const size_t T = e.tokens.size();
    for (size_t k = 0; k < T; ++k) {
        u128 arc = k ? u128(e.tokens[k].value - e.tokens[k - 1].value)
                     : (u128(1) << 64) - e.tokens[T - 1].value + e.tokens[0].value;
        arcs[e.tokens[k].node] += arc;
    }
    e.ownership.resize(e.nodes.size());
    for (size_t i = 0; i < e.nodes.size(); ++i) e.ownership[i] = double(arcs[i]) * 0x1p-64;
}

// A node's native tokens H(id "#" i), i < count, as the documented rule
// derives them.
ORACLE void node_tokens(const Config &c, const std::string &id, uint32_t count, std::vector<uint64_t> &out) {
    out.clear();
    std::string s = id + "#";
    for (uint32_t i = 0; i < count; ++i) {
        s.resize(id.size() + 1);
        s += std::to_string(i);
        out.push_back(native_hash(c, s.data(), s.size()));
    }
}

// Per-node token values of one ring's configuration, so that an update
// hashes only the nodes it changed.
using TokenCache = std::map<std::string, std::vector<uint64_t>>;

// The native rule: every node's tokens, sorted by value, ties by node index
// (id bytes); a node's own equal tokens are interchangeable.
ORACLE Expected native_expected(const Config &c, const Members &m, TokenCache &cache) {
    Expected e;
    e.cfg = c;
    for (const auto &kv : m) {
        e.ids.push_back(kv.first);
        e.nodes.push_back(kv.second);
    }
    e.tokens_of.assign(e.nodes.size(), 0);
    for (uint32_t k = 0; k < e.nodes.size(); ++k) {
        const uint32_t count = e.nodes[k].weight * c.tpw;
        std::vector<uint64_t> &values = cache[e.ids[k]];
        if (values.size() != count) node_tokens(c, e.ids[k], count, values);
        for (uint64_t v : values) e.tokens.push_back({v, k});
        e.tokens_of[k] = count;
        e.eligible += count > 0;
    }
    std::sort(e.tokens.begin(), e.tokens.end());
    fill_ownership(e);
    return e;
}

ORACLE size_t successor(const Expected &e, uint64_t h) {
    size_t k = size_t(std::lower_bound(e.tokens.begin(), e.tokens.end(), Tok{h, 0}) - e.tokens.begin());
    return k == e.tokens.size() ? 0 : k;
}

ORACLE std::vector<uint32_t> oracle_replicas(const Expected &e, uint64_t h, size_t n) {
    std::vector<uint32_t> out;
    n = std::min(n, e.eligible);
    if (e.tokens.empty()) return out;
    std::vector<bool> seen(e.nodes.size(), false);
    const size_t start = successor(e, h), T = e.tokens.size();
    for (size_t j = 0; j < T && out.size() < n; ++j) {
        uint32_t o = e.tokens[(start + j) % T].node;
        if (!seen[o]) {
            seen[o] = true;
            out.push_back(o);
        }
    }
    CHECK(out.size() == n, "oracle found %zu of %zu replicas", out.size(), n);
    return out;
}

// ---- comparisons ----------------------------------------------------------

ORACLE void check_ref(const Expected &e, uint32_t i, const chr_node_ref &r, const char *what) {
    CHECK(i < e.nodes.size(), "%s: index", what);
    const MNode &n = e.nodes[i];
    CHECK(r.index == i, "%s: index %u, want %u", what, r.index, i);
    CHECK(r.id_len == e.ids[i].size() && std::memcmp(r.id, e.ids[i].data(), r.id_len) == 0,
          "%s: id of node %u", what, i);
    CHECK(r.zone_len == n.zone.size() && std::memcmp(r.zone, n.zone.data(), r.zone_len) == 0,
          "%s: zone of node %u", what, i);
    CHECK(r.tag == n.tag && r.weight == n.weight && r.tokens == e.tokens_of[i] && r.flags == 0,
          "%s: node %u tag %llu/%llu weight %u/%u tokens %u/%u", what, i, (unsigned long long)r.tag,
          (unsigned long long)n.tag, r.weight, n.weight, r.tokens, e.tokens_of[i]);
    CHECK(r.ownership == e.ownership[i], "%s: ownership of node %u %.17g, want %.17g", what, i,
          r.ownership, e.ownership[i]);
}

ORACLE void check_view(const Expected &e, uint32_t i, const chr_node_view &v, const char *what) {
    CHECK(i < e.nodes.size(), "%s: index", what);
    const MNode &n = e.nodes[i];
    CHECK(v.index == i, "%s: index %u, want %u", what, v.index, i);
    CHECK(v.id_len == e.ids[i].size() && std::memcmp(v.id, e.ids[i].data(), v.id_len) == 0,
          "%s: id of node %u", what, i);
    CHECK(v.zone != nullptr && v.zone_len == n.zone.size() &&
              std::memcmp(v.zone, n.zone.data(), v.zone_len) == 0,
          "%s: zone of node %u", what, i);
    CHECK(v.tag == n.tag && v.weight == n.weight && v.tokens == e.tokens_of[i] && v.flags == 0,
          "%s: node %u fields", what, i);
    CHECK(v.ownership == e.ownership[i], "%s: ownership of node %u", what, i);
}

// Everything a snapshot shows, against `e`; keys probed as given.
ORACLE void check_snapshot(const chr_snapshot *s, const Expected &e, const std::vector<std::string> &keys,
                    bool all_tokens = true) {
    size_t count = 0;
    CHECK(chr_snapshot_node_count(s, &count) == CHR_OK && count == e.nodes.size(),
          "snapshot node count %zu, want %zu", count, e.nodes.size());
    CHECK(chr_snapshot_token_count(s, &count) == CHR_OK && count == e.tokens.size(),
          "snapshot token count %zu, want %zu", count, e.tokens.size());
    uint64_t fp = 0;
    CHECK(chr_snapshot_fingerprint(s, &fp) == CHR_OK && fp == e.fingerprint, "snapshot fingerprint changed");
    for (uint32_t i = 0; i < e.nodes.size(); ++i) {
        chr_node_view v;
        CHECK(chr_snapshot_node(s, i, &v) == CHR_OK, "chr_snapshot_node(%u)", i);
        check_view(e, i, v, "chr_snapshot_node");
    }
    chr_node_view v;
    CHECK(chr_snapshot_node(s, e.nodes.size(), &v) == CHR_ERANGE, "chr_snapshot_node past the end");
    // All tokens, or a stride through them.
    const size_t stride = all_tokens ? 1 : std::max<size_t>(1, e.tokens.size() / 16);
    for (size_t k = 0; k < e.tokens.size(); k += stride) {
        uint64_t value = 0;
        uint32_t owner = 0;
        CHECK(chr_snapshot_token(s, k, &value, &owner) == CHR_OK, "chr_snapshot_token(%zu)", k);
        CHECK(value == e.tokens[k].value && owner == e.tokens[k].node,
              "token %zu: %016llx/%u, want %016llx/%u", k, (unsigned long long)value, owner,
              (unsigned long long)e.tokens[k].value, e.tokens[k].node);
    }
    uint64_t value;
    uint32_t owner;
    CHECK(chr_snapshot_token(s, e.tokens.size(), &value, &owner) == CHR_ERANGE, "token past the end");

    std::vector<const void *> ptrs;
    std::vector<size_t> lens;
    for (const std::string &key : keys) {
        ptrs.push_back(key.data());
        lens.push_back(key.size());
        chr_node_view out;
        chr_status st = chr_snapshot_lookup(s, key.data(), key.size(), &out);
        if (e.tokens.empty()) {
            CHECK(st == CHR_EEMPTY, "snapshot lookup on an empty ring: %d", st);
            continue;
        }
        CHECK(st == CHR_OK, "chr_snapshot_lookup: %d", st);
        const uint64_t h = key_position(e.cfg, key.data(), key.size());
        check_view(e, e.tokens[successor(e, h)].node, out, "chr_snapshot_lookup");
        size_t n = 1 + key.size() % (e.nodes.size() + 2);
        std::vector<chr_node_view> reps(n);
        size_t got = 0;
        CHECK(chr_snapshot_replicas(s, key.data(), key.size(), n, reps.data(), &got) == CHR_OK,
              "chr_snapshot_replicas");
        std::vector<uint32_t> want = oracle_replicas(e, h, n);
        CHECK(got == want.size(), "snapshot replicas: %zu, want %zu", got, want.size());
        for (size_t j = 0; j < got; ++j) check_view(e, want[j], reps[j], "chr_snapshot_replicas");
    }
    std::vector<uint32_t> idx(keys.size() + 1, UINT32_MAX);
    chr_status st = chr_snapshot_lookup_batch(s, ptrs.data(), lens.data(), keys.size(), idx.data());
    if (!keys.empty() && e.tokens.empty()) {
        CHECK(st == CHR_EEMPTY, "batch on an empty ring: %d", st);
    } else {
        CHECK(st == CHR_OK, "chr_snapshot_lookup_batch: %d", st);
        for (size_t j = 0; j < keys.size(); ++j) {
            uint64_t h = key_position(e.cfg, keys[j].data(), keys[j].size());
            CHECK(idx[j] == e.tokens[successor(e, h)].node, "batch key %zu: %u", j, idx[j]);
        }
    }
}

// ---- the run --------------------------------------------------------------

struct Held {
    chr_snapshot *snap;
    Expected exp;
};

// The canonical text of a ring's routing state: equal text, equal fingerprint.
ORACLE std::string state_key(const Config &c, const Members &m) {
    std::string k = std::to_string(c.placement) + "/" + std::to_string(c.tpw) + "/" +
                    std::to_string(c.seed) + "/" + c.hasher + "|";
    for (const auto &kv : m) {
        // The zone too: fingerprint version 2 covers zones.
        k += std::to_string(kv.first.size()) + ":" + kv.first + "=" + std::to_string(kv.second.weight) + "@" +
             std::to_string(kv.second.zone.size()) + ":" + kv.second.zone + ";";
    }
    return k;
}

class Runner {
public:
    explicit Runner(FuzzedDataProvider &in) : in_(in) {}
    ~Runner() {
        finish_ring();
        for (Held &h : held_) chr_snapshot_release(h.snap);
    }

    void run() {
        int steps = 0;
        while (in_.remaining_bytes() > 0 && steps++ < 64) step();
        if (ring_) verify_ring(probe_keys(), true);
        check_held();
    }

private:
    FuzzedDataProvider &in_;
    chr_ring *ring_ = nullptr;
    Config cfg_;
    Members model_;
    Expected current_;  // what the ring's current snapshot must show
    uint64_t fingerprint_ = 0;
    std::vector<Held> held_;
    std::map<std::string, uint64_t> fingerprints_;  // state_key -> fingerprint seen
    std::vector<std::string> keys_;                  // keys seen, probed again later
    TokenCache cache_;                               // valid for cfg_

    // -- input decoding --

    std::string bytes(size_t max) { return in_.ConsumeBytesAsString(in_.ConsumeIntegralInRange<size_t>(0, max)); }

    struct Blob {
        std::string data;
        bool null = false;  // pass NULL with data.size() as the length
        size_t len() const { return data.size(); }
        const void *ptr() const { return null ? nullptr : data.data(); }
    };

    Blob id() {
        static const char *const pool[] = {"a", "b", "c", "node-1", "node-2", "node-10", "ab", "B", "~"};
        Blob b;
        uint8_t sel = in_.ConsumeIntegral<uint8_t>();
        if (sel < 9 * 16) b.data = pool[sel % 9];
        else if (sel < 160) b.data = std::string("a\0", 2);
        else if (sel < 170) b.data = std::string(1, char(0xff));
        else if (sel < 175) b.data = std::string(CHR_NODE_ID_MAX, 'z');
        else if (sel < 178) b.data = std::string(CHR_NODE_ID_MAX + 1, 'z');  // ERANGE
        else if (sel < 181) b.data = "";                                         // EINVAL
        else if (sel < 184) { b.data = "abc"; b.null = true; }                   // EINVAL
        else if (sel < 186) { b.data = ""; b.null = true; }                      // EINVAL (empty)
        else {
            b.data = bytes(24);
            if (b.data.empty()) b.data = "x";
        }
        return b;
    }

    Blob zone() {
        Blob b;
        uint8_t sel = in_.ConsumeIntegralInRange<uint8_t>(0, 7);
        switch (sel) {
        case 0: b.null = true; break;
        case 1: b.data = "eu-west-1a"; break;
        case 2: b.data = std::string(CHR_ZONE_MAX, 'q'); break;
        case 3: b.data = std::string(CHR_ZONE_MAX + 1, 'q'); break;  // ERANGE
        case 4: b.data = "zz"; b.null = true; break;                 // EINVAL
        default: b.data = bytes(12); break;
        }
        return b;
    }

    uint32_t weight() {
        uint8_t sel = in_.ConsumeIntegral<uint8_t>();
        if (sel < 200) return sel % 5;
        switch (sel % 8) {
        case 0: return CHR_WEIGHT_MAX;
        case 1: return CHR_WEIGHT_MAX + 1;
        case 2: return UINT32_MAX;
        case 3: return (CHR_TOKENS_MAX / std::max<uint32_t>(cfg_.tpw, 1)) + 1;
        default: return in_.ConsumeIntegral<uint32_t>();
        }
    }

    // -- model predictions --

    // One change against the working membership, in the library's order of
    // checks; CHR_OK applies it to `m`.
    chr_status model_change(const chr_change &ch, Members &m, uint64_t &total) const {
        if (ch.op != CHR_OP_ADD && ch.op != CHR_OP_REMOVE && ch.op != CHR_OP_SET_WEIGHT) return CHR_EINVAL;
        if (!ch.id && ch.id_len) return CHR_EINVAL;
        if (ch.id_len == 0) return CHR_EINVAL;
        if (ch.id_len > CHR_NODE_ID_MAX) return CHR_ERANGE;
        std::string key(static_cast<const char *>(ch.id), ch.id_len);
        auto it = m.find(key);
        // The change's own arguments, then the placement's weight rule, then
        // the membership.
        if (ch.op != CHR_OP_REMOVE && ch.weight > CHR_WEIGHT_MAX) return CHR_ERANGE;
        if (ch.op == CHR_OP_ADD) {
            if (!ch.zone && ch.zone_len) return CHR_EINVAL;
            if (ch.zone_len > CHR_ZONE_MAX) return CHR_ERANGE;
        }
        if (ch.op != CHR_OP_REMOVE && cfg_.placement == CHR_PLACEMENT_KETAMA_UNWEIGHTED && ch.weight > 1)
            return CHR_ERANGE;
        if (ch.op == CHR_OP_ADD) {
            if (it != m.end()) return CHR_EEXIST;
            MNode n;
            n.weight = ch.weight;
            if (ch.zone_len) n.zone.assign(static_cast<const char *>(ch.zone), ch.zone_len);
            n.tag = ch.tag;
            m[key] = n;
            total += point_bound(cfg_, ch.weight);
        } else {
            if (it == m.end()) return CHR_ENOENT;
            total -= point_bound(cfg_, it->second.weight);
            if (ch.op == CHR_OP_REMOVE) {
                m.erase(it);
            } else {
                it->second.weight = ch.weight;
                total += point_bound(cfg_, ch.weight);
            }
        }
        if (total > CHR_TOKENS_MAX) return CHR_ERANGE;
        return CHR_OK;
    }

    // -- checks against the ring --

    // A compatibility ring's points, rebuilt from docs/compat.md alone:
    // the hashes come from the md5 / crc32 hashers, everything else (the
    // server text rules, the point counts, the order, nginx's duplicate
    // removal) is computed here.
    ORACLE Expected compat_expected(const Members &m) {
        Expected e;
        e.cfg = cfg_;
        for (const auto &kv : m) {
            e.ids.push_back(kv.first);
            e.nodes.push_back(kv.second);
        }
        struct Point {
            uint64_t value, tag;
            uint32_t node;
        };
        std::vector<Point> points;
        uint64_t total_weight = 0;
        uint32_t live = 0;
        for (const MNode &n : e.nodes) {
            total_weight += n.weight;
            live += n.weight > 0;
        }
        for (uint32_t k = 0; k < e.nodes.size(); ++k) {
            const uint32_t w = e.nodes[k].weight;
            if (w == 0) continue;  // not live
            const uint64_t tag = e.nodes[k].tag;
            if (cfg_.placement == CHR_PLACEMENT_NGINX) {
                std::string host, port;
                nginx_server(e.ids[k], host, port);
                std::string buf = host + std::string(1, '\0') + port + "....";
                uint32_t prev = 0;
                for (uint32_t j = 0; j < w * 160; ++j) {
                    for (int b = 0; b < 4; ++b) buf[buf.size() - 4 + b] = char(prev >> (8 * b));
                    prev = crc32_be(buf);
                    points.push_back({uint64_t(prev) << 32, tag, k});
                }
                continue;
            }
            const bool unweighted = cfg_.placement == CHR_PLACEMENT_KETAMA_UNWEIGHTED;
            uint32_t digests = 100;
            if (!unweighted) {
                volatile float pct = float(w) / float(total_weight);
                volatile float per4 = (pct * 160.0f) / 4.0f;
                volatile float x = per4 * float(live) + 1e-10f;
                digests = uint32_t(std::floor(float(x)));
            }
            const std::string prefix = ketama_prefix(e.ids[k]);
            for (uint32_t N = 0; N < digests; ++N) {
                unsigned char d[16];
                md5(prefix + "-" + std::to_string(N), d);
                for (int j = 0; j < (unweighted ? 1 : 4); ++j) {
                    uint32_t word = uint32_t(d[4 * j]) | uint32_t(d[4 * j + 1]) << 8 |
                                    uint32_t(d[4 * j + 2]) << 16 | uint32_t(d[4 * j + 3]) << 24;
                    points.push_back({uint64_t(word) << 32, tag, k});
                }
            }
        }
        std::sort(points.begin(), points.end(), [](const Point &a, const Point &b) {
            return a.value != b.value ? a.value < b.value : a.tag != b.tag ? a.tag < b.tag : a.node < b.node;
        });
        e.tokens_of.assign(e.nodes.size(), 0);
        for (size_t i = 0; i < points.size(); ++i) {
            // nginx keeps the first point of each value.
            if (cfg_.placement == CHR_PLACEMENT_NGINX && i && points[i].value == points[i - 1].value) continue;
            e.tokens.push_back({points[i].value, points[i].node});
            ++e.tokens_of[points[i].node];
        }
        for (uint32_t c : e.tokens_of) e.eligible += c > 0;
        fill_ownership(e);
        return e;
    }

    Expected expected_for(const Members &m) {
        if (cache_.size() > 64) cache_.clear();
        Expected e = cfg_.placement == CHR_PLACEMENT_NATIVE ? native_expected(cfg_, m, cache_) : compat_expected(m);
        return e;
    }

    uint64_t ring_fingerprint() {
        uint64_t fp = 0;
        CHECK(chr_ring_fingerprint(ring_, &fp) == CHR_OK, "chr_ring_fingerprint");
        return fp;
    }

    // After a successful update: the ring matches the model.
    void updated() {
        current_ = expected_for(model_);
        uint64_t fp = ring_fingerprint();
        current_.fingerprint = fp;
        // Same routing state, same fingerprint (whatever the history); a
        // different state, a different one.
        std::string key = state_key(cfg_, model_);
        auto [it, fresh] = fingerprints_.emplace(key, fp);
        CHECK(it->second == fp, "same membership, different fingerprint");
        if (fresh)
            for (const auto &kv : fingerprints_)
                CHECK(kv.first == key || kv.second != fp, "two memberships share a fingerprint");
        fingerprint_ = fp;
        verify_ring({}, false);
        check_held(false);
    }

    void failed(chr_status st, chr_status want, const char *what) {
        CHECK(st == want, "%s returned %d, the model says %d", what, st, want);
        CHECK(std::strlen(chr_last_error()) > 0, "%s failed without a message", what);
        CHECK(ring_fingerprint() == fingerprint_, "failed %s changed the fingerprint", what);
        verify_ring({}, false);  // members, weights, zones, tags, tokens and ownership as before
    }

    // The ring's own reads against current_.
    ORACLE void verify_ring(const std::vector<std::string> &keys, bool full) {
        const Expected &e = current_;
        size_t n = 0;
        CHECK(chr_ring_node_count(ring_, &n) == CHR_OK && n == e.nodes.size(), "node count %zu", n);
        CHECK(chr_ring_token_count(ring_, &n) == CHR_OK && n == e.tokens.size(), "token count %zu, want %zu",
              n, e.tokens.size());
        std::vector<chr_node_ref> refs(e.nodes.size() + 1);
        size_t count = 0;
        if (!e.nodes.empty()) {
            CHECK(chr_ring_nodes(ring_, refs.data(), e.nodes.size() - 1, &count) == CHR_ERANGE &&
                      count == e.nodes.size(),
                  "chr_ring_nodes with a short buffer");
        }
        CHECK(chr_ring_nodes(ring_, refs.data(), refs.size(), &count) == CHR_OK && count == e.nodes.size(),
              "chr_ring_nodes");
        for (uint32_t i = 0; i < count; ++i) check_ref(e, i, refs[i], "chr_ring_nodes");
        for (uint32_t i = 0; i < e.nodes.size(); ++i) {
            double f = -1;
            CHECK(chr_ring_ownership(ring_, e.ids[i].data(), e.ids[i].size(), &f) == CHR_OK &&
                      f == e.ownership[i],
                  "chr_ring_ownership of node %u", i);
        }
        for (const std::string &key : keys) lookup(key);
        if (full) {
            chr_snapshot *s = nullptr;
            CHECK(chr_ring_snapshot(ring_, &s) == CHR_OK, "chr_ring_snapshot");
            check_snapshot(s, e, keys);
            chr_snapshot_release(s);
        }
    }

    void lookup(const std::string &key) {
        const Expected &e = current_;
        chr_node_ref ref;
        chr_status st = chr_ring_lookup(ring_, key.data(), key.size(), &ref);
        if (e.tokens.empty()) {
            CHECK(st == CHR_EEMPTY, "lookup on an empty ring: %d", st);
            return;
        }
        CHECK(st == CHR_OK, "chr_ring_lookup: %d", st);
        const uint64_t h = key_position(e.cfg, key.data(), key.size());
        check_ref(e, e.tokens[successor(e, h)].node, ref, "chr_ring_lookup");
    }

    void replicas(const std::string &key, size_t n) {
        const Expected &e = current_;
        std::vector<chr_node_ref> out(std::max<size_t>(n, 1));
        size_t got = 0;
        chr_status st = chr_ring_replicas(ring_, key.data(), key.size(), n, out.data(), &got);
        if (n == 0) return failed_read(st, CHR_EINVAL, "replicas with n = 0");
        if (e.tokens.empty()) return failed_read(st, CHR_EEMPTY, "replicas on an empty ring");
        CHECK(st == CHR_OK, "chr_ring_replicas: %d", st);
        const uint64_t h = key_position(e.cfg, key.data(), key.size());
        std::vector<uint32_t> want = oracle_replicas(e, h, n);
        CHECK(got == want.size(), "replicas: %zu, want %zu", got, want.size());
        for (size_t j = 0; j < got; ++j) check_ref(e, want[j], out[j], "chr_ring_replicas");
    }

    // chr_ring_ownership of any id: every status as documented.
    void ownership(const Blob &b) {
        double f = -1;
        chr_status st = chr_ring_ownership(ring_, b.ptr(), b.len(), &f);
        if (!b.ptr() || b.len() == 0) return failed_read(st, CHR_EINVAL, "ownership of a NULL or empty id");
        if (b.len() > CHR_NODE_ID_MAX) return failed_read(st, CHR_ERANGE, "ownership of an over-long id");
        auto it = std::find(current_.ids.begin(), current_.ids.end(), b.data);
        if (it == current_.ids.end()) return failed_read(st, CHR_ENOENT, "ownership of a non-member");
        CHECK(st == CHR_OK && f == current_.ownership[size_t(it - current_.ids.begin())], "ownership: %d", st);
    }

    // A size query (NULL out, capacity 0) and successful reads leave
    // chr_last_error() as it was.
    void size_query() {
        chr_node_ref ref;
        CHECK(chr_ring_lookup(nullptr, "k", 1, &ref) == CHR_EINVAL, "lookup on a NULL ring");
        const std::string before = chr_last_error();
        size_t count = 12345;
        chr_status st = chr_ring_nodes(ring_, nullptr, 0, &count);
        CHECK(st == (current_.nodes.empty() ? CHR_OK : CHR_ERANGE) && count == current_.nodes.size(),
              "size query: %d, %zu nodes", st, count);
        if (!current_.tokens.empty()) lookup("size-query");
        uint64_t fp = 0;
        CHECK(chr_ring_fingerprint(ring_, &fp) == CHR_OK && fp == fingerprint_, "fingerprint");
        CHECK(before == chr_last_error(), "a size query or a successful read changed chr_last_error()");
    }

    void failed_read(chr_status st, chr_status want, const char *what) {
        CHECK(st == want, "%s returned %d, want %d", what, st, want);
    }

    std::vector<std::string> probe_keys() {
        std::vector<std::string> keys(keys_.end() - std::min<size_t>(keys_.size(), 6), keys_.end());
        keys.push_back("");
        keys.push_back("user:42");
        return keys;
    }

    // Every held snapshot still shows what it showed when taken: after an
    // update, its members, counts, fingerprint and two keys (`full`: every
    // token and the recent keys as well).
    ORACLE void check_held(bool full = true) {
        std::vector<std::string> keys = full ? probe_keys() : std::vector<std::string>{"", "user:42"};
        for (const Held &h : held_) check_snapshot(h.snap, h.exp, keys, full);
    }

    void finish_ring() {
        if (!ring_) return;
        chr_ring_free(ring_);  // held snapshots stay valid
        ring_ = nullptr;
        model_.clear();
    }

    // -- operations --

    void op_new() {
        finish_ring();
        chr_options o = CHR_OPTIONS_INIT;
        bool use_null = in_.ConsumeIntegralInRange<uint8_t>(0, 15) == 0;
        chr_status want = CHR_OK;
        Config c;
        std::string hasher_name;
        if (!use_null) {
            uint8_t v = in_.ConsumeIntegralInRange<uint8_t>(0, 31);
            o.version = v == 0 ? 0 : v == 1 ? CHR_OPTIONS_VERSION + 1 : CHR_OPTIONS_VERSION;
            static const uint32_t tpws[] = {1, 2, 3, 4, 5, 8, 16, 160, 0, CHR_TOKENS_PER_WEIGHT_MAX,
                                            CHR_TOKENS_PER_WEIGHT_MAX + 1, 1, 2, 1, 3, 7};
            o.tokens_per_weight = tpws[in_.ConsumeIntegralInRange<size_t>(0, 15)];
            o.seed = in_.ConsumeBool() ? 0 : in_.ConsumeIntegral<uint64_t>();
            o.reserved0 = in_.ConsumeIntegralInRange<uint8_t>(0, 31) == 0 ? 1 : 0;
            uint8_t p = in_.ConsumeIntegralInRange<uint8_t>(0, 15);
            o.placement = p < 9 ? CHR_PLACEMENT_NATIVE : p < 11 ? CHR_PLACEMENT_KETAMA
                          : p < 13 ? CHR_PLACEMENT_KETAMA_UNWEIGHTED : p < 15 ? CHR_PLACEMENT_NGINX
                          : (in_.ConsumeBool() ? -1 : 4);
            uint8_t h = in_.ConsumeIntegralInRange<uint8_t>(0, 15);
            if (h < kNumTestHashers * 2) hasher_name = kTestHashers[h % kNumTestHashers].name;
            else if (h == 10) hasher_name = "xxh3";
            else if (h == 11) hasher_name = "md5";
            else if (h == 12) hasher_name = "crc32";
            else if (h == 13) hasher_name = "fz-missing";
            // else NULL: the placement's own
            o.hasher = hasher_name.empty() ? nullptr : hasher_name.c_str();

            // The library's order of checks.
            const char *required = o.placement == CHR_PLACEMENT_NGINX ? "crc32"
                                   : (o.placement == CHR_PLACEMENT_KETAMA ||
                                      o.placement == CHR_PLACEMENT_KETAMA_UNWEIGHTED) ? "md5" : nullptr;
            std::string name = o.hasher ? o.hasher : CHR_DEFAULT_HASHER;
            if (required) name = required;
            if (o.version < 1 || o.version > CHR_OPTIONS_VERSION) want = CHR_EVERSION;
            else if (o.tokens_per_weight < 1 || o.tokens_per_weight > CHR_TOKENS_PER_WEIGHT_MAX) want = CHR_ERANGE;
            else if (o.reserved0) want = CHR_EINVAL;
            else if (o.placement < 0 || o.placement > CHR_PLACEMENT_NGINX) want = CHR_ENOTSUP;
            else if (required && o.hasher && hasher_name != required) want = CHR_EINVAL;
            else if (!known_hasher(name)) want = CHR_ENOHASHER;
            c.hasher = name;
            c.placement = o.placement;
            // A compatibility placement ignores seed and tokens per weight
            // (the ring keeps the defaults, fingerprint included).
            const bool seeded = o.placement == CHR_PLACEMENT_NATIVE;
            c.tpw = seeded ? o.tokens_per_weight : CHR_DEFAULT_TOKENS_PER_WEIGHT;
            c.seed = seeded ? o.seed : 0;
        } else {
            c.hasher = CHR_DEFAULT_HASHER;
            if (!known_hasher(c.hasher)) want = CHR_ENOHASHER;
        }
        c.fn = nullptr;
        for (const TestHasher &t : kTestHashers)
            if (c.hasher == t.name) c.fn = t.fn;

        chr_ring *r = reinterpret_cast<chr_ring *>(1);
        chr_status st = chr_ring_new(use_null ? nullptr : &o, &r);
        CHECK(st == want, "chr_ring_new returned %d, the model says %d", st, want);
        if (st != CHR_OK) {
            CHECK(r == nullptr, "chr_ring_new failed but set *out");
            return;
        }
        ring_ = r;
        cfg_ = c;
        cache_.clear();
        model_.clear();
        updated();
    }

    bool known_hasher(const std::string &name) const {
        for (const TestHasher &t : kTestHashers)
            if (name == t.name) return true;
        return (name == "xxh3" && g_have_xxh3) || (name == "md5" && g_have_md5) ||
               (name == "crc32" && g_have_crc32);
    }

    // Runs a batch (or a single-change call) against model and ring.
    void run_changes(const std::vector<chr_change> &changes, int how) {
        Members work = model_;
        uint64_t total = total_bound(cfg_, work);
        chr_status want = CHR_OK;
        size_t want_index = changes.size();
        for (size_t c = 0; c < changes.size() && want == CHR_OK; ++c) {
            want = model_change(changes[c], work, total);
            if (want != CHR_OK) want_index = c;
        }
        if (want == CHR_OK && total > kTokenBudget) return;  // valid but too slow to model: skipped
        chr_status st;
        const char *what;
        size_t failed_index = 12345;
        if (how == 0 && changes.size() == 1) {
            const chr_change &ch = changes[0];
            switch (ch.op) {
            case CHR_OP_ADD:
                st = chr_ring_add(ring_, ch.id, ch.id_len, ch.weight, ch.zone, ch.zone_len, ch.tag);
                what = "chr_ring_add";
                break;
            case CHR_OP_REMOVE:
                st = chr_ring_remove(ring_, ch.id, ch.id_len);
                what = "chr_ring_remove";
                break;
            default:
                st = chr_ring_set_weight(ring_, ch.id, ch.id_len, ch.weight);
                what = "chr_ring_set_weight";
                break;
            }
        } else {
            bool with_index = how != 2;
            st = chr_ring_apply(ring_, changes.data(), changes.size(), with_index ? &failed_index : nullptr);
            what = "chr_ring_apply";
            if (with_index)
                CHECK(failed_index == want_index, "failed_index %zu, the model says %zu", failed_index, want_index);
        }
        if (want != CHR_OK) return failed(st, want, what);
        CHECK(st == CHR_OK, "%s returned %d, the model says 0", what, st);
        model_ = std::move(work);
        updated();
    }

    chr_change change(uint32_t op, const Blob &idb, uint32_t w, const Blob &zb, uint64_t tag) {
        chr_change ch{};
        ch.op = op;
        ch.weight = w;
        ch.id = idb.ptr();
        ch.id_len = idb.len();
        ch.zone = zb.ptr();
        ch.zone_len = zb.len();
        ch.tag = tag;
        return ch;
    }

    void op_single(uint32_t op) {
        // Blobs live until the call: change() stores their pointers.
        Blob idb = id();
        Blob zb = op == CHR_OP_ADD ? zone() : Blob{};
        uint32_t w = op == CHR_OP_REMOVE ? 0 : weight();
        uint64_t tag = in_.ConsumeIntegral<uint8_t>();
        run_changes({change(op, idb, w, zb, tag)}, 0);
    }

    void op_batch() {
        size_t n = in_.ConsumeIntegralInRange<size_t>(0, 6);
        std::vector<Blob> ids(n), zones(n);
        std::vector<chr_change> changes;
        for (size_t i = 0; i < n; ++i) {
            uint8_t sel = in_.ConsumeIntegralInRange<uint8_t>(0, 15);
            uint32_t op = sel < 7 ? CHR_OP_ADD : sel < 11 ? CHR_OP_REMOVE : sel < 15 ? CHR_OP_SET_WEIGHT
                                                                                 : (in_.ConsumeBool() ? 0 : 4);
            ids[i] = id();
            if (op == CHR_OP_ADD) zones[i] = zone();
            uint32_t w = op == CHR_OP_REMOVE ? in_.ConsumeIntegral<uint32_t>() : weight();  // ignored for REMOVE
            changes.push_back(change(op, ids[i], w, zones[i], in_.ConsumeIntegral<uint8_t>()));
        }
        uint8_t how = in_.ConsumeIntegralInRange<uint8_t>(0, 7);
        if (how == 7 && n > 0) {
            size_t fi = 99;
            chr_status st = chr_ring_apply(ring_, nullptr, n, &fi);
            CHECK(fi == n, "failed_index on a NULL batch: %zu", fi);
            return failed(st, CHR_EINVAL, "chr_ring_apply(NULL, n)");
        }
        run_changes(changes, how == 6 ? 2 : 1);
    }

    void op_lookup() {
        std::string key = bytes(32);
        keys_.push_back(key);
        uint8_t sel = in_.ConsumeIntegralInRange<uint8_t>(0, 15);
        if (sel == 0) {
            chr_node_ref ref;
            return failed_read(chr_ring_lookup(ring_, nullptr, 3, &ref), CHR_EINVAL, "lookup of NULL key");
        }
        if (sel == 1) return failed_read(chr_ring_lookup(ring_, "k", 1, nullptr), CHR_EINVAL, "lookup into NULL");
        if (sel == 2) return ownership(id());
        if (sel == 3) return size_query();
        if (sel < 8) return lookup(key);
        replicas(key, in_.ConsumeIntegralInRange<size_t>(0, model_.size() + 2));
    }

    void op_snapshot() {
        if (held_.size() == kMaxHeld) release(0);
        chr_snapshot *s = nullptr;
        CHECK(chr_ring_snapshot(ring_, &s) == CHR_OK && s, "chr_ring_snapshot");
        held_.push_back({s, current_});
        check_snapshot(s, current_, probe_keys());
    }

    void release(size_t i) {
        check_snapshot(held_[i].snap, held_[i].exp, probe_keys());
        chr_snapshot_release(held_[i].snap);
        held_.erase(held_.begin() + long(i));
    }

    void op_snapshot_reads() {
        if (held_.empty()) return;
        Held &h = held_[in_.ConsumeIntegralInRange<size_t>(0, held_.size() - 1)];
        std::vector<std::string> keys;
        size_t n = in_.ConsumeIntegralInRange<size_t>(0, 20);
        for (size_t i = 0; i < n; ++i) keys.push_back(bytes(8));
        check_snapshot(h.snap, h.exp, keys);
        // Invalid batch arguments.
        uint32_t idx[2];
        const void *ks[2] = {nullptr, "x"};
        size_t lens[2] = {4, 1};
        if (!h.exp.tokens.empty())
            failed_read(chr_snapshot_lookup_batch(h.snap, ks, lens, 2, idx), CHR_EINVAL, "batch with a NULL key");
        failed_read(chr_snapshot_lookup_batch(h.snap, nullptr, lens, 1, idx), CHR_EINVAL, "batch with NULL keys");
        CHECK(chr_snapshot_lookup_batch(h.snap, nullptr, nullptr, 0, nullptr) == CHR_OK, "empty batch");
    }

    void step() {
        uint8_t op = in_.ConsumeIntegralInRange<uint8_t>(0, 15);
        if (!ring_ && op != 12 && op != 13) op = 0;  // most operations need a ring
        switch (op) {
        case 0: op_new(); break;
        case 1: case 2: case 3: op_single(CHR_OP_ADD); break;
        case 4: op_single(CHR_OP_REMOVE); break;
        case 5: op_single(CHR_OP_SET_WEIGHT); break;
        case 6: case 7: op_batch(); break;
        case 8: case 9: op_lookup(); break;
        case 10: op_snapshot(); break;
        case 11: verify_ring(probe_keys(), true); break;
        case 12: op_snapshot_reads(); break;
        case 13:
            if (!held_.empty()) release(in_.ConsumeIntegralInRange<size_t>(0, held_.size() - 1));
            break;
        case 14:  // free the ring while snapshots are held
            finish_ring();
            check_held();
            break;
        default: {  // NULL ring handles
            chr_node_ref ref;
            CHECK(chr_ring_add(nullptr, "a", 1, 1, nullptr, 0, 0) == CHR_EINVAL, "add on NULL ring");
            CHECK(chr_ring_lookup(nullptr, "a", 1, &ref) == CHR_EINVAL, "lookup on NULL ring");
            size_t fi = 0;
            chr_change ch{};
            CHECK(chr_ring_apply(nullptr, &ch, 1, &fi) == CHR_EINVAL && fi == 1, "apply on NULL ring");
            break;
        }
        }
    }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
#ifdef CHR_FUZZ_PLUGIN_PATH
    setenv("CHRING_PLUGIN_PATH", CHR_FUZZ_PLUGIN_PATH, 0);  // the build's plugins: xxh3, md5, crc32
#endif
    for (size_t i = 0; i < kNumTestHashers; ++i) {
        g_descs[i] = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), kTestHashers[i].name, "api_ops test hasher",
                      kTestHashers[i].fn, 0, nullptr, 0};
        chr_status st = chr_hasher_register(&g_descs[i]);
        if (st != CHR_OK) {
            std::fprintf(stderr, "api_ops: cannot register %s: %s\n", kTestHashers[i].name, chr_last_error());
            std::abort();
        }
    }
    uint64_t h;
    unsigned char d[CHR_DIGEST_MAX];
    size_t size;
    g_have_xxh3 = chr_hasher_hash("xxh3", "", 0, 0, &h) == CHR_OK;
    g_have_md5 = chr_hasher_digest("md5", "", 0, d, sizeof d, &size) == CHR_OK && size == 16;
    g_have_crc32 = chr_hasher_digest("crc32", "", 0, d, sizeof d, &size) == CHR_OK && size == 4;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FuzzedDataProvider in(data, size);
    Runner(in).run();
    return 0;
}
