// chring health: probes the ring's members and keeps, under its lease, the
// list of those it finds down at PREFIX/health/NAME (docs/etcd.md, "chring
// health"). Many checkers run; a member is down when most of them say so.
#include <curl/curl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "../options.hpp"
#include "../spelling.hpp"
#include "etcd_commands.hpp"
#include "etcd_state.hpp"
#include "leased_key.hpp"

namespace chring::cli::etcd {

namespace {

using Clock = std::chrono::steady_clock;

StopFlag g_stop = 0;

constexpr int kExitSomeDown = 3;  // --once: a member did not answer

extern "C" void on_health_signal(int) { g_stop = 1; }

struct HealthFlags {
    EtcdFlags etcd;
    std::string name;
    std::string address_map;
    int port = 0;
    std::string http;
    long expect = 200;
    double interval = 1.0;
    double probe_timeout = 1.0;
    int rise = 2;
    int fall = 3;
    double ttl = 10.0;
    bool once = false;
};

void log(const std::string &message) {
    std::string line = "chring health: " + visible_bounded(message, 4096) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

// An id as a message shows it: its field spelling, bounded.
std::string shown_id(const std::string &id) { return visible_bounded(printable_id(id)); }

Clock::duration from_seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// "host:port" usable in a URL: a name or IPv4 address, or [IPv6], and a
// port 1..65535; nothing that could change the URL's meaning.
bool usable_address(const std::string &a) {
    size_t colon = a.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == a.size() || colon + 6 < a.size()) return false;
    const std::string host = a.substr(0, colon), port = a.substr(colon + 1);
    if (port.find_first_not_of("0123456789") != std::string::npos) return false;
    const long p = std::stol(port);
    if (p < 1 || p > 65535) return false;
    if (host.front() == '[')
        return host.size() > 2 && host.back() == ']' &&
               host.find_first_not_of("0123456789abcdefABCDEF:.", 1) == host.size() - 1;
    return host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") ==
           std::string::npos;
}

// The id field -> host:port lines of --address-map ('#' comments, blank lines).
std::map<std::string, std::string> read_address_map(const std::string &file) {
    std::ifstream in(file);
    if (!in) throw CliError("--address-map " + file + ": cannot read it: " + std::strerror(errno));
    std::map<std::string, std::string> out;
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        const size_t end = line.find_first_of(" \t", start);
        const size_t addr = end == std::string::npos ? end : line.find_first_not_of(" \t", end);
        const std::string where = "--address-map " + file + " line " + std::to_string(n);
        if (addr == std::string::npos) throw CliError(where + ": not '<id field> <host:port>'");
        const size_t addr_end = line.find_first_of(" \t", addr);
        if (addr_end != std::string::npos && line.find_first_not_of(" \t", addr_end) != std::string::npos)
            throw CliError(where + ": not '<id field> <host:port>'");
        std::string id, why;
        if (!decode_member_field(std::string_view(line).substr(start, end - start), MemberField::id, id, why))
            throw CliError(where + ": " + why);
        const std::string address = line.substr(addr, addr_end == std::string::npos ? addr_end : addr_end - addr);
        if (!usable_address(address)) throw CliError(where + ": " + quoted_bounded(address) + " is not host:port");
        out[id] = address;
    }
    return out;
}

// What one checker knows of one member.
struct Member {
    std::string id_field;  // canonical
    std::string address;   // host:port; empty: none usable
    bool up = true;        // every member starts up
    int successes = 0, failures = 0;  // consecutive
};

struct Probe {
    Member *member;
    CURL *easy = nullptr;
    std::string failure;  // "" once it succeeded
    bool done = false;
    char error[CURL_ERROR_SIZE] = "";
};

size_t discard(char *, size_t size, size_t n, void *) { return size * n; }

// Probes every member with an address at once; each Probe's failure is ""
// for a success. Returns early (the probes unfinished) on a stop.
void probe_all(std::vector<Probe> &probes, const HealthFlags &f, const std::function<void()> &tick) {
    CURLM *multi = curl_multi_init();
    if (!multi) throw CliError("curl_multi_init failed");
    const long timeout_ms = long(f.probe_timeout * 1000);
    for (Probe &p : probes) {
        CURL *e = curl_easy_init();
        if (!e) {
            p.failure = "curl_easy_init failed";
            p.done = true;
            continue;
        }
        p.easy = e;
        const std::string url = "http://" + p.member->address + (f.http.empty() ? "/" : f.http);
        curl_easy_setopt(e, CURLOPT_URL, url.c_str());
        curl_easy_setopt(e, CURLOPT_PRIVATE, &p);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_PROXY, "");  // a member is probed directly, never through $http_proxy
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p.error);
        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
        curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
        if (f.http.empty()) {
            curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
        } else {
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
            curl_easy_setopt(e, CURLOPT_USERAGENT, "chring-health");
        }
        curl_multi_add_handle(multi, e);
    }
    int running = 1;
    while (running && !g_stop) {
        curl_multi_perform(multi, &running);
        int queued;
        while (CURLMsg *msg = curl_multi_info_read(multi, &queued)) {
            if (msg->msg != CURLMSG_DONE) continue;
            Probe *p = nullptr;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char **>(&p));
            const CURLcode rc = msg->data.result;
            p->done = true;
            if (rc == CURLE_OK) {
                if (!f.http.empty()) {
                    long status = 0;
                    curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &status);
                    if (status != f.expect)
                        p->failure = "HTTP " + std::to_string(status) + ", expected " + std::to_string(f.expect);
                }
            } else if (rc == CURLE_COULDNT_CONNECT) {
                long err = 0;
                curl_easy_getinfo(p->easy, CURLINFO_OS_ERRNO, &err);
                p->failure = std::string("connect: ") + (err ? std::strerror(int(err)) : p->error);
            } else if (rc == CURLE_OPERATION_TIMEDOUT) {
                p->failure = "no answer within " + seconds_text(f.probe_timeout) + " s";
            } else {
                p->failure = p->error[0] ? p->error : curl_easy_strerror(rc);
            }
        }
        tick();
        if (running) curl_multi_poll(multi, nullptr, 0, 50, nullptr);
    }
    for (Probe &p : probes) {
        if (!p.easy) continue;
        curl_multi_remove_handle(multi, p.easy);
        curl_easy_cleanup(p.easy);
        p.easy = nullptr;
    }
    curl_multi_cleanup(multi);
}

class Checker {
public:
    explicit Checker(const HealthFlags &f)
        : f_(f), layout_(f.etcd.prefix),
          reader_(parse_endpoints(f.etcd.endpoints), f.etcd.timeout,
                  access_from(f.etcd, "the keys under " + layout_.members_dir()), &g_stop),
          writer_(parse_endpoints(f.etcd.endpoints), f.etcd.timeout,
                  access_from(f.etcd, "the keys under " + layout_.health_dir())),
          host_(hostname()), pid_(int64_t(getpid())),
          leased_(writer_, layout_.health_dir() + canonical_field(f.name), f.ttl,
                  {"the health report", "probing all the same", "give each checker its own --name",
                   visible(canonical_field(f.name))}, host_, pid_,
                  log) {
        if (!f.address_map.empty()) map_ = read_address_map(f.address_map);
        reader_.on_renew([](const std::string &line) { log(line); });
        writer_.on_renew([](const std::string &line) { log(line); });
    }

    int run();

private:
    // The members in etcd now; false (and logged once) when etcd did not answer.
    bool list();
    std::string address_of(const std::string &id) const;
    void round();
    void report();
    std::string value() const;

    const HealthFlags &f_;
    Layout layout_;
    Client reader_;  // stops at SIGTERM
    Client writer_;  // no stop flag: the lease is revoked after SIGTERM
    std::string host_;
    int64_t pid_;
    LeasedKey leased_;
    std::map<std::string, std::string> map_;  // --address-map: id -> host:port
    std::map<std::string, Member> members_;  // by id (decoded)
    std::set<std::string> no_address_logged_;
    std::string list_failure_;  // the list failure logged last
    std::set<std::string> reported_down_;
    bool started_ = false;  // the first report written
};

std::string Checker::address_of(const std::string &id) const {
    if (auto it = map_.find(id); it != map_.end()) return it->second;
    std::string a = f_.port ? (id.find(':') != std::string::npos ? "[" + id + "]" : id) + ":" + std::to_string(f_.port)
                            : id;
    return usable_address(a) ? a : "";
}

bool Checker::list() {
    RangeResult r;
    try {
        r = reader_.range(layout_.members_dir(), prefix_range_end(layout_.members_dir()));
    } catch (const CliError &e) {
        if (g_stop) return false;
        const std::string cause = dynamic_cast<const ServerError *>(&e) ? "etcd" : "transport";
        if (cause != list_failure_)
            log(std::string("cannot list ") + layout_.members_dir() + ": " + e.what() +
                "; probing the members listed last, and trying again");
        list_failure_ = cause;
        return false;
    }
    if (!list_failure_.empty()) log("listing " + layout_.members_dir() + " again");
    list_failure_.clear();
    std::map<std::string, Member> next;
    for (const KeyValue &kv : r.kvs) {
        MemberEntry m;
        try {
            m = parse_member(kv.key.substr(layout_.members_dir().size()), kv.value, layout_.shown(kv.key));
        } catch (const CliError &) {
            continue;  // not a member the ring has: chring watch refuses the state and says why
        }
        auto old = members_.find(m.id);
        Member member = old != members_.end() ? old->second : Member();
        member.id_field = m.id_field;
        member.address = address_of(m.id);
        if (member.address.empty() && no_address_logged_.insert(m.id).second)
            log(shown_id(m.id) + " has no usable address (host:port" +
                std::string(f_.port ? ", a host with --port" : "") +
                (f_.address_map.empty() ? "" : ", or a line of --address-map") + "): never probed nor marked down");
        next.emplace(m.id, std::move(member));
    }
    members_ = std::move(next);
    return true;
}

void Checker::round() {
    std::vector<Probe> probes;
    for (auto &[id, m] : members_)
        if (!m.address.empty()) {
            probes.emplace_back();
            probes.back().member = &m;
        }
    probe_all(probes, f_, [this] { if (!f_.once) leased_.flush(); });
    if (g_stop) return;
    for (auto &[id, m] : members_) {
        const auto *member = &m;  // C++17 lambdas cannot capture a structured binding
        auto p = std::find_if(probes.begin(), probes.end(), [member](const Probe &x) { return x.member == member; });
        if (p == probes.end()) {
            if (f_.once) std::printf("%s unknown (no usable address)\n", printable_id(id).c_str());
            continue;
        }
        if (f_.once) {
            m.up = p->failure.empty();
            std::printf("%s %s%s\n", printable_id(id).c_str(), m.up ? "up" : "down",
                        m.up ? "" : (" (" + visible_bounded(p->failure, 512) + ")").c_str());
            continue;
        }
        if (p->failure.empty()) {
            m.failures = 0;
            if (!m.up && ++m.successes >= f_.rise) {
                m.up = true;
                log(shown_id(id) + " is up (" + std::to_string(m.successes) + " successful probes)");
                m.successes = 0;
            }
        } else {
            m.successes = 0;
            if (m.up && ++m.failures >= f_.fall) {
                m.up = false;
                log(shown_id(id) + " is down (" + std::to_string(m.failures) + " failed probes: " +
                    visible_bounded(p->failure, 512) + ")");
                m.failures = 0;
            }
        }
    }
}

std::string Checker::value() const {
    std::vector<std::string> down;
    for (const auto &[id, m] : members_)
        if (!m.up) down.push_back(m.id_field);
    std::sort(down.begin(), down.end());
    nlohmann::ordered_json j = {{"checker", f_.name}, {"host", host_}, {"pid", pid_}, {"down", down},
                                {"updated", utc_now()}};
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void Checker::report() {
    std::set<std::string> down;
    for (const auto &[id, m] : members_)
        if (!m.up) down.insert(id);
    // Written at start and on a transition (a member gone from the ring
    // while down is one too), never for a keepalive alone.
    if (down != reported_down_ || !started_) {
        leased_.set(value());
        reported_down_ = std::move(down);
        started_ = true;
    }
    leased_.flush();
}

int Checker::run() {
    struct sigaction sa {};
    sa.sa_handler = on_health_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    if (f_.once) {
        if (!list()) throw CliError("health --once: cannot list " + layout_.members_dir());
        round();
        for (const auto &[id, m] : members_)
            if (!m.up) return kExitSomeDown;
        return 0;
    }
    log("checking the members under " + layout_.members_dir() + " every " + seconds_text(f_.interval) +
        " s; reporting at " + leased_.key());
    while (!g_stop) {
        const auto next = Clock::now() + from_seconds(f_.interval);
        list();
        if (g_stop) break;
        round();
        if (g_stop) break;
        report();
        while (!g_stop && Clock::now() < next) {
            leased_.flush();
            std::this_thread::sleep_for(std::min<Clock::duration>(next - Clock::now(), std::chrono::milliseconds(50)));
        }
    }
    leased_.revoke();
    log("stopping on a signal; " + leased_.key() + " revoked");
    return 0;
}

}  // namespace

void add_health_command(CLI::App &app) {
    auto flags = std::make_shared<HealthFlags>();
    CLI::App *cmd = add_etcd_subcommand(
        app, "health",
        "Probe the ring's members and keep the list of those down in etcd, at PREFIX/health/NAME (docs/etcd.md)",
        "chring health --etcd http://127.0.0.1:2379 --prefix /chring/cache --name checker-1 --port 11211",
        flags->etcd);
    cmd->add_option("--name", flags->name, "This checker's name: its key PREFIX/health/NAME, escaped as a ring-file id")
        ->type_name("NAME")
        ->required();
    cmd->add_option("--address-map", flags->address_map,
                    "File of lines '<id field> <host:port>': where to probe those members")
        ->type_name("FILE");
    cmd->add_option("--port", flags->port, "Probe each member at its id as a host, on this port")
        ->type_name("N")
        ->check(CLI::Range(1, 65535));
    cmd->add_option("--http", flags->http, "Probe with an HTTP/1.1 GET of PATH (default: a TCP connect)")
        ->type_name("PATH");
    cmd->add_option("--expect", flags->expect, "With --http: the status that means up")
        ->type_name("STATUS")
        ->check(CLI::Range(100, 599))
        ->capture_default_str();
    cmd->add_option("--interval", flags->interval, "Time between two rounds of probes (each round lists the ring)")
        ->type_name("SECONDS")
        ->check(seconds(0.05, 3600))
        ->capture_default_str();
    cmd->add_option("--probe-timeout", flags->probe_timeout, "How long one probe may take")
        ->type_name("SECONDS")
        ->check(seconds(0.01, 60))
        ->capture_default_str();
    cmd->add_option("--rise", flags->rise, "Consecutive successful probes that bring a down member up")
        ->type_name("N")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    cmd->add_option("--fall", flags->fall, "Consecutive failed probes that take an up member down")
        ->type_name("N")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    cmd->add_option("--report-ttl", flags->ttl,
                    "The TTL of the key's lease: the report of a checker that dies goes within this")
        ->type_name("SECONDS")
        ->check(seconds(2, 3600))
        ->capture_default_str();
    cmd->add_flag("--once", flags->once,
                  "Probe each member once, print the results, write nothing (0: all up, 3: some down)");
    cmd->callback([flags, cmd] {
        if (flags->name.empty()) throw UsageError("--name: the name is empty");
        if (flags->name.size() > CHR_NODE_ID_MAX)
            throw UsageError("--name: " + std::to_string(flags->name.size()) + " bytes, over " +
                             std::to_string(CHR_NODE_ID_MAX));
        if (cmd->count("--expect") && flags->http.empty()) throw UsageError("--expect needs --http");
        if (!flags->http.empty() &&
            (flags->http[0] != '/' || flags->http.find_first_of(" \t\r\n#") != std::string::npos))
            throw UsageError("--http: " + quoted_bounded(flags->http) + " is not a path (/health)");
        Checker c(*flags);
        const int status = c.run();
        if (status != 0) throw ExitStatus(status);
    });
}

}  // namespace chring::cli::etcd
