// The hasher registry: every hasher a ring can be created with, whether
// built in, registered in-process, or (later) loaded from a plugin.
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

// Validates and adds a hasher. A name already taken is CHR_EEXIST and the
// first one stays. The registry is unchanged on any failure.
chr_status register_hasher(const chr_hasher *desc, const std::string &origin,
                           std::shared_ptr<const void> module, const char *who);

// The hasher called `name`, or nullptr.
HasherPtr find_hasher(const std::string &name);

// Every registered hasher, in registration order.
std::vector<HasherPtr> list_hashers();

}  // namespace chring
