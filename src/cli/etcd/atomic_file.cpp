#include "atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "../ring_handle.hpp"

namespace chring::cli::etcd {

namespace {

[[noreturn]] void fail(const std::string &what, int err) {
    throw CliError(what + ": " + std::strerror(err));
}

std::string directory_of(const std::string &path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

}  // namespace

std::string temporary_path(const std::string &path) {
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + "." + name + ".chring-tmp";
}

void write_file_atomically(const std::string &path, std::string_view data) {
    if (path.empty() || path.back() == '/') throw CliError("'" + path + "' is not a file name");
    const std::string tmp = temporary_path(path);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) fail("cannot create " + tmp, errno);
    auto abandon = [&](const std::string &what, int err) {
        ::close(fd);
        ::unlink(tmp.c_str());
        fail(what, err);
    };
    size_t done = 0;
    while (done < data.size()) {
        ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) abandon("cannot write " + tmp, errno);
        done += size_t(n);
    }
    if (::fsync(fd) != 0) abandon("cannot fsync " + tmp, errno);
    if (::close(fd) != 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        fail("cannot close " + tmp, err);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        fail("cannot rename " + tmp + " to " + path, err);
    }
    // The rename is durable once the directory is.
    const std::string dir = directory_of(path);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) fail("cannot open the directory " + dir + " to fsync it", errno);
    int rc = ::fsync(dfd);
    int err = errno;
    ::close(dfd);
    if (rc != 0 && err != EINVAL) fail("cannot fsync the directory " + dir, err);
}

}  // namespace chring::cli::etcd
