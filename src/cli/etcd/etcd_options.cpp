// The options chring watch and chring etcd share: where the ring is in
// etcd, the request timeout, the plugin directory.
#include <cstdio>
#include <cstdlib>

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
}

CLI::App *add_etcd_subcommand(CLI::App &app, const std::string &name, const std::string &description,
                              const std::string &example, EtcdFlags &flags) {
    CLI::App *cmd = app.add_subcommand(name, description);
    cmd->footer("Example: " + example);
    add_etcd_flags(*cmd, flags);
    return cmd;
}

}  // namespace chring::cli::etcd
