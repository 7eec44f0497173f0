// The hasher registry: every hasher a ring can be created with, whether
// registered in-process or loaded from a plugin. Entries are never removed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chring.h"

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

// Checks every field of a descriptor; `who` names the caller in messages.
chr_status validate_descriptor(const chr_hasher *desc, const char *who);

// Validates and adds hashers, all or none: a bad descriptor, or a name
// already taken (CHR_EEXIST: the first one stays), leaves the registry
// unchanged. `module` keeps their shared object loaded (nullptr if none).
chr_status register_hashers(const std::vector<const chr_hasher *> &descs, const std::string &origin,
                            std::shared_ptr<const void> module, const char *who);

// The hasher called `name` among those registered so far, or nullptr.
// See resolve_hasher() (plugins.hpp) for the version that discovers plugins.
HasherPtr find_hasher(const std::string &name);

// Every registered hasher, in registration order.
std::vector<HasherPtr> list_hashers();

}  // namespace chring
