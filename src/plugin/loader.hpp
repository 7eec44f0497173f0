// Loading one plugin file: the trust rules (trust.hpp) on the opened file,
// the ELF checks (elf_check.hpp) on its bytes, then the dynamic loader
// (Boost.DLL) on that same open file, then the entry point and every
// descriptor checked against the plugin's own segments (segments.hpp)
// before its hashers are registered.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#include "chring.h"

namespace chring {

// Held while a plugin loads: entry points run one at a time, and discovery
// never races an explicit load of the same file.
std::mutex &plugin_load_mutex();

// Loads the plugin at `path` and registers all its hashers, or none.
// The caller holds plugin_load_mutex(). `canonical`, if not NULL, receives
// the resolved path (also on failure, once known).
chr_status load_plugin_locked(const std::string &path, size_t *loaded, const char *who,
                              std::string *canonical = nullptr);

// The same, taking the lock (chr_plugin_load).
chr_status load_plugin(const std::string &path, size_t *loaded, const char *who);

// How many plugin files have been handed to the dynamic loader in this
// process (for tests: a default ring must not raise it).
size_t plugin_files_opened();

}  // namespace chring
