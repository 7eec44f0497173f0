// compat_ring.hpp — what the compat suite's programs share: a server list
// turned into a chring ring the way the compatibility placements want it
// (tag = the server's 0-based position in the configuration), random keys,
// and the owner tag of every key. Uses only chring.h; reports failures as
// chr_status so cmocka tests and the plain helper program can both use it.
#ifndef CHRING_TESTS_COMPAT_RING_HPP
#define CHRING_TESTS_COMPAT_RING_HPP

#include <chring.h>

#include <cstdint>
#include <string>
#include <vector>

namespace compat_test {

// One configured server: its configuration text (the node id) and weight.
struct Server {
    std::string id;
    uint32_t weight;
};

// A new ring of `placement` holding `servers` in list order, each tagged
// with its position (or tags[i] when `tags` is given: a list with servers
// removed keeps the original positions). *out is NULL on failure.
chr_status build_ring(int32_t placement, const std::vector<Server> &servers, chr_ring **out,
                      const std::vector<uint64_t> *tags = nullptr);

// Byte-string keys stored back to back, laid out for chr_snapshot_lookup_batch.
struct KeyBatch {
    std::vector<unsigned char> bytes;
    std::vector<size_t> offsets;  // key i is bytes[offsets[i] .. offsets[i] + lens[i])
    std::vector<size_t> lens;

    void add(const void *key, size_t len);
    size_t size() const { return lens.size(); }
    const unsigned char *key(size_t i) const { return bytes.data() + offsets[i]; }
};

// `count` keys of min_len..max_len random bytes (any byte value), the same
// for the same seed. splitmix64, as tests/core uses.
KeyBatch random_keys(size_t count, size_t min_len, size_t max_len, uint64_t seed);

// The tag of each key's owner in the ring's current snapshot.
chr_status owner_tags(const chr_ring *ring, const KeyBatch &keys, std::vector<uint64_t> &tags);

// The placement constant for "native", "ketama", "ketama-unweighted" or
// "nginx"; -1 for anything else.
int32_t placement_named(const std::string &name);

}  // namespace compat_test

#endif  // CHRING_TESTS_COMPAT_RING_HPP
