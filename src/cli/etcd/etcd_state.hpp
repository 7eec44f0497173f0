// The ring that a prefix of etcd describes (docs/etcd.md, "Data model"):
//   <prefix>/members/<id field>  ->  "<weight> [zone field]"
//   <prefix>/options             ->  option directive lines of a ring file
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
#include <vector>

namespace chring::cli::etcd {

struct RingDeleter {
    void operator()(chr_ring *ring) const { chr_ring_free(ring); }
};
using RingPtr = std::unique_ptr<chr_ring, RingDeleter>;

// Where a ring lives in etcd.
class Layout {
public:
    // `prefix`: non-empty, without a trailing '/' (a UsageError otherwise).
    explicit Layout(std::string prefix);
    const std::string &prefix() const { return prefix_; }
    std::string members_dir() const { return prefix_ + "/members/"; }
    std::string member_key(const std::string &id_field) const { return members_dir() + id_field; }
    std::string options_key() const { return prefix_ + "/options"; }
    // [range_begin, range_end) holds every key of the ring and nothing else.
    std::string range_begin() const { return prefix_ + "/"; }
    std::string range_end() const;
    bool is_member_key(const std::string &key) const;

private:
    std::string prefix_;
};

// The prefix at one revision: key -> value, in key byte order (as etcd lists it).
using State = std::map<std::string, std::string>;

// A state read as a ring: the ring, or why the state is refused.
struct Built {
    RingPtr ring;        // null when refused
    std::string error;   // "KEY: reason" (or "PREFIX: reason" for the state as a whole)
    uint64_t fingerprint = 0;
    size_t members = 0;
};

// Builds the ring the state describes. Refused (with the key at fault): a
// key under the prefix that is neither a member nor the options; an id
// field that is not one ring-file field (empty, blanks, control bytes, a
// leading '#' or "%%"); a value with a line break or control byte; options
// other than %%placement, %%hasher, %%seed, %%tokens-per-weight; and all
// the library refuses (bad escapes, weights, duplicate ids, limits, a
// hasher not available here). `plugin_dir` may be NULL.
Built build_ring(const Layout &layout, const State &state, const char *plugin_dir);

// The canonical ring file of `ring` (chr_ring_export with these flags).
std::string export_ring(const chr_ring *ring, uint32_t flags, uint64_t revision);

// Why `field` cannot be one field of a ring-file line, or "" when it can.
std::string field_problem(std::string_view field);

// One member, decoded and in its canonical spelling.
struct MemberEntry {
    std::string id;          // decoded bytes
    std::string zone;        // decoded bytes
    uint32_t weight = 0;
    std::string id_field;    // canonical %XX spelling: the key's last part
    std::string value;       // canonical "<weight>[ <zone field>]"
};

// Reads a member line "<id field> <weight> [zone field]" with the
// library's parser. Throws CliError with the library's reason (`what`
// names the line in it, e.g. the key).
MemberEntry parse_member(const std::string &id_field, const std::string &value, const std::string &what);

// The canonical spelling of a member given as decoded bytes.
MemberEntry canonical_member(const std::string &id, uint32_t weight, const std::string &zone);

// The canonical options value of a ring: its four option directive lines.
std::string options_value(const chr_ring *ring);

}  // namespace chring::cli::etcd
