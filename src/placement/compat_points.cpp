#include "compat_points.hpp"

#include <algorithm>

namespace chring {
namespace compat {

bool all_digits(const std::string &s, size_t from) {
    if (from >= s.size()) return false;
    for (size_t i = from; i < s.size(); ++i)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

void finish_points(std::vector<Point> &points, bool first_of_each_value, std::vector<Token> &out) {
    std::sort(points.begin(), points.end(), [&](const Point &a, const Point &b) {
        if (a.value != b.value) return a.value < b.value;
        if (a.tag != b.tag) return a.tag < b.tag;
        return a.node < b.node;
    });
    if (first_of_each_value)
        points.erase(std::unique(points.begin(), points.end(),
                                 [](const Point &a, const Point &b) { return a.value == b.value; }),
                     points.end());
    out.resize(points.size());
    for (size_t i = 0; i < points.size(); ++i) out[i] = {points[i].value, points[i].node};
}

}  // namespace compat
}  // namespace chring
