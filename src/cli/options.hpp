// Flag groups shared by the subcommands, so every command spells the ring
// options, the membership and the output the same way.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "membership.hpp"
#include "report.hpp"
#include "ring_handle.hpp"

namespace chring::cli {

// A command line that is wrong on its own (a bad or missing value, options
// that cannot go together): printed as "chring: <what()>", exit 2.
class UsageError : public CliError {
public:
    using CliError::CliError;
};

// Checks an option's text before CLI11 converts it: decimal digits only (no
// sign, space, hex or exponent) and min..max, so "-1" or 2^64 never wraps.
CLI::Validator whole_number(uint64_t min, uint64_t max);

// One member from a flag such as "--node SPEC": a bad spec is a UsageError.
Member member_from_flag(const std::string &spec, uint32_t default_weight, const std::string &flag);

// --hasher, --seed, --plugin-dir: how keys and tokens are hashed.
void add_hasher_options(CLI::App &cmd, RingConfig &config);
// The hasher options plus --placement and --tokens-per-weight. With
// `placement_list`, --placement takes a comma-separated list (sim).
void add_ring_options(CLI::App &cmd, RingConfig &config, std::vector<std::string> *placement_list = nullptr);

// The members a command works on: a file, generated nodes, single flags.
struct MembershipFlags {
    std::string file;
    uint32_t generated = 0;          // --nodes N: node-1 .. node-N, weight 1
    std::vector<std::string> specs;  // --node ID[=WEIGHT[@ZONE]]
    // All members, tagged by position; a duplicate names both places (a
    // file's line, which --node, or --nodes N).
    std::vector<Member> load() const;
    // Why a ring of `members` has no tokens: "FILE has no members ..." or
    // "every member has weight 0".
    std::string why_no_tokens(const std::vector<Member> &members) const;
    std::string describe() const;    // "members.txt (5 nodes)"-style summary
    std::string source() const;      // file name for error messages
};
// With `flags_too`, --nodes and --node are offered besides -m/--members.
void add_membership_options(CLI::App &cmd, MembershipFlags &flags, bool flags_too);

struct OutputFlags {
    std::string format = "table";
    std::string svg;  // empty = no picture
};
void add_output_options(CLI::App &cmd, OutputFlags &flags, bool svg);

// "chring: warning: <message>" on stderr, terminal-safe; the exit status is unchanged.
void warn(const std::string &message);

// Ids as they are printed: percent_encode (readable, and read back by files).
std::string printable_id(const std::string &id);

}  // namespace chring::cli
