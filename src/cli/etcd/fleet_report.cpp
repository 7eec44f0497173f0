#include "fleet_report.hpp"

#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "../options.hpp"
#include "../spelling.hpp"
#include "etcd_commands.hpp"
#include "leased_key.hpp"

namespace chring::cli::etcd {

namespace {

using Clock = std::chrono::steady_clock;

Clock::duration from_seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// At most kReasonMax bytes, cut before a UTF-8 continuation byte.
std::string bounded(const std::string &text) {
    if (text.size() <= kReasonMax) return text;
    size_t end = kReasonMax - 3;
    while (end > 0 && (uint8_t(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(0, end) + "...";
}

std::string absolute(const std::string &path) {
    if (!path.empty() && path[0] == '/') return path;
    char buf[PATH_MAX];
    if (!getcwd(buf, sizeof buf)) return path;
    return std::string(buf) + "/" + path;
}

bool parse_hex64(const std::string &text, uint64_t &out) {
    if (text.size() != 18 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return false;
    if (text.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos) return false;
    out = std::stoull(text.substr(2), nullptr, 16);
    return true;
}

// A revision field: a non-negative JSON integer.
bool revision_of(const nlohmann::json &j, const char *name, uint64_t &out) {
    auto it = j.find(name);
    if (it == j.end() || !(it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0)))
        return false;
    out = it->get<uint64_t>();
    return true;
}

// A hex64 field that may be absent or null (then 0).
bool optional_hex(const nlohmann::json &j, const char *name, uint64_t &out) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return true;
    return it->is_string() && parse_hex64(it->get<std::string>(), out);
}

bool optional_revision(const nlohmann::json &j, const char *name, uint64_t &out) {
    auto it = j.find(name);
    return it == j.end() || it->is_null() || revision_of(j, name, out);
}

template <class Json>
std::string dump(const Json &j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string status_dir(const Layout &layout) { return layout.prefix() + ".status/"; }
std::string status_range_end(const Layout &layout) { return prefix_range_end(status_dir(layout)); }
std::string status_key(const Layout &layout, const std::string &name) {
    return status_dir(layout) + canonical_field(name);
}

const char *state_name(ReportState s) {
    switch (s) {
    case ReportState::published: return "published";
    case ReportState::refused: return "refused";
    case ReportState::confirming: return "confirming";
    case ReportState::unconfirmed: return "unconfirmed";
    }
    return "?";
}

nlohmann::ordered_json ProcessReport::to_json() const {
    using J = nlohmann::ordered_json;  // the fields in this order, for people reading etcdctl's output
    J j = {
        {"version", 1},
        {"name", canonical_field(name)},
        {"host", host},
        {"pid", pid},
        {"out", out},
        {"state", state_name(state)},
        {"revision", holds_ring ? J(revision) : J()},
        {"fingerprint", holds_ring ? J(hex64(fingerprint)) : J()},
        {"availability", holds_ring ? J(hex64(availability)) : J()},
        {"panic", holds_ring ? J(panic) : J()},
        {"seen_revision", holds_ring ? J(std::max(seen_revision, revision)) : J()},
    };
    if (pending) {
        j["pending_revision"] = pending_revision;
        j["pending_fingerprint"] = hex64(pending_fingerprint);
        j["pending_availability"] = hex64(pending_availability);
        j["pending_panic"] = pending_panic;
    }
    if (state == ReportState::refused) {
        j["refused_revision"] = refused_revision;
        j["reason"] = reason;
    }
    if (state == ReportState::unconfirmed) j["failure"] = failure;
    j["since"] = since;
    return j;
}

bool ProcessReport::from_json(const nlohmann::json &j, ProcessReport &r, std::string &why) {
    if (!j.is_object()) {
        why = "not a JSON object";
        return false;
    }
    r = ProcessReport();
    r.host = j.value("host", std::string());
    r.out = j.value("out", std::string());
    r.since = j.value("since", std::string());
    if (auto pid = j.find("pid"); pid != j.end() && pid->is_number_integer()) r.pid = pid->get<int64_t>();
    const std::string state = j.value("state", std::string());
    if (state == "published") r.state = ReportState::published;
    else if (state == "refused") r.state = ReportState::refused;
    else if (state == "confirming") r.state = ReportState::confirming;
    else if (state == "unconfirmed") r.state = ReportState::unconfirmed;
    else {
        why = "its state '" + state + "' is none of published, refused, confirming, unconfirmed";
        return false;
    }
    if (auto fp = j.find("fingerprint"); fp != j.end() && !fp->is_null()) {
        if (!fp->is_string() || !parse_hex64(fp->get<std::string>(), r.fingerprint) ||
            !revision_of(j, "revision", r.revision)) {
            why = "its revision or fingerprint is malformed";
            return false;
        }
        r.holds_ring = true;
        // Absent in a report of a chring without availability: no mark, the default threshold.
        if (!optional_hex(j, "availability", r.availability) || !optional_revision(j, "seen_revision", r.seen_revision)) {
            why = "its availability or seen revision is malformed";
            return false;
        }
        r.panic = j.value("panic", false) == true;
        r.seen_revision = std::max(r.seen_revision, r.revision);
    }
    if (auto fp = j.find("pending_fingerprint"); fp != j.end() && !fp->is_null()) {
        if (!fp->is_string() || !parse_hex64(fp->get<std::string>(), r.pending_fingerprint) ||
            !revision_of(j, "pending_revision", r.pending_revision) ||
            !optional_hex(j, "pending_availability", r.pending_availability)) {
            why = "its pending revision, fingerprint or availability is malformed";
            return false;
        }
        r.pending_panic = j.value("pending_panic", false) == true;
        r.pending = true;
    }
    if (r.state == ReportState::refused) {
        revision_of(j, "refused_revision", r.refused_revision);
        r.reason = j.value("reason", std::string());
    }
    if (r.state == ReportState::unconfirmed) r.failure = j.value("failure", std::string());
    return true;
}

// -- the watcher's side ------------------------------------------------------------------

struct FleetReporter::Impl {
    Impl(const EtcdFlags &etcd, const Layout &layout, const std::string &out, const ReportFlags &f, Log log_,
         RunHook run_hook_)
        : flags(f), log(std::move(log_)), run_hook(std::move(run_hook_)), layout(layout),
          client(parse_endpoints(etcd.endpoints), etcd.timeout,
                 access_from(etcd, "the keys under " + status_dir(layout))) {
        report.host = hostname();
        report.pid = int64_t(getpid());
        report.name = f.name.empty() ? report.host + ":" + std::to_string(report.pid) : f.name;
        report.out = absolute(out);
        report.since = utc_now();
        key = status_key(layout, report.name);
        client.on_renew([this](const std::string &line) { log(line); });
        leased = std::make_unique<LeasedKey>(
            client, key, f.ttl,
            LeasedKey::Names{"the report", "following the ring all the same", "give each watcher its own --name",
                             visible(canonical_field(report.name))},
            report.host, report.pid, log);
    }

    const ReportFlags &flags;
    Log log;
    RunHook run_hook;
    const Layout &layout;
    Client client;  // its own connection: no stop flag, so the lease is revoked after SIGTERM
    std::string key;
    ProcessReport report;
    bool started = false;  // something to report (a publish or a refusal)
    std::unique_ptr<LeasedKey> leased;  // made once the key and the report's host and pid are known

    // --confirm
    bool confirm_due = false;
    Clock::time_point next_confirm{};
    unsigned confirm_tries = 0;
    std::string logged_failure;
    bool in_hook = false;

    bool reporting() const { return flags.report; }

    void changed() {
        report.since = utc_now();
        started = true;
        leased->set(dump(report.to_json()));
    }

    void flush() {
        if (reporting() && started) leased->flush();
    }

    std::vector<std::pair<std::string, std::string>> confirm_env() const {
        return {{"CHRING_FILE", report.out},
                {"CHRING_REVISION", std::to_string(report.pending_revision)},
                {"CHRING_FINGERPRINT", hex64(report.pending_fingerprint)}};
    }

    void try_confirm() {
        confirm_due = false;
        if (!report.pending || !run_hook) return;
        const uint64_t revision = report.pending_revision, fingerprint = report.pending_fingerprint;
        const uint64_t availability = report.pending_availability;
        const bool panic = report.pending_panic;
        std::string failure;
        in_hook = true;
        try {
            failure = run_hook("--confirm", flags.confirm, confirm_env(), [this] { flush(); });
        } catch (...) {
            in_hook = false;
            throw;
        }
        in_hook = false;
        if (!report.pending || report.pending_revision != revision) return;  // replaced meanwhile
        // A newer state refused meanwhile stays the state; the file's ring
        // is confirmed all the same.
        const bool refusing = report.state == ReportState::refused;
        if (failure.empty()) {
            if (!refusing) report.state = ReportState::published;
            report.holds_ring = true;
            report.revision = revision;
            report.fingerprint = fingerprint;
            report.availability = availability;
            report.panic = panic;
            report.seen_revision = revision;
            report.pending = false;
            report.failure.clear();
            changed();
            log("confirmed revision " + std::to_string(revision) + " fingerprint " + hex64(fingerprint));
            return;
        }
        const std::string line = "--confirm command " + failure + " for revision " + std::to_string(revision);
        if (line != logged_failure) {
            log(line + "; trying again until it succeeds or a newer revision replaces it");
            logged_failure = line;
        }
        if (!refusing && (report.state != ReportState::unconfirmed || report.failure != bounded(failure))) {
            report.state = ReportState::unconfirmed;
            report.failure = bounded(failure);
            changed();
        }
        // Soon at first (a server that loads the file on a timer, as nginx's
        // check=), then at most every keepalive interval: 0.05 s doubling.
        const double wait =
            std::min(std::max(0.5, flags.ttl / 3.0), 0.05 * std::ldexp(1.0, int(std::min(confirm_tries, 10u))));
        ++confirm_tries;
        next_confirm = Clock::now() + from_seconds(wait);
        confirm_due = true;
    }
};

FleetReporter::FleetReporter(const EtcdFlags &etcd, const Layout &layout, const std::string &out,
                             const ReportFlags &flags, Log log, RunHook run_hook)
    : impl_(std::make_unique<Impl>(etcd, layout, out, flags, std::move(log), std::move(run_hook))) {
    key_ = impl_->key;
}

FleetReporter::~FleetReporter() = default;

void FleetReporter::published(uint64_t revision, uint64_t fingerprint, const chr_availability_info &a) {
    Impl &m = *impl_;
    m.confirm_due = false;
    m.confirm_tries = 0;
    m.report.reason.clear();
    m.report.refused_revision = 0;
    m.report.failure.clear();
    if (m.flags.confirm.empty()) {
        m.report.state = ReportState::published;
        m.report.holds_ring = true;
        m.report.revision = revision;
        m.report.fingerprint = fingerprint;
        m.report.availability = a.digest;
        m.report.panic = a.panic != 0;
        m.report.seen_revision = revision;
        m.report.pending = false;
    } else {
        m.report.state = ReportState::confirming;
        m.report.pending = true;
        m.report.pending_revision = revision;
        m.report.pending_fingerprint = fingerprint;
        m.report.pending_availability = a.digest;
        m.report.pending_panic = a.panic != 0;
    }
    m.changed();
}

void FleetReporter::seen(uint64_t revision, uint64_t file_revision, uint64_t fingerprint,
                         const chr_availability_info &a) {
    Impl &m = *impl_;
    if (!m.started) {
        published(file_revision, fingerprint, a);
        after_hooks();
    }
    bool changed = false;
    if (m.report.state == ReportState::refused) {
        // Back to the state the file holds (the refused key undone): the refusal is over.
        m.report.state = m.report.pending ? ReportState::confirming : ReportState::published;
        m.report.reason.clear();
        m.report.refused_revision = 0;
        changed = true;
    }
    // A ring still to confirm is not held: nothing seen counts for it yet.
    if (!m.report.pending && revision > m.report.seen_revision) {
        m.report.seen_revision = revision;
        changed = true;
    }
    if (!changed) return;
    m.changed();
    m.flush();
}

void FleetReporter::refused(uint64_t revision, const std::string &reason) {
    Impl &m = *impl_;
    m.report.state = ReportState::refused;
    m.report.refused_revision = revision;
    m.report.reason = bounded(reason);
    m.changed();  // the file keeps its ring, confirmed or still to confirm
    m.flush();
}

void FleetReporter::after_hooks() {
    Impl &m = *impl_;
    if (m.report.pending && !m.flags.confirm.empty()) {
        m.flush();  // "confirming" while the command runs
        m.try_confirm();
    }
    m.flush();
}

void FleetReporter::tick() {
    Impl &m = *impl_;
    if (!m.in_hook && m.confirm_due && Clock::now() >= m.next_confirm) m.try_confirm();
    m.flush();
}

void FleetReporter::etcd_is_back() {
    Impl &m = *impl_;
    if (m.reporting() && m.started) m.leased->retry_now();
}

void FleetReporter::stop() {
    Impl &m = *impl_;
    if (m.reporting()) m.leased->revoke();
}

void add_report_options(CLI::App &cmd, ReportFlags &f) {
    cmd.add_option("--name", f.name,
                   "This watcher's name in the fleet's reports (PREFIX.status/NAME; default HOSTNAME:PID), "
                   "escaped as a ring-file id")
        ->type_name("NAME");
    cmd.add_option("--report-ttl", f.ttl,
                   "The TTL of the report's lease: the report of a watcher that dies goes within this")
        ->type_name("SECONDS")
        ->check(seconds(2, 3600))
        ->capture_default_str();
    cmd.add_flag_callback("--no-report", [&f] { f.report = false; },
                 "Write no report in etcd (the watcher then needs only read permission on PREFIX/)");
    cmd.add_option("--confirm", f.confirm,
                   "After each publish and its --exec, /bin/sh -c CMD (CHRING_FILE, CHRING_REVISION, "
                   "CHRING_FINGERPRINT set) until it exits 0: only then does the report say the ring is held")
        ->type_name("CMD");
}

void check_report_options(const ReportFlags &f, bool once) {
    if (!f.confirm.empty() && once)
        throw UsageError("--confirm tries its command until it succeeds: not with --once");
    // Any bytes (the key escapes them), as long as a ring-file id may be.
    if (f.name.size() > CHR_NODE_ID_MAX)
        throw UsageError("--name: " + std::to_string(f.name.size()) + " bytes, over " +
                         std::to_string(CHR_NODE_ID_MAX));
}

// -- reading the fleet ------------------------------------------------------------------

FleetEntry read_entry(const Layout &layout, const std::string &key, const std::string &value) {
    const std::string dir = status_dir(layout);
    FleetEntry e;
    e.key = key;
    std::string why;
    const std::string field = key.substr(std::min(dir.size(), key.size()));
    if (!decode_field(field, "name", e.name, why)) e.name = field;
    nlohmann::json j = nlohmann::json::parse(value, nullptr, false);
    if (j.is_discarded())
        e.problem = "not JSON";
    else if (ProcessReport::from_json(j, e.report, why))
        e.readable = true;
    else
        e.problem = why;
    return e;
}

std::vector<FleetEntry> read_reports(Client &client, const Layout &layout, uint64_t *revision) {
    RangeResult r = client.range(status_dir(layout), status_range_end(layout));
    if (revision) *revision = r.header.revision;
    std::vector<FleetEntry> out;
    for (const KeyValue &kv : r.kvs) out.push_back(read_entry(layout, kv.key, kv.value));
    return out;
}

FleetView read_fleet(Client &client, Client &reports, const Layout &layout, const char *plugin_dir) {
    FleetView v;
    RangeResult ring = client.range(layout.range_begin(), layout.range_end());
    v.revision = ring.header.revision;
    State state;
    std::map<std::string, uint64_t> mark_lease;  // down mark key -> its lease
    for (KeyValue &kv : ring.kvs) {
        if (kv.lease != 0 && kv.key.compare(0, layout.down_dir().size(), layout.down_dir()) == 0)
            mark_lease[kv.key] = kv.lease;
        state.emplace(std::move(kv.key), std::move(kv.value));
    }
    // How long each operator's mark has left (chring etcd down --for).
    for (const auto &[key, lease] : mark_lease) {
        try {
            nlohmann::json answer = client.post("/v3/lease/timetolive", {{"ID", std::to_string(lease)}});
            auto ttl = answer.find("TTL");  // -1: it just expired
            v.mark_ttl[key] = ttl == answer.end() ? -1
                              : ttl->is_string() ? std::stoll(ttl->get<std::string>())
                                                 : ttl->get<int64_t>();
        } catch (const std::exception &) {
            // not known (no permission, etcd away): shown as "-"
        }
    }
    Built b = build_ring(layout, state, plugin_dir);
    v.ring_valid = b.ring != nullptr;
    v.fingerprint = b.fingerprint;
    v.members = b.members;
    v.ring_error = b.error;
    v.availability = b.availability;
    v.processes = read_reports(reports, layout);
    return v;
}

}  // namespace chring::cli::etcd
