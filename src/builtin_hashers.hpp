// Hashers compiled into the core. Until plugin loading lands, the default
// (xxh3) lives here behind the same descriptor type a plugin exports.
#pragma once

#include <vector>

#include "chring_plugin.h"

namespace chring {
const std::vector<const chr_hasher *> &builtin_hashers();
}
