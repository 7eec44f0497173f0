#include "plugin/discovery.hpp"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "errors.hpp"
#include "plugin/loader.hpp"
#include "plugin/trust.hpp"

namespace chring {
namespace {

// The most of skipped_plugins() kept: a message, not a log.
constexpr size_t kSkippedMax = 1024;

thread_local std::string tls_skipped;

void note_skip(const std::string &what) {
    if (tls_skipped.size() >= kSkippedMax) return;
    if (!tls_skipped.empty()) tls_skipped += "; ";
    tls_skipped += what;
    if (tls_skipped.size() > kSkippedMax) tls_skipped.resize(kSkippedMax);
}

// The names in `dir` that look like plugins, sorted; none if it cannot be
// read. POSIX readdir, not fs::directory_iterator: libstdc++ builds each
// entry's path in a noexcept function, so running out of memory there ends
// the process instead of throwing bad_alloc.
std::vector<std::string> plugin_files(const std::string &dir) {
    std::vector<std::string> found;
    DIR *d = opendir(dir.c_str());
    if (!d) return found;
    struct Closer {
        DIR *d;
        ~Closer() { closedir(d); }
    } closer{d};
    while (const dirent *e = readdir(d)) {
        size_t n = std::strlen(e->d_name);
        if (n > 10 && std::strncmp(e->d_name, "chring-", 7) == 0 &&
            std::strcmp(e->d_name + n - 3, ".so") == 0)
            found.emplace_back(dir + "/" + e->d_name);
    }
    std::sort(found.begin(), found.end());
    return found;
}

// The directory of the object holding this code: libchring.so, or the
// program that links the core statically.
std::string library_dir() {
    Dl_info info;
    if (::dladdr(reinterpret_cast<void *>(&library_dir), &info) == 0 || !info.dli_fname)
        return std::string();
    char *real = ::realpath(info.dli_fname, nullptr);
    if (!real) return std::string();
    std::string path = real;
    std::free(real);
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

struct Discovery {
    std::set<std::string> tried;  // canonical paths, loaded or not
};
Discovery &discovery() {
    static Discovery *d = new Discovery;  // never destroyed, like the registry
    return *d;
}

}  // namespace

std::vector<std::string> search_path(const char *plugin_dir) {
    std::vector<std::string> dirs;
    std::string lib = library_dir();
    if (!lib.empty()) dirs.push_back(lib + "/chring/plugins");
    // secure_getenv: NULL in a setuid, setgid or capability-raised process
    // (AT_SECURE), where the environment belongs to the unprivileged caller.
    if (const char *env = ::secure_getenv("CHRING_PLUGIN_PATH")) {
        std::string list = env;
        size_t start = 0;
        while (start <= list.size()) {
            size_t end = list.find(':', start);
            if (end == std::string::npos) end = list.size();
            if (end > start) dirs.push_back(list.substr(start, end - start));
            start = end + 1;
        }
    }
    if (plugin_dir && *plugin_dir) dirs.emplace_back(plugin_dir);
    return dirs;
}

void discover_plugins(const char *plugin_dir, const char *want) {
    PreserveLastError keep_message;  // skipped failures are not the caller's errors
    tls_skipped.clear();
    std::lock_guard<std::mutex> lock(plugin_load_mutex());
    Discovery &d = discovery();
    for (const std::string &entry : search_path(plugin_dir)) {
        std::string dir;
        if (chr_status st = check_trusted_directory(entry, &dir, "plugin discovery")) {
            // A missing directory is normal (nothing installed there), not news.
            if (st != CHR_EPLUGIN_NOFILE) note_skip(last_error());
            continue;
        }
        for (const std::string &file : plugin_files(dir)) {
            if (d.tried.count(file)) continue;
            std::string canonical;
            chr_status st = load_plugin_locked(file, nullptr, "plugin discovery", &canonical);
            // Marked tried only once the load has returned: if it threw (out
            // of memory), a later discovery tries the file again.
            d.tried.insert(file);
            if (!canonical.empty()) d.tried.insert(canonical);
            if (st != CHR_OK) note_skip(last_error());
            if (want && find_hasher(want)) return;
        }
    }
}

HasherPtr resolve_hasher(const std::string &name, const char *plugin_dir) {
    if (HasherPtr h = find_hasher(name)) return h;
    discover_plugins(plugin_dir, name.c_str());
    return find_hasher(name);
}

std::string skipped_plugins() { return tls_skipped; }

}  // namespace chring
