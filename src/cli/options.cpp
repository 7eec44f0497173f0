#include "options.hpp"

#include <charconv>
#include <iostream>
#include <limits>
#include <unordered_map>

#include "keys.hpp"

namespace chring::cli {

CLI::Validator whole_number(uint64_t min, uint64_t max) {
    const std::string range = std::to_string(min) + ".." + std::to_string(max);
    return CLI::Validator(
        [=](std::string &text) -> std::string {
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
                return "'" + text + "' is not a whole number (" + range + ")";
            uint64_t value = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec == std::errc::result_out_of_range || end != text.data() + text.size() || value > max)
                return "'" + text + "' is over the limit " + std::to_string(max);
            if (value < min) return "'" + text + "' is under the minimum " + std::to_string(min);
            return std::string();
        },
        "", "WHOLE_NUMBER");
}

Member member_from_flag(const std::string &spec, uint32_t default_weight, const std::string &flag) {
    try {
        return parse_member_spec(spec, default_weight, flag + " " + spec);
    } catch (const MembershipError &e) {
        throw UsageError(e.what());
    }
}

void add_hasher_options(CLI::App &cmd, RingConfig &config) {
    cmd.add_option("--hasher", config.hasher,
                   "Hash function by name, from a plugin (default: the placement's own; xxh3 for native)")
        ->type_name("NAME");
    cmd.add_option("--seed", config.seed, "Seed passed to the hasher for keys and tokens")
        ->type_name("N")
        ->check(whole_number(0, std::numeric_limits<uint64_t>::max()))
        ->capture_default_str();
    cmd.add_option("--plugin-dir", config.plugin_dir, "Extra directory searched for hash plugins")
        ->type_name("DIR");
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

void add_membership_options(CLI::App &cmd, MembershipFlags &flags, bool flags_too) {
    auto *file = cmd.add_option("-m,--members", flags.file,
                                "Membership file: one node per line, 'id weight [zone]' ('-' = stdin)")
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

// A duplicate between a flag and the file is exit 1 (the flag is fine, the
// file already has the id); between two flags it is bad usage (exit 2).
std::vector<Member> MembershipFlags::load() const {
    if (file.empty() && generated == 0 && specs.empty())
        throw UsageError("no members: give -m FILE, --nodes N or --node ID[=WEIGHT[@ZONE]]");
    std::vector<Member> members;
    if (!file.empty()) members = load_membership(file);  // no duplicates inside the file
    // Where each member came from, so a duplicate names both places.
    std::vector<std::string> origin;
    std::unordered_map<std::string, size_t> position;
    for (const Member &m : members) {
        position.emplace(m.id, origin.size());
        origin.push_back(source() + ":" + std::to_string(m.line));
    }
    auto add = [&](Member m, std::string from) {
        auto [it, inserted] = position.emplace(m.id, members.size());
        if (!inserted) {
            const bool in_file = it->second < members.size() && members[it->second].line != 0;
            std::string message = from + ": duplicate id '" + percent_encode(m.id) + "' (first in " +
                                  origin[it->second] + ")";
            if (in_file) throw CliError(message);  // the flag is fine; the file has the id
            throw UsageError(message);             // the command line contradicts itself
        }
        members.push_back(std::move(m));
        origin.push_back(std::move(from));
    };
    for (uint32_t i = 1; i <= generated; ++i) {
        Member m;
        m.id = "node-" + std::to_string(i);
        add(std::move(m), "--nodes " + std::to_string(generated));
    }
    for (const std::string &spec : specs) add(member_from_flag(spec, 1, "--node"), "--node " + spec);
    return members;
}

std::string MembershipFlags::why_no_tokens(const std::vector<Member> &members) const {
    if (members.empty()) return source() + " has no node lines";
    return "every member has weight 0";
}

void warn(const std::string &message) { std::cerr << "chring: warning: " << visible(message) << '\n'; }

std::string MembershipFlags::describe() const {
    std::vector<std::string> parts;
    if (!file.empty()) parts.push_back(file == "-" ? "<stdin>" : file);
    if (generated) parts.push_back("--nodes " + std::to_string(generated));
    if (!specs.empty()) parts.push_back(std::to_string(specs.size()) + " x --node");
    std::string out;
    for (const std::string &p : parts) out += out.empty() ? p : " + " + p;
    return out;
}

std::string MembershipFlags::source() const { return file == "-" ? "<stdin>" : file; }

void add_output_options(CLI::App &cmd, OutputFlags &flags, bool svg) {
    cmd.add_option("--format", flags.format, "Output: aligned tables for people, json or csv for scripts")
        ->type_name("table|json|csv")
        ->check(CLI::IsMember({"table", "json", "csv"}).description(""))
        ->capture_default_str();
    if (svg) cmd.add_option("--svg", flags.svg, "Also draw a picture into this SVG file")->type_name("FILE");
}

std::string printable_id(const std::string &id) { return percent_encode(id); }

}  // namespace chring::cli
