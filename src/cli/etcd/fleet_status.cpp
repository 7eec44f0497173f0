// chring etcd status and --wait: the fleet's reports (fleet_report.hpp)
// against the ring in etcd. A process holds a ring when its report says
// `published` with that ring's fingerprint and availability digest:
// fingerprints, not revisions, since a ring file's %%revision is the
// revision its state was read at and every report write moves etcd's
// revision. Equal fingerprints and digests route every key the same.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <ostream>
#include <thread>

#include "../report.hpp"
#include "../spelling.hpp"
#include "availability.hpp"
#include "etcd_commands.hpp"
#include "fleet_report.hpp"

namespace chring::cli::etcd {

namespace {

using Clock = std::chrono::steady_clock;

enum class Verdict { holds, lags, refused };

const char *verdict_name(Verdict v) {
    switch (v) {
    case Verdict::holds: return "holds";
    case Verdict::lags: return "lags";
    case Verdict::refused: return "refused";
    }
    return "?";
}

struct Judged {
    Verdict verdict = Verdict::lags;
    std::string detail;  // why it lags or refused; "" when it holds
};

std::string rev(uint64_t r) { return std::to_string(r); }

// What the report says besides "holds": a refusal's reason, the ring
// being confirmed, the confirm command's failure.
std::string state_detail(const ProcessReport &r) {
    switch (r.state) {
    case ReportState::refused:
        return "refused revision " + rev(r.refused_revision) + ": " + r.reason;
    case ReportState::confirming:
        return "confirming revision " + rev(r.pending_revision) + " (" + hex64(r.pending_fingerprint) + ")";
    case ReportState::unconfirmed:
        return "revision " + rev(r.pending_revision) + " unconfirmed: --confirm command " + r.failure;
    case ReportState::published:
        break;
    }
    return "";
}

// Against the ring in etcd now (status).
Judged judge_now(const FleetEntry &e, const FleetView &v) {
    if (!e.readable) return {Verdict::lags, "unreadable report: " + e.problem};
    const ProcessReport &r = e.report;
    if (r.state == ReportState::refused) return {Verdict::refused, state_detail(r)};
    const uint64_t digest = v.availability ? v.availability->info.digest : 0;
    const bool same_ring = r.holds_ring && v.ring_valid && r.fingerprint == v.fingerprint;
    if (r.state == ReportState::published && same_ring && r.availability == digest) return {Verdict::holds, ""};
    std::string detail = state_detail(r);
    if (detail.empty())
        detail = !r.holds_ring ? "holds no ring yet"
                 : same_ring   ? "holds the ring with another availability (digest " + hex64(r.availability) +
                                   ", etcd's " + hex64(digest) + ")"
                 : v.ring_valid ? "holds another ring (revision " + rev(r.revision) + ")"
                                : "holds revision " + rev(r.revision) + "; etcd's state is not a valid ring";
    return {Verdict::lags, detail};
}

// Against a rollout (--wait): the ring written at R, or a later one.
Judged judge_rollout(const FleetEntry &e, const Rollout &ro) {
    if (!e.readable) return {Verdict::lags, "unreadable report: " + e.problem};
    const ProcessReport &r = e.report;
    if (r.state == ReportState::refused && (!ro.written || r.refused_revision >= ro.revision))
        return {Verdict::refused, state_detail(r)};
    if (r.state == ReportState::published && r.holds_ring) {
        // At R (published there, or seen there with nothing to publish)
        // the ring must be ours: another fingerprint or digest there is a
        // process that reads the same state otherwise.
        const bool same = r.fingerprint == ro.fingerprint && r.availability == ro.availability;
        const bool at = r.revision == ro.revision || (r.revision < ro.revision && r.seen_revision >= ro.revision);
        const bool ok = ro.written ? r.revision > ro.revision || (at && same) : same;
        if (ok) return {Verdict::holds, ""};
        if (ro.written && at)
            return {Verdict::lags, "holds revision " + rev(r.seen_revision) + " with fingerprint " +
                                       hex64(r.fingerprint) + " and availability " + hex64(r.availability) +
                                       ", not " + hex64(ro.fingerprint) + " and " + hex64(ro.availability)};
    }
    std::string detail = state_detail(r);
    if (detail.empty())
        detail = r.holds_ring ? "holds revision " + rev(r.revision) : "holds no ring yet";
    else if (r.holds_ring)
        detail = "holds revision " + rev(r.revision) + "; " + detail;
    return {Verdict::lags, detail};
}

// "12 s ago" from a report's RFC 3339 time; "" when it does not read.
std::string age_of(const std::string &since) {
    int y, mo, d, h, mi, s;
    if (std::sscanf(since.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6) return "";
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    const std::time_t then = timegm(&tm);
    const std::time_t now = std::time(nullptr);
    if (then == std::time_t(-1)) return "";
    const long long ago = now >= then ? (long long)(now - then) : 0;
    if (ago < 120) return std::to_string(ago) + " s ago";
    if (ago < 7200) return std::to_string(ago / 60) + " min ago";
    return std::to_string(ago / 3600) + " h ago";
}

Cell opt_hex(bool has, uint64_t v) { return has ? hex_cell(v) : none_cell(); }
Cell opt_rev(bool has, uint64_t v) { return has ? count_cell(v) : none_cell(); }

std::string counts_line(size_t hold, size_t total, size_t lag, size_t refused, const std::string &what) {
    return std::to_string(hold) + " of " + std::to_string(total) + (total == 1 ? " process holds " : " processes hold ") +
           what + "; " + std::to_string(lag) + " lag; " + std::to_string(refused) + " refused";
}

// "1 h 2 min", "45 s": a mark's lease's time left.
std::string ttl_text(int64_t s) {
    if (s < 0) return "expiring";
    if (s < 120) return std::to_string(s) + " s";
    if (s < 7200) return std::to_string(s / 60) + " min";
    return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

// The availability in etcd: the threshold and panic, the effective down
// set with why, the operators' marks and the checkers' views.
void add_availability_tables(Report &report, const Availability &a, const FleetView &v, const Layout &layout) {
    Table t;
    t.key = "availability";
    t.title = "Availability";
    t.record = true;
    t.add_field("down", "down", text_cell(a.down_text()));
    t.add_field("panic_threshold", "panic threshold",
                Cell{std::to_string(a.threshold) + "%" + (a.threshold_set ? "" : " (default)"), a.threshold});
    t.add_field("panic", "panic", Cell{a.info.panic ? "yes: " + weight_text(a.info) + ": marks ignored" : "no (" +
                                                   weight_text(a.info) + ")", bool(a.info.panic)});
    t.add_field("digest", "digest", hex_cell(a.info.digest));
    report.tables.push_back(std::move(t));

    Table d;
    d.key = "down";
    d.title = "Down";
    d.columns = {{"id", "id", false}, {"why", "why", false}, {"mark_ttl", "mark expires in", false},
                 {"votes", "checkers", true, false}, {"checkers", "live checkers", true, false}};
    for (const DownMember &m : a.down) {
        Cell ttl = none_cell();
        for (const OperatorMark &mark : a.marks)
            if (m.marked && mark.id == m.id)
                if (auto it = v.mark_ttl.find(mark.key); it != v.mark_ttl.end())
                    ttl = Cell{ttl_text(it->second), it->second};
        d.add_row({text_cell(printable_id(m.id)), text_cell(m.why()), ttl, count_cell(m.votes),
                   count_cell(m.checkers)});
    }
    if (a.down.empty()) d.notes.push_back("No member is down.");
    for (const OperatorMark &mark : a.marks)
        if (!a.find(mark.id))
            d.notes.push_back("The mark " + mark.key + " is ignored: " + printable_id(mark.id) +
                              " is not a member.");
    report.tables.push_back(std::move(d));

    Table c;
    c.key = "checkers";
    c.title = "Checkers";
    c.columns = {{"name", "name", false}, {"host", "host", false}, {"pid", "pid", true, false},
                 {"live", "view", false}, {"down", "down", false}, {"updated", "updated", false}};
    for (const CheckerView &cv : a.checkers) {
        std::string down;
        for (const std::string &id : cv.down) down += (down.empty() ? "" : ", ") + printable_id(id);
        const std::string age = age_of(cv.updated);
        c.add_row({text_cell(printable_id(cv.name)), cv.host.empty() ? none_cell() : text_cell(cv.host),
                   cv.pid ? Cell{std::to_string(cv.pid), cv.pid} : none_cell(),
                   text_cell(cv.readable ? "counts" : "ignored: " + cv.problem),
                   text_cell(cv.readable ? (down.empty() ? "none" : down) : "-"),
                   cv.updated.empty() ? none_cell() : Cell{age.empty() ? cv.updated : age, cv.updated}});
    }
    if (a.checkers.empty())
        c.notes.push_back("No checker reports under " + layout.health_dir() + " (its key lives with its lease).");
    report.tables.push_back(std::move(c));
}

}  // namespace

int fleet_status(Client &ring, Client &reports, const Layout &layout, const char *plugin_dir, bool json,
                 std::ostream &out) {
    const FleetView v = read_fleet(ring, reports, layout, plugin_dir);
    Report report;
    Table t;
    t.key = "ring";
    t.title = "Ring in etcd";
    t.record = true;
    t.add_field("prefix", "prefix", text_cell(layout.prefix()));
    t.add_field("revision", "revision", count_cell(v.revision));
    t.add_field("valid", "valid", Cell{v.ring_valid ? "yes" : "no", v.ring_valid});
    if (!v.ring_valid) t.add_field("error", "error", text_cell(v.ring_error));
    t.add_field("fingerprint", "fingerprint", opt_hex(v.ring_valid, v.fingerprint));
    t.add_field("members", "members", v.ring_valid ? count_cell(v.members) : none_cell());
    t.add_field("reports", "reports", text_cell(status_dir(layout)));
    report.tables.push_back(std::move(t));
    const uint64_t digest = v.availability ? v.availability->info.digest : 0;
    if (v.availability) add_availability_tables(report, *v.availability, v, layout);

    Table p;
    p.key = "processes";
    p.title = "Processes";
    p.columns = {{"name", "name", false},        {"host", "host", false, false},
                 {"pid", "pid", true, false},     {"out", "out", false, false},
                 {"state", "state", false},       {"revision", "revision"},
                 {"fingerprint", "fingerprint"},  {"availability", "availability"},
                 {"panic", "panic", false, false}, {"verdict", "current", false},
                 {"detail", "lag or reason", false}, {"since", "since", false},
                 {"pending_revision", "pending revision", true, false},
                 {"pending_fingerprint", "pending fingerprint", true, false},
                 {"refused_revision", "refused revision", true, false}};
    size_t hold = 0, lag = 0, refused = 0, agree = 0;
    for (const FleetEntry &e : v.processes) {
        const Judged j = judge_now(e, v);
        agree += e.readable && e.report.holds_ring && e.report.availability == digest;
        (j.verdict == Verdict::holds ? hold : j.verdict == Verdict::refused ? refused : lag)++;
        const ProcessReport &r = e.report;
        const bool ok = e.readable;
        std::string age = ok ? age_of(r.since) : "";
        p.add_row({text_cell(printable_id(e.name)), ok ? text_cell(r.host) : none_cell(),
                   ok ? Cell{std::to_string(r.pid), r.pid} : none_cell(), ok ? text_cell(r.out) : none_cell(),
                   text_cell(ok ? state_name(r.state) : "?"), opt_rev(ok && r.holds_ring, r.revision),
                   opt_hex(ok && r.holds_ring, r.fingerprint), opt_hex(ok && r.holds_ring, r.availability),
                   ok && r.holds_ring ? Cell{r.panic ? "yes" : "no", r.panic} : none_cell(),
                   text_cell(verdict_name(j.verdict)),
                   j.detail.empty() ? none_cell() : text_cell(j.detail),
                   ok ? Cell{age.empty() ? r.since : age, r.since} : none_cell(),
                   opt_rev(ok && r.pending, r.pending_revision), opt_hex(ok && r.pending, r.pending_fingerprint),
                   opt_rev(ok && r.state == ReportState::refused, r.refused_revision)});
    }
    const size_t total = v.processes.size();
    if (total == 0) p.notes.push_back("No process reports under " + status_dir(layout) + ".");
    report.tables.push_back(std::move(p));
    if (json) {
        Table s;
        s.key = "summary";
        s.add_field("processes", "processes", count_cell(total));
        s.add_field("hold", "hold", count_cell(hold));
        s.add_field("lag", "lag", count_cell(lag));
        s.add_field("refused", "refused", count_cell(refused));
        s.add_field("availability_agree", "availability agree", count_cell(agree));
        report.tables.push_back(std::move(s));
    } else {
        report.footer.push_back(counts_line(hold, total, lag, refused, "the current ring"));
        if (total && v.ring_valid)
            report.footer.push_back(agree == total ? "every process holds availability digest " + hex64(digest)
                                                   : std::to_string(agree) + " of " + std::to_string(total) +
                                                         " processes hold availability digest " + hex64(digest) +
                                                         "; the others route some keys otherwise");
    }
    write_report(report, json ? Format::json : Format::table, out);
    out.flush();
    if (total == 0) return kExitNoReports;
    return hold == total ? 0 : kExitFleetBehind;
}

int wait_for_rollout(Client &reports, const Layout &layout, const Rollout &ro, double timeout, std::ostream &out) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
    const std::string availability = ro.availability ? ", availability " + hex64(ro.availability) : "";
    const std::string target = ro.written ? "revision " + rev(ro.revision) + " (fingerprint " + hex64(ro.fingerprint) +
                                                availability + ") or a later ring"
                                          : "fingerprint " + hex64(ro.fingerprint) + availability;
    auto elapsed = [&] {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2f s",
                      std::chrono::duration<double>(Clock::now() - start).count());
        return std::string(buf);
    };
    out << "waiting up to " << seconds_text(timeout) << " s for every process reporting under " << status_dir(layout)
        << " to hold " << target << "\n";
    out.flush();
    std::string last_progress, last_error;
    std::map<std::string, bool> seen;  // name -> held the ring when last read
    std::vector<std::pair<const FleetEntry *, Judged>> judged;
    std::map<std::string, FleetEntry> entries;  // key -> its report
    bool read_once = false;
    // The reports are listed at a revision, then watched from the next one,
    // so that a report is seen as it is written, not at the next poll; a
    // watch that ends or fails is replaced by a new list.
    std::unique_ptr<WatchStream> stream;
    std::vector<std::string> lines;
    auto note_error = [&](const std::string &what) {
        if (what == last_error) return;
        out << "cannot read the reports (trying again): " << what << "\n";
        out.flush();
        last_error = what;
    };
    while (true) {
        bool fresh = false;
        if (!stream) {
            try {
                uint64_t revision = 0;
                std::vector<FleetEntry> listed = read_reports(reports, layout, &revision);
                entries.clear();
                for (FleetEntry &e : listed) entries.emplace(e.key, std::move(e));
                read_once = fresh = true;
                last_error.clear();
                nlohmann::json create = {{"key", base64_encode(status_dir(layout))},
                                         {"range_end", base64_encode(status_range_end(layout))},
                                         {"start_revision", std::to_string(revision + 1)}};
                stream = std::make_unique<WatchStream>(reports.endpoint(), create, reports.timeout(),
                                                       reports.access(), reports.token());
            } catch (const CliError &e) {  // etcd away for a moment: the deadline decides
                note_error(e.what());
            }
        } else {
            lines.clear();
            const bool alive = stream->pump(100, lines);
            bool broken = !alive;
            for (const std::string &line : lines) {
                nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
                auto res = j.is_object() ? j.find("result") : j.end();
                if (res == j.end() || !res->is_object() || res->value("canceled", false) ||
                    json_u64(*res, "compact_revision")) {
                    broken = true;  // an error, a cancel: list again
                    break;
                }
                auto events = res->find("events");
                if (events == res->end() || !events->is_array()) continue;
                for (const nlohmann::json &ev : *events) {
                    auto kv = ev.find("kv");
                    std::string key, value;
                    if (kv == ev.end() || !kv->is_object() ||
                        !base64_decode(kv->value("key", std::string()), key) ||
                        !base64_decode(kv->value("value", std::string()), value)) {
                        broken = true;
                        break;
                    }
                    if (ev.value("type", std::string("PUT")) == "DELETE")
                        entries.erase(key);
                    else
                        entries[key] = read_entry(layout, key, value);
                    fresh = true;
                }
            }
            if (broken) {
                if (!alive) note_error(stream->error());
                stream.reset();
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
        if (fresh) {
            judged.clear();
            size_t hold = 0, lag = 0, refused = 0;
            for (const auto &[key, e] : entries) {
                judged.emplace_back(&e, judge_rollout(e, ro));
                const Verdict v = judged.back().second.verdict;
                (v == Verdict::holds ? hold : v == Verdict::refused ? refused : lag)++;
            }
            // Say who went away: no longer waited for.
            std::map<std::string, bool> now;
            for (const auto &[e, j] : judged) now[e->name] = j.verdict == Verdict::holds;
            for (const auto &[n, held] : seen)
                if (!now.count(n) && !held)
                    out << "  " << visible(printable_id(n))
                        << ": no longer reports (stopped, or its lease expired): not waited for\n";
            seen = std::move(now);
            if (entries.empty()) {
                out << "no process reports under " << status_dir(layout) << ": nothing to wait for\n";
                out.flush();
                return kExitNoReports;
            }
            if (refused) {
                out << "refused after " << elapsed() << ": "
                    << counts_line(hold, entries.size(), lag, refused, target) << "\n";
                for (const auto &[e, j] : judged)
                    if (j.verdict == Verdict::refused) out << "  " << visible(printable_id(e->name)) << ": " << visible(j.detail) << "\n";
                out.flush();
                return kExitFleetBehind;
            }
            if (hold == entries.size()) {
                out << "done in " << elapsed() << ": all " << entries.size()
                    << (entries.size() == 1 ? " process holds " : " processes hold ") << target << "\n";
                out.flush();
                return 0;
            }
            const std::string progress = counts_line(hold, entries.size(), lag, refused, target);
            if (progress != last_progress) {
                out << progress << "\n";
                out.flush();
                last_progress = progress;
            }
        }
        if (Clock::now() >= deadline) break;
        if (!stream) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    out << "timed out after " << elapsed() << (read_once ? "" : " without reading the reports");
    if (read_once) {
        out << "; still waiting for:\n";
        for (const auto &[e, j] : judged)
            if (j.verdict != Verdict::holds) out << "  " << visible(printable_id(e->name)) << ": " << visible(j.detail) << "\n";
    } else {
        out << "\n";
    }
    out.flush();
    return kExitFleetBehind;
}

}  // namespace chring::cli::etcd
