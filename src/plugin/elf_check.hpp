// The ELF checks a plugin file passes before the dynamic loader sees it.
// ld.so maps a shared object's segments and then reads them: a segment that
// ends past the end of the file (a truncated copy) is mapped all the same,
// and the first read of a page past the end is SIGBUS in the loader. These
// checks find that, and the header faults the loader would read through,
// from the file's bytes alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace chring {

// What the host's own objects are; a plugin must match.
struct ElfHost {
    unsigned char elf_class;  // ELFCLASS64 on 64-bit hosts
    unsigned char data;       // ELFDATA2LSB on little-endian hosts
    uint16_t machine;         // EM_X86_64, EM_AARCH64, ...
};

// This process's values, from the library's own ELF header.
ElfHost host_elf();

// Reads `len` bytes at `offset` into `out`; false if it cannot.
using ReadAt = std::function<bool(uint64_t offset, void *out, size_t len)>;

struct ElfVerdict {
    bool ok = false;
    bool elf = false;  // the four magic bytes are there
    char why[192] = {};  // on failure: what is wrong, for the message
};

// Checks the ELF header, the program headers and the dynamic section of a
// file of `size` bytes: magic, class, byte order, version, type ET_DYN,
// machine, the program header table inside the file, every PT_LOAD's file
// bytes inside the file with p_filesz <= p_memsz, a power-of-two
// alignment the offset and address agree on, loads in ascending address
// order, the segments the loader reads (dynamic, notes, TLS image, ...)
// inside both the file and a PT_LOAD at matching offset and address, the
// dynamic section's tables inside the loaded image with a DT_NULL
// terminator and the entries the loader needs, and the contents it trusts:
// hash chains, symbol names, version records and indices, relocation
// targets and symbols, initializers (docs/plugins.md, "ELF checks").
ElfVerdict check_elf(const ReadAt &read, uint64_t size, const ElfHost &host);

// The same over bytes in memory (for tests and fuzzers).
ElfVerdict check_elf_bytes(const void *data, size_t size, const ElfHost &host);

}  // namespace chring
