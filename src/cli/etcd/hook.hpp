// Hooks of chring watch (--exec): a shell command run to its end, or to
// its timeout, in a process group of its own so that whatever it starts
// can be ended with it.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "etcd_client.hpp"  // StopFlag

namespace chring::cli::etcd {

struct HookResult {
    bool ok = false;         // the command exited with status 0
    // Why not, for a log line after "<what> command ": "exited with status 3",
    // "killed by signal 9", "killed after its 30 s timeout (process group
    // 1234)", "ended when the watcher stopped (process group 1234)",
    // "cannot fork: ...". Empty when ok.
    std::string failure;
    bool timed_out = false;  // killed at its timeout
    bool stopped = false;    // ended because *stop became non-zero
};

// Runs `/bin/sh -c command` and waits for it. The command runs in a new
// process group (its own id), stdin from /dev/null, no descriptor above 2,
// default signal dispositions and mask, and the watcher's environment with
// `env` added (replacing variables of the same name).
//
// It may take `timeout_s` seconds; then the whole group gets SIGKILL. If
// *stop (may be null) becomes non-zero meanwhile, the group gets SIGTERM,
// up to 2 s to exit, then SIGKILL. Only then is the group killed: a command
// that exits in time and leaves a process of its group running on purpose
// (a daemon) is the user's choice. `tick` (may be empty) is called about
// every 100 ms while waiting, e.g. to keep an etcd lease alive; if it
// throws, the group gets SIGKILL, is reaped and the exception propagates.
// `what` ("--exec") names the hook in the message the child writes to
// stderr when /bin/sh cannot be run.
HookResult run_hook(const std::string &what, const std::string &command,
                    const std::vector<std::pair<std::string, std::string>> &env, double timeout_s,
                    const StopFlag *stop, const std::function<void()> &tick);

}  // namespace chring::cli::etcd
