// chring watch (etcd -> a ring file, followed) and chring etcd (admin
// commands on the membership kept in etcd); docs/etcd.md describes both.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "etcd_client.hpp"

namespace chring::cli::etcd {

// The flags both commands take to find the ring in etcd.
struct EtcdFlags {
    std::string endpoints;  // --etcd URL[,URL...]
    std::string prefix;     // --prefix P
    double timeout = 5.0;   // --timeout SECONDS, per request
    std::string plugin_dir; // --plugin-dir DIR
    // TLS and authentication, etcdctl's flags (docs/etcd.md)
    std::string cacert, cert, key;   // --cacert, --cert, --key FILE
    bool insecure_skip_tls_verify = false;
    std::string user;                // --user NAME
    std::string password_file;       // --password-file FILE (else ETCDCTL_PASSWORD)
    const char *plugin_dir_or_null() const { return plugin_dir.empty() ? nullptr : plugin_dir.c_str(); }
};

// The Access the flags describe, the password read, every file checked
// readable; `scope` names the keys for messages. A UsageError for flags
// that do not go together, a CliError for a file that cannot be read.
Access access_from(const EtcdFlags &flags, const std::string &scope);
// The subcommand `name` of `app` with the etcd flags, its footer the example.
CLI::App *add_etcd_subcommand(CLI::App &app, const std::string &name, const std::string &description,
                              const std::string &example, EtcdFlags &flags);

// A number of seconds, "2" or "0.5", within min..max.
CLI::Validator seconds(double min, double max);
// "0.25", "12": seconds as the messages write them.
std::string seconds_text(double s);

void add_watch_command(CLI::App &app);
void add_etcd_command(CLI::App &app);
void add_health_command(CLI::App &app);

}  // namespace chring::cli::etcd
