// The ring that a prefix of etcd describes (docs/etcd.md, "Data model"):
//   <prefix>/members/<id field>  ->  "<weight> [zone field]"
//   <prefix>/options             ->  option directive lines of a ring file
//   <prefix>/guard               ->  an operator's lift of the guard rails
//   <prefix>/down/<id field>     ->  an operator's down mark (availability.hpp)
//   <prefix>/health/<checker>    ->  a health checker's list of members down
//   <prefix>/panic-threshold     ->  the percent of the weight down that means panic
// The keys and values are turned into one ring file's text and read by the
// library's parser, so the watcher, the admin commands and every embedding
// agree on what a state means.
#pragma once

#include <chring.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "../ring_handle.hpp"

namespace chring::cli::etcd {

// Where a ring lives in etcd.
class Layout {
public:
    // `prefix`: non-empty, without a trailing '/' (a UsageError otherwise).
    explicit Layout(std::string prefix);
    const std::string &prefix() const { return prefix_; }
    std::string members_dir() const { return prefix_ + "/members/"; }
    std::string member_key(const std::string &id_field) const { return members_dir() + id_field; }
    std::string options_key() const { return prefix_ + "/options"; }
    // Not part of the ring: its mod_revision lifts the watchers' guard
    // rails for the change up to that revision (guard.hpp, docs/etcd.md).
    std::string guard_key() const { return prefix_ + "/guard"; }
    // Not part of the ring either: each health checker's list of the
    // members it finds down (chring health), under its lease.
    std::string health_dir() const { return prefix_ + "/health/"; }
    // The availability: operators' down marks and the panic threshold
    // (availability.hpp). Marks and checkers' lists change where keys go,
    // never the tokens.
    std::string down_dir() const { return prefix_ + "/down/"; }
    std::string down_key(const std::string &id_field) const { return down_dir() + id_field; }
    std::string panic_threshold_key() const { return prefix_ + "/panic-threshold"; }
    // [range_begin, range_end) holds every key of the ring and nothing else.
    std::string range_begin() const { return prefix_ + "/"; }
    std::string range_end() const;
    bool is_member_key(const std::string &key) const;
    // The guard and the availability keys: no ring file holds them, so
    // chring etcd apply leaves them as they are.
    bool is_kept_by_apply(const std::string &key) const;
    // A key as messages show it: P/ or P/members/ whole, the rest (an id
    // field) visible_bounded() to 128 bytes: an etcdctl put may have made
    // it megabytes long.
    std::string shown(std::string_view key) const;

private:
    std::string prefix_;
};

struct Availability;

// The prefix at one revision: key -> value, in key byte order (as etcd lists it).
using State = std::map<std::string, std::string>;

// A state read as a ring: the ring, or why the state is refused.
struct Built {
    std::unique_ptr<Ring> ring;  // null when refused
    std::string error;   // "KEY: reason" (or "PREFIX: reason" for the state as a whole), keys shown()
    uint64_t fingerprint = 0;
    size_t members = 0;
    // The availability read from the state and applied to `ring`: the
    // effective down set, the threshold, the ring's digest and panic.
    std::shared_ptr<const Availability> availability;
};

// Builds the ring the state describes, its availability applied
// (availability.hpp). Refused (with the key at fault): a key under the
// prefix that is neither a member, the options, the guard, a down mark,
// the panic threshold nor under PREFIX/health/ (the health checkers'
// keys); what read_availability refuses; a member
// key whose id field is empty or holds a blank (the layout's rule: the id
// field is one field of the member line); a member whose line "<id field>
// <value>" the library does not read as one member line
// (chr_ringfile_parse_member: a bad escape or weight, a line break, ...);
// options other than %%placement, %%hasher, %%seed, %%tokens-per-weight;
// and all the library refuses of the whole (duplicate ids, limits, a
// hasher not available here). `plugin_dir` may be NULL.
Built build_ring(const Layout &layout, const State &state, const char *plugin_dir);

// One member, decoded and in its canonical spelling.
struct MemberEntry {
    std::string id;          // decoded bytes
    std::string zone;        // decoded bytes
    uint32_t weight = 0;
    std::string id_field;    // canonical %XX spelling: the key's last part
    std::string value;       // canonical "<weight>[ <zone field>]"
};

// The id an id field spells (a member key's last part, an argument): the
// id of the member line "<id field> 0". Throws CliError "WHAT: reason" when
// the id field is empty or holds a blank, or that line is refused.
std::string decode_id(std::string_view id_field, const std::string &what);

// Reads a member: its id field and its value "<weight> [zone field]", as
// the line "<id field> <value>" (chr_ringfile_parse_member), the id field
// held to the layout's rule (not empty, no blank). Throws CliError
// "WHAT: reason".
MemberEntry parse_member(const std::string &id_field, const std::string &value, const std::string &what);

// The canonical spelling of a member given as decoded bytes
// (chr_ringfile_escape), as chr_ring_export writes its line.
MemberEntry canonical_member(const std::string &id, uint32_t weight, const std::string &zone);

// The canonical options value of a ring: its option directive lines, as
// its canonical ring file writes them.
std::string options_value(const Snapshot &snap);

}  // namespace chring::cli::etcd
