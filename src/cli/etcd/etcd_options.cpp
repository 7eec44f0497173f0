// The options chring watch and chring etcd share: where the ring is in
// etcd, the request timeout, the plugin directory, TLS and authentication
// (etcdctl's flags; the password from a file or ETCDCTL_PASSWORD only).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../options.hpp"
#include "etcd_commands.hpp"

namespace chring::cli::etcd {

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, s < 10 ? "%.2f" : "%.0f", s);
    return buf;
}

CLI::Validator seconds(double min, double max) {
    const std::string range = seconds_text(min) + ".." + seconds_text(max);
    return CLI::Validator(
        [=](std::string &text) -> std::string {
            size_t dot = text.find('.');
            std::string whole = text.substr(0, dot), frac = dot == std::string::npos ? "" : text.substr(dot + 1);
            auto digits = [](const std::string &s) { return s.find_first_not_of("0123456789") == std::string::npos; };
            if (whole.empty() || !digits(whole) || whole.size() > 9 || (dot != std::string::npos && (frac.empty() || !digits(frac))))
                return "'" + text + "' is not a number of seconds (" + range + ", e.g. 2 or 0.5)";
            double v = std::strtod(text.c_str(), nullptr);
            if (v < min || v > max) return "'" + text + "' is out of range (" + range + " seconds)";
            return std::string();
        },
        "", "SECONDS");
}

void add_etcd_flags(CLI::App &cmd, EtcdFlags &flags) {
    cmd.add_option("--etcd", flags.endpoints, "etcd client URL(s), comma-separated (http://127.0.0.1:2379)")
        ->type_name("URL[,URL...]")
        ->required();
    cmd.add_option("--prefix", flags.prefix, "Key prefix of the ring: PREFIX/members/ID, PREFIX/options")
        ->type_name("PREFIX")
        ->required();
    cmd.add_option("--timeout", flags.timeout, "Bound on each request to etcd, connecting included")
        ->type_name("SECONDS")
        ->check(seconds(0.01, 3600))
        ->capture_default_str();
    add_plugin_dir_option(cmd, flags.plugin_dir);
    cmd.add_option("--cacert", flags.cacert, "Verify etcd's certificate with this CA bundle (PEM), as etcdctl --cacert")
        ->type_name("FILE");
    cmd.add_option("--cert", flags.cert, "Client certificate for mutual TLS (PEM, with --key), as etcdctl --cert")
        ->type_name("FILE");
    cmd.add_option("--key", flags.key, "The client certificate's key (PEM, unencrypted), as etcdctl --key")
        ->type_name("FILE");
    cmd.add_flag("--insecure-skip-tls-verify", flags.insecure_skip_tls_verify,
                 "Do not verify etcd's certificate (for testing only, as etcdctl's)");
    cmd.add_option("--user", flags.user,
                   "etcd user to authenticate as; its password from --password-file or ETCDCTL_PASSWORD, never "
                   "NAME:PASSWORD")
        ->type_name("NAME");
    cmd.add_option("--password-file", flags.password_file, "File holding --user's password (its first line)")
        ->type_name("FILE");
}

namespace {

// The bytes of `file` (at most 64 KiB), or a CliError naming `flag`.
std::string read_small(const std::string &flag, const std::string &file) {
    std::FILE *f = std::fopen(file.c_str(), "rb");
    if (!f) throw CliError(flag + " " + file + ": cannot read it: " + std::strerror(errno));
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= 65536) text.append(buf, n);
    const bool failed = std::ferror(f);
    const int err = errno;
    std::fclose(f);
    if (failed) throw CliError(flag + " " + file + ": cannot read it: " + std::strerror(err));
    if (text.size() > 65536) throw CliError(flag + " " + file + ": over 64 KiB, not a " + (flag == "--password-file" ? "password" : "PEM file"));
    return text;
}

}  // namespace

Access access_from(const EtcdFlags &f, const std::string &scope) {
    Access a;
    a.scope = scope;
    a.cacert = f.cacert;
    a.cert = f.cert;
    a.key = f.key;
    a.insecure_skip_tls_verify = f.insecure_skip_tls_verify;
    if (f.cert.empty() != f.key.empty())
        throw UsageError(f.cert.empty() ? "--key needs --cert: the client certificate whose key it is"
                                        : "--cert needs --key: the certificate's private key");
    if (!f.cacert.empty() || !f.cert.empty() || f.insecure_skip_tls_verify) {
        for (const std::string &url : parse_endpoints(f.endpoints))
            if (url.rfind("https://", 0) != 0)
                throw UsageError("--etcd: '" + url + "' is not https://, but TLS flags are given (--cacert, --cert, "
                                 "--key, --insecure-skip-tls-verify)");
    }
    if (!f.cacert.empty()) read_small("--cacert", f.cacert);
    if (!f.cert.empty()) read_small("--cert", f.cert);
    if (!f.key.empty()) read_small("--key", f.key);

    if (f.user.empty()) {
        if (!f.password_file.empty()) throw UsageError("--password-file needs --user: the user whose password it is");
        return a;
    }
    if (f.user.find(':') != std::string::npos)
        throw UsageError("--user: NAME:PASSWORD would show the password to anyone who lists processes: give --user "
                         "NAME, and the password in --password-file FILE or the environment variable ETCDCTL_PASSWORD");
    a.user = f.user;
    if (!f.password_file.empty()) {
        std::string text = read_small("--password-file", f.password_file);
        size_t end = text.find('\n');
        if (end != std::string::npos) text.erase(end);
        if (!text.empty() && text.back() == '\r') text.pop_back();
        if (text.empty()) throw CliError("--password-file " + f.password_file + ": its first line is empty");
        a.password = std::move(text);
        a.password_from = "--password-file " + f.password_file;
    } else if (const char *env = std::getenv("ETCDCTL_PASSWORD")) {
        a.password = env;
        a.password_from = "ETCDCTL_PASSWORD";
    } else {
        throw UsageError("--user " + f.user + " needs its password: --password-file FILE or the environment variable "
                         "ETCDCTL_PASSWORD (never on the command line)");
    }
    return a;
}

CLI::App *add_etcd_subcommand(CLI::App &app, const std::string &name, const std::string &description,
                              const std::string &example, EtcdFlags &flags) {
    CLI::App *cmd = app.add_subcommand(name, description);
    cmd->footer("Example: " + example);
    add_etcd_flags(*cmd, flags);
    return cmd;
}

}  // namespace chring::cli::etcd
