// chring: answers "what moves, how even, where does this key go" with the
// real library, so its answers are the production answers.
#include <chring.h>

#include <CLI/CLI.hpp>

#include <iostream>
#include <new>
#include <string>

#include "commands.hpp"
#include "ring_handle.hpp"

namespace {

std::string version_text() {
    uint32_t v = chr_version();
    return "chring " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
}

}  // namespace

int main(int argc, char **argv) {
    CLI::App app{"chring - consistent hashing: see what moves, how even the ring is, where a key goes",
                 "chring"};
    app.require_subcommand(0, 1);  // none is reported below, after unknown options are
    app.set_version_flag("--version", version_text());
    app.footer("Start with 'chring demo'. Each command has --help. Exit status: 0 success, "
               "1 error (bad file, library refusal), 2 bad usage.");
    chring::cli::add_demo_command(app);
    chring::cli::add_sim_command(app);
    chring::cli::add_lookup_command(app);
    chring::cli::add_inspect_command(app);
    // CLI11 would say only "A subcommand is required" for a misspelt one.
    if (argc > 1 && argv[1][0] != '-') {
        try {
            app.get_subcommand(argv[1]);
        } catch (const CLI::OptionNotFound &) {
            std::cerr << "chring: unknown command '" << argv[1] << "' (demo, sim, lookup, inspect; see chring --help)\n";
            return 2;
        }
    }
    try {
        app.parse(argc, argv);
        if (app.get_subcommands().empty()) {
            std::cerr << "chring: a command is required: demo, sim, lookup or inspect (see chring --help)\n";
            return 2;
        }
    } catch (const CLI::ParseError &e) {
        return app.exit(e) == 0 ? 0 : 2;
    } catch (const std::bad_alloc &) {
        std::cerr << "chring: out of memory\n";
        return 1;
    } catch (const std::exception &e) {  // CliError, MembershipError, and anything unexpected
        std::cerr << "chring: " << e.what() << '\n';
        return 1;
    }
    std::cout.flush();
    if (!std::cout) {
        std::cerr << "chring: cannot write the output\n";
        return 1;
    }
    return 0;
}
