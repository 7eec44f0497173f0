#include "plugins.hpp"

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <vector>

#include "errors.hpp"

namespace chring {
namespace fs = std::filesystem;

namespace {

// A plugin exporting more is surely broken; also bounds the work of a load.
constexpr uint32_t kMaxHashersPerPlugin = 256;

using EntryFn = const chr_hasher *const *(uint32_t *);

chr_status check_file(const std::string &path, const char *who) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st))
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' does not exist", who, path.c_str());
    if (!fs::is_regular_file(st))
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not a regular file", who, path.c_str());
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not readable", who, path.c_str());
    unsigned char magic[4] = {0, 0, 0, 0};
    size_t got = std::fread(magic, 1, sizeof magic, f);
    std::fclose(f);
    if (got != 4 || magic[0] != 0x7f || magic[1] != 'E' || magic[2] != 'L' || magic[3] != 'F')
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s' is not a shared object (no ELF header)", who,
                    path.c_str());
    return CHR_OK;
}

// The entries of `dir` for which keep(name, is_dir) holds, sorted; none if
// it cannot be read. POSIX readdir, not fs::directory_iterator: libstdc++
// builds each entry's path in a noexcept function, so running out of memory
// there ends the process instead of throwing bad_alloc.
template <class Keep>
std::vector<fs::path> list_directory(const fs::path &dir, Keep keep) {
    std::vector<fs::path> found;
    DIR *d = opendir(dir.c_str());
    if (!d) return found;
    struct Closer {
        DIR *d;
        ~Closer() { closedir(d); }
    } closer{d};
    while (const dirent *e = readdir(d)) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        fs::path path = dir / e->d_name;
        std::error_code ec;
        if (keep(e->d_name, fs::is_directory(path, ec))) found.push_back(std::move(path));
    }
    std::sort(found.begin(), found.end());
    return found;
}

// The directories searched, in precedence order.
std::vector<fs::path> search_dirs(const char *plugin_dir) {
    std::vector<fs::path> dirs;
    std::error_code ec;
    // Where this code was loaded from: libchring.so (or an executable that
    // links the core statically).
    fs::path located = boost::dll::this_line_location(ec);
    // The loader may name the library through a relative rpath
    // ("<build>/src/cli/../libchring.so.1"): resolve "..", so that
    // parent_path() below climbs real directories, not path text.
    if (!ec) located = fs::weakly_canonical(located, ec);
    fs::path libdir = located.parent_path();
    if (!ec && !libdir.empty()) {
        dirs.push_back(libdir / "chring" / "plugins");  // installed: <libdir>/chring/plugins
        // Meson build tree: <build>/src/libchring.so and <build>/plugins/<name>/chring-*.so.
        // Only where <build>/meson-info marks a build tree: an installed
        // /usr/lib/<triplet>/libchring.so must not load /usr/lib/plugins/*.
        fs::path build_root = libdir.parent_path();
        if (fs::is_directory(build_root / "meson-info", ec)) {
            std::vector<fs::path> subdirs = list_directory(
                build_root / "plugins", [](const char *, bool is_dir) { return is_dir; });
            dirs.insert(dirs.end(), subdirs.begin(), subdirs.end());
        }
    }
    if (const char *env = std::getenv("CHRING_PLUGIN_PATH")) {
        std::string list = env;
        size_t start = 0;
        while (start <= list.size()) {
            size_t end = list.find(':', start);
            if (end == std::string::npos) end = list.size();
            if (end > start) dirs.emplace_back(list.substr(start, end - start));
            start = end + 1;
        }
    }
    if (plugin_dir && *plugin_dir) dirs.emplace_back(plugin_dir);
    return dirs;
}

bool is_plugin_name(const std::string &file) {
    return file.size() > 10 && file.compare(0, 7, "chring-") == 0 &&
           file.compare(file.size() - 3, 3, ".so") == 0;
}

struct Discovery {
    std::mutex mu;
    std::set<std::string> tried;  // canonical paths, loaded or not
};
Discovery &discovery() {
    static Discovery *d = new Discovery;  // never destroyed, like the registry
    return *d;
}

// Loads a plugin; the caller holds discovery().mu, so that entry points run
// one at a time and discovery never races an explicit load of the same file.
chr_status load_plugin_locked(const std::string &path, size_t *loaded, const char *who) {
    if (loaded) *loaded = 0;
    if (chr_status st = check_file(path, who)) return st;

    auto lib = std::make_shared<boost::dll::shared_library>();
    std::error_code ec;
    // rtld_now: a plugin with unresolved symbols fails here, not mid-lookup.
    lib->load(path, ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    if (ec || !lib->is_loaded())
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s' is not a loadable shared object: %s", who,
                    path.c_str(), ec ? ec.message().c_str() : "unknown error");
    if (!lib->has(CHR_PLUGIN_ENTRY_SYMBOL))
        return fail(CHR_EPLUGIN_SYMBOL, "%s: '%s' does not export %s()", who, path.c_str(),
                    CHR_PLUGIN_ENTRY_SYMBOL);
    EntryFn &entry = lib->get<EntryFn>(CHR_PLUGIN_ENTRY_SYMBOL);

    uint32_t count = 0;
    const chr_hasher *const *table = entry(&count);
    if (!table || count == 0)
        return fail(CHR_EPLUGIN_DESC, "%s: '%s' exports no hashers", who, path.c_str());
    if (count > kMaxHashersPerPlugin)
        return fail(CHR_EPLUGIN_DESC, "%s: '%s' claims %u hashers (at most %u)", who, path.c_str(),
                    count, kMaxHashersPerPlugin);
    std::vector<const chr_hasher *> descs(table, table + count);

    std::string who_file = std::string(who) + ": " + path;
    chr_status st = register_hashers(descs, path, lib, who_file.c_str());
    if (st == CHR_OK && loaded) *loaded = count;
    return st;  // on failure `lib` is the last owner: the file is unloaded here
}

}  // namespace

chr_status load_plugin(const std::string &path, size_t *loaded, const char *who) {
    std::lock_guard<std::mutex> lock(discovery().mu);
    return load_plugin_locked(path, loaded, who);
}

void discover_plugins(const char *plugin_dir) {
    PreserveLastError keep_message;  // skipped failures are not the caller's errors
    Discovery &d = discovery();
    std::lock_guard<std::mutex> lock(d.mu);
    for (const fs::path &dir : search_dirs(plugin_dir)) {
        std::error_code ec;
        std::vector<fs::path> files = list_directory(
            dir, [](const char *name, bool is_dir) { return !is_dir && is_plugin_name(name); });
        for (const fs::path &file : files) {
            fs::path canonical = fs::weakly_canonical(file, ec);
            std::string key = ec ? file.string() : canonical.string();
            if (d.tried.count(key)) continue;
            // Marked tried only once load_plugin has returned: if it threw
            // (out of memory), a later discovery tries the file again.
            (void)load_plugin_locked(key, nullptr, "plugin discovery");
            d.tried.insert(key);
        }
    }
}

HasherPtr resolve_hasher(const std::string &name, const char *plugin_dir) {
    if (HasherPtr h = find_hasher(name)) return h;
    discover_plugins(plugin_dir);
    return find_hasher(name);
}

}  // namespace chring
