// A hash plugin written in C++ with CHR_PLUGIN_DEFINE, as chring_plugin.h
// shows it: the loader must find its entry point (C linkage, unmangled).
#include <chring_plugin.h>

namespace {

uint64_t length_hash(const void *, size_t len, uint64_t seed) noexcept { return len * 31 + seed; }

const chr_hasher cxx_hasher = {CHR_PLUGIN_ABI_VERSION, sizeof(chr_hasher), "abi-cxx-plugin",
                               "written in C++", length_hash, 0, nullptr, 0};
const chr_hasher *const cxx_table[] = {&cxx_hasher};

}  // namespace

CHR_PLUGIN_DEFINE(cxx_table)
