// chring: answers "what moves, how even, where does this key go" with the
// real library, so its answers are the production answers.
#include <chring.h>

#include <CLI/CLI.hpp>

#include <iostream>
#include <new>
#include <string>

#include "commands.hpp"
#include "options.hpp"
#include "ring_handle.hpp"
#include "spelling.hpp"
#ifdef CHRING_CLI_ETCD
#include "etcd/etcd_commands.hpp"
#endif
#if defined(_WIN32)
#include <fcntl.h>
#include <io.h>
#include <cstdio>
#endif

namespace {

std::string version_text() {
    uint32_t v = chr_version();
    return "chring " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
}

// Every error is one line "chring: <message>", with whatever the message
// carries from the user, a file or the library made safe for a terminal.
void print_error(const std::string &message) {
    std::string line = message;
    for (char &c : line)
        if (c == '\n') c = ' ';  // CLI11 writes some messages over two lines
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cerr << "chring: " << chring::cli::visible(line) << '\n';
}

// "demo, sim, lookup, ..." as registered, for the messages below.
std::string command_names(const CLI::App &app, const char *last_joint) {
    std::vector<std::string> names;
    for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; }))
        names.push_back(sub->get_name());
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
        out += (i == 0 ? "" : i + 1 == names.size() ? last_joint : ", ") + names[i];
    return out;
}

// Where a usage error points for help: "chring sim --help", or "chring --help".
std::string help_hint(const CLI::App &app) {
    for (const CLI::App *sub : app.get_subcommands()) return "chring " + sub->get_name() + " --help";
    return "chring --help";
}

}  // namespace

int main(int argc, char **argv) {
#if defined(_WIN32)
    // Bytes in and out as on Linux: keys and ring files read from stdin
    // keep their CRs (and a ^Z is not end of file), output lines end in LF.
    _setmode(_fileno(stdin), _O_BINARY);
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
#endif
    CLI::App app{"chring - consistent hashing: see what moves, how even the ring is, where a key goes",
                 "chring"};
    app.require_subcommand(0, 1);  // none is reported below, after unknown options are
    app.set_version_flag("--version", version_text());
    app.footer("Start with 'chring demo'. Each command has --help. Exit status: 0 success, "
               "1 error (bad file, library refusal), 2 bad usage"
#ifdef CHRING_CLI_ETCD
               "; chring etcd status and --wait also 3 (a process lags or refused the ring) and 4 (no "
               "process reports)"
#endif
               ".");
    chring::cli::add_demo_command(app);
    chring::cli::add_sim_command(app);
    chring::cli::add_lookup_command(app);
    chring::cli::add_inspect_command(app);
    chring::cli::add_check_command(app);
    chring::cli::add_export_command(app);
    chring::cli::add_diff_command(app);
#ifdef CHRING_CLI_ETCD
    chring::cli::etcd::add_watch_command(app);
    chring::cli::etcd::add_etcd_command(app);
    chring::cli::etcd::add_health_command(app);
#endif
    // CLI11 would say only "A subcommand is required" for a misspelt one.
    if (argc > 1 && argv[1][0] != '-') {
        try {
            app.get_subcommand(argv[1]);
        } catch (const CLI::OptionNotFound &) {
            print_error("unknown command '" + std::string(argv[1]) + "' (" + command_names(app, ", ") +
                        "; see chring --help)");
            return 2;
        }
    }
    try {
        app.parse(argc, argv);
        if (app.get_subcommands().empty()) {
            print_error("a command is required: " + command_names(app, " or ") + " (see chring --help)");
            return 2;
        }
    } catch (const CLI::CallForVersion &e) {
        std::cout << e.what() << '\n';
        return 0;
    } catch (const CLI::Success &e) {  // --help: CLI11 prints it
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        print_error(std::string(e.what()) + " (see " + help_hint(app) + ")");
        return 2;
    } catch (const chring::cli::ExitStatus &e) {  // its output says why
        std::cout.flush();
        return e.code();
    } catch (const chring::cli::UsageError &e) {
        print_error(e.what());
        return 2;
    } catch (const std::bad_alloc &) {
        print_error("out of memory");
        return 1;
    } catch (const std::exception &e) {  // CliError, and anything unexpected
        print_error(e.what());
        return 1;
    }
    std::cout.flush();
    if (!std::cout) {
        print_error("cannot write the output");
        return 1;
    }
    return 0;
}
