// Pictures for --svg, written as plain SVG text: the ring drawn as arcs
// coloured per node, and bar charts of per-node shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace chring::cli {

// Distinct, colour-blind-friendly first; golden-angle hues after that.
std::string node_color(size_t index);

class Svg {
public:
    Svg(double width, double height);

    void rect(double x, double y, double w, double h, const std::string &fill,
              const std::string &extra = "");
    void line(double x1, double y1, double x2, double y2, const std::string &stroke, double width,
              const std::string &extra = "");
    // anchor: "start", "middle" or "end".
    void text(double x, double y, const std::string &s, double size, const std::string &anchor = "start",
              const std::string &extra = "");
    // A ring segment between radii r_in..r_out from angle a0 to a1 (turns,
    // 0 = top, clockwise); a full turn draws a whole annulus.
    void band(double cx, double cy, double r_in, double r_out, double a0, double a1,
              const std::string &fill);
    void raw(const std::string &element) { body_ += element; }

    std::string str() const;
    // Writes the document; a CliError if the file cannot be written.
    void save(const std::string &path) const;

private:
    double width_, height_;
    std::string body_;
};

// The ring as a person pictures it: each token's arc (from the previous
// token to it) in its owner's colour.
struct RingPicture {
    std::string title;
    std::string subtitle;
    std::vector<std::string> node_labels;  // index = node index
    std::vector<uint64_t> token_values;    // sorted
    std::vector<uint32_t> token_owners;
};
// Draws the ring centred at (cx, cy) with outer radius r.
void draw_ring(Svg &svg, double cx, double cy, double r, const RingPicture &ring);

// Horizontal bars, one row per node; `series` values side by side (e.g.
// before / after), with a tick at `fair` when given (> 0).
struct BarRow {
    std::string label;
    std::vector<double> values;  // fractions 0..1, one per series
    double fair = 0;
    size_t color_index = 0;
};
struct BarChart {
    std::string title;
    std::vector<std::string> series;  // legend names; empty for a single series
    std::vector<BarRow> rows;
    std::string fair_label;  // legend text for the tick, e.g. "fair share by weight"
};
// Draws the chart at (x, y), `width` wide; returns the height used.
double draw_bars(Svg &svg, double x, double y, double width, const BarChart &chart);
// The height draw_bars will use.
double bars_height(const BarChart &chart);

// A legend of node colours in `columns` columns; returns the height used.
double draw_legend(Svg &svg, double x, double y, double width, const std::vector<std::string> &labels,
                   size_t max_entries);

}  // namespace chring::cli
