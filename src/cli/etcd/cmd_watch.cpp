// chring watch: follows a ring kept in etcd and publishes it as a ring file.
//
// List the prefix at revision R, build the ring with the library's parser,
// write FILE atomically with %%revision R and %%fingerprint, then watch from
// R + 1 and publish the state after each batch of events. Anything that
// breaks the chain of revisions (a compacted start revision, a lost stream,
// an etcd that stopped answering the keepalive probe, another cluster id, a
// revision that went back) ends the watch: list again, after a backoff with
// jitter. A state the library refuses, or one that breaks a guard rail
// (too few members, too many keys moved: guard.hpp) without the operator's
// lift, is reported and the last good file stays in place. An --out file
// that exists at startup is that last good file until etcd answers. Each
// publish and refusal also goes to the watcher's report in etcd
// (PREFIX.status/NAME, fleet_report.hpp), with --confirm. The file carries
// the ring's availability (%%down, %%panic-threshold, %%availability:
// availability.hpp); a revision of checkers' writes only that changes
// neither the ring nor its availability (no quorum moved) is not published
// again, only reported as seen.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <thread>

#include "../file_io.hpp"
#include "../options.hpp"
#include "../spelling.hpp"
#include "availability.hpp"
#include "etcd_client.hpp"
#include "etcd_commands.hpp"
#include "etcd_state.hpp"
#include "fleet_report.hpp"
#include "guard.hpp"
#include "hook.hpp"

namespace chring::cli::etcd {

namespace {

StopFlag g_stop = 0;
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
    g_signal = sig;
    g_stop = 1;
}

using Clock = std::chrono::steady_clock;

struct WatchFlags {
    EtcdFlags etcd;
    GuardFlags guard;
    std::string out;
    std::string exec;
    double interval_max = 10.0;
    double keepalive = 5.0;
    double hook_timeout = 30.0;
    bool once = false;
    ReportFlags report;  // --name, --report-ttl, --no-report, --confirm
};

// Keys and values in a message are bounded where they are quoted; the cap
// here only keeps a line a line if one of them was missed.
void log(const std::string &message) {
    std::string line = "chring watch: " + visible_bounded(message, 4096) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

// Why the watch ended and the prefix is listed again.
class Relist : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// etcd canceled the watch because it no longer accepts the token (it
// expired): authenticate again and watch from the next revision, nothing
// listed again, nothing missed.
class TokenRejected : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

void install_signal_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns early
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

void sleep_unless_stopped(double seconds, const std::function<void()> &tick) {
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    while (!g_stop && Clock::now() < until) {
        tick();
        Clock::duration left = until - Clock::now();
        std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::milliseconds(50)));
    }
}

class Watcher {
public:
    explicit Watcher(const WatchFlags &flags)
        : f_(flags), layout_(flags.etcd.prefix),
          client_(parse_endpoints(flags.etcd.endpoints), flags.etcd.timeout,
                  access_from(flags.etcd, "the keys under " + layout_.range_begin()), &g_stop),
          random_(std::random_device{}()) {
        client_.on_renew([](const std::string &line) { log(line); });
        ReportFlags report = flags.report;
        if (flags.once) report.report = false;  // gone as soon as written: nothing to follow
        report.hook_timeout = flags.hook_timeout;  // --confirm's, as --exec's
        report_flags_ = report;
        // --confirm runs with the hook runner, as --exec, bounded by its timeout.
        auto confirm = [this](const std::string &what, const std::string &command,
                              const std::vector<std::pair<std::string, std::string>> &env,
                              const std::function<void()> &tick) {
            HookResult r = run_hook(what, command, env, report_flags_.hook_timeout, &g_stop, tick);
            return r.ok ? std::string() : r.failure;
        };
        reporter_ = std::make_unique<FleetReporter>(flags.etcd, layout_, flags.out, report_flags_, log, confirm);
    }

    int run();

private:
    void adopt_existing_file();
    void list();
    void follow(unsigned &attempt);
    void watch(unsigned &attempt, bool &renewed);
    bool handle(const std::string &line, bool &created);
    void probe();
    void check_header(const Header &h, bool revision);
    bool publish();
    void refuse(const std::string &reason);
    bool guard_lifted() const;
    void log_availability(const Availability &a);
    void run_exec(uint64_t fingerprint, uint64_t availability);
    double backoff(unsigned attempt);

    const WatchFlags &f_;
    Layout layout_;
    Client client_;
    std::mt19937_64 random_;
    // The fleet's report of this watcher (and --confirm): told of each
    // publish and refusal, ticked from every wait, stopped on the way out.
    ReportFlags report_flags_;
    std::unique_ptr<FleetReporter> reporter_;

    State state_;
    uint64_t revision_ = 0;       // the revision state_ is the prefix's state at
    uint64_t seen_revision_ = 0;  // the highest revision a list or probe returned
    uint64_t cluster_id_ = 0;
    bool have_cluster_ = false;

    bool published_ = false;
    uint64_t published_revision_ = 0;
    std::string published_body_;  // the file without its %%revision: the ring and its availability
    std::unique_ptr<Ring> published_ring_;  // what the guard rails compare with
    chr_availability_info published_availability_ = CHR_AVAILABILITY_INFO_INIT;
    std::vector<std::string> ignored_views_;  // the checkers' views ignored, as logged last
    bool refused_since_publish_ = false;      // a revision was refused after the file's
    // Since the file's revision only checkers' views changed (PREFIX/health/):
    // a revision that then changes nothing a reader routes by is not
    // published again. Any other write, or a list, is (the file says the
    // revision it is current at, as the fleet's processes report it).
    bool only_views_since_publish_ = false;

    // The guard key's mod_revision (0: absent). It lifts the guard rails
    // when written after lift_floor_: the revision last published, or the
    // revision listed after etcd's revision went back (a restore, a new
    // cluster), so a lift from before either never counts again.
    uint64_t guard_revision_ = 0;
    uint64_t lift_floor_ = 0;
};

// The file a previous run published (or a deploy put there) is the last
// good ring until etcd answers: kept, compared with by the guard rails, and
// not written again when etcd's state is the same ring at the same revision.
void Watcher::adopt_existing_file() {
    if (::access(f_.out.c_str(), F_OK) != 0) return;
    chr_options base;
    check(chr_options_init(&base, CHR_OPTIONS_VERSION), "");
    base.plugin_dir = f_.etcd.plugin_dir_or_null();
    chr_ring *ring = nullptr;
    chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
    if (chr_ring_new_from_file(f_.out.c_str(), &base, &ring, &info) != CHR_OK) {
        log("cannot read the existing " + f_.out + " (" + chr_last_error() +
            "): it stays until a valid state replaces it; the guard rails have no ring to compare with");
        return;
    }
    published_ring_ = std::make_unique<Ring>(ring);
    published_ = true;
    published_revision_ = info.revision;
    lift_floor_ = info.revision;
    published_body_ = published_ring_->snapshot().export_text(0, 0);
    check(chr_ring_availability(ring, &published_availability_), f_.out);
    log("keeping " + f_.out + " (revision " + std::to_string(info.revision) + " fingerprint " +
        hex64(info.fingerprint) + ", " + std::to_string(info.members) + (info.members == 1 ? " member" : " members") +
        ") until etcd answers");
}

double Watcher::backoff(unsigned attempt) {
    double ceiling = std::min(f_.interval_max, 0.1 * std::ldexp(1.0, int(std::min(attempt, 30u))));
    std::uniform_real_distribution<double> half(0.5, 1.0);  // jitter: 50..100% of the step
    return ceiling * half(random_);
}

// Another cluster id, or (`revision`) a revision below the highest one a
// linearizable read returned, ends the watch. Watch responses carry the
// cluster id, but their revision is not monotonic: a watcher that catches
// up gets headers of the revisions it is sent.
void Watcher::check_header(const Header &h, bool revision) {
    if (h.cluster_id != 0 && have_cluster_ && h.cluster_id != cluster_id_)
        throw Relist("etcd's cluster id changed from " + hex64(cluster_id_) + " to " + hex64(h.cluster_id));
    if (!revision) return;
    if (h.revision != 0 && h.revision < seen_revision_)
        throw Relist("etcd's revision went back from " + std::to_string(seen_revision_) + " to " +
                     std::to_string(h.revision) + " (restored from a backup?)");
    seen_revision_ = std::max(seen_revision_, h.revision);
}

void Watcher::list() {
    RangeResult r = client_.range(layout_.range_begin(), layout_.range_end());
    const Header &h = r.header;
    if (have_cluster_ && h.cluster_id != cluster_id_)
        log("etcd's cluster id is now " + hex64(h.cluster_id) + " (was " + hex64(cluster_id_) +
            "): following the new cluster");
    else if (have_cluster_ && h.revision < seen_revision_)
        log("etcd's revision went back from " + std::to_string(seen_revision_) + " to " +
            std::to_string(h.revision) + " (restored from a backup?): following it");
    cluster_id_ = h.cluster_id;
    have_cluster_ = true;
    seen_revision_ = h.revision;
    if (h.revision < lift_floor_) lift_floor_ = h.revision;  // only a lift written from now on counts
    state_.clear();
    only_views_since_publish_ = false;
    guard_revision_ = 0;
    const std::string guard_key = layout_.guard_key();
    for (KeyValue &kv : r.kvs) {
        if (kv.key == guard_key) guard_revision_ = kv.mod_revision;
        state_.emplace(std::move(kv.key), std::move(kv.value));
    }
    revision_ = h.revision;
    reporter_->etcd_is_back();
}

// One line of the watch stream; true when it changed the state.
bool Watcher::handle(const std::string &line, bool &created) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) throw Relist("etcd sent a watch line that is not JSON");
    if (auto err = j.find("error"); err != j.end()) {
        // {"error": {"grpc_code": 14, "message": ...}} on a stream, or the
        // unary shape {"error": "...", "message": "...", "code": N}.
        std::string message = err->is_object() ? err->value("message", std::string()) : j.value("message", std::string());
        if (message.empty() && err->is_string()) message = err->get<std::string>();
        throw Relist("the watch failed (" + (message.empty() ? err->dump() : message) + ")");
    }
    auto res = j.find("result");
    if (res == j.end() || !res->is_object()) throw Relist("etcd sent a watch line without a result");
    check_header(parse_header(*res), false);
    if (uint64_t compacted = json_u64(*res, "compact_revision"))
        throw Relist("a compacted revision (the watch needs revision " + std::to_string(revision_ + 1) +
                     ", etcd keeps revisions from " + std::to_string(compacted) + ")");
    if (res->value("canceled", false)) {
        const std::string reason = res->value("cancel_reason", std::string("no reason given"));
        if (client_.should_renew(reason)) throw TokenRejected(reason);
        const std::string problem = auth_problem(reason, client_.access(), "watch");
        throw Relist("etcd canceled the watch: " + reason + (problem.empty() ? "" : ": " + problem));
    }
    if (res->value("created", false)) created = true;
    auto events = res->find("events");
    if (events == res->end() || !events->is_array() || events->empty()) return false;
    for (const nlohmann::json &ev : *events) {
        auto kv = ev.find("kv");
        if (kv == ev.end() || !kv->is_object()) throw Relist("etcd sent a watch event without a key");
        std::string key, value;
        if (!base64_decode(kv->value("key", std::string()), key) ||
            !base64_decode(kv->value("value", std::string()), value))
            throw Relist("etcd sent a watch event whose key or value is not base64");
        const uint64_t mod_revision = json_u64(*kv, "mod_revision");
        const bool deleted = ev.value("type", std::string("PUT")) == "DELETE";
        if (key == layout_.guard_key()) guard_revision_ = deleted ? 0 : mod_revision;
        if (key.compare(0, layout_.health_dir().size(), layout_.health_dir()) != 0)
            only_views_since_publish_ = false;
        if (deleted)
            state_.erase(key);
        else
            state_[key] = std::move(value);
        revision_ = std::max(revision_, mod_revision);
    }
    return true;
}

// A linearizable read on the endpoint the stream uses: it must answer within
// the request timeout, from the same cluster, at no older revision.
void Watcher::probe() {
    const std::string endpoint = client_.endpoint();
    RangeResult r;
    try {
        r = client_.range(layout_.range_begin(), layout_.range_end(), true);
    } catch (const CliError &e) {
        throw Relist(std::string("no answer to the keepalive probe: ") + e.what());
    }
    if (client_.endpoint() != endpoint) throw Relist(endpoint + " stopped answering the keepalive probe");
    check_header(r.header, true);
}

// Watches from revision_ + 1; a watch etcd cancels for the token's sake
// is created again, once, with a new token, from where it stopped.
void Watcher::follow(unsigned &attempt) {
    bool renewed = false;  // a new token, and no watch created with it yet
    while (!g_stop) {
        try {
            watch(attempt, renewed);
            return;
        } catch (const TokenRejected &t) {
            if (renewed) throw Relist(std::string("etcd canceled the watch for a token just renewed (") + t.what() + ")");
            client_.authenticate();
            renewed = true;
            log("etcd no longer accepts the token of user '" + client_.access().user + "' (" + t.what() +
                "): authenticated again, watching from revision " + std::to_string(revision_ + 1));
        }
    }
}

void Watcher::watch(unsigned &attempt, bool &renewed) {
    nlohmann::json create = {
        {"key", base64_encode(layout_.range_begin())},
        {"range_end", base64_encode(layout_.range_end())},
        {"start_revision", std::to_string(revision_ + 1)},
        {"progress_notify", true},
    };
    const std::string &token = client_.token();
    WatchStream stream(client_.endpoint(), create, f_.etcd.timeout, client_.access(), token);
    const auto every = std::chrono::duration<double>(f_.keepalive);
    auto last_probe = Clock::now();
    bool created = false;
    std::vector<std::string> lines;
    while (!g_stop) {
        lines.clear();
        bool alive = stream.pump(100, lines);
        bool changed = false;
        // Every response received so far is applied before publishing: a
        // burst of changes becomes one file, of the latest revision.
        for (const std::string &line : lines) changed |= handle(line, created);
        if (created) renewed = false;
        if (changed) publish();
        reporter_->tick();
        if (!alive) throw Relist("the watch stream ended (" + stream.error() + ")");
        if (Clock::now() - last_probe >= every) {
            probe();
            last_probe = Clock::now();
            if (created) attempt = 0;  // healthy for a whole keepalive interval
        }
    }
}

bool Watcher::guard_lifted() const { return guard_revision_ != 0 && guard_revision_ > lift_floor_; }

// A state not published: logged with the revision the file keeps.
void Watcher::refuse(const std::string &reason) {
    log("refused revision " + std::to_string(revision_) + ": " + reason + "; " +
        (published_ ? "keeping revision " + std::to_string(published_revision_) : "no file written yet"));
    refused_since_publish_ = true;
    reporter_->refused(revision_, reason);
}

bool Watcher::publish() {
    Built b = build_ring(layout_, state_, f_.etcd.plugin_dir_or_null());
    if (!b.ring) {
        refuse(b.error);
        return false;
    }
    const Availability &availability = *b.availability;
    if (const std::vector<std::string> ignored = availability.ignored(); ignored != ignored_views_) {
        for (const std::string &line : ignored)
            if (std::find(ignored_views_.begin(), ignored_views_.end(), line) == ignored_views_.end())
                log("ignoring the health report " + line + " (that checker neither votes nor counts)");
        ignored_views_ = ignored;
    }
    const Snapshot snap = b.ring->snapshot();
    std::string body = snap.export_text(0, 0);
    // --once writes the revision it read unless the file already has it.
    if (published_ && body == published_body_ && f_.once && published_revision_ == revision_) return true;
    if (published_ && body == published_body_ && !f_.once && !refused_since_publish_ &&
        only_views_since_publish_) {
        // Nothing any reader would route otherwise (checkers' writes that
        // move no quorum): the file stays, the report says the revision was
        // seen. A lift written meanwhile is spent, as by a
        // publish. (After a refusal the state that ends it is published,
        // even when it is the file's ring: the file says it is current.)
        lift_floor_ = std::max(lift_floor_, revision_);
        reporter_->seen(revision_, published_revision_, b.fingerprint, availability.info);
        return true;
    }
    std::string text = snap.export_text(CHR_EXPORT_REVISION, revision_);
    const std::unique_ptr<Snapshot> before =
        published_ring_ ? std::make_unique<Snapshot>(published_ring_->snapshot()) : nullptr;
    const ChangeEffect effect = measure(before.get(), snap);
    if (std::string broken = violation(f_.guard, effect); !broken.empty()) {
        if (!guard_lifted()) {
            refuse("guard: " + broken + "; " + describe_sides(effect) + "; to publish it, lift the guard: write " +
                   layout_.guard_key() + " (chring etcd ... --force, or etcdctl put)");
            return false;
        }
        log("guard lifted by " + layout_.guard_key() + " (revision " + std::to_string(guard_revision_) +
            "): publishing revision " + std::to_string(revision_) + " although " + broken);
    }
    try {
        write_file_atomically(f_.out, text, "ring file");
    } catch (const CliError &e) {
        log("cannot publish revision " + std::to_string(revision_) + ": " + e.what() + "; " +
            (published_ ? "keeping revision " + std::to_string(published_revision_) : "no file written yet"));
        reporter_->refused(revision_, std::string("cannot write the file: ") + e.what());
        return false;
    }
    const bool had_file = published_;
    published_ = true;
    refused_since_publish_ = false;
    only_views_since_publish_ = true;
    published_revision_ = revision_;
    lift_floor_ = std::max(lift_floor_, revision_);
    published_body_ = std::move(body);
    published_ring_ = std::move(b.ring);
    log("published revision " + std::to_string(revision_) + " fingerprint " + hex64(b.fingerprint) + " (" +
        std::to_string(b.members) + (b.members == 1 ? " member" : " members") + ") to " + f_.out);
    if (had_file || availability.info.digest != 0) log_availability(availability);
    published_availability_ = availability.info;
    reporter_->published(revision_, b.fingerprint, availability.info);
    if (!f_.exec.empty()) run_exec(b.fingerprint, availability.info.digest);
    reporter_->after_hooks();
    return true;
}

// What a publish changed of the availability, against the file before:
// the effective down set (by its digest) and panic, one line each.
void Watcher::log_availability(const Availability &a) {
    const chr_availability_info &was = published_availability_, &now = a.info;
    if (now.digest != was.digest)
        log("down now: " + a.down_text() + " (digest " + hex64(now.digest) + ", panic threshold " +
            std::to_string(now.panic_threshold) + "%)");
    if (now.panic && !was.panic)
        log("panic: " + weight_text(now) + ": marks ignored");
    else if (!now.panic && was.panic)
        log("panic over: " + weight_text(now) + ": marks in effect");
}

// --exec: /bin/sh -c CMD with the file, revision, fingerprint and
// availability digest in CHRING_FILE, CHRING_REVISION, CHRING_FINGERPRINT,
// CHRING_AVAILABILITY, for at most --hook-timeout seconds; whatever becomes
// of it, the watch goes on.
void Watcher::run_exec(uint64_t fingerprint, uint64_t availability) {
    const std::string revision = std::to_string(revision_);
    const HookResult r = run_hook("--exec", f_.exec,
                                  {{"CHRING_FILE", f_.out}, {"CHRING_REVISION", revision},
                                   {"CHRING_FINGERPRINT", hex64(fingerprint)},
                                   {"CHRING_AVAILABILITY", hex64(availability)}},
                                  f_.hook_timeout, &g_stop, [this] { reporter_->tick(); });
    if (!r.ok)
        log("--exec command " + r.failure + " after revision " + revision + (r.stopped ? "" : "; going on"));
}

int Watcher::run() {
    install_signal_handlers();
    adopt_existing_file();
    unsigned attempt = 0;
    while (!g_stop) {
        std::string reason;
        try {
            list();
            bool ok = publish();
            if (f_.once) return ok ? 0 : 1;
            follow(attempt);
        } catch (const Relist &r) {
            reason = r.what();
        } catch (const CliError &e) {  // TransportError, ServerError
            if (f_.once) {
                log(std::string("cannot list ") + layout_.prefix() + ": " + e.what());
                return 1;
            }
            reason = e.what();
        }
        if (g_stop) break;
        double delay = backoff(attempt++);
        log("re-listing after " + reason + " (in " + seconds_text(delay) + " s)");
        sleep_unless_stopped(delay, [this] { reporter_->tick(); });
    }
    reporter_->stop();
    log(std::string("stopping on ") + (g_signal == SIGINT ? "SIGINT" : "SIGTERM") + "; " +
        (published_ ? f_.out + " keeps revision " + std::to_string(published_revision_) : "no file written"));
    return 0;
}

}  // namespace

void add_watch_command(CLI::App &app) {
    auto flags = std::make_shared<WatchFlags>();
    CLI::App *cmd = add_etcd_subcommand(
        app, "watch", "Follow a ring kept in etcd: publish it as a ring file after every change (docs/etcd.md)",
        "chring watch --etcd http://127.0.0.1:2379 --prefix /chring/cache --out /etc/chring/cache.ring", flags->etcd);
    cmd->add_option("--out", flags->out, "The ring file to publish (replaced atomically)")->type_name("FILE")->required();
    cmd->add_option("--exec", flags->exec,
                    "Command run by /bin/sh after each publish (CHRING_FILE, CHRING_REVISION, CHRING_FINGERPRINT, "
                    "CHRING_AVAILABILITY set)")
        ->type_name("CMD");
    cmd->add_option("--hook-timeout", flags->hook_timeout,
                    "How long a hook may run: then its whole process group is killed and the watch goes on")
        ->type_name("SECONDS")
        ->check(seconds(0.1, 86400))
        ->capture_default_str();
    cmd->add_option("--interval-max", flags->interval_max, "Longest wait between two attempts to list again")
        ->type_name("SECONDS")
        ->check(seconds(0.1, 3600))
        ->capture_default_str();
    cmd->add_option("--keepalive", flags->keepalive,
                    "How often etcd must answer a probe while the watch is quiet (a dead connection is found "
                    "within this plus --timeout)")
        ->type_name("SECONDS")
        ->check(seconds(0.1, 3600))
        ->capture_default_str();
    add_guard_flags(*cmd, flags->guard);
    cmd->add_flag("--once", flags->once, "List, publish, exit (0: published, 1: refused or etcd unreachable)");
    add_report_options(*cmd, flags->report);
    cmd->callback([flags] {
        if (flags->out.empty()) throw UsageError("--out: the file name is empty");
        check_report_options(flags->report, flags->once);
        Watcher w(*flags);
        if (w.run() != 0) throw CliError("watch --once: nothing was published (see the line above)");
    });
}

}  // namespace chring::cli::etcd
