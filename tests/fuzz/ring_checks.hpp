// What the ring-file harnesses share: a check that aborts (libFuzzer keeps
// the input) with chr_last_error(), a ring's canonical export and
// fingerprint, and each placement's own hasher.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chring.h"

#define CHECK(cond, ...)                                                                                  \
    do {                                                                                                  \
        if (!(cond)) {                                                                                    \
            std::fprintf(stderr, "%s: check failed at line %d: %s\n  ", kHarness, __LINE__, #cond);      \
            std::fprintf(stderr, __VA_ARGS__);                                                            \
            std::fprintf(stderr, "\n  last error: %s\n", chr_last_error());                               \
            std::abort();                                                                                 \
        }                                                                                                 \
    } while (0)

namespace ring_checks {

constexpr const char *kHarness = "ring_checks.hpp";

inline std::string export_text(const chr_ring *ring, uint32_t flags, uint64_t revision) {
    size_t len = 0;
    CHECK(chr_ring_export(ring, flags, revision, nullptr, 0, &len) == CHR_ERANGE || len == 0, "export size query");
    std::string out(len + 1, '\0');
    CHECK(chr_ring_export(ring, flags, revision, &out[0], out.size(), &len) == CHR_OK, "chr_ring_export");
    out.resize(len);
    return out;
}

inline uint64_t fingerprint_of(const chr_ring *ring) {
    uint64_t fp = 0;
    CHECK(chr_ring_fingerprint(ring, &fp) == CHR_OK, "chr_ring_fingerprint");
    return fp;
}

inline const char *own_hasher(int32_t placement) {
    return placement == CHR_PLACEMENT_NATIVE ? "xxh3" : placement == CHR_PLACEMENT_NGINX ? "crc32" : "md5";
}

}  // namespace ring_checks
