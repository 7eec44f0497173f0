// chring export: the canonical ring file (or its JSON twin) of a ring made
// of a ring file and/or member flags, written by the library
// (chr_snapshot_export): the same ring gives the same bytes everywhere.
#include <unistd.h>

#include <iostream>
#include <limits>
#include <memory>

#include "commands.hpp"
#include "options.hpp"

namespace chring::cli {
namespace {

struct ExportFlags {
    MembershipFlags members;
    RingConfig ring;
    std::string format = "text";
    uint64_t revision = 0;
    bool has_revision = false;
    std::string output = "-";
};

void run(ExportFlags &f, const CLI::App &cmd) {
    note_given_options(cmd, f.ring);
    f.has_revision = cmd.count("--revision") > 0;
    const bool json = f.format == "json";
    LoadedRing loaded = f.members.load(f.ring);
    Snapshot snap = loaded.ring->snapshot();
    if (snap.token_count() == 0)
        warn("the ring has no node with tokens (" + loaded.why_no_tokens + "): every lookup in it fails");
    // The file's own %%revision is kept unless --revision replaces it.
    const bool file_revision = loaded.info.flags & CHR_RINGFILE_HAS_REVISION;
    const uint32_t flags = (json ? CHR_EXPORT_JSON : 0u) | (f.has_revision || file_revision ? CHR_EXPORT_REVISION : 0u);
    const std::string text = snap.export_text(flags, f.has_revision ? f.revision : loaded.info.revision);
    if (f.output != "-") {
        write_file_atomically(f.output, text, json ? "JSON ring file" : "ring file");
        return;
    }
    // On a terminal, the C1 and bidirectional controls an id can hold
    // (valid UTF-8: the canonical text keeps them) are escaped: the same
    // ring, other bytes.
    std::cout << (isatty(STDOUT_FILENO) ? escape_hidden_controls(text, json) : text);
}

}  // namespace

void add_export_command(CLI::App &app) {
    auto flags = std::make_shared<ExportFlags>();
    CLI::App *cmd = app.add_subcommand("export", "Write the canonical ring file of a ring file or --node flags");
    cmd->footer("Examples:\n  chring export -m members.txt -o ring.txt\n"
                "  chring export --node cache-a --node cache-b=2 --revision 7\n"
                "  chring export -m ring.txt --format json\n"
                "The canonical form is a function of the ring: directives in a fixed order, members sorted, "
                "minimal escapes. -o replaces FILE atomically (a temporary file in its directory, fsync, "
                "rename). On a terminal, C1 and bidirectional controls in ids are shown escaped.");
    add_membership_options(*cmd, flags->members, true);
    add_ring_options(*cmd, flags->ring);
    cmd->add_option("--format", flags->format, "Output: the ring file text, or its JSON twin")
        ->type_name("text|json")
        ->check(CLI::IsMember({"text", "json"}).description(""))
        ->capture_default_str();
    cmd->add_option("--revision", flags->revision,
                    "Write %%revision N (default: the input file's %%revision, if it has one)")
        ->type_name("N")
        ->check(whole_number(0, std::numeric_limits<uint64_t>::max()));
    cmd->add_option("-o,--output", flags->output, "Write to FILE, atomically ('-' = stdout)")
        ->type_name("FILE")
        ->capture_default_str();
    cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace chring::cli
