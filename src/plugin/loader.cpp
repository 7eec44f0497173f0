#include "plugin/loader.hpp"

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/shared_library.hpp>

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "base/errors.hpp"
#include "plugin/registry.hpp"
#include "plugin/segments.hpp"
#include "plugin/trust.hpp"
#if defined(_WIN32)
#include "plugin/pe_check.hpp"
#include "plugin/win_path.hpp"
#else
#include "plugin/elf_check.hpp"
#endif

namespace chring {
namespace {

// A plugin exporting more is surely broken; also bounds the work of a load.
constexpr uint32_t kMaxHashersPerPlugin = 256;

using EntryFn = const chr_hasher *const *(uint32_t *);
using ReadAtFn = std::function<bool(uint64_t offset, void *out, size_t len)>;

std::atomic<size_t> files_opened{0};

#if defined(_WIN32)
// Windows: a module is known by the file it was loaded from (volume serial
// number, file index); LoadLibrary is given the canonical path, and the
// checked file stays open, sharing reading only, until the load is over
// (then the loader's own mapping keeps the file from being changed).
using FileId = std::pair<uint64_t, uint64_t>;
struct Module;
std::map<FileId, std::weak_ptr<Module>> &loaded_modules() {
    static auto *m = new std::map<FileId, std::weak_ptr<Module>>;  // never destroyed
    return *m;
}
struct Module {
    boost::dll::shared_library lib;
    FileId file_id{};
    Module() = default;
    Module(const Module &) = delete;
    Module &operator=(const Module &) = delete;
    ~Module() {
        lib.unload();
        auto &all = loaded_modules();  // caller holds plugin_load_mutex(), as below
        auto it = all.find(file_id);
        if (it != all.end() && it->second.expired()) all.erase(it);
    }
};

FileId file_id_of(const TrustedFile &file) { return FileId{file.file_id[0], file.file_id[1]}; }

ReadAtFn reader_for(const TrustedFile &file) {
    HANDLE h = static_cast<HANDLE>(file.handle);
    return [h](uint64_t offset, void *out, size_t len) {
        unsigned char *p = static_cast<unsigned char *>(out);
        while (len) {
            OVERLAPPED at = {};
            at.Offset = static_cast<DWORD>(offset);
            at.OffsetHigh = static_cast<DWORD>(offset >> 32);
            DWORD want = len > (1u << 30) ? (1u << 30) : static_cast<DWORD>(len), got = 0;
            if (!::ReadFile(h, p, want, &got, &at) || got == 0) return false;
            p += got, len -= got, offset += got;
        }
        return true;
    };
}

chr_status check_file(const ReadAtFn &read, const TrustedFile &file, const char *who) {
    PeVerdict pe = check_pe(read, file.size, host_pe());
    if (pe.ok) return CHR_OK;
    if (!pe.pe)
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s' is not a DLL (%s)", who, file.path.c_str(), pe.why);
    return fail(CHR_EPLUGIN_NOTSO, "%s: '%s' is not a loadable DLL: %s", who, file.path.c_str(), pe.why);
}

// Loads the checked file into `module`; false with `why` set on failure.
bool load_module(Module &module, TrustedFile &file, std::string &why) {
    std::wstring wide;
    win::widen(file.path, &wide);
    std::error_code ec;
    module.lib.load(boost::dll::fs::path(wide), ec, boost::dll::load_mode::default_mode);
    if (!ec && module.lib.is_loaded()) return true;
    why = ec ? ec.message() : "unknown error";
    return false;
}
#else
// A loaded plugin and the descriptor it was loaded through. The loader
// knows the object by the name it was opened with, /proc/self/fd/N: were
// the descriptor closed while the object stays loaded, a later plugin
// opened on the same number would be taken for this one (dlopen matches
// names first). So the descriptor is closed only once the object is gone.
struct Module;
using FileId = std::pair<dev_t, ino_t>;

// The modules loaded so far, by file; guarded by plugin_load_mutex().
std::map<FileId, std::weak_ptr<Module>> &loaded_modules() {
    static auto *m = new std::map<FileId, std::weak_ptr<Module>>;  // never destroyed
    return *m;
}

// The dynamic loader also answers an open of a file it already has (same
// device and inode) with the loaded object, and then knows that object by
// the new name as well, forever; so a file already loaded here is reused
// (loaded_modules) instead of opened again under a second name.
struct Module {
    boost::dll::shared_library lib;
    int fd = -1;
    std::string loader_name;
    FileId file_id{};
    bool aliased = false;  // the loader answered with an object it had under another name
    Module() = default;
    Module(const Module &) = delete;
    Module &operator=(const Module &) = delete;
    ~Module() {
        lib.unload();
        // Caller holds plugin_load_mutex(): modules die in a refused load or
        // never (a registered hasher keeps its module for the process's life).
        auto &all = loaded_modules();
        auto it = all.find(file_id);
        if (it != all.end() && it->second.expired()) all.erase(it);
        if (fd >= 0 && !aliased && !object_named_is_loaded(loader_name)) ::close(fd);
        // else: kept open on purpose (the loader still knows an object by its name)
    }
};

// /proc/self/fd/N names the very file that was checked, whatever happens
// to its path afterwards; without /proc (a chroot, a sandbox) the loader
// gets the canonical path, checked a moment ago and writable only by root
// or this user (who could replace it anyway).
std::string loader_name_for(const TrustedFile &file) {
    char name[64];
    std::snprintf(name, sizeof name, "/proc/self/fd/%d", file.fd);
    struct stat by_name, by_fd;
    if (::stat(name, &by_name) == 0 && ::fstat(file.fd, &by_fd) == 0 &&
        by_name.st_dev == by_fd.st_dev && by_name.st_ino == by_fd.st_ino &&
        !object_named_is_loaded(name))
        return name;
    return file.path;
}

FileId file_id_of(const TrustedFile &file) {
    struct stat st;
    if (::fstat(file.fd, &st) != 0) return FileId{0, 0};
    return FileId{st.st_dev, st.st_ino};
}

ReadAtFn reader_for(const TrustedFile &file) {
    const int fd = file.fd;
    return [fd](uint64_t offset, void *out, size_t len) {
        unsigned char *p = static_cast<unsigned char *>(out);
        while (len) {
            ssize_t got = ::pread(fd, p, len, static_cast<off_t>(offset));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;
            p += got, len -= static_cast<size_t>(got), offset += static_cast<uint64_t>(got);
        }
        return true;
    };
}

chr_status check_file(const ReadAtFn &read, const TrustedFile &file, const char *who) {
    ElfVerdict elf = check_elf(read, file.size, host_elf());
    if (elf.ok) return CHR_OK;
    if (!elf.elf)
        return fail(CHR_EPLUGIN_NOTSO, "%s: '%s' is not a shared object (%s)", who, file.path.c_str(),
                    elf.why);
    return fail(CHR_EPLUGIN_NOTSO, "%s: '%s' is not a loadable shared object: %s", who,
                file.path.c_str(), elf.why);
}

// Loads the checked file into `module` (by the name loader_name_for()
// chose); false with `why` set on failure.
bool load_module(Module &module, TrustedFile &file, std::string &why) {
    module.loader_name = loader_name_for(file);
    // rtld_now: a plugin with unresolved symbols fails here, not mid-lookup.
    (void)::dlerror();  // a stale message must not pass for this load's
    std::error_code ec;
    module.lib.load(module.loader_name, ec,
                    boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    if (ec || !module.lib.is_loaded()) {
        // Boost.DLL turns every dlopen failure into "Bad file descriptor";
        // the loader's own reason ("undefined symbol: ...") is still in
        // dlerror(), which nothing after the failed dlopen has read.
        const char *loader_says = ::dlerror();
        why = loader_says ? loader_says : ec ? ec.message() : "unknown error";
        return false;
    }
    if (module.loader_name != file.path) module.fd = file.release();  // see Module
    struct link_map *map = nullptr;
    if (::dlinfo(module.lib.native(), RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name ||
        module.loader_name != map->l_name)
        module.aliased = true;
    return true;
}
#endif

}  // namespace

std::mutex &plugin_load_mutex() {
    static std::mutex *m = new std::mutex;  // never destroyed, like the registry
    return *m;
}

size_t plugin_files_opened() { return files_opened.load(std::memory_order_relaxed); }

chr_status load_plugin_locked(const std::string &path, size_t *loaded, const char *who,
                              std::string *canonical) {
    if (loaded) *loaded = 0;
    TrustedFile file;
    if (chr_status st = open_trusted_plugin(path, &file, who)) return st;
    if (canonical) *canonical = file.path;
    const std::string real = file.path;

    if (chr_status st = check_file(reader_for(file), file, who)) return st;

    const FileId file_id = file_id_of(file);
    if (file_id == FileId{0, 0})
        return fail(CHR_EPLUGIN_NOFILE, "%s: cannot stat plugin '%s'", who, real.c_str());
    std::shared_ptr<Module> module = loaded_modules()[file_id].lock();
    if (!module) {
        module = std::make_shared<Module>();
        module->file_id = file_id;
        std::string why;
        files_opened.fetch_add(1, std::memory_order_relaxed);
        if (!load_module(*module, file, why)) {
            loaded_modules().erase(file_id);
            return fail(CHR_EPLUGIN_NOTSO, "%s: '%s' is not a loadable shared object: %s", who,
                        real.c_str(), why.c_str());
        }
        loaded_modules()[file_id] = module;
    }

    LoadedSegments segments;
    if (chr_status st = segments.find(module->lib.native(), real, who)) return st;
    if (!module->lib.has(CHR_PLUGIN_ENTRY_SYMBOL))
        return fail(CHR_EPLUGIN_SYMBOL, "%s: '%s' does not export %s()", who, real.c_str(),
                    CHR_PLUGIN_ENTRY_SYMBOL);
    EntryFn &entry = module->lib.get<EntryFn>(CHR_PLUGIN_ENTRY_SYMBOL);
    // dlsym also searches the plugin's dependencies: the entry point must be its own code.
    if (!segments.executable(reinterpret_cast<const void *>(&entry)))
        return fail(CHR_EPLUGIN_SYMBOL, "%s: '%s': %s() is not in the plugin's own code", who,
                    real.c_str(), CHR_PLUGIN_ENTRY_SYMBOL);

    uint32_t count = 0;
    const chr_hasher *const *table = entry(&count);
    if (!table || count == 0)
        return fail(CHR_EPLUGIN_DESC, "%s: '%s' exports no hashers", who, real.c_str());
    if (count > kMaxHashersPerPlugin)
        return fail(CHR_EPLUGIN_DESC, "%s: '%s' claims %u hashers (at most %u)", who, real.c_str(),
                    count, kMaxHashersPerPlugin);
    if (reinterpret_cast<uintptr_t>(table) % alignof(const chr_hasher *) != 0 ||
        segments.readable_from(table) < count * sizeof(const chr_hasher *))
        return fail(CHR_EPLUGIN_DESC,
                    "%s: '%s': its table of %u hashers at 0x%llx is not inside the plugin's readable "
                    "segments", who, real.c_str(), count, address_of(table));
    std::vector<const chr_hasher *> descs(table, table + count);

    std::string who_file = std::string(who) + ": " + real;
    chr_status st = register_hashers(descs, real, module, who_file.c_str(), &segments);
    if (st == CHR_OK && loaded) *loaded = count;
    return st;  // on failure `module` is the last owner: the file is unloaded here
}

chr_status load_plugin(const std::string &path, size_t *loaded, const char *who) {
    std::lock_guard<std::mutex> lock(plugin_load_mutex());
    return load_plugin_locked(path, loaded, who);
}

}  // namespace chring
