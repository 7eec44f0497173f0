// The PE checks a plugin file passes on Windows before LoadLibrary sees it,
// the counterpart of elf_check.hpp: the Windows loader maps the sections
// a DLL's headers describe, and a truncated or corrupted file (a section
// whose bytes end past the end of the file, a section table past the
// headers, an export table outside the image) is refused here with a
// message, from the file's bytes alone, instead of being mapped.
// Plain byte decoding, no Windows header: it builds on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace chring {

// What this process is: a plugin must be built for the same machine.
struct PeHost {
    uint16_t machine;  // IMAGE_FILE_MACHINE_AMD64 (0x8664), ARM64 (0xaa64), ...
    uint16_t magic;    // optional header: 0x20b (PE32+) on 64-bit hosts, 0x10b (PE32)
};

PeHost host_pe();

// Reads `len` bytes at `offset` into `out`; false if it cannot.
using PeReadAt = std::function<bool(uint64_t offset, void *out, size_t len)>;

struct PeVerdict {
    bool ok = false;
    bool pe = false;      // the MZ and PE signatures are there
    char why[192] = {};   // on failure: what is wrong, for the message
};

// Checks a file of `size` bytes: the MZ header and e_lfanew inside the
// file, the PE signature, the machine, a DLL image (IMAGE_FILE_DLL,
// IMAGE_FILE_EXECUTABLE_IMAGE), the optional header's magic and size, the
// alignments (powers of two, file <= section), the headers and the
// section table inside the file, every section's raw bytes inside the
// file, sections aligned, in ascending address order, not overlapping and
// inside SizeOfImage, every data directory inside the image (the
// certificate table inside the file), the export directory and its three
// tables inside sections' file bytes, and an entry point (DllMain) inside
// an executable section (docs/windows.md, "PE checks").
PeVerdict check_pe(const PeReadAt &read, uint64_t size, const PeHost &host);

// The same over bytes in memory.
PeVerdict check_pe_bytes(const void *data, size_t size, const PeHost &host);

}  // namespace chring
