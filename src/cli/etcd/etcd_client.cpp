#include "etcd_client.hpp"

#include <curl/curl.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "../options.hpp"
#include "../spelling.hpp"

namespace chring::cli::etcd {

namespace {

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw CliError("cannot initialise libcurl");
    });
}

long millis(double seconds) { return long(seconds * 1000.0 + 0.5); }

struct Answer {
    std::string data;
    bool overflow = false;
};

size_t collect(char *data, size_t size, size_t n, void *user) {
    Answer &a = *static_cast<Answer *>(user);
    size_t bytes = size * n;
    if (a.data.size() + bytes > kAnswerMax) {
        a.overflow = true;
        return 0;  // CURLE_WRITE_ERROR
    }
    a.data.append(data, bytes);
    return bytes;
}

int check_stop(void *user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const StopFlag *stop = static_cast<const StopFlag *>(user);
    return stop && *stop ? 1 : 0;
}

// The start of an answer that is not etcd's JSON, for the message.
std::string excerpt(const std::string &text) {
    std::string head = text.substr(0, 120);
    return "'" + visible(head) + (text.size() > head.size() ? "...'" : "'");
}

bool has(const std::string &text, const char *part) { return text.find(part) != std::string::npos; }

// The TLS side of `a` on `c` (libcurl copies the strings). Without
// --cacert the CAs are those of SSL_CERT_FILE / SSL_CERT_DIR when set (as
// for etcdctl, whose Go runtime reads them), else libcurl's bundle.
void apply_tls(CURL *c, const Access &a) {
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, long(CURL_HTTP_VERSION_1_1));
    if (!a.cacert.empty()) {
        curl_easy_setopt(c, CURLOPT_CAINFO, a.cacert.c_str());
    } else {
        if (const char *file = std::getenv("SSL_CERT_FILE"); file && *file) curl_easy_setopt(c, CURLOPT_CAINFO, file);
        if (const char *dir = std::getenv("SSL_CERT_DIR"); dir && *dir) curl_easy_setopt(c, CURLOPT_CAPATH, dir);
    }
    if (!a.cert.empty()) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, a.cert.c_str());
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!a.key.empty()) {
        curl_easy_setopt(c, CURLOPT_SSLKEY, a.key.c_str());
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (a.insecure_skip_tls_verify) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

std::string ca_name(const Access &a) {
    if (!a.cacert.empty()) return "--cacert " + a.cacert;
    if (const char *file = std::getenv("SSL_CERT_FILE"); file && *file) return "SSL_CERT_FILE " + std::string(file);
    return "the system's CA certificates";
}

// The transfer on `c` opened a connection, finished the TLS handshake and
// then saw it end before any answer: under TLS 1.3 a server that refuses
// the client's certificate does so after the client's side of the
// handshake, and its alert may be lost in a reset ("getpeername() failed",
// "Connection reset by peer").
bool closed_after_handshake(CURL *c) {
    long connects = 0, header_bytes = 0;
    curl_off_t tls_done = 0;
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
    curl_easy_getinfo(c, CURLINFO_HEADER_SIZE, &header_bytes);
    curl_easy_getinfo(c, CURLINFO_APPCONNECT_TIME_T, &tls_done);
    return connects > 0 && header_bytes == 0 && tls_done > 0;
}

// A failed transfer to `url`, said so that the file or flag at fault is
// named: curl's words (`detail`) and what they mean here. `closed` is
// closed_after_handshake().
std::string transport_problem(CURLcode rc, const std::string &detail, const std::string &url, const Access &a,
                              bool closed) {
    const std::string head = url + ": " + detail;
    const bool tls = url.rfind("https://", 0) == 0;
    switch (rc) {
    case CURLE_SSL_CACERT_BADFILE:
        return head + " (cannot load " + ca_name(a) + ": is it a PEM file of CA certificates?)";
    case CURLE_PEER_FAILED_VERIFICATION:
        if (has(detail, "subject name") || has(detail, "host name"))
            return head + " (etcd's certificate is not for this host: use a name or address its certificate "
                          "lists in --etcd)";
        return head + " (etcd's certificate is not signed by " + ca_name(a) +
               (a.cacert.empty() ? ": give the CA that signed it with --cacert FILE)"
                                 : ": is that the CA of etcd's certificate?)");
    case CURLE_SSL_CERTPROBLEM:
        if (has(detail, "private key") || has(detail, "key file"))
            return head + " (cannot use --key " + a.key + " with --cert " + a.cert +
                   ": it is not that certificate's key, or it is encrypted; chring reads unencrypted PEM keys)";
        return head + " (cannot use the client certificate --cert " + a.cert + ": is it a PEM certificate?)";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        if (!tls) break;
        if (has(detail, "wrong version number") || has(detail, "packet length too long") ||
            has(detail, "record layer failure"))
            return head + " (etcd there does not speak TLS: use an http:// URL, or start etcd with --cert-file "
                          "and --key-file)";
        // A plain-HTTP etcd answers the TLS hello by closing the connection:
        // seen as SSL_ERROR_SYSCALL, or as a reset, depending on timing.
        if (!closed && (has(detail, "SSL_ERROR_SYSCALL") || has(detail, "Connection reset by peer")))
            return head + " (the connection closed during the TLS handshake: if etcd there serves plain HTTP, use "
                          "an http:// URL)";
        if (a.cert.empty() && (has(detail, "certificate required") || has(detail, "bad certificate") ||
                               has(detail, "handshake failure")))
            return head + " (etcd asks for a client certificate, it runs with --client-cert-auth: give --cert "
                          "FILE and --key FILE)";
        if (!a.cert.empty() && (has(detail, "unknown ca") || has(detail, "bad certificate") ||
                                has(detail, "certificate expired") || has(detail, "unsupported certificate") ||
                                has(detail, "certificate revoked") || has(detail, "certificate required")))
            return head + " (etcd refused the client certificate --cert " + a.cert +
                   ": is it signed by a CA in etcd's --trusted-ca-file, valid now, and for client "
                   "authentication?)";
        if (closed && rc != CURLE_SSL_CONNECT_ERROR)
            return head + " (etcd closed the connection after the TLS handshake, without an answer: " +
                   (a.cert.empty() ? std::string("it asks for a client certificate? give --cert FILE and --key FILE")
                                   : "it refused the client certificate --cert " + a.cert +
                                         "? is it signed by a CA in etcd's --trusted-ca-file, valid now, and "
                                         "for client authentication?") +
                   ")";
        break;
    case CURLE_GOT_NOTHING:
        if (!tls) return head + " (if etcd serves TLS, the URL must be https://)";
        break;
    default:
        break;
    }
    return head;
}

// Sets `c` up to POST the JSON `body` (not copied: it must outlive the
// transfer) to `url`, connecting within `connect_seconds`, with TCP
// keepalive, TLS as `access` says and `token` (if any) in the
// Authorization header. Returns the header list, which the caller frees
// after it.
curl_slist *json_post(CURL *c, const std::string &url, const std::string &body, double connect_seconds,
                      const Access &access, const std::string &token) {
    curl_slist *headers = curl_slist_append(nullptr, "Content-Type: application/json");
    if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: " + token).c_str());
    apply_tls(c, access);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, millis(connect_seconds));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    return headers;
}

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

}  // namespace

ServerError::ServerError(int code, const std::string &message, std::string etcd_message)
    : CliError(message + " (gRPC code " + std::to_string(code) + ")"), code_(code),
      etcd_message_(std::move(etcd_message)) {}

bool token_rejected(const std::string &m) {
    return has(m, "invalid auth token") || has(m, "revision of auth store is old");
}

std::string auth_problem(const std::string &m, const Access &a, const std::string &what) {
    const std::string password = "its password (--password-file FILE or ETCDCTL_PASSWORD)";
    if (has(m, "user name is empty") || (a.user.empty() && has(m, "invalid auth token")))
        return "etcd has authentication enabled: give --user NAME and " + password;
    if (has(m, "authentication failed"))
        return "etcd refused user '" + a.user + "' with the password from " + a.password_from +
               ": wrong password, or no such user";
    if (token_rejected(m))
        return "etcd no longer accepts the token of user '" + a.user + "' (it expired)";
    if (has(m, "permission denied")) {
        const std::string role = what == "write" ? "readwrite" : "read";
        return (a.user.empty() ? std::string("this client") : "user '" + a.user + "'") + " may not " + what + " " +
               (a.scope.empty() ? "these keys" : a.scope) + ": its roles need " + role +
               " permission on them (etcdctl role grant-permission ROLE " + role + " PREFIX/ --prefix=true; "
               "docs/etcd.md)";
    }
    return "";
}

uint64_t json_u64(const nlohmann::json &object, const char *name) {
    if (!object.is_object()) return 0;
    auto it = object.find(name);
    if (it == object.end() || it->is_null()) return 0;
    if (it->is_number_unsigned()) return it->get<uint64_t>();
    if (it->is_number_integer()) return uint64_t(it->get<int64_t>());
    if (it->is_string()) {
        const std::string &s = it->get_ref<const std::string &>();
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
            throw TransportError(std::string("etcd sent '") + visible(s) + "' for " + name + ", not a number");
        return std::stoull(s);
    }
    throw TransportError(std::string("etcd sent a ") + it->type_name() + " for " + name + ", not a number");
}

Header parse_header(const nlohmann::json &response) {
    Header h;
    if (!response.is_object()) return h;
    auto it = response.find("header");
    if (it == response.end()) return h;
    h.cluster_id = json_u64(*it, "cluster_id");
    h.member_id = json_u64(*it, "member_id");
    h.revision = json_u64(*it, "revision");
    h.raft_term = json_u64(*it, "raft_term");
    return h;
}

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (size_t rest = bytes.size() - i) {
        uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
        if (rest == 2) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

bool base64_decode(std::string_view text, std::string &out) {
    out.clear();
    if (text.size() % 4) return false;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        int v[4];
        size_t pad = 0;
        for (size_t k = 0; k < 4; ++k) {
            unsigned char c = uint8_t(text[i + k]);
            if (c == '=' && i + 4 == text.size() && k >= 2) {
                v[k] = 0;
                ++pad;
                continue;
            }
            if (pad) return false;  // data after '='
            v[k] = base64_value(c);
            if (v[k] < 0) return false;
        }
        uint32_t word = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | uint32_t(v[3]);
        out += char(word >> 16);
        if (pad < 2) out += char((word >> 8) & 0xFF);
        if (pad < 1) out += char(word & 0xFF);
    }
    return true;
}

std::string prefix_range_end(const std::string &key) {
    std::string end = key;
    while (!end.empty()) {
        if (uint8_t(end.back()) < 0xFF) {
            end.back() = char(uint8_t(end.back()) + 1);
            return end;
        }
        end.pop_back();
    }
    return std::string(1, '\0');  // every key: etcd's "\0" range end
}

std::string hex64(uint64_t value) {
    char buf[19];
    std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(value));
    return buf;
}

std::vector<std::string> parse_endpoints(const std::string &list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        std::string url = list.substr(start, comma - start);
        while (!url.empty() && url.back() == '/') url.pop_back();
        if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
            throw UsageError("--etcd: '" + url + "' is not an http:// or https:// URL (etcd's client URL, e.g. http://127.0.0.1:2379)");
        const size_t host = url.find("://") + 3;
        const size_t at = url.find('@', host);
        if (at != std::string::npos && at < url.find('/', host))
            throw UsageError("--etcd: a URL holds no user or password (etcd would take them for a token): "
                             "give --user NAME, and the password in --password-file FILE or ETCDCTL_PASSWORD");
        if (url.find_first_of(" \t\r\n") != std::string::npos)
            throw UsageError("--etcd: '" + url + "' contains a blank");
        out.push_back(url);
        start = comma + 1;
    }
    return out;
}

Client::Client(std::vector<std::string> endpoints, double timeout_seconds, Access access, const StopFlag *stop)
    : endpoints_(std::move(endpoints)), access_(std::move(access)), timeout_(timeout_seconds), stop_(stop) {
    if (endpoints_.empty()) throw UsageError("no etcd endpoint (--etcd URL)");
    global_init();
    curl_ = curl_easy_init();
    if (!curl_) throw CliError("cannot create a libcurl handle");
}

Client::~Client() { curl_easy_cleanup(static_cast<CURL *>(curl_)); }

nlohmann::json Client::post_once(const std::string &url, const std::string &body, bool with_token) {
    CURL *c = static_cast<CURL *>(curl_);
    curl_easy_reset(c);  // keeps the connection cache
    Answer answer;
    char error[CURL_ERROR_SIZE] = "";
    curl_slist *headers = json_post(c, url, body, timeout_, access_, with_token ? token_ : std::string());
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, millis(timeout_));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, check_stop);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<StopFlag *>(stop_));
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
    if (answer.overflow) throw TransportError(url + ": the answer is over " + std::to_string(kAnswerMax >> 20) + " MiB");
    if (rc != CURLE_OK) {
        if (rc == CURLE_ABORTED_BY_CALLBACK) throw TransportError(url + ": interrupted");
        throw TransportError(transport_problem(rc, error[0] ? error : curl_easy_strerror(rc), url, access_,
                                               closed_after_handshake(c)),
                             rc == CURLE_OPERATION_TIMEDOUT);
    }
    nlohmann::json j = nlohmann::json::parse(answer.data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        if (has(answer.data, "CommonName of client"))  // etcd's gateway under --client-cert-auth
            throw TransportError(url + ": HTTP " + std::to_string(status) + ": " + excerpt(answer.data) +
                                 " (etcd's JSON gateway refuses a client certificate with a Common Name: give "
                                 "chring one whose subject has no CN, --cert " + access_.cert +
                                 "; the user is --user)");
        if (has(answer.data, "HTTP request to an HTTPS server"))
            throw TransportError(url + ": etcd there serves TLS: use an https:// URL");
        throw TransportError(url + ": HTTP " + std::to_string(status) + " without etcd's JSON answer: " + excerpt(answer.data));
    }
    auto err = j.find("error");
    if (err != j.end()) {
        // The unary shape {"error": "...", "message": "...", "code": N}, or a
        // stream's (lease keepalive) {"error": {"grpc_code": N, "message": ...}}.
        std::string message = j.value("message", std::string());
        if (message.empty() && err->is_string()) message = err->get<std::string>();
        int code = j.value("code", 0);
        if (err->is_object()) {
            message = err->value("message", std::string());
            code = err->value("grpc_code", 0);
        }
        const std::string path = url.substr(url.rfind("/v3/"));
        const char *what = path == "/v3/auth/authenticate" ? "authenticate"
                           : path == "/v3/kv/range"         ? "read"
                                                            : "write";
        std::string problem = auth_problem(message, access_, what);
        throw ServerError(code, "etcd at " + url + ": " + message + (problem.empty() ? "" : ": " + problem), message);
    }
    if (status != 200) throw TransportError(url + ": HTTP " + std::to_string(status) + ": " + excerpt(answer.data));
    return j;
}

nlohmann::json Client::post(const std::string &path, const nlohmann::json &body) {
    const std::string text = body.dump();
    if (access_.user.empty()) return post_any(path, text, false);
    if (!authenticated_) authenticate();
    try {
        return post_any(path, text, true);
    } catch (const TransportError &e) {
        // A simple token is "<random>.<raft index it was issued at>", and
        // etcd holds a request until its applied index reaches the token's:
        // an etcd restored from a snapshot, whose index went back, holds
        // every request with a token from before the restore, without an
        // answer (not even "invalid auth token"), until the index gets there
        // or the client gives up. So no answer in time: the next request
        // authenticates first (a raft entry itself, and a token of the etcd
        // that is there now).
        if (!e.timed_out()) throw;
        authenticated_ = false;
        token_.clear();
        if (note_) note_("etcd did not answer a request with the token of user '" + access_.user +
                         "' in time: authenticating again before the next request");
        throw;
    } catch (const ServerError &e) {
        if (!should_renew(e.etcd_message())) throw;
        const std::string why = e.etcd_message();
        authenticate();
        if (note_) note_("etcd no longer accepts the token of user '" + access_.user + "' (" + why +
                         "): authenticated again");
        return post_any(path, text, true);  // the rejected request changed nothing
    }
}

bool Client::should_renew(const std::string &message) const {
    if (access_.user.empty()) return false;
    return token_rejected(message) || (token_.empty() && has(message, "user name is empty"));
}

void Client::authenticate() {
    authenticated_ = false;
    token_.clear();
    if (access_.user.empty()) {
        authenticated_ = true;
        return;
    }
    const std::string text =
        nlohmann::json{{"name", access_.user}, {"password", access_.password}}.dump();
    nlohmann::json answer;
    try {
        answer = post_any("/v3/auth/authenticate", text, false);
    } catch (const ServerError &e) {
        if (e.code() == kGrpcFailedPrecondition && has(e.etcd_message(), "authentication is not enabled")) {
            authenticated_ = true;  // as etcdctl: no token, the requests go without one
            return;
        }
        throw;
    }
    auto token = answer.find("token");
    if (token == answer.end() || !token->is_string() || token->get_ref<const std::string &>().empty())
        throw TransportError(endpoint() + ": etcd's answer to authenticate has no token");
    token_ = token->get<std::string>();
    authenticated_ = true;
}

const std::string &Client::token() {
    if (!authenticated_) authenticate();
    return token_;
}

nlohmann::json Client::post_any(const std::string &path, const std::string &text, bool with_token) {
    std::string failures;
    for (size_t tried = 0; tried < endpoints_.size(); ++tried) {
        try {
            return post_once(endpoint() + path, text, with_token);
        } catch (const TransportError &e) {
            if (endpoints_.size() == 1 || (stop_ && *stop_)) throw;
            failures += (failures.empty() ? "" : "; ") + std::string(e.what());
            current_ = (current_ + 1) % endpoints_.size();
        }
    }
    throw TransportError("no etcd endpoint answered: " + failures);
}

RangeResult Client::range(const std::string &key, const std::string &range_end, bool count_only) {
    nlohmann::json body = {{"key", base64_encode(key)}, {"range_end", base64_encode(range_end)}};
    if (count_only) body["count_only"] = true;
    nlohmann::json answer = post("/v3/kv/range", body);
    RangeResult r;
    r.header = parse_header(answer);
    r.count = json_u64(answer, "count");
    auto kvs = answer.find("kvs");
    if (kvs != answer.end() && kvs->is_array()) {
        r.kvs.reserve(kvs->size());
        for (const nlohmann::json &kv : *kvs) {
            KeyValue out;
            if (!base64_decode(kv.value("key", std::string()), out.key) ||
                !base64_decode(kv.value("value", std::string()), out.value))
                throw TransportError(endpoint() + ": a key or value in the range answer is not base64");
            out.create_revision = json_u64(kv, "create_revision");
            out.mod_revision = json_u64(kv, "mod_revision");
            out.lease = json_u64(kv, "lease");
            r.kvs.push_back(std::move(out));
        }
    }
    return r;
}

WatchStream::WatchStream(const std::string &endpoint, const nlohmann::json &create_request,
                         double connect_timeout_seconds, const Access &access, const std::string &token)
    : access_(access) {
    global_init();
    body_ = nlohmann::json{{"create_request", create_request}}.dump();
    CURL *easy = curl_easy_init();
    CURLM *multi = curl_multi_init();
    easy_ = easy;
    multi_ = multi;
    if (!easy || !multi) throw CliError("cannot create a libcurl handle");
    url_ = endpoint + "/v3/watch";
    headers_ = json_post(easy, url_, body_, connect_timeout_seconds, access_, token);
    // The kernel's keepalive finds a peer that vanished; the watcher's own
    // probes (cmd_watch.cpp) find an etcd that stopped answering.
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 10L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 5L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, curl_error_);
    curl_multi_add_handle(multi, easy);
}

WatchStream::~WatchStream() {
    CURLM *multi = static_cast<CURLM *>(multi_);
    CURL *easy = static_cast<CURL *>(easy_);
    if (multi && easy) curl_multi_remove_handle(multi, easy);
    curl_easy_cleanup(easy);
    curl_multi_cleanup(multi);
    curl_slist_free_all(static_cast<curl_slist *>(headers_));
}

size_t WatchStream::on_data(char *data, size_t size, size_t n, void *user) {
    WatchStream &w = *static_cast<WatchStream *>(user);
    size_t bytes = size * n;
    size_t start = 0;
    for (size_t i = 0; i < bytes; ++i) {
        if (data[i] != '\n') continue;
        w.partial_.append(data + start, i - start);
        w.ready_.push_back(std::move(w.partial_));
        w.partial_.clear();
        start = i + 1;
    }
    w.partial_.append(data + start, bytes - start);
    if (w.partial_.size() > kLineMax) {
        w.too_long_ = true;
        return 0;
    }
    return bytes;
}

bool WatchStream::pump(int wait_ms, std::vector<std::string> &lines) {
    CURLM *multi = static_cast<CURLM *>(multi_);
    if (running_) {
        int still = 0;
        curl_multi_perform(multi, &still);
        if (still) {
            curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
            curl_multi_perform(multi, &still);
        }
        if (!still) {
            running_ = false;
            int queued = 0;
            CURLcode result = CURLE_OK;
            while (CURLMsg *msg = curl_multi_info_read(multi, &queued))
                if (msg->msg == CURLMSG_DONE) result = msg->data.result;
            long status = 0;
            curl_easy_getinfo(static_cast<CURL *>(easy_), CURLINFO_RESPONSE_CODE, &status);
            if (too_long_)
                error_ = "a watch response over " + std::to_string(kLineMax >> 20) + " MiB";
            else if (result != CURLE_OK)
                error_ = transport_problem(result, curl_error_[0] ? curl_error_ : curl_easy_strerror(result), url_,
                                           access_, closed_after_handshake(static_cast<CURL *>(easy_)));
            else if (status != 200)
                error_ = url_ + ": HTTP " + std::to_string(status);
            else
                error_ = url_ + ": etcd closed the watch stream";
            if (!partial_.empty()) ready_.push_back(std::move(partial_));
            partial_.clear();
        }
    }
    for (std::string &line : ready_) lines.push_back(std::move(line));
    ready_.clear();
    return running_;
}

}  // namespace chring::cli::etcd
