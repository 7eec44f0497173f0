// Guard rails: what a change of the ring in etcd does to the keys, and
// whether it is too much to publish (chring watch) or to write (chring
// etcd) without the operator saying so. One typo (a wrong --prefix,
// `etcdctl del --prefix`, an empty file applied) must not empty every
// ring of a fleet; a change that moves most keys must be meant.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "../ring_handle.hpp"

namespace chring::cli::etcd {

// --min-members and --max-moved, shared by the watcher and the admin commands.
struct GuardFlags {
    uint32_t min_members = 1;   // members with weight > 0 (the ones that own keys)
    double max_moved = 0.5;     // share of the key space, 0..1
    std::string max_moved_text = "50%";
};
void add_guard_flags(CLI::App &cmd, GuardFlags &flags);

// One flow of keys between two members (or to/from no member).
struct Flow {
    std::string from, to;  // printable ids; "(none)" for a ring without tokens
    double share = 0;      // of the key space
};

// What going from one ring to another does to the keys.
struct ChangeEffect {
    bool has_before = false;     // false: no ring before (nothing published yet)
    size_t members_before = 0, members_after = 0;  // with weight > 0
    uint64_t fingerprint_before = 0, fingerprint_after = 0;
    double moved = 0;            // share of the key space whose owner changes
    bool options_changed = false;  // placement, hasher or seed differ: every key may move (counted as 1)
    std::vector<Flow> flows;     // largest first, owners that change only
};

// The effect of going from `before` (null: no ring) to `after`, measured
// with the library's diff (chr_diff_new).
ChangeEffect measure(const Snapshot *before, const Snapshot &after);

// "moves 25.00% of the keys; members 4 -> 3; fingerprint 0x... -> 0x...".
std::string describe(const ChangeEffect &e);
// Its last part: "members 4 -> 3; fingerprint 0x... -> 0x...".
std::string describe_sides(const ChangeEffect &e);
// Up to `max` lines "  a -> b: 12.50% of the keys".
std::vector<std::string> flow_lines(const ChangeEffect &e, size_t max);

// Why the change breaks a guard ("" when it does not): too few members, or
// more moved than --max-moved.
std::string violation(const GuardFlags &flags, const ChangeEffect &e);

}  // namespace chring::cli::etcd
