#include "availability.hpp"

#include <string>

namespace chring::cli {

bool any_marked(const std::vector<NodeInfo> &nodes) {
    for (const NodeInfo &n : nodes)
        if (n.marked) return true;
    return false;
}

void add_availability_fields(Table &t, const chr_availability_info &a) {
    if (a.digest == 0) return;
    t.add_field("down", "members marked down", count_cell(a.down));
    t.add_field("panic_threshold", "panic threshold",
                Cell{std::to_string(a.panic_threshold) + "%", a.panic_threshold});  // JSON: the number
    t.add_field("panic", "panic",
                text_cell(a.panic ? "yes: more than the threshold of the weight is down, marks ignored"
                                  : "no"));
    t.add_field("availability", "availability digest", hex_cell(a.digest));
}

Cell state_cell(const NodeInfo &n) {
    return text_cell(!n.marked ? "" : n.down ? "down" : "down (ignored: panic)");
}

}  // namespace chring::cli
