// chring etcd's admin side, shared by its operations: the flags, the
// prefix as read at a revision, the checked write (build the ring the
// change leaves, print what it does, one transaction) and --wait.
// cmd_etcd.cpp implements it with the membership operations and status;
// cmd_availability.cpp has down, up and panic-threshold.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "etcd_client.hpp"
#include "etcd_commands.hpp"
#include "etcd_state.hpp"
#include "fleet_report.hpp"
#include "guard.hpp"

namespace chring::cli::etcd {

// The flags of chring etcd and of its operations, one set for all.
struct AdminFlags {
    EtcdFlags etcd;
    GuardFlags guard;
    bool dry_run = false;
    bool force = false;
    std::string id;
    uint32_t weight = 0;
    std::string zone;
    std::string file;
    std::string format = "table";
    double wait = 0;  // --wait[=TIMEOUT]; 0: do not wait
    // down, up, panic-threshold
    std::string for_text = "1h";  // --for DURATION
    std::string reason;           // --reason TEXT
    bool hold = false;            // --hold
    int percent = -1;             // panic-threshold PERCENT; -1: print it
};

// The prefix as read at one revision.
struct Current {
    Header header;
    State state;
    std::map<std::string, uint64_t> mod_revision;  // key -> its mod_revision
    std::map<std::string, std::string> key_of_id;  // decoded id -> key (ids that decode)
};

class Admin {
public:
    explicit Admin(const AdminFlags &f)
        : f_(f), layout_(f.etcd.prefix),
          client_(parse_endpoints(f.etcd.endpoints), f.etcd.timeout,
                  access_from(f.etcd, "the keys under " + layout_.range_begin())) {}

    Current read();
    // The ring the state would describe; a CliError naming the key otherwise.
    Built validate(const State &state, const std::string &change);
    // One transaction: `ops` if nothing under the prefix changed since
    // `cur` was read (and the `extra` compares hold). Returns the new revision.
    // `whole_prefix` false: only the `extra` compares (a down mark, which a
    // checker's write under P/health/ must not make conflict).
    uint64_t commit(const Current &cur, nlohmann::json extra_compares, nlohmann::json ops, bool whole_prefix = true);
    // Prints what going from `cur` to `next` moves, then decides: nullopt
    // for --dry-run (nothing to write), else the operations to add to the
    // change's transaction (the guard key when --force lifts a guard). A
    // CliError when the change breaks a guard without --force.
    std::optional<nlohmann::json> plan(const Current &cur, const Built &next, const std::string &change);

    const Layout &layout() const { return layout_; }
    const AdminFlags &flags() const { return f_; }
    Client &client() { return client_; }
    // The reports' reader, its messages naming P.status/.
    Client &reports() {
        if (!reports_)
            reports_ = std::make_unique<Client>(parse_endpoints(f_.etcd.endpoints), f_.etcd.timeout,
                                                access_from(f_.etcd, "the keys under " + status_dir(layout_)));
        return *reports_;
    }
    // After a change: --wait for the fleet to hold its ring. The exit status.
    int finish(const Rollout &rollout) {
        if (f_.wait <= 0) return 0;
        std::cout.flush();
        return wait_for_rollout(reports(), layout_, rollout, f_.wait, std::cout);
    }

private:
    const AdminFlags &f_;
    Layout layout_;
    Client client_;
    std::unique_ptr<Client> reports_;
};

// Operations and compares of a transaction.
nlohmann::json put_op(const std::string &key, const std::string &value);
nlohmann::json delete_op(const std::string &key);
// The key was last modified at `mod_revision` (and so still exists).
nlohmann::json unchanged_compare(const std::string &key, uint64_t mod_revision);
// The key does not exist.
nlohmann::json absent_compare(const std::string &key);
// A JSON array of one element. (Not `{x}`: a braced list of one json is
// an array under GCC and a copy of `x` under clang.)
nlohmann::json one(nlohmann::json x);

// "on HOST at 2026-12-07T18:51:52Z": where and when a note was written.
std::string where_and_when();

// What --wait waits for after a change that leaves the ring `b`.
Rollout rollout(uint64_t revision, const Built &b, bool written);

// The member the id argument names, in the prefix as read now.
struct Target {
    std::string id;   // decoded
    Current cur;
    std::string key;  // its key in cur
};
Target find_member(Admin &a);

// Runs an operation: every failure reads "chring: etcd: ...", a verdict
// other than success (status, --wait) is its exit status.
void guarded(const std::shared_ptr<AdminFlags> &flags, int (*run)(Admin &));
// --wait[=TIMEOUT] on each change: one flag, one implementation (Admin::finish).
void add_wait_flag(CLI::App &cmd, AdminFlags &flags);

// down, up, panic-threshold (cmd_availability.cpp).
void add_availability_commands(CLI::App &etcd, const std::shared_ptr<AdminFlags> &flags);

}  // namespace chring::cli::etcd
