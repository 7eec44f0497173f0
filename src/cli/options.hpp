// Flag groups shared by the subcommands, so every command spells the ring
// options, the membership and the output the same way.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "report.hpp"
#include "ring_handle.hpp"
#include "ring_source.hpp"
#include "spelling.hpp"

namespace chring::cli {

// A command line that is wrong on its own (a bad or missing value, options
// that cannot go together): printed as "chring: <what()>", exit 2.
class UsageError : public CliError {
public:
    using CliError::CliError;
};

// Why `text` is not a number in min..max ("'x' is not a whole number
// (0..9)"), or "" when it is: decimal digits only (no sign, space, hex or
// exponent), so "-1" or 2^64 never wraps.
std::string number_problem(const std::string &text, uint64_t min, uint64_t max);
// number_problem as a CLI11 check of an option's text.
CLI::Validator whole_number(uint64_t min, uint64_t max);

// One member from a flag such as "--node SPEC": ID[=WEIGHT[@ZONE]], id and
// zone decoded as in ring files (write a literal '=' or '@' in an id as
// %3D / %40). A bad spec is a UsageError naming the flag.
Member member_from_flag(const std::string &spec, uint32_t default_weight, const std::string &flag);

// --hasher, --seed, --plugin-dir: how keys and tokens are hashed.
void add_hasher_options(CLI::App &cmd, RingConfig &config);
// --plugin-dir DIR alone.
void add_plugin_dir_option(CLI::App &cmd, std::string &dir);
// The hasher options plus --placement and --tokens-per-weight. With
// `placement_list`, --placement takes a comma-separated list (sim).
void add_ring_options(CLI::App &cmd, RingConfig &config, std::vector<std::string> *placement_list = nullptr);
// Records in `config` which of those flags the command line gave
// (RingConfig::given_*); call it first in the command's callback.
void note_given_options(const CLI::App &cmd, RingConfig &config);

// The members a command works on: a ring file, generated nodes, single flags.
struct MembershipFlags {
    std::string file;
    uint32_t generated = 0;          // --nodes N: node-1 .. node-N, weight 1
    std::vector<std::string> specs;  // --node ID[=WEIGHT[@ZONE]]
    // The flags' members (a duplicate among them is a UsageError naming
    // both flags), then the file's text.
    MemberSource read() const;
    // read(), made into a ring with `config` (see build_ring).
    LoadedRing load(const RingConfig &config) const { return build_ring(read(), config); }
    std::string describe() const;    // "members.txt + --nodes 3"-style summary
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

}  // namespace chring::cli
