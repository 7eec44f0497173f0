// The fleet's reports: each chring watch says in etcd which ring it holds,
// under a lease, at P.status/<name>; chring etcd status and --wait read them
// (docs/etcd.md, "Acknowledged rollouts").
//
// The reports live outside the ring's range [P/, P0): '.' sorts before '/',
// so [P.status/, P.status0) never meets it. A report write moves etcd's
// revision but never the ring's watch stream, and a watcher needs only read
// permission on P/ (readwrite on P.status/ for its report).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "etcd_client.hpp"
#include "etcd_state.hpp"

namespace chring::cli::etcd {

struct EtcdFlags;
struct Availability;

// P.status/ and its range end.
std::string status_dir(const Layout &layout);
std::string status_range_end(const Layout &layout);
// The key of the report of `name` (escaped as a ring-file id).
std::string status_key(const Layout &layout, const std::string &name);

enum class ReportState { published, refused, confirming, unconfirmed };
const char *state_name(ReportState s);

// One process's report, the JSON value of its key.
struct ProcessReport {
    std::string name;  // decoded bytes
    std::string host;
    int64_t pid = 0;
    std::string out;   // the file it publishes
    ReportState state = ReportState::published;
    // The ring it holds: last published (and confirmed, with --confirm),
    // with its availability digest and whether that ring is in panic.
    bool holds_ring = false;
    uint64_t revision = 0, fingerprint = 0, availability = 0;
    bool panic = false;
    // The last revision whose state it has seen with nothing to publish
    // (the same ring and availability as the file's): at least `revision`.
    uint64_t seen_revision = 0;
    // confirming, unconfirmed: the ring published and not yet confirmed.
    bool pending = false;
    uint64_t pending_revision = 0, pending_fingerprint = 0, pending_availability = 0;
    bool pending_panic = false;
    // refused: the revision it did not publish, and why.
    uint64_t refused_revision = 0;
    std::string reason;
    // unconfirmed: how the --confirm command failed.
    std::string failure;
    std::string since;  // when the state last changed, RFC 3339 UTC

    nlohmann::ordered_json to_json() const;
    // A report read back; false with why in `why` when `j` is not one.
    static bool from_json(const nlohmann::json &j, ProcessReport &out, std::string &why);
};

// Reasons and failures in a report are cut to this many bytes.
constexpr size_t kReasonMax = 512;

// What a watcher reports and how (chring watch's flags).
struct ReportFlags {
    bool report = true;        // !--no-report
    std::string name;          // --name; empty: <hostname>:<pid>
    double ttl = 10.0;         // --report-ttl
    std::string confirm;       // --confirm CMD
    double hook_timeout = 30.0;  // --hook-timeout, for --confirm
};

// --name, --report-ttl, --no-report, --confirm on chring watch.
void add_report_options(CLI::App &cmd, ReportFlags &flags);
// The combinations refused (exit 2): --confirm with --once, a bad --name.
void check_report_options(const ReportFlags &flags, bool once);

// The watcher's side: keeps its report in etcd under a lease and runs
// --confirm. Every call is cheap when there is nothing to do; nothing here
// throws to the watcher: a failure is logged once per cause and retried.
class FleetReporter {
public:
    using Log = std::function<void(const std::string &)>;
    // Runs a hook: (what, command, env, tick) -> "" when it exited 0, else
    // how it failed. The watcher passes its hook runner.
    using RunHook = std::function<std::string(const std::string &what, const std::string &command,
                                              const std::vector<std::pair<std::string, std::string>> &env,
                                              const std::function<void()> &tick)>;

    FleetReporter(const EtcdFlags &etcd, const Layout &layout, const std::string &out, const ReportFlags &flags,
                  Log log, RunHook run_hook);
    ~FleetReporter();
    FleetReporter(const FleetReporter &) = delete;
    FleetReporter &operator=(const FleetReporter &) = delete;

    // The file now holds revision R, fingerprint F, availability `a`
    // (before its --exec).
    void published(uint64_t revision, uint64_t fingerprint, const chr_availability_info &a);
    // Revision R changed nothing the file holds: seen. Before any report
    // (a file adopted at startup), the file's ring is reported as held.
    void seen(uint64_t revision, uint64_t file_revision, uint64_t fingerprint, const chr_availability_info &a);
    // Revision R was not published: why.
    void refused(uint64_t revision, const std::string &reason);
    // After a publish and its --exec: the --confirm command's first try,
    // then the report written.
    void after_hooks();
    // Called often (the watch loop, waits, hooks): the lease's keepalive,
    // a report still to write, --confirm tried again when due.
    void tick();
    // etcd answered the watcher again: a report still to write goes now.
    void etcd_is_back();
    // A clean exit: the lease is revoked, the report goes with it.
    void stop();

    const std::string &key() const { return key_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string key_;
};

// -- reading the fleet (chring etcd status, --wait) ---------------------------------

// One key under P.status/, read.
struct FleetEntry {
    std::string key;
    std::string name;      // decoded from the key
    bool readable = false;
    std::string problem;   // when not readable
    ProcessReport report;
};

// The ring in etcd now and the reports, read one after the other.
struct FleetView {
    uint64_t revision = 0;     // etcd's revision of the ring's read
    bool ring_valid = false;
    uint64_t fingerprint = 0;
    size_t members = 0;
    std::string ring_error;
    std::shared_ptr<const Availability> availability;  // when ring_valid
    std::map<std::string, int64_t> mark_ttl;  // a down mark's key -> seconds its lease has left (-1: unknown); absent: no lease
    std::vector<FleetEntry> processes;  // in key order
};
// `ring` reads P/, `reports` P.status/ (each with its scope for messages).
FleetView read_fleet(Client &ring, Client &reports, const Layout &layout, const char *plugin_dir);
// Only the reports, and the revision they were read at.
std::vector<FleetEntry> read_reports(Client &client, const Layout &layout, uint64_t *revision = nullptr);
// One key under P.status/ and its value, read.
FleetEntry read_entry(const Layout &layout, const std::string &key, const std::string &value);

// Exit statuses of chring etcd status and --wait (1 and 2 stay error and usage).
constexpr int kExitFleetBehind = 3;  // a process lags or refused
constexpr int kExitNoReports = 4;    // no process reports

// chring etcd status: prints the ring in etcd and each process; returns
// the exit status (0: every reporting process holds the current ring).
int fleet_status(Client &ring, Client &reports, const Layout &layout, const char *plugin_dir, bool json,
                 std::ostream &out);

// A change written at `revision` (or, !written, the ring as it already
// was) whose ring has `fingerprint` and availability digest `availability`.
struct Rollout {
    uint64_t revision = 0;
    uint64_t fingerprint = 0;
    uint64_t availability = 0;
    bool written = true;
};
// --wait: until every reporting process holds the rollout's ring or a later
// one, one refuses it, or `timeout` seconds pass; progress lines on `out`.
// The reports are listed, then watched (listed again if the watch ends).
// Returns the exit status (0: converged).
int wait_for_rollout(Client &reports, const Layout &layout, const Rollout &rollout, double timeout,
                     std::ostream &out);

}  // namespace chring::cli::etcd
