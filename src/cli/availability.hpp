// How the CLI shows a ring's availability state (chring.h, "Availability"):
// nothing at all for a ring with no mark and the default panic threshold,
// so what it prints for such a ring is what it printed before marks existed.
#pragma once

#include <vector>

#include "chring.h"
#include "report.hpp"
#include "ring_handle.hpp"

namespace chring::cli {

// Whether any member is marked down (in effect or not).
bool any_marked(const std::vector<NodeInfo> &nodes);

// The state's fields (members down, threshold, panic, digest) added to a
// summary table, when there is a state to show.
void add_availability_fields(Table &t, const chr_availability_info &a);

// A member's state column: "down", "down (ignored: panic)" or "".
Cell state_cell(const NodeInfo &n);

}  // namespace chring::cli
