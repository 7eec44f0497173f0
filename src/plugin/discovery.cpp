#include "plugin/discovery.hpp"

#if defined(_WIN32)
#include <windows.h>
#else
#include <dirent.h>
#include <dlfcn.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "base/errors.hpp"
#include "plugin/loader.hpp"
#include "plugin/trust.hpp"
#include "plugin/win_path.hpp"

namespace chring {
namespace {

// The most of skipped_plugins() kept: a message, not a log. The message it
// goes into holds 511 bytes, and this buffer is static TLS, whose budget
// it shares with the error record (errors.cpp).
constexpr size_t kSkippedMax = 512;

// Plain bytes, not a std::string: a thread_local with a destructor is
// registered on first use by an allocation whose failure aborts (glibc).
thread_local char tls_skipped[kSkippedMax];
thread_local size_t tls_skipped_len;

void note_skip(const std::string &what) {
    auto append = [](const char *p, size_t n) {
        n = std::min(n, kSkippedMax - tls_skipped_len);
        std::memcpy(tls_skipped + tls_skipped_len, p, n);
        tls_skipped_len += n;
    };
    if (tls_skipped_len) append("; ", 2);
    append(what.data(), what.size());
}

#if defined(_WIN32)
// Windows: chring-<name>.dll beside chring.dll, CHRING_PLUGIN_PATH split
// at ';' (':' is part of a drive letter), names listed with
// FindFirstFileW (UTF-16, converted to UTF-8).
constexpr char kPathSeparator = ';';
constexpr const char *kPluginSuffix = ".dll";
constexpr const char *kDirSeparator = "\\";

std::vector<std::string> plugin_files(const std::string &dir) {
    std::vector<std::string> found;
    std::wstring pattern;
    if (!win::widen(dir + "\\chring-*.dll", &pattern)) return found;
    WIN32_FIND_DATAW entry;
    HANDLE h = ::FindFirstFileW(pattern.c_str(), &entry);
    if (h == INVALID_HANDLE_VALUE) return found;
    do {
        std::string name = win::narrow(entry.cFileName);
        size_t n = name.size();
        // The pattern also matches 8.3 short names and longer suffixes: check the real name.
        if (n > 11 && name.compare(0, 7, "chring-") == 0 && name.compare(n - 4, 4, kPluginSuffix) == 0 &&
            !(entry.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
            found.emplace_back(dir + kDirSeparator + name);
    } while (::FindNextFileW(h, &entry));
    ::FindClose(h);
    std::sort(found.begin(), found.end());
    return found;
}

// The directory of chring.dll (or of the program linking the core statically).
std::string library_dir() {
    HMODULE self = nullptr;
    if (!::GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                              reinterpret_cast<LPCWSTR>(&library_dir), &self))
        return std::string();
    std::wstring name(MAX_PATH, L'\0');
    for (;;) {
        DWORD n = ::GetModuleFileNameW(self, &name[0], static_cast<DWORD>(name.size()));
        if (n == 0) return std::string();
        if (n < name.size()) {
            name.resize(n);
            break;
        }
        if (name.size() > 32768) return std::string();
        name.resize(name.size() * 2);
    }
    size_t slash = name.find_last_of(L"\\/");
    return slash == std::wstring::npos ? std::string() : win::narrow(name.substr(0, slash));
}

// No setuid programs on Windows: the environment is the process's own.
// Read as UTF-16 and converted, so a path in any language survives.
bool plugin_path_env(std::string *out) {
    const wchar_t *env = ::_wgetenv(L"CHRING_PLUGIN_PATH");
    if (!env) return false;
    *out = win::narrow(env);
    return true;
}

std::string beside_library(const std::string &lib) { return lib; }
#else
constexpr char kPathSeparator = ':';

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

// secure_getenv: NULL in a setuid, setgid or capability-raised process
// (AT_SECURE), where the environment belongs to the unprivileged caller.
bool plugin_path_env(std::string *out) {
    const char *env = ::secure_getenv("CHRING_PLUGIN_PATH");
    if (!env) return false;
    *out = env;
    return true;
}

std::string beside_library(const std::string &lib) { return lib + "/chring/plugins"; }
#endif

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
    if (!lib.empty()) dirs.push_back(beside_library(lib));
    std::string list;
    if (plugin_path_env(&list)) {
        size_t start = 0;
        while (start <= list.size()) {
            size_t end = list.find(kPathSeparator, start);
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
    tls_skipped_len = 0;
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

std::string skipped_plugins() { return std::string(tls_skipped, tls_skipped_len); }

}  // namespace chring
