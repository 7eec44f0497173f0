#include "plugin/trust.hpp"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/errors.hpp"

namespace chring {
namespace {

struct Fd {
    int fd = -1;
    explicit Fd(int f = -1) : fd(f) {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    void reset(int f) {
        if (fd >= 0) ::close(fd);
        fd = f;
    }
};

// A setuid, setgid or capability-raised process (AT_SECURE) runs with
// privileges its caller lacks, and its effective uid may be the caller's
// (setgid): a file that uid owns is the caller's choice, so only root's
// files are trusted there, as ld.so does for such a process.
bool secure_execution() { return ::getauxval(AT_SECURE) != 0; }

bool trusted_owner(uid_t owner, bool secure) { return owner == 0 || (!secure && owner == ::geteuid()); }

// `what` is "plugin", "directory" or "search directory", `path` its name.
chr_status check_owner_and_mode(const struct stat &st, const char *what, const std::string &path,
                                bool allow_sticky, const char *who) {
    const bool secure = secure_execution();
    if (!trusted_owner(st.st_uid, secure)) {
        if (secure)
            return fail(CHR_EPLUGIN_UNTRUSTED,
                        "%s: refusing %s '%s': owned by uid %u: in a secure-execution process "
                        "(setuid, setgid or raised capabilities) only root-owned plugins and "
                        "directories are trusted", who, what, path.c_str(),
                        static_cast<unsigned>(st.st_uid));
        return fail(CHR_EPLUGIN_UNTRUSTED,
                    "%s: refusing %s '%s': owned by uid %u, not by root or the effective uid %u",
                    who, what, path.c_str(), static_cast<unsigned>(st.st_uid),
                    static_cast<unsigned>(::geteuid()));
    }
    bool writable = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (writable && !(allow_sticky && (st.st_mode & S_ISVTX)))
        return fail(CHR_EPLUGIN_UNTRUSTED,
                    "%s: refusing %s '%s': writable by %s (mode %04o)", who, what, path.c_str(),
                    (st.st_mode & S_IWOTH) ? "others" : "its group",
                    static_cast<unsigned>(st.st_mode & 07777));
    return CHR_OK;
}

// realpath(3) into a std::string; errno is kept on failure.
bool resolve(const std::string &path, std::string *out) {
    std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
    if (!real) return false;
    *out = real.get();
    return true;
}

// Opens, without following links, each directory of the absolute
// canonical `dir` from / down, checking each; returns the last one's fd
// (O_PATH) in `out`. The last is `what` and may not rely on the sticky bit.
chr_status walk_directories(const std::string &dir, const char *what, Fd *out, const char *who) {
    Fd cur(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (cur.fd < 0) return fail(CHR_EPLUGIN_NOFILE, "%s: cannot open '/': %s", who, std::strerror(errno));
    std::string so_far = "/";
    size_t pos = 1;
    for (;;) {
        bool last = pos >= dir.size();
        struct stat st;
        if (::fstat(cur.fd, &st) != 0)
            return fail(CHR_EPLUGIN_NOFILE, "%s: cannot stat '%s': %s", who, so_far.c_str(),
                        std::strerror(errno));
        if (chr_status s = check_owner_and_mode(st, last ? what : "directory", so_far, !last, who))
            return s;
        if (last) break;
        size_t end = dir.find('/', pos);
        if (end == std::string::npos) end = dir.size();
        std::string component = dir.substr(pos, end - pos);
        int next = ::openat(cur.fd, component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int err = errno;
            so_far += (so_far.size() > 1 ? "/" : "") + component;
            // ELOOP: the resolved path changed into a link since realpath().
            return fail(err == ELOOP ? CHR_EPLUGIN_UNTRUSTED : CHR_EPLUGIN_NOFILE,
                        "%s: cannot open directory '%s' without following links: %s", who,
                        so_far.c_str(), std::strerror(err));
        }
        cur.reset(next);
        so_far += (so_far.size() > 1 ? "/" : "") + component;
        pos = end + 1;
    }
    out->reset(cur.fd);
    cur.fd = -1;
    return CHR_OK;
}

}  // namespace

TrustedFile::~TrustedFile() {
    if (fd >= 0) ::close(fd);
}

int TrustedFile::release() {
    int f = fd;
    fd = -1;
    return f;
}

chr_status open_trusted_plugin(const std::string &path, TrustedFile *out, const char *who) {
    std::string real;
    if (!resolve(path, &real)) {
        int err = errno;
        if (err == ENOENT || err == ENOTDIR)
            return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' does not exist", who, path.c_str());
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not readable: %s", who, path.c_str(),
                    std::strerror(err));
    }
    size_t slash = real.rfind('/');
    std::string dir = slash == 0 ? "/" : real.substr(0, slash);
    std::string name = real.substr(slash + 1);
    if (name.empty())  // the root directory itself
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not a regular file", who, path.c_str());

    Fd dir_fd;
    if (chr_status st = walk_directories(dir, "plugin directory", &dir_fd, who)) return st;
    // O_PATH directory fds serve as openat() bases. O_NONBLOCK: a FIFO put
    // in place of the file must not hang the open.
    int fd = ::openat(dir_fd.fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT)
            return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' does not exist", who, path.c_str());
        if (err == ELOOP)
            return fail(CHR_EPLUGIN_UNTRUSTED, "%s: plugin '%s' became a symbolic link while it was checked",
                        who, real.c_str());
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not readable: %s", who, path.c_str(),
                    std::strerror(err));
    }
    TrustedFile file;
    file.fd = fd;
    struct stat st;
    if (::fstat(fd, &st) != 0)
        return fail(CHR_EPLUGIN_NOFILE, "%s: cannot stat plugin '%s': %s", who, real.c_str(),
                    std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not a regular file", who, path.c_str());
    if (chr_status s = check_owner_and_mode(st, "plugin", real, false, who)) return s;
    // Back to blocking reads for the ELF checks.
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    out->path = std::move(real);
    out->size = static_cast<uint64_t>(st.st_size);
    out->fd = file.release();
    return CHR_OK;
}

chr_status check_trusted_directory(const std::string &dir, std::string *canonical, const char *who) {
    if (dir.empty() || dir[0] != '/')
        return fail(CHR_EPLUGIN_UNTRUSTED,
                    "%s: refusing plugin search directory '%s': not an absolute path", who, dir.c_str());
    std::string real;
    if (!resolve(dir, &real))
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin search directory '%s': %s", who, dir.c_str(),
                    std::strerror(errno));
    Fd fd;
    if (chr_status st = walk_directories(real, "plugin directory", &fd, who)) return st;
    *canonical = std::move(real);
    return CHR_OK;
}

}  // namespace chring
