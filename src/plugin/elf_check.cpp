#include "plugin/elf_check.hpp"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

// The linker's symbol for the ELF header of the object it is linked into
// (libchring.so, or the program that links the core statically).
extern "C" const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

namespace chring {
namespace {

using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);
using Dyn = ElfW(Dyn);
using Addr = ElfW(Addr);

// The program header count read at most: real objects have about ten.
constexpr uint32_t kMaxProgramHeaders = 1024;
// Dynamic entries read at most (real objects have a few dozen).
constexpr uint64_t kMaxDynamicEntries = 4096;

ElfVerdict refuse(bool elf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ElfVerdict refuse(bool elf, const char *fmt, ...) {
    ElfVerdict v;
    v.elf = elf;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(v.why, sizeof v.why, fmt, ap);
    va_end(ap);
    return v;
}

bool power_of_two_or_zero(uint64_t v) { return (v & (v - 1)) == 0; }

// [start, start + len) without overflow, inside [0, limit).
bool range_within(uint64_t start, uint64_t len, uint64_t limit) {
    return start <= limit && len <= limit - start;
}

struct Image {
    std::vector<Phdr> loads;
    // The PT_LOAD whose memory holds [vaddr, vaddr + len) entirely, or null.
    // file_backed: only its first p_filesz bytes count.
    const Phdr *holding(uint64_t vaddr, uint64_t len, bool file_backed) const {
        for (const Phdr &p : loads) {
            uint64_t extent = file_backed ? p.p_filesz : p.p_memsz;
            if (vaddr >= p.p_vaddr && range_within(vaddr - p.p_vaddr, len, extent)) return &p;
        }
        return nullptr;
    }
};

const char *segment_name(uint32_t type) {
    switch (type) {
    case PT_DYNAMIC: return "PT_DYNAMIC";
    case PT_NOTE: return "PT_NOTE";
    case PT_TLS: return "PT_TLS";
    case PT_INTERP: return "PT_INTERP";
    case PT_GNU_EH_FRAME: return "PT_GNU_EH_FRAME";
    case PT_GNU_PROPERTY: return "PT_GNU_PROPERTY";
    default: return "segment";
    }
}

// Checks the dynamic section's address entries (tables the loader reads
// through the mapped image) and its DT_NULL terminator.
ElfVerdict check_dynamic(const ReadAt &read, const Phdr &dyn, const Image &image) {
    uint64_t count = dyn.p_filesz / sizeof(Dyn);
    if (count > kMaxDynamicEntries) count = kMaxDynamicEntries;
    uint64_t strtab = 0, strsz = 0;
    bool have_strtab = false, have_strsz = false, terminated = false;
    struct Sized {
        int64_t addr_tag, size_tag;
        uint64_t addr = 0, size = 0;
        bool have_addr = false, have_size = false;
    } sized[] = {{DT_STRTAB, DT_STRSZ},       {DT_RELA, DT_RELASZ},
                 {DT_REL, DT_RELSZ},          {DT_JMPREL, DT_PLTRELSZ},
                 {DT_INIT_ARRAY, DT_INIT_ARRAYSZ}, {DT_FINI_ARRAY, DT_FINI_ARRAYSZ},
                 {DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ}, {DT_RELR, DT_RELRSZ}};
    static const int64_t pointer_tags[] = {DT_SYMTAB, DT_HASH,   DT_GNU_HASH, DT_VERSYM,
                                           DT_VERDEF, DT_VERNEED, DT_INIT,    DT_FINI,
                                           DT_PLTGOT};
    for (uint64_t i = 0; i < count; ++i) {
        Dyn d;
        if (!read(dyn.p_offset + i * sizeof d, &d, sizeof d))
            return refuse(true, "its dynamic section cannot be read");
        if (d.d_tag == DT_NULL) {
            terminated = true;
            break;
        }
        for (Sized &s : sized) {
            if (d.d_tag == s.addr_tag) s.addr = d.d_un.d_ptr, s.have_addr = true;
            if (d.d_tag == s.size_tag) s.size = d.d_un.d_val, s.have_size = true;
        }
        for (int64_t tag : pointer_tags)
            if (d.d_tag == tag && !image.holding(d.d_un.d_ptr, 1, false))
                return refuse(true, "dynamic entry %lld points at 0x%llx, outside every PT_LOAD",
                              static_cast<long long>(tag),
                              static_cast<unsigned long long>(d.d_un.d_ptr));
        if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr, have_strtab = true;
        if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val, have_strsz = true;
    }
    if (!terminated) return refuse(true, "its dynamic section has no DT_NULL terminator");
    for (const Sized &s : sized) {
        if (!s.have_addr) continue;
        uint64_t len = s.have_size ? s.size : 1;
        if (!image.holding(s.addr, len ? len : 1, false))
            return refuse(true, "dynamic table %lld at 0x%llx (%llu bytes) is outside every PT_LOAD",
                          static_cast<long long>(s.addr_tag), static_cast<unsigned long long>(s.addr),
                          static_cast<unsigned long long>(len));
    }
    if (have_strtab != have_strsz) return refuse(true, "DT_STRTAB and DT_STRSZ must come together");
    // Names (DT_NEEDED, DT_SONAME, run paths) are offsets into the string table.
    for (uint64_t i = 0; have_strtab && i < count; ++i) {
        Dyn d;
        if (!read(dyn.p_offset + i * sizeof d, &d, sizeof d)) break;
        if (d.d_tag == DT_NULL) break;
        if ((d.d_tag == DT_NEEDED || d.d_tag == DT_SONAME || d.d_tag == DT_RPATH ||
             d.d_tag == DT_RUNPATH) &&
            d.d_un.d_val >= strsz)
            return refuse(true, "dynamic entry %lld names string %llu, past the %llu-byte string table",
                          static_cast<long long>(d.d_tag),
                          static_cast<unsigned long long>(d.d_un.d_val),
                          static_cast<unsigned long long>(strsz));
    }
    (void)strtab;
    return ElfVerdict{true, true, {}};
}

}  // namespace

ElfHost host_elf() {
    const unsigned char *ident = __ehdr_start.e_ident;
    return ElfHost{ident[EI_CLASS], ident[EI_DATA], __ehdr_start.e_machine};
}

ElfVerdict check_elf(const ReadAt &read, uint64_t size, const ElfHost &host) {
    unsigned char magic[SELFMAG];
    if (size < SELFMAG || !read(0, magic, SELFMAG) || std::memcmp(magic, ELFMAG, SELFMAG) != 0)
        return refuse(false, "no ELF header");
    if (size < sizeof(Ehdr))
        return refuse(true, "truncated: %llu bytes, shorter than an ELF header",
                      static_cast<unsigned long long>(size));
    Ehdr eh;
    if (!read(0, &eh, sizeof eh)) return refuse(true, "its ELF header cannot be read");
    if (eh.e_ident[EI_CLASS] != host.elf_class)
        return refuse(true, "ELF class %u, not this host's %u", eh.e_ident[EI_CLASS], host.elf_class);
    if (eh.e_ident[EI_DATA] != host.data)
        return refuse(true, "ELF byte order %u, not this host's %u", eh.e_ident[EI_DATA], host.data);
    if (eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT)
        return refuse(true, "ELF version %u, not %u", eh.e_version, EV_CURRENT);
    if (eh.e_type != ET_DYN) return refuse(true, "ELF type %u is not a shared object", eh.e_type);
    if (eh.e_machine != host.machine)
        return refuse(true, "built for ELF machine %u, not this host's %u", eh.e_machine, host.machine);
    if (eh.e_ehsize < sizeof(Ehdr)) return refuse(true, "ELF header size %u is too small", eh.e_ehsize);
    if (eh.e_phentsize != sizeof(Phdr))
        return refuse(true, "program header size %u, not %zu", eh.e_phentsize, sizeof(Phdr));
    if (eh.e_phnum == 0 || eh.e_phnum > kMaxProgramHeaders)
        return refuse(true, "%u program headers (1..%u)", eh.e_phnum, kMaxProgramHeaders);
    if (!range_within(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Phdr), size))
        return refuse(true, "truncated: the program headers end past the file's %llu bytes",
                      static_cast<unsigned long long>(size));
    std::vector<Phdr> phdrs(eh.e_phnum);
    if (!read(eh.e_phoff, phdrs.data(), phdrs.size() * sizeof(Phdr)))
        return refuse(true, "its program headers cannot be read");

    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    Image image;
    for (const Phdr &p : phdrs) {
        if (p.p_type != PT_LOAD) continue;
        if (!range_within(p.p_offset, p.p_filesz, size))
            return refuse(true,
                          "truncated: a PT_LOAD segment's bytes [%llu, +%llu) end past the file's %llu",
                          static_cast<unsigned long long>(p.p_offset),
                          static_cast<unsigned long long>(p.p_filesz),
                          static_cast<unsigned long long>(size));
        if (p.p_filesz > p.p_memsz)
            return refuse(true, "a PT_LOAD segment has more file bytes than memory bytes");
        if (p.p_memsz == 0) return refuse(true, "a PT_LOAD segment is empty");
        if (!range_within(p.p_vaddr, p.p_memsz, UINT64_MAX))
            return refuse(true, "a PT_LOAD segment's addresses wrap around");
        if (!power_of_two_or_zero(p.p_align))
            return refuse(true, "a PT_LOAD alignment %llu is not a power of two",
                          static_cast<unsigned long long>(p.p_align));
        if (p.p_align > 1 && (p.p_offset - p.p_vaddr) % p.p_align != 0)
            return refuse(true, "a PT_LOAD segment's offset and address disagree modulo its alignment");
        if ((p.p_offset - p.p_vaddr) % page != 0)
            return refuse(true, "a PT_LOAD segment's offset and address disagree modulo the page size");
        if (!image.loads.empty()) {
            const Phdr &prev = image.loads.back();
            if (p.p_vaddr < prev.p_vaddr + prev.p_memsz)
                return refuse(true, "PT_LOAD segments overlap or are out of address order");
        }
        image.loads.push_back(p);
    }
    if (image.loads.empty()) return refuse(true, "no PT_LOAD segment");

    const Phdr *dynamic = nullptr;
    for (const Phdr &p : phdrs) {
        switch (p.p_type) {
        case PT_DYNAMIC:
            if (dynamic) return refuse(true, "two PT_DYNAMIC segments");
            dynamic = &p;
            if (p.p_filesz < sizeof(Dyn)) return refuse(true, "an empty PT_DYNAMIC segment");
            [[fallthrough]];
        case PT_NOTE:
        case PT_TLS:
        case PT_INTERP:
        case PT_GNU_EH_FRAME:
        case PT_GNU_PROPERTY:
            // Read by the loader from the file or through the mapped image.
            if (!range_within(p.p_offset, p.p_filesz, size))
                return refuse(true, "truncated: its %s ends past the file's %llu bytes",
                              segment_name(p.p_type), static_cast<unsigned long long>(size));
            if (p.p_filesz && !image.holding(p.p_vaddr, p.p_filesz, true))
                return refuse(true, "its %s lies outside the file bytes of every PT_LOAD",
                              segment_name(p.p_type));
            break;
        default: break;
        }
    }
    if (!dynamic) return refuse(true, "no PT_DYNAMIC segment: not a shared object");
    return check_dynamic(read, *dynamic, image);
}

ElfVerdict check_elf_bytes(const void *data, size_t size, const ElfHost &host) {
    const unsigned char *bytes = static_cast<const unsigned char *>(data);
    ReadAt read = [bytes, size](uint64_t offset, void *out, size_t len) {
        if (!range_within(offset, len, size)) return false;
        std::memcpy(out, bytes + offset, len);
        return true;
    };
    return check_elf(read, size, host);
}

}  // namespace chring
