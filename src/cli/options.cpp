#include "options.hpp"

#include <charconv>
#include <iostream>
#include <limits>
#include <unordered_map>

#include "file_io.hpp"
#include "keys.hpp"

namespace chring::cli {

std::string number_problem(const std::string &text, uint64_t min, uint64_t max) {
    const std::string range = std::to_string(min) + ".." + std::to_string(max);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        return "'" + text + "' is not a whole number (" + range + ")";
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range || end != text.data() + text.size() || value > max)
        return "'" + text + "' is over the limit " + std::to_string(max);
    if (value < min) return "'" + text + "' is under the minimum " + std::to_string(min);
    return std::string();
}

CLI::Validator whole_number(uint64_t min, uint64_t max) {
    return CLI::Validator([=](std::string &text) { return number_problem(text, min, max); }, "",
                          "WHOLE_NUMBER");
}

Member member_from_flag(const std::string &spec, uint32_t default_weight, const std::string &flag) {
    auto bad = [&](const std::string &why) { return UsageError(flag + " " + spec + ": " + why); };
    auto field = [&](std::string_view text, MemberField kind) {
        std::string bytes, why;
        if (!decode_member_field(text, kind, bytes, why)) throw bad(why);
        return bytes;
    };
    Member m;
    m.weight = default_weight;
    const size_t eq = spec.find('=');
    m.id = field(std::string_view(spec).substr(0, eq), MemberField::id);
    if (eq == std::string::npos) return m;
    const std::string rest = spec.substr(eq + 1);
    const size_t at = rest.find('@');
    const std::string weight = rest.substr(0, at);
    if (std::string why = number_problem(weight, 0, CHR_WEIGHT_MAX); !why.empty()) throw bad("weight " + why);
    m.weight = uint32_t(std::stoul(weight));
    if (at != std::string::npos) m.zone = field(std::string_view(rest).substr(at + 1), MemberField::zone);
    return m;
}

void add_hasher_options(CLI::App &cmd, RingConfig &config) {
    cmd.add_option("--hasher", config.hasher,
                   "Hash function by name, from a plugin (default: the placement's own; xxh3 for native)")
        ->type_name("NAME");
    cmd.add_option("--seed", config.seed, "Seed passed to the hasher for keys and tokens")
        ->type_name("N")
        ->check(whole_number(0, std::numeric_limits<uint64_t>::max()))
        ->capture_default_str();
    add_plugin_dir_option(cmd, config.plugin_dir);
}

void add_plugin_dir_option(CLI::App &cmd, std::string &dir) {
    cmd.add_option("--plugin-dir", dir, "Extra directory searched for hash plugins")->type_name("DIR");
}

void add_ring_options(CLI::App &cmd, RingConfig &config, std::vector<std::string> *placement_list) {
    add_hasher_options(cmd, config);
    const std::string placements = placement_names();
    // The modes are fixed in this build, so a name outside them is bad usage.
    const CLI::Validator known_placement(
        [](std::string &name) -> std::string {
            for (const PlacementMode &m : placement_modes())
                if (name == m.name) return std::string();
            return "unknown placement mode '" + name + "' (this build knows: " + placement_names() + ")";
        },
        "", "PLACEMENT");
    if (placement_list) {
        cmd.add_option("--placement", *placement_list,
                       "Placement mode(s), comma-separated to compare them (known: " + placements + ")")
            ->type_name("NAME[,NAME...]")
            ->delimiter(',')
            ->allow_extra_args(false)
            ->check(known_placement)
            ->default_str("native");
    } else {
        cmd.add_option("--placement", config.placement, "Placement mode (known: " + placements + ")")
            ->type_name("NAME")
            ->check(known_placement)
            ->capture_default_str();
    }
    cmd.add_option("--tokens-per-weight", config.tokens_per_weight,
                   "Tokens per unit of weight (1.." + std::to_string(CHR_TOKENS_PER_WEIGHT_MAX) + ")")
        ->type_name("N")
        ->check(whole_number(1, CHR_TOKENS_PER_WEIGHT_MAX))
        ->capture_default_str();
}

void note_given_options(const CLI::App &cmd, RingConfig &config) {
    auto given = [&](const char *name) {
        try {
            return cmd.count(name) > 0;
        } catch (const CLI::OptionNotFound &) {  // a command without the flag
            return false;
        }
    };
    config.given_placement = given("--placement");
    config.given_hasher = given("--hasher");
    config.given_seed = given("--seed");
    config.given_tokens = given("--tokens-per-weight");
}

void add_membership_options(CLI::App &cmd, MembershipFlags &flags, bool flags_too) {
    auto *file = cmd.add_option("-m,--members", flags.file,
                                "Ring file: 'id weight [zone]' lines, optional %%directives ('-' = stdin)")
                     ->type_name("FILE");
    if (!flags_too) {
        file->required();
        return;
    }
    cmd.add_option("--nodes", flags.generated, "Generate N members node-1 .. node-N of weight 1")
        ->type_name("N")
        ->check(whole_number(1, CHR_NODES_MAX));
    // One value per flag: in "lookup --node a k", k is a key, not a second node.
    cmd.add_option("--node", flags.specs, "One member ID[=WEIGHT[@ZONE]] (repeatable)")
        ->type_name("SPEC")
        ->allow_extra_args(false);
}

// A duplicate between two flags is bad usage (exit 2): the command line
// contradicts itself. One between a flag and the file is found when the
// ring is built (build_ring: exit 1, the flag is fine, the file has the id).
MemberSource MembershipFlags::read() const {
    if (file.empty() && generated == 0 && specs.empty())
        throw UsageError("no members: give -m FILE, --nodes N or --node ID[=WEIGHT[@ZONE]]");
    MemberSource source;
    std::unordered_map<std::string, std::string> first;  // id -> the flag that gave it
    auto add = [&](Member m, std::string from) {
        auto [it, fresh] = first.emplace(m.id, from);
        if (!fresh)
            throw UsageError(from + ": duplicate id '" + printable_id(m.id) + "' (first in " + it->second + ")");
        source.flags.push_back({std::move(m), std::move(from)});
    };
    for (uint32_t i = 1; i <= generated; ++i)
        add(Member{"node-" + std::to_string(i), 1, ""}, "--nodes " + std::to_string(generated));
    for (const std::string &spec : specs) add(member_from_flag(spec, 1, "--node"), "--node " + spec);
    if (!file.empty()) read_ring_file(file, source);
    return source;
}

void warn(const std::string &message) { std::cerr << "chring: warning: " << visible(message) << '\n'; }

std::string MembershipFlags::describe() const {
    std::vector<std::string> parts;
    if (!file.empty()) parts.push_back(input_name(file));
    if (generated) parts.push_back("--nodes " + std::to_string(generated));
    if (!specs.empty()) parts.push_back(std::to_string(specs.size()) + " x --node");
    std::string out;
    for (const std::string &p : parts) out += out.empty() ? p : " + " + p;
    return out;
}

void add_output_options(CLI::App &cmd, OutputFlags &flags, bool svg) {
    cmd.add_option("--format", flags.format, "Output: aligned tables for people, json or csv for scripts")
        ->type_name("table|json|csv")
        ->check(CLI::IsMember({"table", "json", "csv"}).description(""))
        ->capture_default_str();
    if (svg) cmd.add_option("--svg", flags.svg, "Also draw a picture into this SVG file")->type_name("FILE");
}

}  // namespace chring::cli
