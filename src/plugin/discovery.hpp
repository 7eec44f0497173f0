// Finding plugins without configuration. The search order (chring.h,
// "Hashers and plugins"): <libdir>/chring/plugins next to the loaded
// libchring, then each CHRING_PLUGIN_PATH entry in order (ignored in a
// setuid or otherwise privileged process), then options.plugin_dir. Within
// a directory, files named chring-*.so in byte order of their names.
#pragma once

#include <string>
#include <vector>

#include "plugin/registry.hpp"

namespace chring {

// Loads not-yet-tried plugins in search order. With `want`, stops as soon
// as a hasher of that name is registered; without, loads every one (for
// chr_hasher_list). Failures are skipped (see skipped_plugins()).
void discover_plugins(const char *plugin_dir, const char *want);

// The hasher called `name`, discovering plugins if it is not registered yet.
HasherPtr resolve_hasher(const std::string &name, const char *plugin_dir);

// What this thread's last discovery skipped and why (a refused directory,
// a plugin that failed to load), one "path: reason" a line, for the
// message of a name that was not found. Empty if nothing was skipped.
std::string skipped_plugins();

// The directories searched, in order, as given (not yet checked).
std::vector<std::string> search_path(const char *plugin_dir);

}  // namespace chring
