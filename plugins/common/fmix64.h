/*
 * fmix64.h — MurmurHash3's 64-bit finalizer, shared by the shipped plugins
 * (murmur3 uses it as its reference does; crc32 and fnv1a pass their ring
 * values through it). A header of the plugins' own, not part of the ABI.
 */
#ifndef CHRING_PLUGINS_FMIX64_H
#define CHRING_PLUGINS_FMIX64_H

#include <stdint.h>

/* A bijection on 64 bits in which every output bit depends on every input bit. */
static inline uint64_t fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

#endif /* CHRING_PLUGINS_FMIX64_H */
