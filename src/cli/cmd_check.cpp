// chring check: is this ring file valid, and which ring does it describe?
// The library's parser reads it (chr_ring_new_from_text); a bad file is the
// parser's "FILE:LINE: what is wrong" and exit 1.
#include <iostream>
#include <memory>

#include "availability.hpp"
#include "commands.hpp"
#include "options.hpp"

namespace chring::cli {
namespace {

struct CheckFlags {
    std::string file;
    RingConfig ring;
    OutputFlags output;
};

Table file_table(const std::string &name, const LoadedRing &loaded, const Snapshot &snap, bool canonical) {
    const chr_ringfile_info &info = loaded.info;
    const RingConfig &c = loaded.config;
    size_t with_tokens = 0;
    for (const NodeInfo &n : loaded.members) with_tokens += n.tokens > 0;
    Table t;
    t.key = "file";
    t.title = "Ring file (valid)";
    t.add_field("file", "file", text_cell(name));
    t.add_field("format_version", "format version", count_cell(info.format_version));
    t.add_field("options_from", "options from",
                text_cell(info.flags & CHR_RINGFILE_HAS_OPTIONS ? "the file's directives"
                                                                : "the command line (no option directive)"));
    t.add_field("placement", "placement", text_cell(c.placement));
    t.add_field("hasher", "hasher", text_cell(c.effective_hasher()));
    t.add_field("seed", "seed", count_cell(c.seed));
    t.add_field("tokens_per_weight", "tokens per weight", count_cell(c.tokens_per_weight));
    t.add_field("revision", "revision",
                info.flags & CHR_RINGFILE_HAS_REVISION ? count_cell(info.revision) : none_cell());
    t.add_field("fingerprint", "fingerprint", hex_cell(info.fingerprint));
    t.add_field("fingerprint_checked", "fingerprint checked",
                text_cell(info.flags & CHR_RINGFILE_HAS_FINGERPRINT ? "yes: it matches the file's %%fingerprint"
                                                                    : "no %%fingerprint line"));
    t.add_field("canonical", "canonical", text_cell(canonical ? "yes" : "no (chring export writes the canonical form)"));
    t.add_field("members", "members", count_cell(loaded.members.size()));
    t.add_field("members_with_tokens", "members with tokens", count_cell(with_tokens));
    t.add_field("tokens", "tokens", count_cell(snap.token_count()));
    add_availability_fields(t, snap.availability());
    return t;
}

Table members_table(const std::vector<NodeInfo> &members) {
    bool zones = false;
    for (const NodeInfo &n : members) zones = zones || !n.zone.empty();
    Table t;
    t.key = "members";
    t.title = "Members (in file order)";
    t.columns = {{"position", "#"}, {"node", "node", false}, {"zone", "zone", false, zones},
                 {"weight", "weight"}, {"tokens", "tokens"}};
    const bool marks = any_marked(members);
    if (marks) t.columns.push_back({"state", "state", false});
    for (const NodeInfo &n : members) {
        std::vector<Cell> row = {count_cell(n.tag), text_cell(printable_id(n.id)),
                                 text_cell(n.zone.empty() ? "" : printable_id(n.zone)), count_cell(n.weight),
                                 count_cell(n.tokens)};
        if (marks) row.push_back(state_cell(n));
        t.add_row(std::move(row));
    }
    return t;
}

void run(CheckFlags &f, const CLI::App &cmd) {
    note_given_options(cmd, f.ring);
    Format format = parse_format(f.output.format);
    MemberSource source;
    read_ring_file(f.file, source);
    LoadedRing loaded = build_ring(source, f.ring);
    Snapshot snap = loaded.ring->snapshot();
    if (snap.token_count() == 0)
        warn("the ring has no node with tokens (" + loaded.why_no_tokens + "): every lookup in it fails");
    const uint32_t flags = loaded.info.flags & CHR_RINGFILE_HAS_REVISION ? CHR_EXPORT_REVISION : 0;
    const bool canonical = snap.export_text(flags, loaded.info.revision) == source.text;

    Report report;
    report.tables.push_back(file_table(source.name, loaded, snap, canonical));
    report.tables.push_back(members_table(loaded.members));
    write_report(report, format, std::cout);
}

}  // namespace

void add_check_command(CLI::App &app) {
    auto flags = std::make_shared<CheckFlags>();
    CLI::App *cmd = app.add_subcommand("check", "Validate a ring file: its members, tokens and fingerprint");
    cmd->footer("Example: chring check ring.txt\n"
                "Exit status 0: the file is valid (it is read as every embedding reads it); 1: it is not, "
                "and the message says FILE:LINE: what is wrong. The ring options apply to a file "
                "without option directives.");
    cmd->add_option("file", flags->file, "The ring file ('-' = stdin)")->type_name("FILE")->required();
    add_ring_options(*cmd, flags->ring);
    add_output_options(*cmd, flags->output, false);
    cmd->callback([flags, cmd] { run(*flags, *cmd); });
}

}  // namespace chring::cli
