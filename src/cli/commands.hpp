// The subcommands; each file registers one on the app.
#pragma once

#include <CLI/CLI.hpp>

namespace chring::cli {

void add_demo_command(CLI::App &app);
void add_sim_command(CLI::App &app);
void add_lookup_command(CLI::App &app);
void add_inspect_command(CLI::App &app);
void add_check_command(CLI::App &app);
void add_export_command(CLI::App &app);
void add_diff_command(CLI::App &app);

}  // namespace chring::cli
