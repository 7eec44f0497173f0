// The ring's availability as etcd holds it (docs/etcd.md, "Availability"):
//   <prefix>/down/<id field>    an operator's mark; its value a note for people, under a lease
//   <prefix>/health/<checker>   a checker's list of the members it finds down, under its lease
//   <prefix>/panic-threshold    a whole percent 0..100 (absent: 50)
// The effective down set is computed here and only here: the operator's
// marks, and the members a strict majority of the live checkers list
// (quorum.hpp), both restricted to the ring's members. build_ring applies
// it to the ring it builds (chr_ring_set_availability), so the watcher's
// file, chring etcd show and status agree on it.
#pragma once

#include <chring.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "etcd_state.hpp"

namespace chring::cli::etcd {

// A down mark's note: one line of text of at most this many bytes.
constexpr size_t kNoteMax = 1024;

struct OperatorMark {
    std::string key;
    std::string id;    // decoded
    std::string note;  // the key's value
    uint64_t lease = 0;  // filled by readers that know it (status)
};

// One checker's key.
struct CheckerView {
    std::string key;
    std::string name;       // the key's last part, decoded when it decodes
    bool readable = false;  // else its view is ignored: it neither votes nor counts
    std::string problem;    // why it is ignored
    std::set<std::string> down;  // decoded ids
    std::string host, updated;
    int64_t pid = 0;
};

// A member of the effective down set, and why.
struct DownMember {
    std::string id;
    bool marked = false;   // an operator's mark
    std::string note;      // the mark's note
    size_t votes = 0;      // checkers listing it
    size_t checkers = 0;   // live checkers whose view reads
    bool by_checkers() const;
    // "operator mark (NOTE)", "checkers 2/3", or both joined by "; ".
    std::string why() const;
};

struct Availability {
    uint32_t threshold = CHR_PANIC_THRESHOLD_DEFAULT;
    bool threshold_set = false;          // the key exists
    std::vector<OperatorMark> marks;     // in key order
    std::vector<CheckerView> checkers;   // in key order
    std::vector<DownMember> down;        // the effective set, by id
    chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;  // the ring's, once applied

    // The checkers' views ignored, one "KEY: why" each.
    std::vector<std::string> ignored() const;
    // "a, b" (ids as a ring file spells them), "none".
    std::string down_text() const;
    const DownMember *find(const std::string &id) const;
};

// Reads the availability keys of `state` into `out`: "" or "KEY: reason"
// for a key that makes the state invalid (a down key whose id field does
// not read, a note that is not one line of text, a threshold that is not a
// whole percent). A checker's value that does not read is not: that view
// is ignored (CheckerView::problem).
std::string read_availability(const Layout &layout, const State &state, Availability &out);

// The effective down set of a ring whose members are `members` (decoded
// ids): fills out.down. Marks and votes for non-members are ignored.
void compute_down(Availability &a, const std::set<std::string> &members);

// Gives `ring` the state (chr_ring_set_availability) and reads back its info.
void apply_availability(chr_ring *ring, Availability &a);

// "3 of 4 members down, 75.00% of the weight (> 50%)": how far a ring is
// from (or into) panic.
std::string weight_text(const chr_availability_info &info);

}  // namespace chring::cli::etcd
