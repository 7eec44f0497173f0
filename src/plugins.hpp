// Hash plugins: loading a shared object with Boost.DLL, checking what it
// exports, and finding plugins without configuration (see chring.h,
// "Hashers and plugins", for the search order).
#pragma once

#include <string>

#include "hashers.hpp"

namespace chring {

// Loads the plugin at `path` and registers all its hashers, or none.
chr_status load_plugin(const std::string &path, size_t *loaded, const char *who);

// Loads every not-yet-tried chring-*.so in the search path plus
// `plugin_dir` (may be NULL). Failures are skipped, not reported.
void discover_plugins(const char *plugin_dir);

// The hasher called `name`, discovering plugins if it is not registered yet.
HasherPtr resolve_hasher(const std::string &name, const char *plugin_dir);

}  // namespace chring
