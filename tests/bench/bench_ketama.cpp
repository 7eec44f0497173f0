// libmemcached's ketama lookup (memcached_generate_hash) on the same keys,
// the reference chring's lookup must match or beat, in its two modes:
//   default:  CONSISTENT_KETAMA, Jenkins one-at-a-time key hash, 100 points
//             per server;
//   weighted: KETAMA_WEIGHTED, MD5 key hash, 160 points per server (the
//             usual libketama-compatible setup).
// No server is contacted: adding servers only builds the continuum.
// Linked into bench_lookup, so that with random interleaving its runs and
// chring's share the same machine conditions.
//
// libmemcached 1.1.4 asserts that a continuum holds at most 100 servers and
// aborts the process past that. Each size is therefore first built in a
// child process; a size the child cannot build is reported with the reason
// instead of being measured (or crashing this program).
#include <benchmark/benchmark.h>
#include <libmemcached/memcached.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "bench_support.hpp"

namespace {

enum class Mode { standard, weighted };

// A continuum of `servers` hosts 10.0.x.y:11211, weight 1, or nullptr with
// `added` telling how many were accepted before a server_add failed.
memcached_st *build_continuum(size_t servers, Mode mode, volatile size_t *added) {
    memcached_st *memc = memcached_create(nullptr);
    if (!memc) return nullptr;
    memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                           MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA);
    if (mode == Mode::weighted) memcached_behavior_set(memc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    for (size_t i = 0; i < servers; ++i) {
        char host[32];
        std::snprintf(host, sizeof host, "10.0.%zu.%zu", i / 256, i % 256);
        memcached_return_t rc = mode == Mode::weighted
                                    ? memcached_server_add_with_weight(memc, host, 11211, 1)
                                    : memcached_server_add(memc, host, 11211);
        if (rc != MEMCACHED_SUCCESS) {
            memcached_free(memc);
            return nullptr;
        }
        *added = i + 1;
    }
    return memc;
}

// The line of `text` that names the failed assertion, or its first line.
std::string assertion_line(const std::string &text) {
    size_t at = text.find("Assertion");
    size_t begin = at == std::string::npos ? 0 : text.rfind('\n', at);
    begin = begin == std::string::npos ? 0 : begin + (text[begin] == '\n');
    size_t end = text.find('\n', begin);
    return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Builds the continuum in a child process, so an abort inside libmemcached
// kills only the child. Empty if libmemcached holds `servers` servers,
// otherwise why it cannot.
std::string probe_capacity(size_t servers, Mode mode) {
    auto *added = static_cast<volatile size_t *>(
        mmap(nullptr, sizeof(size_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (added == MAP_FAILED) return std::string("cannot start the probe: ") + std::strerror(errno);
    *added = 0;
    int err[2] = {-1, -1};
    std::fflush(nullptr);
    pid_t child = pipe(err) == 0 ? fork() : -1;
    if (child < 0) {
        std::string why = std::string("cannot start the probe: ") + std::strerror(errno);
        for (int fd : err) if (fd >= 0) close(fd);
        munmap(const_cast<size_t *>(added), sizeof(size_t));
        return why;
    }
    if (child == 0) {
        dup2(err[1], STDERR_FILENO);
        close(err[0]);
        memcached_st *memc = build_continuum(servers, mode, added);
        bool ok = memc && memcached_generate_hash(memc, "probe", 5) < servers;
        _exit(ok ? 0 : 1);
    }
    close(err[1]);
    std::string output;
    char buf[4096];
    for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) output.append(buf, size_t(n));
    close(err[0]);
    int status = 0;
    waitpid(child, &status, 0);
    size_t accepted = *added;
    munmap(const_cast<size_t *>(added), sizeof(size_t));

    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
    std::string why = "libmemcached cannot hold " + std::to_string(servers) + " servers: ";
    if (WIFSIGNALED(status))
        why += "the process is killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ") while adding server #" +
               std::to_string(accepted + 1);
    else if (accepted < servers)
        why += "memcached_server_add refuses server #" + std::to_string(accepted + 1);
    else
        why += "memcached_generate_hash answers a server index out of range";
    std::string line = assertion_line(output);
    return line.empty() ? why : why + " (" + line + ")";
}

// probe_capacity, once per size and mode in this process.
const std::string &capacity_problem(size_t servers, Mode mode) {
    static std::map<std::pair<size_t, Mode>, std::string> known;
    auto it = known.find({servers, mode});
    if (it == known.end())
        it = known.emplace(std::make_pair(servers, mode), probe_capacity(servers, mode)).first;
    return it->second;
}

void ketama_lookup(benchmark::State &state, Mode mode) {
    const size_t servers = size_t(state.range(0));
    const std::string &problem = capacity_problem(servers, mode);
    if (!problem.empty()) {
        state.SkipWithError(problem.c_str());
        return;
    }
    size_t added = 0;
    memcached_st *memc = build_continuum(servers, mode, &added);
    if (!memc) {
        state.SkipWithError("memcached_server_add failed");
        return;
    }
    const bench::KeyPool &pool = bench::KeyPool::get();
    size_t i = 0;
    for (auto _ : state) {
        const bench::Key &k = pool[i++];
        bench::consume(memcached_generate_hash(memc, k.bytes, k.len));
    }
    memcached_free(memc);
}

}  // namespace

BENCHMARK_CAPTURE(ketama_lookup, default, Mode::standard)->Arg(10)->Arg(100)->Arg(1000);
BENCHMARK_CAPTURE(ketama_lookup, weighted_md5, Mode::weighted)->Arg(10)->Arg(100)->Arg(1000);
