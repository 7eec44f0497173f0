// LoadedSegments on Windows: the sections of a loaded DLL, read from the
// headers the loader mapped at the module's base (the HMODULE), the same
// headers pe_check.cpp checked in the file before the load.
#include <windows.h>

#include "base/errors.hpp"
#include "plugin/segments.hpp"
#include "plugin/win_path.hpp"

namespace chring {

chr_status LoadedSegments::find(void *handle, const std::string &path, const char *who) {
    ranges_.clear();
    const auto *base = static_cast<const unsigned char *>(handle);
    if (!base)
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s': the loader returned no module", who, path.c_str());
    const auto *dos = reinterpret_cast<const IMAGE_DOS_HEADER *>(base);
    const auto *nt = reinterpret_cast<const IMAGE_NT_HEADERS *>(base + dos->e_lfanew);
    if (dos->e_magic != IMAGE_DOS_SIGNATURE || nt->Signature != IMAGE_NT_SIGNATURE)
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s': no PE headers at the module's base", who, path.c_str());
    const IMAGE_SECTION_HEADER *sec = IMAGE_FIRST_SECTION(nt);
    for (WORD i = 0; i < nt->FileHeader.NumberOfSections; ++i, ++sec) {
        uintptr_t start = reinterpret_cast<uintptr_t>(base) + sec->VirtualAddress;
        DWORD span = sec->Misc.VirtualSize ? sec->Misc.VirtualSize : sec->SizeOfRawData;
        ranges_.push_back(Range{start, start + span, (sec->Characteristics & IMAGE_SCN_MEM_READ) != 0,
                                (sec->Characteristics & IMAGE_SCN_MEM_EXECUTE) != 0});
    }
    if (ranges_.empty())
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s': no loaded sections found for it", who, path.c_str());
    return CHR_OK;
}

bool object_named_is_loaded(const std::string &name) {
    std::wstring wide;
    return win::widen(name, &wide) && ::GetModuleHandleW(wide.c_str()) != nullptr;
}

}  // namespace chring
