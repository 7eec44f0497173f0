// The hasher registry: every hasher a ring can be created with, built in,
// registered in-process or loaded from a plugin. Entries are never removed.
// The built-in default ("xxh3", builtin_xxh3.c) is in it before any lookup.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "chring.h"

// builtin_xxh3.c: the default hasher, compiled in (no dlopen for a default
// ring); key hashers compare against its function to inline it.
extern "C" const chr_hasher chr_builtin_xxh3;

namespace chring {

// An immutable, validated copy of a descriptor. Rings and snapshots hold a
// shared_ptr to it; `module` keeps the shared object it came from loaded
// for as long as any of them does.
struct Hasher {
    std::string name;
    std::string description;
    std::string origin;  // "builtin", "registered", or a plugin's path
    chr_hash64_fn hash64 = nullptr;
    uint32_t digest_size = 0;
    chr_digest_fn digest = nullptr;
    std::shared_ptr<const void> module;
};
using HasherPtr = std::shared_ptr<const Hasher>;

// Where a plugin's descriptor pointers may point: its own mapped segments
// (segments.hpp implements it). Descriptors registered in-process are the
// process's own memory and are checked against no bounds.
class AddressBounds {
public:
    virtual ~AddressBounds() = default;
    // How many bytes from `p` to the end of the readable segment holding
    // it; 0 if no readable segment holds p.
    virtual size_t readable_from(const void *p) const = 0;
    // Whether `fn` lies in an executable segment.
    virtual bool executable(const void *fn) const = 0;
};

// Longest description kept, in bytes (CHR_HASHER_DESCRIPTION_MAX).
constexpr size_t kDescriptionMax = CHR_HASHER_DESCRIPTION_MAX;

// Checks every field of a descriptor; `who` names the caller in messages.
// With `bounds`, every pointer (the descriptor itself, its strings, its
// functions) must lie inside them and every string must end inside its
// segment, so a wild pointer is refused instead of being read.
chr_status validate_descriptor(const chr_hasher *desc, const char *who,
                               const AddressBounds *bounds = nullptr);

// Validates and adds hashers, all or none: a bad descriptor, or a name
// already taken (CHR_EEXIST: the first one stays), leaves the registry
// unchanged. `module` keeps their shared object loaded (nullptr if none).
chr_status register_hashers(const std::vector<const chr_hasher *> &descs, const std::string &origin,
                            std::shared_ptr<const void> module, const char *who,
                            const AddressBounds *bounds = nullptr);

// The hasher called `name` among those registered so far, or nullptr.
// See resolve_hasher() (discovery.hpp) for the version that finds plugins.
HasherPtr find_hasher(const std::string &name);

// Every registered hasher, in registration order.
std::vector<HasherPtr> list_hashers();

}  // namespace chring
