// The health checkers' quorum (docs/etcd.md, "Availability"): a member is
// down when a strict majority of the live checkers list it. A checker's
// key lives only while its lease does, so the checkers present are the
// live ones: with 3, 2 must agree; with 2, both; with 1, that one.
// Header-only and free of etcd, so that a unit test holds the rule.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace chring::cli::etcd {

// How many of `checkers` live views must list a member: a strict majority.
inline size_t quorum_of(size_t checkers) { return checkers / 2 + 1; }

// The ids listed down by a strict majority of `views` (one set per live
// checker whose view reads), with how many listed each.
inline std::map<std::string, size_t> quorum_down(const std::vector<std::set<std::string>> &views) {
    std::map<std::string, size_t> votes;
    for (const std::set<std::string> &view : views)
        for (const std::string &id : view) ++votes[id];
    const size_t need = quorum_of(views.size());
    for (auto it = votes.begin(); it != votes.end();)
        it = it->second >= need ? std::next(it) : votes.erase(it);
    return votes;
}

}  // namespace chring::cli::etcd
