// Who may have written a plugin: the rules a file and the directories above
// it must meet before any of its code runs (chring.h, "Hashers and
// plugins"; docs/plugins.md). The same rules ld.so applies to its trusted
// directories, sudo to sudoers and PAM to its modules: owned by root or by
// this process's effective user, and writable by no one else.
#pragma once

#include <cstdint>
#include <string>

#include "chring.h"

namespace chring {

// An open plugin file that passed the rules; the descriptor is what gets
// checked and loaded, so the file cannot be swapped after the check.
struct TrustedFile {
    int fd = -1;
    std::string path;  // canonical (symbolic links resolved)
    uint64_t size = 0;
    TrustedFile() = default;
    TrustedFile(const TrustedFile &) = delete;
    TrustedFile &operator=(const TrustedFile &) = delete;
    ~TrustedFile();
    int release();  // gives up ownership of fd
};

// Resolves `path` (relative paths against the working directory: an
// explicit load is the caller's own choice), then opens every directory
// from / down without following links and checks each: owned by root or
// the effective user, not writable by group or others (an ancestor may be
// if it is sticky, like /tmp, since then no one else can rename what is in
// it; the plugin's own directory may not be, since anyone could add a
// file). Then opens the file (O_NOFOLLOW) and checks it the same way, and
// that it is a regular file.
// CHR_EPLUGIN_NOFILE: missing, unreadable, not a regular file;
// CHR_EPLUGIN_UNTRUSTED: a rule is broken (the message says which).
chr_status open_trusted_plugin(const std::string &path, TrustedFile *out, const char *who);

// The same rules for a search directory (which must be absolute), before
// its entries are listed. On success `canonical` is its resolved path.
chr_status check_trusted_directory(const std::string &dir, std::string *canonical, const char *who);

}  // namespace chring
