// A small client of etcd's v3 API through its JSON gateway (POST /v3/...,
// keys and values base64, 64-bit numbers as decimal strings), over libcurl.
// docs/etcd.md says why this route rather than gRPC. Every request has a
// connect timeout and a total timeout; nothing here retries on its own
// except moving on to the next endpoint and sending a request again once
// after renewing a token etcd rejected. TLS and authentication: Access.
#pragma once

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "../ring_handle.hpp"

namespace chring::cli::etcd {

// etcd could not be asked or gave no usable answer: no connection, a
// timeout, a reset, an HTTP answer that is not etcd's JSON.
class TransportError : public CliError {
public:
    explicit TransportError(const std::string &message, bool timed_out = false)
        : CliError(message), timed_out_(timed_out) {}
    // No answer within the timeout: etcd may have the request.
    bool timed_out() const { return timed_out_; }

private:
    bool timed_out_ = false;
};

// etcd answered with an error: its gRPC code and message.
class ServerError : public CliError {
public:
    // `message` is the whole message; `etcd_message` etcd's own words.
    ServerError(int code, const std::string &message, std::string etcd_message = "");
    int code() const { return code_; }
    const std::string &etcd_message() const { return etcd_message_; }
    // gRPC OUT_OF_RANGE: "required revision has been compacted".
    bool compacted() const { return code_ == 11; }
    // gRPC NOT_FOUND: "requested lease not found" (it expired or was revoked).
    bool not_found() const { return code_ == 5; }

private:
    int code_;
    std::string etcd_message_;
};

// Set from a signal handler to make requests in progress give up.
using StopFlag = volatile std::sig_atomic_t;

// The response header every answer carries.
struct Header {
    uint64_t cluster_id = 0;
    uint64_t member_id = 0;
    uint64_t revision = 0;
    uint64_t raft_term = 0;
};
Header parse_header(const nlohmann::json &response);

// An int64/uint64 field of a gateway answer (a decimal string, or absent for 0).
uint64_t json_u64(const nlohmann::json &object, const char *name);

std::string base64_encode(std::string_view bytes);
// Standard base64 with padding; false for anything else.
bool base64_decode(std::string_view text, std::string &out);

// The range_end that makes [key, range_end) every key starting with `key`.
std::string prefix_range_end(const std::string &key);

// "0x" and 16 lowercase hex digits.
std::string hex64(uint64_t value);

struct KeyValue {
    std::string key;
    std::string value;
    uint64_t create_revision = 0;
    uint64_t mod_revision = 0;
    uint64_t lease = 0;  // 0: none
};

struct RangeResult {
    Header header;
    std::vector<KeyValue> kvs;  // in key byte order
    uint64_t count = 0;
};

// "--etcd URL[,URL...]": each an http:// or https:// URL; a UsageError otherwise.
std::vector<std::string> parse_endpoints(const std::string &list);

// How chring proves who it is to etcd and checks that etcd is etcd: the
// TLS files and the user, with etcdctl's flag names (docs/etcd.md, "TLS
// and authentication"). Every name is for messages as much as for use.
struct Access {
    std::string cacert;       // --cacert: the CA bundle etcd's certificate must chain to
    std::string cert, key;    // --cert, --key: the client certificate (mutual TLS)
    bool insecure_skip_tls_verify = false;
    std::string user;         // --user; empty: no authentication
    std::string password;
    std::string password_from;  // "--password-file FILE" or "ETCDCTL_PASSWORD", for messages
    std::string scope;        // what the requests touch ("the keys under P"), for messages
};

// etcd's gRPC codes that the messages tell apart.
constexpr int kGrpcInvalidArgument = 3;
constexpr int kGrpcFailedPrecondition = 9;
constexpr int kGrpcPermissionDenied = 7;
constexpr int kGrpcUnauthenticated = 16;

// What is wrong, named, when etcd's message (an answer's error or a
// watch's cancel_reason) is about authentication or permission; "" when
// it is not. `what` is the request: "read", "write", "watch".
std::string auth_problem(const std::string &etcd_message, const Access &access, const std::string &what);
// A token etcd no longer accepts (it expired): renew it.
bool token_rejected(const std::string &etcd_message);

// Answers larger than this are refused (a ring file is at most 256 MiB; its
// base64 in JSON is about a third larger).
constexpr size_t kAnswerMax = size_t(1) << 30;

class Client {
public:
    // `timeout_seconds` bounds each request (connecting included); `stop`,
    // if given, aborts a request in progress when it becomes non-zero.
    Client(std::vector<std::string> endpoints, double timeout_seconds, Access access,
           const StopFlag *stop = nullptr);
    ~Client();
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    // POSTs `body` to `path` ("/v3/kv/range") at the current endpoint; on a
    // TransportError moves to the next one and tries again, each endpoint
    // once. Throws TransportError (none answered) or ServerError. With a
    // user, the first request authenticates (POST /v3/auth/authenticate)
    // and each one sends the token; a token etcd calls invalid (expired:
    // gRPC code 16) is renewed once and the request sent again. A request
    // with a token that gets no answer in time: the next one authenticates
    // first (etcd holds a request whose simple token names a raft index it
    // has not applied, as one restored from a snapshot does).
    nlohmann::json post(const std::string &path, const nlohmann::json &body);

    // Asks etcd for a new token now (nothing without a user, or when etcd
    // has authentication off). Throws a ServerError naming the user.
    void authenticate();
    // The token to send ("" for none); authenticates first if needed.
    const std::string &token();
    // etcd's `message` (an error, a watch's cancel_reason) asks for a new
    // token: it rejected ours, or wants one where authentication was off
    // when the client authenticated.
    bool should_renew(const std::string &message) const;
    // Called with a line to log when a token is renewed.
    void on_renew(std::function<void(const std::string &)> note) { note_ = std::move(note); }
    const Access &access() const { return access_; }

    // A linearizable range [key, range_end) at the current revision.
    RangeResult range(const std::string &key, const std::string &range_end, bool count_only = false);

    // The endpoint the next request goes to (the last that answered).
    const std::string &endpoint() const { return endpoints_[current_]; }
    double timeout() const { return timeout_; }

private:
    nlohmann::json post_once(const std::string &url, const std::string &body, bool with_token);
    nlohmann::json post_any(const std::string &path, const std::string &text, bool with_token);

    std::vector<std::string> endpoints_;
    Access access_;
    std::string token_;
    bool authenticated_ = false;
    std::function<void(const std::string &)> note_;
    size_t current_ = 0;
    double timeout_;
    const StopFlag *stop_;
    void *curl_;  // CURL *, reused so connections are kept alive
};

// A watch stream (POST /v3/watch): the gateway answers with one JSON
// object per line, {"result": WatchResponse} or {"error": ...}, for as long
// as the connection lives. Lines are handed out by pump(), never from
// inside libcurl, so the caller may throw from its handling.
class WatchStream {
public:
    // `token`: the Authorization header ("" for none).
    WatchStream(const std::string &endpoint, const nlohmann::json &create_request,
                double connect_timeout_seconds, const Access &access, const std::string &token);
    ~WatchStream();
    WatchStream(const WatchStream &) = delete;
    WatchStream &operator=(const WatchStream &) = delete;

    // Moves data for at most `wait_ms` milliseconds and appends each
    // complete line received to `lines` (also those received just before
    // the end). Returns false once the stream has ended; error() says why.
    bool pump(int wait_ms, std::vector<std::string> &lines);
    const std::string &error() const { return error_; }

    // A line longer than this ends the stream (one watch response is far
    // smaller: etcd bounds a request to 1.5 MiB by default).
    static constexpr size_t kLineMax = size_t(256) << 20;

private:
    static size_t on_data(char *data, size_t size, size_t n, void *self);

    void *multi_ = nullptr;  // CURLM *
    void *easy_ = nullptr;   // CURL *
    void *headers_ = nullptr;  // curl_slist *
    std::string url_;
    std::string body_;
    Access access_;
    char curl_error_[256] = "";  // CURL_ERROR_SIZE
    std::string partial_;
    std::vector<std::string> ready_;
    std::string error_;
    bool running_ = true;
    bool too_long_ = false;
};

}  // namespace chring::cli::etcd
