#include "file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(_WIN32)
#include <io.h>
#include <windows.h>
#else
#include <dirent.h>
#include <sys/file.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ring_handle.hpp"

namespace chring::cli {

namespace {

#if defined(_WIN32)
// Binary mode: no CRLF translation, the bytes as they are on disk.
constexpr int kOpenFlags = O_RDONLY | O_BINARY;
#else
constexpr int kOpenFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
#endif

// A temporary file of a write to BASE is ".BASE" + kTempMark + mkstemp's
// six letters or digits: a mark no user file is likely to carry, since
// leftovers matching it are deleted.
constexpr const char *kTempMark = ".chring-";
constexpr size_t kTempRandom = 6;

#if !defined(_WIN32)
bool is_temp_name(const char *name, const std::string &base) {
    const size_t mark = std::strlen(kTempMark), n = std::strlen(name);
    if (n != 1 + base.size() + mark + kTempRandom || name[0] != '.' ||
        base.compare(0, base.size(), name + 1, base.size()) != 0 ||
        std::strncmp(name + 1 + base.size(), kTempMark, mark) != 0)
        return false;
    for (const char *c = name + n - kTempRandom; *c; ++c)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z'))) return false;
    return true;
}

// Deletes the temporary files that writers of BASE in `dir` left when they
// died mid-write (SIGKILL, SIGXFSZ, a crash): nothing else ever would. A
// live writer holds an exclusive flock on its file from creation until it
// is renamed, so a file whose lock can be taken has no writer left. Only
// regular files of this user; whatever fails leaves the file where it is.
void remove_dead_writers_temps(const std::string &dir, const std::string &base) {
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return;
    DIR *d = ::fdopendir(dir_fd);
    if (!d) {
        ::close(dir_fd);
        return;
    }
    while (const dirent *e = ::readdir(d)) {
        if (!is_temp_name(e->d_name, base)) continue;
        int fd = ::openat(dir_fd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat by_fd, by_name;
        // Still the file opened (not a new writer's under a reused name) when unlinked.
        if (::fstat(fd, &by_fd) == 0 && S_ISREG(by_fd.st_mode) && by_fd.st_uid == ::geteuid() &&
            ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
            ::fstatat(dir_fd, e->d_name, &by_name, AT_SYMLINK_NOFOLLOW) == 0 &&
            by_name.st_dev == by_fd.st_dev && by_name.st_ino == by_fd.st_ino)
            ::unlinkat(dir_fd, e->d_name, 0);
        ::close(fd);
    }
    ::closedir(d);
}

// A new temporary file for BASE, locked (see remove_dead_writers_temps);
// -1 with errno set on failure.
int create_locked_temp(std::string &temp) {
    const std::string pattern = temp;
    for (int attempt = 0; attempt < 100; ++attempt) {
        temp = pattern;
        int fd = ::mkostemp(temp.data(), O_CLOEXEC);
        if (fd < 0) return -1;
        struct stat st;
        // Blocking: another writer's cleanup holds the lock only to unlink the
        // file, which it can do between mkostemp and this flock; then try anew.
        if (::flock(fd, LOCK_EX) == 0 && ::fstat(fd, &st) == 0 && st.st_nlink > 0) return fd;
        ::close(fd);
    }
    errno = EAGAIN;
    return -1;
}
#endif

}  // namespace

std::string input_name(const std::string &path) { return path == "-" ? "<stdin>" : path; }

std::string read_input(const std::string &path, const InputLimits &limits, size_t *cut_line) {
    const std::string name = input_name(path);
    const std::string max = std::to_string(limits.file_max);
    if (cut_line) *cut_line = 0;
    int fd = STDIN_FILENO;
    if (path != "-") {
        do fd = ::open(path.c_str(), kOpenFlags);
        while (fd < 0 && errno == EINTR);
        if (fd < 0) throw CliError(name + ": cannot open the " + limits.what + ": " + std::strerror(errno));
    }
    struct Closer {
        int fd;
        ~Closer() {
            if (fd != STDIN_FILENO) ::close(fd);
        }
    } closer{fd};
    struct stat st;
    if (::fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw CliError(name + ": is a directory, not a " + limits.what);
        if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > limits.file_max)
            throw CliError(name + ": is " + std::to_string(st.st_size) + " bytes (limit " + max + ")");
    }
    std::string text;
    size_t line_start = 0;  // where the last line so far starts
    for (;;) {
        const size_t have = text.size();
        text.resize(have + std::min<size_t>(64 << 10, limits.file_max + 1 - have));  // grows geometrically
        ssize_t got = ::read(fd, &text[have], text.size() - have);
        if (got < 0 && errno == EINTR) {
            text.resize(have);
            continue;
        }
        if (got < 0) throw CliError(name + ": read error: " + std::strerror(errno));
        text.resize(have + size_t(got));
        if (got == 0) break;
        // Every line of the chunk, not only its last: where the read stops
        // must not depend on how the input arrived in chunks.
        bool cut = false;
        for (size_t from = have; limits.line_max && !cut;) {
            const void *nl = std::memchr(text.data() + from, '\n', text.size() - from);
            const size_t end = nl ? size_t(static_cast<const char *>(nl) - text.data()) : text.size();
            if (end - line_start > limits.line_max + 1) {  // + 1: a CR before the LF
                text.resize(line_start + limits.line_max + 2);
                if (cut_line) *cut_line = 1 + size_t(std::count(text.begin(), text.begin() + long(line_start), '\n'));
                cut = true;
            } else if (nl) {
                line_start = from = end + 1;
            } else {
                break;
            }
        }
        if (text.size() > limits.file_max)
            throw CliError(name + ": is more than " + max + " bytes (the limit for a " + limits.what + ")");
        if (cut || (limits.stop_at_nul && std::memchr(text.data() + have, '\0', text.size() - have))) break;
    }
    return text;
}

void write_file_atomically(const std::string &path, std::string_view data, const char *what) {
    auto failure = [&](const std::string &why) { return CliError(path + ": cannot write the " + what + ": " + why); };
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty() || base == "." || base == "..") throw failure("the path names a directory");
    mode_t mode;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw failure("it is a directory");
        mode = st.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    std::string temp = path.substr(0, slash == std::string::npos ? 0 : slash + 1) + "." + base + kTempMark +
                       std::string(kTempRandom, 'X');
#if defined(_WIN32)
    int fd = ::mkstemp(temp.data());
    if (fd >= 0) ::_setmode(fd, O_BINARY);
#else
    remove_dead_writers_temps(dir, base);
    int fd = create_locked_temp(temp);
#endif
    if (fd < 0) throw failure(std::strerror(errno));
    struct Temp {  // removed unless renamed into place
        const std::string &name;
        int fd;
        bool done = false;
        ~Temp() {
            if (!done) ::unlink(name.c_str());  // before close: while it is still ours, locked
            if (fd >= 0) ::close(fd);
        }
    } guard{temp, fd};
    for (size_t off = 0; off < data.size();) {
        ssize_t wrote = ::write(fd, data.data() + off, data.size() - off);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote < 0) throw failure(std::strerror(errno));
        off += size_t(wrote);
    }
#if defined(_WIN32)
    // Windows: no mode bits to copy (the new file gets its directory's
    // access list), _commit is fsync, and rename() refuses an existing
    // target, MoveFileEx replaces it (write-through: on disk when it returns).
    (void)mode;
    if (::_commit(fd) != 0) throw failure(std::strerror(errno));
    guard.fd = -1;
    if (::close(fd) != 0) throw failure(std::strerror(errno));
    if (!::MoveFileExA(temp.c_str(), path.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
        throw failure("cannot replace it (Windows error " + std::to_string(::GetLastError()) + ")");
    guard.done = true;
    (void)dir;
#else
    if (::fchmod(fd, mode) != 0 || ::fsync(fd) != 0) throw failure(std::strerror(errno));
    // Renamed while still open, so still locked: unlocked under its
    // temporary name, another writer would take it for a dead writer's.
    if (::rename(temp.c_str(), path.c_str()) != 0) throw failure(std::strerror(errno));
    guard.done = true;
    guard.fd = -1;
    ::close(fd);  // fsync has reported any write error
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {  // the rename itself on disk; a directory that cannot be opened still has it
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
#endif
}

}  // namespace chring::cli
