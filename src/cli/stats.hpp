// Summary statistics of per-node figures (shares, loads).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace chring::cli {

struct Spread {
    double min = 0, max = 0, mean = 0, stdev = 0;  // population stdev
    double max_over_mean() const { return mean > 0 ? max / mean : 0; }
    double min_over_mean() const { return mean > 0 ? min / mean : 0; }
    double stdev_over_mean() const { return mean > 0 ? stdev / mean : 0; }
};

inline Spread spread_of(const std::vector<double> &values) {
    Spread s;
    if (values.empty()) return s;
    s.min = *std::min_element(values.begin(), values.end());
    s.max = *std::max_element(values.begin(), values.end());
    double sum = 0;
    for (double v : values) sum += v;
    s.mean = sum / double(values.size());
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.stdev = std::sqrt(sq / double(values.size()));
    return s;
}

}  // namespace chring::cli
