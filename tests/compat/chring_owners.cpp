// chring_owners — chring's answer for the compat drivers that talk to real
// servers (tests/compat/twemproxy, tests/compat/nginx).
//
//   chring_owners PLACEMENT SERVERS_FILE < keys > tags
//   chring_owners --points PLACEMENT SERVERS_FILE > points
//
// PLACEMENT: native, ketama, ketama-unweighted or nginx. SERVERS_FILE: one
// server per line, "WEIGHT ID", in configuration order; the node's tag is
// its line number from 0. Keys: one per line ('\n' ends a key, every other
// byte is part of it). Output: the owner's tag, one line per key; with
// --points, every point of the ring in order as "VALUE TAG" (VALUE in hex,
// the 64-bit circle position). Exit status 0, or 1 with chr_last_error().
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "compat_ring.hpp"

namespace {

int die(const std::string &what) {
    std::fprintf(stderr, "chring_owners: %s\n", what.c_str());
    return 1;
}

int die_chr(const char *call, chr_status st) {
    return die(std::string(call) + ": " + chr_strerror(st) + ": " + chr_last_error());
}

bool read_servers(const char *path, std::vector<compat_test::Server> &servers) {
    std::ifstream in(path);
    if (!in) return false;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        size_t space = line.find(' ');
        if (space == std::string::npos) return false;
        servers.push_back({line.substr(space + 1), uint32_t(std::stoul(line.substr(0, space)))});
    }
    return true;
}

int print_points(const chr_ring *ring) {
    chr_snapshot *snap = nullptr;
    if (chr_status st = chr_ring_snapshot(ring, &snap)) return die_chr("chr_ring_snapshot", st);
    size_t count = 0;
    chr_status st = chr_snapshot_token_count(snap, &count);
    for (size_t t = 0; st == CHR_OK && t < count; ++t) {
        uint64_t value = 0;
        uint32_t node = 0;
        chr_node_view view;
        st = chr_snapshot_token(snap, t, &value, &node);
        if (st == CHR_OK) st = chr_snapshot_node(snap, node, &view);
        if (st == CHR_OK) std::printf("%016llx %llu\n", (unsigned long long)value, (unsigned long long)view.tag);
    }
    chr_snapshot_release(snap);
    return st ? die_chr("chr_snapshot_token", st) : 0;
}

}  // namespace

int main(int argc, char **argv) {
    const bool points = argc == 4 && std::strcmp(argv[1], "--points") == 0;
    if (argc != 3 && !points)
        return die("usage: chring_owners [--points] native|ketama|ketama-unweighted|nginx SERVERS_FILE");
    const int32_t placement = compat_test::placement_named(argv[argc - 2]);
    if (placement < 0) return die(std::string("unknown placement ") + argv[argc - 2]);
    std::vector<compat_test::Server> servers;
    if (!read_servers(argv[argc - 1], servers))
        return die(std::string(argv[argc - 1]) + ": cannot read \"WEIGHT ID\" lines");

    chr_ring *ring = nullptr;
    if (chr_status st = compat_test::build_ring(placement, servers, &ring))
        return die_chr("building the ring", st);
    int status = 0;
    if (points) {
        status = print_points(ring);
    } else {
        compat_test::KeyBatch keys;
        for (std::string line; std::getline(std::cin, line);) keys.add(line.data(), line.size());
        std::vector<uint64_t> tags;
        if (chr_status st = compat_test::owner_tags(ring, keys, tags))
            status = die_chr("looking keys up", st);
        for (uint64_t tag : tags) std::printf("%llu\n", (unsigned long long)tag);
    }
    chr_ring_free(ring);
    return status;
}
