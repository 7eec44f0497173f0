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
    // The PT_LOAD segments of the object dlopen() returned `handle` for
    // (segments.cpp); on Windows the sections of the module whose HMODULE
    // `handle` is (segments_win.cpp). CHR_EPLUGIN_NOTSO if the loader does
    // not know it.
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

inline size_t LoadedSegments::readable_from(const void *p) const {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const Range &r : ranges_)
        if (r.readable && a >= r.start && a < r.end) return r.end - a;
    return 0;
}

inline bool LoadedSegments::executable(const void *fn) const {
    uintptr_t a = reinterpret_cast<uintptr_t>(fn);
    for (const Range &r : ranges_)
        if (r.executable && a >= r.start && a < r.end) return true;
    return false;
}

// Whether an object the loader names `name` is loaded in this process.
bool object_named_is_loaded(const std::string &name);

}  // namespace chring
