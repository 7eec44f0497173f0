#include "plugin/pe_check.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/errors.hpp"

namespace chring {
namespace {

constexpr uint16_t kFileDll = 0x2000, kFileExecutable = 0x0002;
constexpr uint32_t kScnExecute = 0x20000000;
constexpr uint16_t kMaxSections = 96;          // the Windows loader's own limit
constexpr uint32_t kMaxExports = 1u << 16;
constexpr size_t kOptionalFixed64 = 112, kOptionalFixed32 = 96;  // up to the data directories
constexpr unsigned kDirExport = 0, kDirCertificate = 4;

uint16_t le16(const unsigned char *p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t le32(const unsigned char *p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
bool pow2(uint32_t x) { return x && !(x & (x - 1)); }

PeVerdict refuse(bool pe, const char *fmt, ...) CHR_PRINTF(2, 3);
PeVerdict refuse(bool pe, const char *fmt, ...) {
    PeVerdict v;
    v.pe = pe;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(v.why, sizeof v.why, fmt, ap);
    va_end(ap);
    return v;
}

struct Section {
    uint32_t va, vsize, raw_size, raw_offset, flags;
};

// The file offset of `len` bytes at image address `rva`, when one section's
// file bytes hold all of them.
bool rva_to_file(const std::vector<Section> &sections, uint64_t rva, uint64_t len, uint64_t *offset) {
    for (const Section &s : sections) {
        if (rva >= s.va && rva - s.va <= s.raw_size && len <= s.raw_size - (rva - s.va)) {
            *offset = s.raw_offset + (rva - s.va);
            return true;
        }
    }
    return false;
}

}  // namespace

PeHost host_pe() {
#if defined(__x86_64__) || defined(_M_X64)
    return PeHost{0x8664, 0x20b};
#elif defined(__aarch64__) || defined(_M_ARM64)
    return PeHost{0xaa64, 0x20b};
#elif defined(__i386__) || defined(_M_IX86)
    return PeHost{0x14c, 0x10b};
#else
    return PeHost{0, sizeof(void *) == 8 ? 0x20b : 0x10b};
#endif
}

PeVerdict check_pe(const PeReadAt &read, uint64_t size, const PeHost &host) {
    unsigned char dos[64];
    if (size < sizeof dos || !read(0, dos, sizeof dos))
        return refuse(false, "%llu bytes, shorter than a DOS header", static_cast<unsigned long long>(size));
    if (dos[0] != 'M' || dos[1] != 'Z') return refuse(false, "no MZ signature");
    uint64_t pe_at = le32(dos + 0x3c);
    unsigned char head[24];  // signature and file header
    if (pe_at % 4 != 0 || pe_at + sizeof head > size || !read(pe_at, head, sizeof head))
        return refuse(false, "the PE header offset %llu is not inside the file",
                      static_cast<unsigned long long>(pe_at));
    if (std::memcmp(head, "PE\0\0", 4) != 0) return refuse(false, "no PE signature");

    uint16_t machine = le16(head + 4), nsections = le16(head + 6);
    uint16_t optional_size = le16(head + 20), characteristics = le16(head + 22);
    if (machine != host.machine)
        return refuse(true, "built for machine 0x%04x, this process is 0x%04x", machine, host.machine);
    if (!(characteristics & kFileDll) || !(characteristics & kFileExecutable))
        return refuse(true, "not a DLL image (characteristics 0x%04x)", characteristics);
    if (nsections == 0 || nsections > kMaxSections)
        return refuse(true, "%u sections (1 to %u)", nsections, kMaxSections);

    const bool pe64 = host.magic == 0x20b;
    const size_t fixed = pe64 ? kOptionalFixed64 : kOptionalFixed32;
    uint64_t opt_at = pe_at + sizeof head;
    if (optional_size < fixed || opt_at + optional_size > size)
        return refuse(true, "optional header of %u bytes at %llu is not inside the file", optional_size,
                      static_cast<unsigned long long>(opt_at));
    std::vector<unsigned char> opt(optional_size);
    if (!read(opt_at, opt.data(), opt.size())) return refuse(true, "cannot read the optional header");
    uint16_t magic = le16(&opt[0]);
    if (magic != host.magic) return refuse(true, "optional header magic 0x%03x, expected 0x%03x", magic, host.magic);
    uint32_t entry = le32(&opt[16]);
    uint32_t section_align = le32(&opt[32]), file_align = le32(&opt[36]);
    uint32_t image_size = le32(&opt[56]), headers_size = le32(&opt[60]);
    uint32_t ndirs = le32(&opt[fixed - 4]);
    if (!pow2(file_align) || file_align > 65536 || !pow2(section_align) || section_align < file_align)
        return refuse(true, "bad alignments: file %u, section %u", file_align, section_align);
    if (ndirs > 16 || fixed + 8ull * ndirs > optional_size)
        return refuse(true, "%u data directories do not fit the optional header", ndirs);

    uint64_t table_at = opt_at + optional_size, table_size = 40ull * nsections;
    if (table_at + table_size > size)
        return refuse(true, "the section table (%u sections at %llu) ends past the end of the file",
                      nsections, static_cast<unsigned long long>(table_at));
    if (headers_size > size || headers_size < table_at + table_size)
        return refuse(true, "SizeOfHeaders %u does not cover the section table or exceeds the file",
                      headers_size);
    std::vector<unsigned char> table(static_cast<size_t>(table_size));
    if (!read(table_at, table.data(), table.size())) return refuse(true, "cannot read the section table");

    std::vector<Section> sections;
    uint64_t next_va = headers_size;
    bool entry_ok = entry == 0;
    for (uint16_t i = 0; i < nsections; ++i) {
        const unsigned char *p = &table[40u * i];
        Section s{le32(p + 12), le32(p + 8), le32(p + 16), le32(p + 20), le32(p + 36)};
        char name[9] = {};
        std::memcpy(name, p, 8);
        for (char &c : name)
            if (c && (c < 0x20 || c > 0x7e)) c = '?';
        if (s.raw_size && static_cast<uint64_t>(s.raw_offset) + s.raw_size > size)
            return refuse(true, "section %u (%s): its %u bytes at %u end past the end of the file (%llu bytes)",
                          i, name, s.raw_size, s.raw_offset, static_cast<unsigned long long>(size));
        if (s.va % section_align != 0 || s.va < next_va)
            return refuse(true, "section %u (%s) at 0x%x is misaligned or overlaps the one before", i, name, s.va);
        uint64_t span = s.vsize > s.raw_size ? s.vsize : s.raw_size;
        if (static_cast<uint64_t>(s.va) + span > image_size)
            return refuse(true, "section %u (%s) ends past SizeOfImage 0x%x", i, name, image_size);
        next_va = static_cast<uint64_t>(s.va) + span;
        if (entry && (s.flags & kScnExecute) && entry >= s.va && entry < s.va + span) entry_ok = true;
        if (s.raw_size > s.vsize && s.vsize) s.raw_size = s.vsize;  // bytes past VirtualSize are not mapped
        sections.push_back(s);
    }
    if (!entry_ok) return refuse(true, "the entry point 0x%x is not in an executable section", entry);

    uint32_t export_rva = 0, export_size = 0;
    for (uint32_t d = 0; d < ndirs; ++d) {
        uint32_t rva = le32(&opt[fixed + 8 * d]), len = le32(&opt[fixed + 8 * d + 4]);
        if (!rva && !len) continue;
        if (d == kDirCertificate) {  // a file offset, not an image address
            if (static_cast<uint64_t>(rva) + len > size)
                return refuse(true, "the certificate table ends past the end of the file");
            continue;
        }
        if (static_cast<uint64_t>(rva) + len > image_size)
            return refuse(true, "data directory %u (0x%x, %u bytes) ends past SizeOfImage", d, rva, len);
        if (d == kDirExport) export_rva = rva, export_size = len;
    }
    if (!export_rva) return refuse(true, "it exports nothing (no export directory)");
    unsigned char exp[40];
    uint64_t exp_at = 0;
    if (export_size < sizeof exp || !rva_to_file(sections, export_rva, sizeof exp, &exp_at) ||
        !read(exp_at, exp, sizeof exp))
        return refuse(true, "the export directory at 0x%x is not inside a section's file bytes", export_rva);
    uint32_t nfunctions = le32(exp + 20), nnames = le32(exp + 24);
    uint32_t functions = le32(exp + 28), names = le32(exp + 32), ordinals = le32(exp + 36);
    if (nfunctions > kMaxExports || nnames > nfunctions)
        return refuse(true, "the export directory claims %u functions and %u names", nfunctions, nnames);
    uint64_t at = 0;
    if ((nfunctions && !rva_to_file(sections, functions, 4ull * nfunctions, &at)) ||
        (nnames && !rva_to_file(sections, names, 4ull * nnames, &at)) ||
        (nnames && !rva_to_file(sections, ordinals, 2ull * nnames, &at)))
        return refuse(true, "an export table is not inside a section's file bytes");
    PeVerdict ok;
    ok.ok = ok.pe = true;
    return ok;
}

PeVerdict check_pe_bytes(const void *data, size_t size, const PeHost &host) {
    const unsigned char *bytes = static_cast<const unsigned char *>(data);
    return check_pe(
        [bytes, size](uint64_t offset, void *out, size_t len) {
            if (offset > size || len > size - offset) return false;
            std::memcpy(out, bytes + offset, len);
            return true;
        },
        size, host);
}

}  // namespace chring
