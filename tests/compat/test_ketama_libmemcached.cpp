// test_ketama_libmemcached.cpp — suite 'compat': CHR_PLACEMENT_KETAMA and
// CHR_PLACEMENT_KETAMA_UNWEIGHTED against the real libmemcached (Debian's
// libmemcached 1.1.4, linked in-process), not against a reading of it.
//
// For random server lists (hostnames, IPv4 and IPv6 addresses, port 11211
// written or left out, other ports, random weights) the server index that
// memcached_generate_hash() answers must equal the tag of chring's owner
// (tag = the server's 0-based position in the list), for every key: random
// byte strings of 1..64 bytes, NUL and bytes >= 0x80 included.
//
// Limits of the reference: libmemcached 1.1.4 aborts the process (assertion
// in hosts.cc update_continuum) when a continuum holds more than 100
// servers, so this file covers lists of 1..100 servers. Lists of 101..200
// servers are compared against twemproxy instead (tests/compat/twemproxy),
// which uses the same weighted-ketama continuum.
//
// libmemcached setup per mode:
//   weighted:   MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED = 1 (MD5 key hash, 160
//               points per server shared pro rata by weight);
//   unweighted: DISTRIBUTION = CONSISTENT_KETAMA, HASH = MD5, every weight 1
//               (100 points per server).
// Servers are pushed as one list (memcached_server_push), so the continuum
// is built once per list, exactly as for a configured client.
#include <libmemcached/memcached.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include "test_util.h"
}

#include "compat_ring.hpp"

namespace {

using compat_test::KeyBatch;
using compat_test::Server;

constexpr unsigned kDefaultPort = 11211;
constexpr size_t kLibmemcachedMaxServers = 100;  // more aborts the process
constexpr uint32_t kMaxRandomWeight = 1000;

// A server as libmemcached is given it, and the configuration text chring
// gets as the node id.
struct MemcachedServer {
    std::string host;  // as libmemcached stores it (IPv6 without brackets)
    unsigned port;
    uint32_t weight;
    std::string config_text;
};

// ---- libmemcached ----------------------------------------------------------

enum class Mode { weighted, unweighted };

int32_t placement_of(Mode mode) {
    return mode == Mode::weighted ? CHR_PLACEMENT_KETAMA : CHR_PLACEMENT_KETAMA_UNWEIGHTED;
}

const char *mode_name(Mode mode) { return mode == Mode::weighted ? "weighted" : "unweighted"; }

// A libmemcached handle whose continuum holds `servers`, in order.
memcached_st *libmemcached_continuum(Mode mode, const std::vector<MemcachedServer> &servers) {
    assert_true(servers.size() <= kLibmemcachedMaxServers);
    memcached_st *memc = memcached_create(nullptr);
    assert_non_null(memc);
    if (mode == Mode::weighted) {
        assert_int_equal(memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1),
                         MEMCACHED_SUCCESS);
    } else {
        assert_int_equal(memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                                MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA),
                         MEMCACHED_SUCCESS);
        assert_int_equal(memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_HASH, MEMCACHED_HASH_MD5),
                         MEMCACHED_SUCCESS);
    }
    memcached_server_list_st list = nullptr;
    for (const MemcachedServer &s : servers) {
        memcached_return_t rc = MEMCACHED_SUCCESS;
        list = memcached_server_list_append_with_weight(list, s.host.c_str(), in_port_t(s.port),
                                                        s.weight, &rc);
        assert_int_equal(rc, MEMCACHED_SUCCESS);
    }
    assert_int_equal(memcached_server_push(memc, list), MEMCACHED_SUCCESS);
    memcached_server_list_free(list);
    assert_int_equal(memcached_server_count(memc), servers.size());
    return memc;
}

// ---- server lists ------------------------------------------------------------

std::vector<Server> as_chring_servers(const std::vector<MemcachedServer> &servers) {
    std::vector<Server> out;
    for (const MemcachedServer &s : servers) out.push_back({s.config_text, s.weight});
    return out;
}

// `count` distinct servers: a third hostnames, half IPv4, the rest IPv6
// (written in brackets, "[2001:db8::1]:11211" or "[2001:db8::1]"); half on
// port 11211 (written as ":11211" or left out), the rest anywhere.
std::vector<MemcachedServer> random_servers(std::mt19937_64 &rng, size_t count, Mode mode) {
    std::uniform_int_distribution<unsigned> byte(0, 255), port(1, 65535),
        weight(1, kMaxRandomWeight), kind(0, 5);
    std::set<std::string> seen;
    std::vector<MemcachedServer> servers;
    while (servers.size() < count) {
        MemcachedServer s;
        char host[64];
        const unsigned k = kind(rng);
        const bool ipv6 = k == 5;
        if (k <= 1)
            std::snprintf(host, sizeof host, "cache-%u.rack%u.example.net", byte(rng), byte(rng) % 16);
        else if (k <= 4)
            std::snprintf(host, sizeof host, "10.%u.%u.%u", byte(rng), byte(rng), byte(rng));
        else
            std::snprintf(host, sizeof host, "2001:db8::%x:%x", byte(rng), byte(rng));
        s.host = host;
        s.port = rng() % 2 ? kDefaultPort : port(rng);
        s.weight = mode == Mode::weighted ? weight(rng) : 1;
        const std::string bracketed = ipv6 ? "[" + s.host + "]" : s.host;
        if (s.port == kDefaultPort && rng() % 2)
            s.config_text = bracketed;  // libmemcached's default port, not written
        else
            s.config_text = bracketed + ":" + std::to_string(s.port);
        if (!seen.insert(s.host + " " + std::to_string(s.port)).second) continue;
        servers.push_back(s);
    }
    return servers;
}

// ---- comparison ----------------------------------------------------------------

// Asks libmemcached and chring for the owner of every key and fails, after
// printing the first few differences, unless they agree on every key.
// libmemcached's answer i is the i-th server of `servers`, whose chring tag
// is tags[i].
void expect_same_owners(Mode mode, const std::vector<MemcachedServer> &servers,
                        const std::vector<uint64_t> &tags, const chr_ring *ring,
                        const KeyBatch &keys, const char *what) {
    memcached_st *memc = libmemcached_continuum(mode, servers);
    std::vector<uint64_t> chring_tags;
    assert_chr_ok(compat_test::owner_tags(ring, keys, chring_tags));
    size_t mismatches = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
        uint32_t index = memcached_generate_hash(
            memc, reinterpret_cast<const char *>(keys.key(i)), keys.lens[i]);
        assert_true(index < servers.size());
        if (tags[index] == chring_tags[i]) continue;
        if (++mismatches <= 5)
            print_error("%s (%s, %zu servers): key %zu (%zu bytes): libmemcached -> %s (tag %llu), "
                        "chring -> tag %llu\n",
                        what, mode_name(mode), servers.size(), i, keys.lens[i],
                        servers[index].config_text.c_str(), (unsigned long long)tags[index],
                        (unsigned long long)chring_tags[i]);
    }
    memcached_free(memc);
    if (mismatches)
        fail_msg("%s: %zu of %zu keys map to different servers", what, mismatches, keys.size());
}

std::vector<uint64_t> positions(size_t count) {
    std::vector<uint64_t> tags(count);
    for (size_t i = 0; i < count; ++i) tags[i] = i;
    return tags;
}

chr_ring *ring_for(Mode mode, const std::vector<MemcachedServer> &servers,
                   const std::vector<uint64_t> &tags) {
    chr_ring *ring = nullptr;
    assert_chr_ok(compat_test::build_ring(placement_of(mode), as_chring_servers(servers), &ring, &tags));
    return ring;
}

// 200 lists, two of each size 1..100, 600 keys each: 120,000 keys.
void compare_random_lists(Mode mode, uint64_t seed) {
    constexpr size_t kListsPerSize = 2, kKeysPerList = 600;
    std::mt19937_64 rng(seed);
    size_t keys_compared = 0;
    for (size_t size = 1; size <= kLibmemcachedMaxServers; ++size) {
        for (size_t round = 0; round < kListsPerSize; ++round) {
            std::vector<MemcachedServer> servers = random_servers(rng, size, mode);
            const std::vector<uint64_t> tags = positions(size);
            chr_ring *ring = ring_for(mode, servers, tags);
            KeyBatch keys = compat_test::random_keys(kKeysPerList, 1, 64, rng());
            expect_same_owners(mode, servers, tags, ring, keys, "random list");
            keys_compared += keys.size();
            chr_ring_free(ring);
        }
    }
    std::printf("ketama %s: %zu keys over %zu lists of 1..%zu servers, 0 mismatches\n",
                mode_name(mode), keys_compared, kListsPerSize * kLibmemcachedMaxServers,
                kLibmemcachedMaxServers);
}

// ---- the libmemcached fixture (its test/fixtures/ketama.hpp; docs/compat.md) -------

const uint32_t kFixtureWeights[] = {600, 300, 200, 350, 1000, 800, 950, 100};
const uint32_t kFixturePoints[] = {176, 88, 56, 104, 296, 236, 280, 28};
constexpr size_t kFixtureServers = 8;

std::vector<MemcachedServer> fixture_servers() {
    std::vector<MemcachedServer> servers;
    for (size_t i = 0; i < kFixtureServers; ++i) {
        std::string host = "10.0.1." + std::to_string(i + 1);
        servers.push_back({host, kDefaultPort, kFixtureWeights[i], host + ":11211"});
    }
    return servers;
}

uint32_t md5_first_word(const char *key) {
    unsigned char digest[16];
    size_t size = 0;
    assert_chr_ok(chr_hasher_digest("md5", key, std::strlen(key), digest, sizeof digest, &size));
    assert_int_equal(size, 16);
    return uint32_t(digest[0]) | uint32_t(digest[1]) << 8 | uint32_t(digest[2]) << 16 |
           uint32_t(digest[3]) << 24;
}

// The ring's tokens, each with its owner's tag.
struct Continuum {
    std::vector<uint64_t> values;
    std::vector<uint64_t> tags;
};

Continuum continuum_of(const chr_ring *ring) {
    chr_snapshot *snap = nullptr;
    assert_chr_ok(chr_ring_snapshot(ring, &snap));
    size_t count = 0;
    assert_chr_ok(chr_snapshot_token_count(snap, &count));
    Continuum c;
    for (size_t t = 0; t < count; ++t) {
        uint64_t value = 0;
        uint32_t node = 0;
        chr_node_view view;
        assert_chr_ok(chr_snapshot_token(snap, t, &value, &node));
        assert_chr_ok(chr_snapshot_node(snap, node, &view));
        c.values.push_back(value);
        c.tags.push_back(view.tag);
    }
    chr_snapshot_release(snap);
    return c;
}

// 1264 points, not 8 * 160: each server's share is floored to 4 points in
// float arithmetic. Checked on chring's ring (per node and in total).
void fixture_point_counts(void **) {
    chr_ring *ring = ring_for(Mode::weighted, fixture_servers(), positions(kFixtureServers));
    size_t tokens = 0, nodes = 0;
    assert_chr_ok(chr_ring_token_count(ring, &tokens));
    assert_int_equal(tokens, 1264);
    chr_node_ref refs[kFixtureServers];
    assert_chr_ok(chr_ring_nodes(ring, refs, kFixtureServers, &nodes));
    assert_int_equal(nodes, kFixtureServers);
    for (const chr_node_ref &ref : refs) {
        assert_true(ref.tag < kFixtureServers);
        assert_int_equal(ref.tokens, kFixturePoints[ref.tag]);
    }
    const Continuum c = continuum_of(ring);
    size_t per_tag[kFixtureServers] = {0};
    for (uint64_t tag : c.tags) per_tag[tag]++;
    for (size_t i = 0; i < kFixtureServers; ++i) assert_int_equal(per_tag[i], kFixturePoints[i]);
    // Every point is a 32-bit value placed in the high half of the circle.
    for (uint64_t v : c.values) assert_int_equal(v & 0xffffffffu, 0);
    chr_ring_free(ring);
}

// The fixture's known answers: key hash (first LE word of MD5), the point
// the key lands on, and the server; plus a key past the last point, which
// must wrap to the first.
void fixture_known_answers(void **) {
    struct KnownAnswer {
        const char *key;
        uint32_t key_hash, point;
        uint64_t server;  // position in the fixture list
    };
    const KnownAnswer answers[] = {
        {"SVa_]_V41)", 443691461u, 445379617u, 6},
        {"*/Z;?V(.\\8", 1422915503u, 1428303028u, 0},
        {"30C1*Z*S/_", 1473165754u, 1480075959u, 1},
    };
    chr_ring *ring = ring_for(Mode::weighted, fixture_servers(), positions(kFixtureServers));
    const Continuum c = continuum_of(ring);
    KeyBatch keys;
    for (const KnownAnswer &a : answers) {
        assert_int_equal(md5_first_word(a.key), a.key_hash);
        size_t at = size_t(std::lower_bound(c.values.begin(), c.values.end(),
                                            uint64_t(a.key_hash) << 32) - c.values.begin());
        assert_true(at < c.values.size());
        assert_int_equal(c.values[at], uint64_t(a.point) << 32);
        assert_int_equal(c.tags[at], a.server);
        chr_node_ref owner;
        assert_chr_ok(chr_ring_lookup(ring, a.key, std::strlen(a.key), &owner));
        assert_int_equal(owner.tag, a.server);
        keys.add(a.key, std::strlen(a.key));
    }

    const char *wrapping = "VDEAAAAA";
    assert_int_equal(md5_first_word(wrapping), 0xfffcd1b5u);
    assert_int_equal(c.values.back(), uint64_t(0xfffbdf7fu) << 32);
    chr_node_ref owner;
    assert_chr_ok(chr_ring_lookup(ring, wrapping, std::strlen(wrapping), &owner));
    assert_int_equal(owner.tag, c.tags.front());
    keys.add(wrapping, std::strlen(wrapping));

    expect_same_owners(Mode::weighted, fixture_servers(), positions(kFixtureServers), ring, keys,
                       "fixture");
    chr_ring_free(ring);
}

void weighted_random_lists(void **) { compare_random_lists(Mode::weighted, 0x6b6574616d61ull); }
void unweighted_random_lists(void **) { compare_random_lists(Mode::unweighted, 0x756e776569676874ull); }

// Membership changes applied to chring's ring in place (remove, reweight,
// weight 0, add) must give what libmemcached gives when it is rebuilt from
// the changed list. Removing a server shifts libmemcached's indices; the
// chring tags keep the original positions, which order ties the same way.
void changes_match_rebuilt_libmemcached(Mode mode, uint64_t seed) {
    constexpr size_t kLists = 12, kKeys = 2000;
    std::mt19937_64 rng(seed);
    for (size_t round = 0; round < kLists; ++round) {
        const size_t size = 3 + size_t(rng() % (kLibmemcachedMaxServers - 3));
        std::vector<MemcachedServer> servers = random_servers(rng, size, mode);
        std::vector<uint64_t> tags = positions(size);
        chr_ring *ring = ring_for(mode, servers, tags);
        const KeyBatch keys = compat_test::random_keys(kKeys, 1, 64, rng());

        // Remove a random server.
        size_t victim = size_t(rng() % servers.size());
        assert_chr_ok(chr_ring_remove(ring, servers[victim].config_text.data(),
                                      servers[victim].config_text.size()));
        servers.erase(servers.begin() + long(victim));
        tags.erase(tags.begin() + long(victim));
        expect_same_owners(mode, servers, tags, ring, keys, "after a removal");

        // Weight 0 on chring = not live = left out of libmemcached's list.
        size_t drained = size_t(rng() % servers.size());
        const MemcachedServer drained_server = servers[drained];
        const uint64_t drained_tag = tags[drained];
        assert_chr_ok(chr_ring_set_weight(ring, drained_server.config_text.data(),
                                          drained_server.config_text.size(), 0));
        servers.erase(servers.begin() + long(drained));
        tags.erase(tags.begin() + long(drained));
        expect_same_owners(mode, servers, tags, ring, keys, "after a weight 0");

        // Back to its weight (weighted mode: a new one), in its old position.
        MemcachedServer back = drained_server;
        if (mode == Mode::weighted) back.weight = 1 + uint32_t(rng() % kMaxRandomWeight);
        assert_chr_ok(chr_ring_set_weight(ring, back.config_text.data(), back.config_text.size(),
                                          back.weight));
        servers.insert(servers.begin() + long(drained), back);
        tags.insert(tags.begin() + long(drained), drained_tag);
        expect_same_owners(mode, servers, tags, ring, keys, "after a reweight");

        // Add a server at the end of the list (a name no random list uses).
        const std::string host = "added.example.org";
        const MemcachedServer added = {host, 4242, mode == Mode::weighted ? 250u : 1u, host + ":4242"};
        const uint64_t next_tag = size;
        assert_chr_ok(chr_ring_add(ring, added.config_text.data(), added.config_text.size(),
                                   added.weight, nullptr, 0, next_tag));
        servers.push_back(added);
        tags.push_back(next_tag);
        expect_same_owners(mode, servers, tags, ring, keys, "after an add");
        chr_ring_free(ring);
    }
}

void weighted_changes(void **) { changes_match_rebuilt_libmemcached(Mode::weighted, 0xc4a46e5ull); }
void unweighted_changes(void **) { changes_match_rebuilt_libmemcached(Mode::unweighted, 0x5eedull); }

// The same server listed twice ("10.0.0.1" and "10.0.0.1:11211" are one
// server to libmemcached) gives equal points: every tie must go to the
// earlier position, as libmemcached sorts by (value, server index). In the
// weighted mode the two entries get different point counts, so the smaller
// set ties with a prefix of the larger one.
void ties_go_to_the_earlier_position(void **) {
    for (Mode mode : {Mode::weighted, Mode::unweighted}) {
        const uint32_t w = mode == Mode::weighted ? 700 : 1;
        const uint32_t w_twin = mode == Mode::weighted ? 300 : 1;
        std::vector<MemcachedServer> servers = {
            {"10.9.0.1", kDefaultPort, w, "10.9.0.1:11211"},
            {"cache-b.example.net", 22122, mode == Mode::weighted ? 500u : 1u, "cache-b.example.net:22122"},
            {"10.9.0.1", kDefaultPort, w_twin, "10.9.0.1"},
            {"cache-b.example.net", 22122, mode == Mode::weighted ? 900u : 1u, "[cache-b.example.net]:22122"},
        };
        const std::vector<uint64_t> tags = positions(servers.size());
        chr_ring *ring = ring_for(mode, servers, tags);

        const Continuum c = continuum_of(ring);
        size_t ties = 0;
        for (size_t t = 1; t < c.values.size(); ++t) {
            if (c.values[t] != c.values[t - 1]) continue;
            ++ties;
            assert_true(c.tags[t - 1] < c.tags[t]);
        }
        assert_true(ties > 0);
        KeyBatch keys = compat_test::random_keys(20000, 1, 64, 42);
        expect_same_owners(mode, servers, tags, ring, keys, "duplicate servers");
        // The later twin owns nothing in the unweighted mode (all its points tie).
        std::vector<uint64_t> owners;
        assert_chr_ok(compat_test::owner_tags(ring, keys, owners));
        if (mode == Mode::unweighted)
            for (uint64_t tag : owners) assert_true(tag == 0 || tag == 1);
        chr_ring_free(ring);
    }
}

// IPv6 servers are configured in brackets; libmemcached hashes the host
// without them, with or without a port (a port-less "[v6]" kept its
// brackets in chring once: every point differed).
void ipv6_in_brackets(void **) {
    for (Mode mode : {Mode::weighted, Mode::unweighted}) {
        const std::vector<MemcachedServer> servers = {
            {"2001:db8::7", kDefaultPort, 1, "[2001:db8::7]"},
            {"2001:db8::8", kDefaultPort, 1, "[2001:db8::8]:11211"},
            {"2001:db8::9", 4242, 1, "[2001:db8::9]:4242"},
            {"10.0.0.1", kDefaultPort, 1, "10.0.0.1"},
        };
        const std::vector<uint64_t> tags = positions(servers.size());
        chr_ring *ring = ring_for(mode, servers, tags);
        expect_same_owners(mode, servers, tags, ring, compat_test::random_keys(10000, 1, 64, 6),
                           "IPv6 forms");
        chr_ring_free(ring);
    }
}

}  // namespace

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixture_point_counts),
        cmocka_unit_test(fixture_known_answers),
        cmocka_unit_test(weighted_random_lists),
        cmocka_unit_test(unweighted_random_lists),
        cmocka_unit_test(weighted_changes),
        cmocka_unit_test(unweighted_changes),
        cmocka_unit_test(ties_go_to_the_earlier_position),
        cmocka_unit_test(ipv6_in_brackets),
    };
    select_cases(argc, argv, tests);
    return run_core_tests(tests);
}
