#include "svg.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "report.hpp"
#include "keys.hpp"
#include "ring_handle.hpp"

namespace chring::cli {
namespace {

constexpr double kTurn = 6.283185307179586;
constexpr double kCircle = 18446744073709551616.0;  // 2^64
constexpr size_t kMaxArcs = 2000;      // above this, sample the circle instead
constexpr size_t kSampleArcs = 1440;   // a quarter degree each
constexpr size_t kMaxTokenTicks = 64;
const char *const kFont = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

std::string escape(const std::string &s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string point(double cx, double cy, double r, double turns) {
    return num(cx + r * std::sin(turns * kTurn)) + " " + num(cy - r * std::cos(turns * kTurn));
}

// At most `max` code points of UTF-8 `s`, with "..." when cut.
std::string shorten(const std::string &s, size_t max) {
    if (display_width(s) <= max) return s;
    size_t cut = 0, points = 0;
    while (cut < s.size() && points < max - 1) {
        ++cut;
        while (cut < s.size() && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) ++cut;
        ++points;
    }
    return s.substr(0, cut) + "...";
}

std::string percent_text(double fraction) {
    char buf[32];
    std::snprintf(buf, sizeof buf, fraction < 0.1 ? "%.2f%%" : "%.1f%%", fraction * 100);
    return buf;
}

struct Arc {
    double from, to;  // turns; `from` may be negative for the arc that wraps
    uint32_t owner;
};

// Arcs as they are, or sampled at kSampleArcs points when there are too many
// to draw; then runs of one owner merged.
std::vector<Arc> ring_arcs(const RingPicture &ring) {
    const auto &v = ring.token_values;
    const auto &o = ring.token_owners;
    std::vector<Arc> arcs;
    if (v.empty()) return arcs;
    if (v.size() <= kMaxArcs) {
        for (size_t i = 0; i < v.size(); ++i) {
            double to = double(v[i]) / kCircle;
            double from = i ? double(v[i - 1]) / kCircle : double(v.back()) / kCircle - 1.0;
            arcs.push_back({from, to, o[i]});
        }
    } else {
        for (size_t b = 0; b < kSampleArcs; ++b) {
            double mid = (double(b) + 0.5) / double(kSampleArcs);
            uint64_t h = uint64_t(std::ldexp(mid, 64));
            size_t succ = size_t(std::lower_bound(v.begin(), v.end(), h) - v.begin());
            arcs.push_back({double(b) / double(kSampleArcs), double(b + 1) / double(kSampleArcs),
                            o[succ == v.size() ? 0 : succ]});
        }
    }
    std::vector<Arc> merged;
    for (const Arc &a : arcs) {
        if (!merged.empty() && merged.back().owner == a.owner) merged.back().to = a.to;
        else merged.push_back(a);
    }
    return merged;
}

}  // namespace

std::string node_color(size_t index) {
    // Okabe-Ito and Tableau colours, then evenly spread hues.
    static const char *const base[] = {"#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE",
                                       "#AA3377", "#E69F00", "#56B4E9", "#009E73", "#8C564B",
                                       "#7F7F7F", "#BCBD22"};
    const size_t n = sizeof base / sizeof base[0];
    if (index < n) return base[index];
    double hue = std::fmod(double(index - n) * 137.508, 360.0);
    char buf[48];
    std::snprintf(buf, sizeof buf, "hsl(%.0f,%d%%,%d%%)", hue, 55 + int(index % 3) * 10,
                  45 + int(index % 2) * 10);
    return buf;
}

Svg::Svg(double width, double height) : width_(width), height_(height) {}

void Svg::rect(double x, double y, double w, double h, const std::string &fill, const std::string &extra) {
    body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
             "\" fill=\"" + fill + "\" " + extra + "/>\n";
}

void Svg::line(double x1, double y1, double x2, double y2, const std::string &stroke, double width,
               const std::string &extra) {
    body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
             "\" stroke=\"" + stroke + "\" stroke-width=\"" + num(width) + "\" " + extra + "/>\n";
}

void Svg::text(double x, double y, const std::string &s, double size, const std::string &anchor,
               const std::string &extra) {
    body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + num(size) +
             "\" text-anchor=\"" + anchor + "\" " + kFont + " " + extra + ">" + escape(s) + "</text>\n";
}

void Svg::band(double cx, double cy, double r_in, double r_out, double a0, double a1, const std::string &fill) {
    if (a1 - a0 >= 1.0 - 1e-9) {  // a whole circle: two half bands
        band(cx, cy, r_in, r_out, 0.0, 0.5, fill);
        band(cx, cy, r_in, r_out, 0.5, 1.0, fill);
        return;
    }
    const char *large = a1 - a0 > 0.5 ? "1" : "0";
    body_ += "<path d=\"M " + point(cx, cy, r_out, a0) + " A " + num(r_out) + " " + num(r_out) + " 0 " + large +
             " 1 " + point(cx, cy, r_out, a1) + " L " + point(cx, cy, r_in, a1) + " A " + num(r_in) + " " +
             num(r_in) + " 0 " + large + " 0 " + point(cx, cy, r_in, a0) + " Z\" fill=\"" + fill + "\"/>\n";
}

std::string Svg::str() const {
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width_) + "\" height=\"" + num(height_) +
           "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) + "\">\n" +
           "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n" + body_ + "</svg>\n";
}

void Svg::save(const std::string &path) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw CliError(path + ": cannot write the SVG: " + std::strerror(errno));
    out << str();
    out.close();
    if (!out) throw CliError(path + ": write error");
}

void draw_ring(Svg &svg, double cx, double cy, double r, const RingPicture &ring) {
    const double r_in = r * 0.72;
    if (!ring.title.empty()) svg.text(cx, cy - r - 18, ring.title, 15, "middle", "font-weight=\"bold\"");
    if (!ring.subtitle.empty()) svg.text(cx, cy + r + 24, ring.subtitle, 12, "middle", "fill=\"#444\"");
    std::vector<Arc> arcs = ring_arcs(ring);
    if (arcs.empty()) {
        svg.band(cx, cy, r_in, r, 0, 1, "#dddddd");
        svg.text(cx, cy + 5, "empty ring", 13, "middle", "fill=\"#666\"");
        return;
    }
    for (const Arc &a : arcs) svg.band(cx, cy, r_in, r, a.from, a.to, node_color(a.owner));
    if (arcs.size() > 1 && arcs.size() <= 400) {  // hairlines where ownership changes hands
        for (const Arc &a : arcs) {
            double t = a.to * kTurn;
            svg.line(cx + r_in * std::sin(t), cy - r_in * std::cos(t), cx + r * std::sin(t), cy - r * std::cos(t),
                     "#ffffff", 0.8);
        }
    }
    if (ring.token_values.size() <= kMaxTokenTicks) {  // few tokens: show where each one sits
        for (uint64_t v : ring.token_values) {
            double t = double(v) / kCircle * kTurn;
            svg.line(cx + r * std::sin(t), cy - r * std::cos(t), cx + (r + 7) * std::sin(t),
                     cy - (r + 7) * std::cos(t), "#222222", 1.2);
        }
    }
    size_t nodes = ring.node_labels.size();
    svg.text(cx, cy - 4, std::to_string(nodes) + (nodes == 1 ? " node" : " nodes"), 13, "middle");
    svg.text(cx, cy + 14, with_commas(ring.token_values.size()) + " tokens", 12, "middle", "fill=\"#555\"");
}

double bars_height(const BarChart &chart) {
    const double series = std::max<size_t>(1, chart.series.size());
    return 46 + double(chart.rows.size()) * (series * 14 + 8);
}

double draw_bars(Svg &svg, double x, double y, double width, const BarChart &chart) {
    const double label_w = 150, value_w = 60;
    const double bar_w = width - label_w - value_w;
    const size_t series = std::max<size_t>(1, chart.series.size());
    double top = 0;
    for (const BarRow &row : chart.rows) {
        for (double v : row.values) top = std::max(top, v);
        top = std::max(top, row.fair);
    }
    top = top > 0 ? top * 1.05 : 1;
    svg.text(x, y + 14, chart.title, 15, "start", "font-weight=\"bold\"");
    // Legend, left to right under the title: series shades, then the fair-share tick.
    double lx = x + label_w;
    auto legend_text = [&](const std::string &text) {
        svg.text(lx, y + 33, text, 11, "start", "fill=\"#444\"");
        lx += 6.6 * double(display_width(text)) + 18;
    };
    for (size_t s = 0; s < chart.series.size(); ++s) {
        svg.rect(lx, y + 24, 12, 10, "#777777", s == 0 ? "fill-opacity=\"0.45\"" : "");
        lx += 17;
        legend_text(chart.series[s]);
    }
    if (!chart.fair_label.empty()) {
        svg.line(lx + 2, y + 22, lx + 2, y + 36, "#000000", 2);
        lx += 9;
        legend_text(chart.fair_label);
    }
    double row_y = y + 46;
    for (const BarRow &row : chart.rows) {
        const double row_h = double(series) * 14;
        std::string label = shorten(row.label, 22);
        svg.text(x + label_w - 8, row_y + row_h / 2 + 4, label, 12, "end");
        for (size_t s = 0; s < row.values.size(); ++s) {
            double w = bar_w * row.values[s] / top;
            double by = row_y + double(s) * 14;
            bool faded = series > 1 && s == 0;  // "before" is the pale one
            svg.rect(x + label_w, by + 1, std::max(w, 0.5), 12, node_color(row.color_index),
                     faded ? "fill-opacity=\"0.45\"" : "");
            svg.text(x + label_w + w + 4, by + 11, percent_text(row.values[s]), 10, "start", "fill=\"#333\"");
        }
        if (row.fair > 0) {
            double fx = x + label_w + bar_w * row.fair / top;
            svg.line(fx, row_y - 2, fx, row_y + row_h + 2, "#000000", 2);
        }
        row_y += row_h + 8;
    }
    return bars_height(chart);
}

double draw_legend(Svg &svg, double x, double y, double width, const std::vector<std::string> &labels,
                   size_t max_entries) {
    const double col_w = 150;
    const size_t columns = std::max<size_t>(1, size_t(width / col_w));
    size_t shown = std::min(labels.size(), max_entries);
    for (size_t i = 0; i < shown; ++i) {
        double ex = x + double(i % columns) * col_w, ey = y + double(i / columns) * 18;
        svg.rect(ex, ey, 12, 12, node_color(i));
        std::string label = shorten(labels[i], 18);
        svg.text(ex + 17, ey + 10.5, label, 12);
    }
    double rows = std::ceil(double(shown) / double(columns));
    if (shown < labels.size()) {
        svg.text(x, y + rows * 18 + 10, "... and " + std::to_string(labels.size() - shown) + " more nodes", 12,
                 "start", "fill=\"#555\"");
        rows += 1;
    }
    return rows * 18;
}

}  // namespace chring::cli
