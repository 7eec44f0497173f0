#include "plugin/segments.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "base/errors.hpp"

namespace chring {
namespace {

struct Search {
    ElfW(Addr) base;
    const char *name;
    std::vector<ElfW(Phdr)> loads;
    bool found = false;
};

}  // namespace

chr_status LoadedSegments::find(void *handle, const std::string &path, const char *who) {
    ranges_.clear();
    struct link_map *map = nullptr;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s': the dynamic loader has no link map for it", who,
                    path.c_str());
    // dl_iterate_phdr gives the program headers; the load bias and the
    // loader's name for the object (both from the link map) pick it out.
    Search s{map->l_addr, map->l_name ? map->l_name : "", {}};
    ::dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *data) {
            auto *s = static_cast<Search *>(data);
            if (info->dlpi_addr != s->base || !info->dlpi_name ||
                std::strcmp(info->dlpi_name, s->name) != 0)
                return 0;
            for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i)
                if (info->dlpi_phdr[i].p_type == PT_LOAD) s->loads.push_back(info->dlpi_phdr[i]);
            s->found = true;
            return 1;
        },
        &s);
    if (!s.found || s.loads.empty())
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s': no loaded segments found for it", who, path.c_str());
    for (const ElfW(Phdr) &p : s.loads) {
        uintptr_t start = static_cast<uintptr_t>(s.base + p.p_vaddr);
        ranges_.push_back(Range{start, start + static_cast<uintptr_t>(p.p_memsz),
                                (p.p_flags & PF_R) != 0, (p.p_flags & PF_X) != 0});
    }
    return CHR_OK;
}

bool object_named_is_loaded(const std::string &name) {
    struct Query {
        const char *name;
        bool found;
    } q{name.c_str(), false};
    ::dl_iterate_phdr(
        [](struct dl_phdr_info *info, size_t, void *data) {
            auto *q = static_cast<Query *>(data);
            if (info->dlpi_name && std::strcmp(info->dlpi_name, q->name) == 0) q->found = true;
            return q->found ? 1 : 0;
        },
        &q);
    return q.found;
}

}  // namespace chring
