// chring watch (etcd -> a ring file, followed) and chring etcd (admin
// commands on the membership kept in etcd); docs/etcd.md describes both.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace chring::cli::etcd {

// The flags both commands take to find the ring in etcd.
struct EtcdFlags {
    std::string endpoints;  // --etcd URL[,URL...]
    std::string prefix;     // --prefix P
    double timeout = 5.0;   // --timeout SECONDS, per request
    std::string plugin_dir; // --plugin-dir DIR
    const char *plugin_dir_or_null() const { return plugin_dir.empty() ? nullptr : plugin_dir.c_str(); }
};
// The subcommand `name` of `app` with the etcd flags, its footer the example.
CLI::App *add_etcd_subcommand(CLI::App &app, const std::string &name, const std::string &description,
                              const std::string &example, EtcdFlags &flags);

// A number of seconds, "2" or "0.5", within min..max.
CLI::Validator seconds(double min, double max);
// "0.25", "12": seconds as the messages write them.
std::string seconds_text(double s);

void add_watch_command(CLI::App &app);
void add_etcd_command(CLI::App &app);

}  // namespace chring::cli::etcd
