// A ring made of what the user named: a ring file (read by the library's
// parser, chr_ring_new_from_text) and members given as flags, with the
// rule that joins the file's option directives and the option flags
// (src/cli/README.md, "Ring files and flags").
#pragma once

#include <chring.h>

#include <memory>
#include <string>
#include <vector>

#include "file_io.hpp"
#include "ring_handle.hpp"

namespace chring::cli {

// A member given by a flag, and the flag as the user wrote it.
struct FlagMember {
    Member member;
    std::string flag;  // "--node a=2", "--nodes 3"
};

// The inputs of a ring, read but not yet parsed.
struct MemberSource {
    std::string name;  // the ring file in messages ("<stdin>" for "-"); empty without one
    std::string text;  // the ring file's bytes
    size_t cut_line = 0;  // the text stops inside this line, longer than the parser's limit
    std::vector<FlagMember> flags;  // added after the file's members, in this order
};

// Reads the ring file `path` ("-" = stdin) into source's name and text,
// within the library's limits: its size; a NUL byte (binary data, which
// the parser refuses at that line) or a line over CHR_RINGFILE_LINE_MAX
// ends the read, so an endless line fails at once.
void read_ring_file(const std::string &path, MemberSource &source);

struct LoadedRing {
    std::unique_ptr<Ring> ring;
    RingConfig config;  // the options in force: the file's directives, or the flags
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;  // what the file said; zeros without one
    std::vector<NodeInfo> members;  // in position order: the file's, then the flags'
    std::string why_no_tokens;      // "FILE has no member lines" or "every member has weight 0"
};

// Builds the ring: the file's members (tag = position in the file), then
// the flags' (tags after them) as one batch. A file with option
// directives sets the options; an option flag the user gave must agree
// with them (else a UsageError naming the flag, the file and the line).
// A file without option directives takes the flags' options. Errors:
// the library's "FILE:LINE: ..." for the file; a flag member the file
// already has names the flag, the file and the line.
LoadedRing build_ring(const MemberSource &source, const RingConfig &flags);

// "placement native, hasher xxh3, seed 0, tokens per weight 160".
std::string describe_options(const RingConfig &config);

}  // namespace chring::cli
