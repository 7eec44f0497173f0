#include "report.hpp"

#include <cmath>
#include <cstdio>

#include "keys.hpp"
#include "ring_handle.hpp"
#include "spelling.hpp"

namespace chring::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kNoteWidth = 96;

// Nine significant digits: enough for any figure here, and no
// 0.30000000000000004 noise in JSON.
double tidy(double v) {
    if (!std::isfinite(v)) return v;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::strtod(buf, nullptr);
}

// Every text that reaches a terminal goes through visible(): ids are
// percent-encoded already, but titles, file names and keys are not.
std::string pad(const std::string &text, size_t width, bool right) {
    std::string s = visible(text);
    size_t w = display_width(s);
    if (w >= width) return s;
    std::string fill(width - w, ' ');
    return right ? fill + s : s + fill;
}

void write_wrapped(const std::string &paragraph, std::ostream &out) {
    const std::string indent = "  ";
    std::string line;
    size_t pos = 0;
    while (pos < paragraph.size()) {
        size_t end = paragraph.find(' ', pos);
        if (end == std::string::npos) end = paragraph.size();
        std::string word = paragraph.substr(pos, end - pos);
        if (!line.empty() && display_width(line) + 1 + display_width(word) > kNoteWidth) {
            out << indent << line << '\n';
            line.clear();
        }
        line += line.empty() ? word : " " + word;
        pos = end + 1;
    }
    if (!line.empty()) out << indent << line << '\n';
}

void write_text_table(const Table &t, std::ostream &out) {
    if (!t.title.empty()) out << visible(t.title) << '\n';
    if (t.record) {
        size_t width = 0;
        for (const auto &row : t.rows) width = std::max(width, display_width(visible(row[1].text)));
        for (const auto &row : t.rows)
            out << "  " << pad(row[1].text, width, false) << "  " << visible(row[2].text) << '\n';
    } else {
        std::vector<size_t> cols;
        for (size_t c = 0; c < t.columns.size(); ++c)
            if (t.columns[c].in_text) cols.push_back(c);
        std::vector<size_t> width(t.columns.size(), 0);
        for (size_t c : cols) {
            width[c] = display_width(visible(t.columns[c].title));
            for (const auto &row : t.rows) width[c] = std::max(width[c], display_width(visible(row[c].text)));
        }
        auto write_line = [&](auto &&text_of) {
            std::string line = " ";
            for (size_t c : cols) line += "  " + pad(text_of(c), width[c], t.columns[c].right);
            while (!line.empty() && line.back() == ' ') line.pop_back();
            out << line << '\n';
        };
        write_line([&](size_t c) { return t.columns[c].title; });
        write_line([&](size_t c) {
            std::string rule;
            for (size_t i = 0; i < width[c]; ++i) rule += "-";
            return rule;
        });
        for (const auto &row : t.rows) write_line([&](size_t c) { return row[c].text; });
    }
    for (const std::string &note : t.notes) write_wrapped(visible(note), out);
}

std::string csv_value(const Json &v) {
    if (v.is_null()) return "";
    if (v.is_string()) return csv_field(v.get<std::string>());
    return csv_field(json_text(v));
}

void write_csv_table(const Table &t, std::ostream &out) {
    if (t.record) {
        out << "table,field,value\n";
        for (const auto &row : t.rows)
            out << csv_field(t.key) << ',' << csv_field(row[0].text) << ',' << csv_value(row[2].value) << '\n';
        return;
    }
    out << "table";
    for (const Column &c : t.columns) out << ',' << csv_field(c.key);
    out << '\n';
    for (const auto &row : t.rows) {
        out << csv_field(t.key);
        for (const Cell &cell : row) out << ',' << csv_value(cell.value);
        out << '\n';
    }
}

Json json_of(const Table &t) {
    if (t.record) {
        Json obj = Json::object();
        for (const auto &row : t.rows) obj[row[0].text] = row[2].value;
        return obj;
    }
    Json rows = Json::array();
    for (const auto &row : t.rows) {
        Json obj = Json::object();
        for (size_t c = 0; c < t.columns.size(); ++c) obj[t.columns[c].key] = row[c].value;
        rows.push_back(std::move(obj));
    }
    return rows;
}

}  // namespace

Format parse_format(const std::string &name) {
    if (name == "table") return Format::table;
    if (name == "json") return Format::json;
    if (name == "csv") return Format::csv;
    throw CliError("unknown format '" + name + "' (table, json or csv)");
}

Cell text_cell(const std::string &s) { return {s, Json(s)}; }
Cell count_cell(uint64_t n) { return {with_commas(n), Json(n)}; }
Cell real_cell(double v, int decimals) { return {format_fixed(v, decimals), Json(tidy(v))}; }
Cell percent_cell(double fraction, int decimals) {
    return {format_fixed(fraction * 100, decimals) + "%", Json(tidy(fraction * 100))};
}
Cell ratio_cell(double v, int decimals) { return {format_fixed(v, decimals) + "x", Json(tidy(v))}; }
Cell hex_cell(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
    return {buf, Json(buf)};
}
Cell none_cell() { return {"-", Json()}; }

void Table::add_field(const std::string &field_key, const std::string &field_title, Cell value) {
    record = true;
    rows.push_back({text_cell(field_key), text_cell(field_title), std::move(value)});
}

void write_report(const Report &report, Format format, std::ostream &out) {
    switch (format) {
    case Format::table:
        for (const std::string &line : report.header) out << visible(line) << '\n';
        if (!report.header.empty()) out << '\n';
        for (size_t i = 0; i < report.tables.size(); ++i) {
            if (i) out << '\n';
            write_text_table(report.tables[i], out);
        }
        if (!report.footer.empty()) out << '\n';
        for (const std::string &line : report.footer) out << visible(line) << '\n';
        break;
    case Format::json: {
        Json doc = Json::object();
        for (const Table &t : report.tables) doc[t.key] = json_of(t);
        out << json_text(doc, 2) << '\n';
        break;
    }
    case Format::csv:
        for (size_t i = 0; i < report.tables.size(); ++i) {
            if (i) out << '\n';
            write_csv_table(report.tables[i], out);
        }
        break;
    }
}

std::string format_fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

namespace {
// East Asian wide and fullwidth ranges: two terminal columns each.
bool is_wide(uint32_t cp) {
    return (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF && cp != 0x303F) ||
           (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
           (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
           (cp >= 0x20000 && cp <= 0x3FFFD);
}
}  // namespace

size_t display_width(const std::string &s) {
    size_t w = 0;
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        uint32_t cp = len == 1 ? c : c & (0x7Fu >> len);
        for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
        w += is_wide(cp) ? 2 : 1;
        i += len;
    }
    return w;
}

std::string csv_field(const std::string &text) {
    std::string s = visible(text);  // no terminal controls in CSV either
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

std::string json_text(const Json &value, int indent) {
    std::string text = value.dump(indent, ' ', false, Json::error_handler_t::replace);
    // dump() writes C1 and bidi controls raw (they are valid UTF-8); outside
    // strings JSON is ASCII, so every one of them can become a \uXXXX escape.
    return escape_hidden_controls(text, true);
}

}  // namespace chring::cli
