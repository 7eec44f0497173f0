#include "leased_key.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <limits.h>
#include <unistd.h>

#include "../spelling.hpp"

namespace chring::cli::etcd {

namespace {

std::chrono::steady_clock::duration from_seconds(double s) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

std::string dump(const nlohmann::json &j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

// Now, RFC 3339 in UTC with milliseconds: "2026-12-07T18:51:52.123Z".
std::string utc_now() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, int(ms));
    return buf;
}

std::string hostname() {
    char buf[HOST_NAME_MAX + 1] = "";
    if (gethostname(buf, sizeof buf) != 0) return "localhost";
    buf[sizeof buf - 1] = '\0';
    return buf;
}

LeasedKey::LeasedKey(Client &client, std::string key, double ttl, Names names, std::string host, int64_t pid,
                     Log log)
    : client_(client), key_(std::move(key)), ttl_(ttl), names_(std::move(names)), host_(std::move(host)),
      pid_(pid), log_(std::move(log)) {}

void LeasedKey::set(std::string value) {
    value_ = std::move(value);
    has_value_ = true;
    dirty_ = true;
}

void LeasedKey::failed(const std::string &what, const CliError &e) {
    // One line per cause: the kind of failure, not its words (a timeout's
    // message holds the milliseconds it waited).
    const auto *server = dynamic_cast<const ServerError *>(&e);
    const std::string cause = what + (server ? " etcd " + std::to_string(server->code()) : " transport");
    if (cause != logged_cause_) {
        log_("cannot " + what + " " + names_.what + " " + key_ + ": " + e.what() + "; " + names_.meanwhile +
             ", and trying again");
        logged_cause_ = cause;
    }
    ++failures_;
    next_try_ = Clock::now() + from_seconds(std::min(2.0, 0.1 * std::ldexp(1.0, int(std::min(failures_, 8u)))));
}

void LeasedKey::succeeded() {
    if (!logged_cause_.empty()) log_("reporting again at " + key_);
    logged_cause_.clear();
    failures_ = 0;
}

void LeasedKey::grant() {
    nlohmann::json answer = client_.post("/v3/lease/grant", {{"TTL", int64_t(std::lround(ttl_))}});
    const uint64_t id = json_u64(answer, "ID");
    const uint64_t ttl = json_u64(answer, "TTL");
    if (id == 0 || ttl == 0) throw TransportError(client_.endpoint() + ": etcd granted no lease: " + dump(answer));
    lease_ = id;
    keepalive_every_ = std::max(0.5, double(ttl) / 3.0);
    next_keepalive_ = Clock::now() + from_seconds(keepalive_every_);
}

void LeasedKey::put() {
    nlohmann::json body = {{"key", base64_encode(key_)},
                           {"value", base64_encode(value_)},
                           {"lease", std::to_string(lease_)},
                           {"prev_kv", true}};
    nlohmann::json answer = client_.post("/v3/kv/put", body);
    // Another process writing under the same key: each overwrites the
    // other's value. Said once. Before our first put the key may hold a
    // predecessor's value (a process restarted under its name): that one
    // is no other process.
    const bool first = !wrote_;
    wrote_ = true;
    auto prev = answer.find("prev_kv");
    if (first || warned_duplicate_ || prev == answer.end() || !prev->is_object()) return;
    if (json_u64(*prev, "lease") == lease_) return;
    std::string text;
    if (!base64_decode(prev->value("value", std::string()), text)) return;
    nlohmann::json other = nlohmann::json::parse(text, nullptr, false);
    if (!other.is_object()) return;
    const std::string host = other.value("host", std::string());
    const int64_t pid = other.value("pid", int64_t(0));
    if (host == host_ && pid == pid_) return;
    log_("another process reported as " + names_.name + " (host " + visible(host) +
         ", pid " + std::to_string(pid) + "): " + names_.hint);
    warned_duplicate_ = true;
}

void LeasedKey::write() {
    try {
        if (lease_ == 0) grant();
        try {
            put();
        } catch (const ServerError &e) {
            if (!e.not_found()) throw;
            lease_ = 0;  // it expired (etcd away longer than the TTL): a new one
            grant();
            put();
        }
        dirty_ = false;
        succeeded();
    } catch (const CliError &e) {
        failed("write", e);
    }
}

void LeasedKey::expired() {
    // etcd no longer knows the lease: the key is gone with it.
    log_("the lease of " + names_.what + " " + key_ + " expired: writing " + names_.what + " again under a new one");
    lease_ = 0;
    dirty_ = true;
    write();
}

void LeasedKey::keepalive() {
    try {
        nlohmann::json answer = client_.post("/v3/lease/keepalive", {{"ID", std::to_string(lease_)}});
        auto result = answer.find("result");
        const uint64_t ttl = result != answer.end() ? json_u64(*result, "TTL") : 0;
        if (ttl == 0) {
            expired();
            return;
        }
        next_keepalive_ = Clock::now() + from_seconds(keepalive_every_);
        succeeded();
    } catch (const ServerError &e) {
        if (!e.not_found()) {
            failed("keep alive", e);
            return;
        }
        expired();
    } catch (const CliError &e) {
        failed("keep alive", e);
    }
}

void LeasedKey::flush() {
    if (!has_value_) return;
    const auto now = Clock::now();
    if (failures_ && now < next_try_) return;
    if (dirty_)
        write();
    else if (lease_ && now >= next_keepalive_)
        keepalive();
}

void LeasedKey::retry_now() {
    if (failures_) next_try_ = Clock::now();
    flush();
}

void LeasedKey::revoke() {
    if (lease_ == 0) return;
    try {
        client_.post("/v3/lease/revoke", {{"ID", std::to_string(lease_)}});
    } catch (const ServerError &e) {
        if (!e.not_found()) log_("cannot revoke the lease of " + names_.what + " " + key_ + ": " + e.what());
    } catch (const CliError &e) {
        log_("cannot revoke the lease of " + names_.what + " " + key_ + " (it expires by itself): " + e.what());
    }
    lease_ = 0;
}

}  // namespace chring::cli::etcd
