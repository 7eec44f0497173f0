// A small client of etcd's v3 API through its JSON gateway (POST /v3/...,
// keys and values base64, 64-bit numbers as decimal strings), over libcurl.
// docs/etcd.md says why this route rather than gRPC. Every request has a
// connect timeout and a total timeout; nothing here retries on its own
// except moving on to the next endpoint.
#pragma once

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../ring_handle.hpp"

namespace chring::cli::etcd {

// etcd could not be asked or gave no usable answer: no connection, a
// timeout, a reset, an HTTP answer that is not etcd's JSON.
class TransportError : public CliError {
public:
    using CliError::CliError;
};

// etcd answered with an error: its gRPC code and message.
class ServerError : public CliError {
public:
    ServerError(int code, const std::string &message);
    int code() const { return code_; }
    // gRPC OUT_OF_RANGE: "required revision has been compacted".
    bool compacted() const { return code_ == 11; }

private:
    int code_;
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
};

struct RangeResult {
    Header header;
    std::vector<KeyValue> kvs;  // in key byte order
    uint64_t count = 0;
};

// "--etcd URL[,URL...]": each an http:// or https:// URL; a UsageError otherwise.
std::vector<std::string> parse_endpoints(const std::string &list);

// Answers larger than this are refused (a ring file is at most 256 MiB; its
// base64 in JSON is about a third larger).
constexpr size_t kAnswerMax = size_t(1) << 30;

class Client {
public:
    // `timeout_seconds` bounds each request (connecting included); `stop`,
    // if given, aborts a request in progress when it becomes non-zero.
    Client(std::vector<std::string> endpoints, double timeout_seconds, const StopFlag *stop = nullptr);
    ~Client();
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    // POSTs `body` to `path` ("/v3/kv/range") at the current endpoint; on a
    // TransportError moves to the next one and tries again, each endpoint
    // once. Throws TransportError (none answered) or ServerError.
    nlohmann::json post(const std::string &path, const nlohmann::json &body);

    // A linearizable range [key, range_end) at the current revision.
    RangeResult range(const std::string &key, const std::string &range_end, bool count_only = false);

    // The endpoint the next request goes to (the last that answered).
    const std::string &endpoint() const { return endpoints_[current_]; }
    double timeout() const { return timeout_; }

private:
    nlohmann::json post_once(const std::string &url, const std::string &body);

    std::vector<std::string> endpoints_;
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
    WatchStream(const std::string &endpoint, const nlohmann::json &create_request,
                double connect_timeout_seconds);
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
    char curl_error_[256] = "";  // CURL_ERROR_SIZE
    std::string partial_;
    std::vector<std::string> ready_;
    std::string error_;
    bool running_ = true;
    bool too_long_ = false;
};

}  // namespace chring::cli::etcd
