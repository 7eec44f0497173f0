// What a command found, as tables, and the three ways to print them:
// aligned text for people (default), JSON and CSV for scripts.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace chring::cli {

enum class Format { table, json, csv };
// "table", "json" or "csv".
Format parse_format(const std::string &name);

// One value: how a person sees it, and what a script gets.
struct Cell {
    std::string text;
    nlohmann::ordered_json value;
};
Cell text_cell(const std::string &s);
Cell count_cell(uint64_t n);                        // "1,000,000" / 1000000
Cell real_cell(double v, int decimals);             // "0.123" / 0.123
Cell percent_cell(double fraction, int decimals);   // "9.09%" / 9.09 (percent)
Cell ratio_cell(double v, int decimals);            // "1.23x" / 1.23
Cell hex_cell(uint64_t v);                          // "0x00ab..." / "0x00ab..."
Cell none_cell();                                   // "-" / null

struct Column {
    std::string key;    // JSON / CSV name, snake_case
    std::string title;  // table header
    bool right = true;  // alignment in tables
    bool in_text = true;  // false: only in JSON / CSV (e.g. numeric twins of a label)
};

// Rows of cells, or (record) a list of named fields.
struct Table {
    std::string key;    // JSON / CSV name of the table
    std::string title;  // heading in text output
    std::vector<std::string> notes;  // paragraphs printed under the table in text output
    std::vector<Column> columns;
    std::vector<std::vector<Cell>> rows;
    bool record = false;  // rows are {field key, field title, value}; JSON object, not array

    void add_field(const std::string &field_key, const std::string &field_title, Cell value);
    void add_row(std::vector<Cell> row) { rows.push_back(std::move(row)); }
};

struct Report {
    std::vector<std::string> header;  // text output only: lines before the tables
    std::vector<Table> tables;
    std::vector<std::string> footer;  // text output only (e.g. timings)
};

void write_report(const Report &report, Format format, std::ostream &out);

// v with `decimals` digits after the point ("%.*f").
std::string format_fixed(double v, int decimals);
// Printed width of UTF-8 text (code points; good enough for ids and titles).
size_t display_width(const std::string &s);
// One CSV field, quoted if it needs to be.
std::string csv_field(const std::string &s);
// JSON text of `value` that never throws on bytes that are not UTF-8.
std::string json_text(const nlohmann::ordered_json &value, int indent = -1);

}  // namespace chring::cli
