// One key of this process in etcd under its own lease: granted at the first
// write, kept alive, granted again when it expired (etcd away longer than
// the TTL), revoked on a clean exit so the key goes at once. The watchers'
// reports (fleet_report.hpp) and the health checkers' (cmd_health.cpp) use
// it. Nothing here throws: a failure is logged once per cause and retried
// with a backoff.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "etcd_client.hpp"

namespace chring::cli::etcd {

// Now, RFC 3339 in UTC with milliseconds: "2026-12-07T18:51:52.123Z".
std::string utc_now();
// This host's name, for the "host" field of a process's key.
std::string hostname();

class LeasedKey {
public:
    using Log = std::function<void(const std::string &)>;
    struct Names {
        std::string what;       // "the report", for messages
        std::string meanwhile;  // "following the ring all the same": what goes on after a failure
        std::string hint;       // "give each watcher its own --name": for a duplicate
        std::string name;       // the name in the key, as messages show it
    };
    // `client` should have no stop flag, so the lease is revoked after SIGTERM.
    // `host` and `pid` tell this process's values from another's (their
    // "host" and "pid" fields).
    LeasedKey(Client &client, std::string key, double ttl, Names names, std::string host, int64_t pid, Log log);

    // The value to write at the next flush().
    void set(std::string value);
    // A value still to write goes, or the keepalive when due; a retry waits
    // for its backoff. Cheap when there is nothing to do.
    void flush();
    // etcd answered again: a retry goes now.
    void retry_now();
    // The lease revoked: the key goes with it.
    void revoke();

    const std::string &key() const { return key_; }
    bool failing() const { return failures_ != 0; }

private:
    using Clock = std::chrono::steady_clock;
    void failed(const std::string &what, const CliError &e);
    void succeeded();
    void grant();
    void put();
    void write();
    void keepalive();
    void expired();

    Client &client_;
    std::string key_;
    double ttl_;
    Names names_;
    std::string host_;
    int64_t pid_;
    Log log_;
    std::string value_;
    bool has_value_ = false;
    bool dirty_ = false;  // the key in etcd does not hold value_

    uint64_t lease_ = 0;  // 0: none granted (or it is gone)
    double keepalive_every_ = 3.0;
    Clock::time_point next_keepalive_{};
    unsigned failures_ = 0;
    Clock::time_point next_try_{};
    std::string logged_cause_;  // the failure logged last; "" while all is well
    bool wrote_ = false;        // a put of ours went through
    bool warned_duplicate_ = false;
};

}  // namespace chring::cli::etcd
