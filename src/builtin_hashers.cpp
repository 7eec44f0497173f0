#include "builtin_hashers.hpp"

#include <xxhash.h>

namespace chring {
namespace {

uint64_t xxh3_hash64(const void *data, size_t len, uint64_t seed) {
    return XXH3_64bits_withSeed(data, len, seed);
}

const chr_hasher xxh3 = {CHR_PLUGIN_ABI_VERSION,
                         sizeof(chr_hasher),
                         "xxh3",
                         "XXH3 64-bit (libxxhash), seeded; the ring value is the hash itself",
                         xxh3_hash64,
                         0,
                         nullptr,
                         0};

}  // namespace

const std::vector<const chr_hasher *> &builtin_hashers() {
    static const std::vector<const chr_hasher *> all = {&xxh3};
    return all;
}

}  // namespace chring
