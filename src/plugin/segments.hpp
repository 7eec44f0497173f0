// The address ranges a loaded plugin occupies, from its program headers as
// the dynamic loader mapped them: what its descriptor pointers are checked
// against (registry.hpp, AddressBounds).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chring.h"
#include "plugin/registry.hpp"

namespace chring {

class LoadedSegments final : public AddressBounds {
public:
    // The PT_LOAD segments of the object dlopen() returned `handle` for.
    // CHR_EPLUGIN_NOTSO if the loader does not know it.
    chr_status find(void *handle, const std::string &path, const char *who);

    size_t readable_from(const void *p) const override;
    bool executable(const void *fn) const override;

private:
    struct Range {
        uintptr_t start, end;
        bool readable, executable;
    };
    std::vector<Range> ranges_;
};

// Whether an object the loader names `name` is loaded in this process.
bool object_named_is_loaded(const std::string &name);

}  // namespace chring
