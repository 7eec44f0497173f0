#include "hook.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

extern char **environ;

namespace chring::cli::etcd {

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr Ms kTickEvery(100);
constexpr Ms kStopGrace(2000);

std::string seconds_of(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

// The watcher's environment with `env` set.
std::vector<std::string> environment(const std::vector<std::pair<std::string, std::string>> &env) {
    std::vector<std::string> out;
    for (char **e = environ; e && *e; ++e) {
        const std::string_view entry(*e);
        const std::string_view name = entry.substr(0, entry.find('='));
        if (std::none_of(env.begin(), env.end(), [&](const auto &kv) { return kv.first == name; }))
            out.emplace_back(entry);
    }
    for (const auto &[name, value] : env) out.push_back(name + "=" + value);
    return out;
}

// In the child, async-signal-safe calls only: another thread of the
// watcher (libcurl's resolver) may have held a lock at the fork.
[[noreturn]] void exec_child(char *const argv[], char *const envp[], int max_fd, const std::string &cannot_run) {
    setpgid(0, 0);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);  // SIGPIPE was ignored
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null > 0) {
        dup2(null, 0);
        ::close(null);
    }
    bool closed = false;
#ifdef SYS_close_range
    closed = syscall(SYS_close_range, 3u, ~0u, 0u) == 0;  // etcd's sockets are not the hook's
#endif
    for (int fd = 3; !closed && fd < max_fd; ++fd) ::close(fd);
    execve("/bin/sh", argv, envp);
    ssize_t ignored = ::write(2, cannot_run.data(), cannot_run.size());
    (void)ignored;
    _exit(127);
}

// The group leader, exited or not. Its exit is seen without reaping it
// (WNOWAIT): until reaped, its pid is not reused, so signalling its
// process group never reaches another one.
class Leader {
public:
    explicit Leader(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
        pidfd_ = int(syscall(SYS_pidfd_open, pid, 0));  // wakes poll() at the exit; -1: sleep in steps
#endif
    }
    ~Leader() {
        if (pidfd_ >= 0) ::close(pidfd_);
    }
    Leader(const Leader &) = delete;
    Leader &operator=(const Leader &) = delete;

    bool exited() {
        if (exited_) return true;
        siginfo_t info {};
        exited_ = waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 ? info.si_pid != 0
                                                                                   : errno != EINTR;
        return exited_;
    }

    // Waits up to `wait` for the exit (less on a signal: the caller looks at its stop flag).
    void wait_for(Ms wait) {
        if (exited()) return;
        const int ms = int(std::clamp<Ms::rep>(wait.count(), 1, pidfd_ >= 0 ? 100 : 10));
        struct pollfd p {};
        p.fd = pidfd_;
        p.events = POLLIN;
        ::poll(pidfd_ >= 0 ? &p : nullptr, pidfd_ >= 0 ? 1 : 0, ms);
    }

    // Its wait status, or -1 (errno set) when it cannot be had.
    int reap() {
        int status = 0;
        pid_t got;
        while ((got = waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
        }
        return got == pid_ ? status : -1;
    }

    pid_t pid() const { return pid_; }

private:
    pid_t pid_;
    int pidfd_ = -1;
    bool exited_ = false;
};

// A process of group `pgid` other than its (exited) leader is still
// running. Read from /proc; without it, assume so.
bool others_alive(pid_t pgid) {
    DIR *proc = opendir("/proc");
    if (!proc) return true;
    bool alive = false;
    while (const dirent *e = readdir(proc)) {
        char *end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 0 || *end != '\0' || pid == pgid) continue;
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        std::FILE *f = std::fopen(path, "r");
        if (!f) continue;
        char buf[1024];
        const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        std::fclose(f);
        buf[n] = '\0';
        const char *close = std::strrchr(buf, ')');  // the command name may hold anything
        char state = 0;
        long ppid = 0, group = 0;
        if (close && std::sscanf(close + 1, " %c %ld %ld", &state, &ppid, &group) == 3 && group == pgid &&
            state != 'Z' && state != 'X') {
            alive = true;
            break;
        }
    }
    closedir(proc);
    return alive;
}

// SIGTERM to the group, up to kStopGrace for all of it to exit, SIGKILL to what is left.
void end_group(Leader &leader) {
    const pid_t pgid = leader.pid();
    kill(-pgid, SIGTERM);
    kill(-pgid, SIGCONT);  // a stopped process acts on SIGTERM only once continued
    const auto until = Clock::now() + kStopGrace;
    while (Clock::now() < until) {
        if (leader.exited() && !others_alive(pgid)) return;
        leader.wait_for(Ms(20));
    }
    kill(-pgid, SIGKILL);
}

std::string describe(int status) {
    if (status == -1) return std::string("cannot be waited for: ") + std::strerror(errno);
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "ended with wait status " + std::to_string(status);
}

}  // namespace

HookResult run_hook(const std::string &what, const std::string &command,
                    const std::vector<std::pair<std::string, std::string>> &env, double timeout_s,
                    const StopFlag *stop, const std::function<void()> &tick) {
    HookResult r;
    // A SIGCHLD ignored (inherited through exec) would reap the command before its status is read.
    struct sigaction chld {};
    if (sigaction(SIGCHLD, nullptr, &chld) == 0 && (chld.sa_handler == SIG_IGN || (chld.sa_flags & SA_NOCLDWAIT))) {
        chld = {};
        chld.sa_handler = SIG_DFL;
        sigemptyset(&chld.sa_mask);
        sigaction(SIGCHLD, &chld, nullptr);
    }
    // Everything the child needs is made before the fork.
    const std::vector<std::string> env_text = environment(env);
    std::vector<char *> envp;
    for (const std::string &s : env_text) envp.push_back(const_cast<char *>(s.c_str()));
    envp.push_back(nullptr);
    std::string sh = "sh", dash_c = "-c", cmd = command;
    char *const argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
    const std::string cannot_run = "chring: " + what + ": cannot run /bin/sh\n";
    struct rlimit files {};
    const int max_fd = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                           ? int(std::min<rlim_t>(files.rlim_cur, 1 << 20))
                           : 1 << 16;

    const pid_t pid = fork();
    if (pid < 0) {
        r.failure = std::string("cannot fork: ") + std::strerror(errno);
        return r;
    }
    if (pid == 0) exec_child(argv, envp.data(), max_fd, cannot_run);
    setpgid(pid, pid);  // here too: the group exists before any kill(-pid) below

    Leader leader(pid);
    const std::string group = " (process group " + std::to_string(pid) + ")";
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    auto next_tick = start + kTickEvery;
    while (!leader.exited()) {
        if (stop && *stop) {
            end_group(leader);
            leader.reap();
            r.stopped = true;
            r.failure = "ended when the watcher stopped" + group;
            return r;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            kill(-pid, SIGKILL);
            leader.reap();
            r.timed_out = true;
            r.failure = "killed after its " + seconds_of(timeout_s) + " s timeout" + group;
            return r;
        }
        if (tick && now >= next_tick) {
            try {
                tick();
            } catch (...) {
                kill(-pid, SIGKILL);
                leader.reap();
                throw;
            }
            next_tick = Clock::now() + kTickEvery;
        }
        auto until = std::min(deadline, tick ? next_tick : deadline);
        leader.wait_for(std::chrono::duration_cast<Ms>(until - Clock::now()) + Ms(1));
    }
    const int status = leader.reap();
    r.ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!r.ok) r.failure = describe(status);
    return r;
}

}  // namespace chring::cli::etcd
