// Who may have written a plugin: the rules a file and the directories above
// it must meet before any of its code runs (chring.h, "Hashers and
// plugins"; docs/plugins.md). The same rules ld.so applies to its trusted
// directories, sudo to sudoers and PAM to its modules: owned by root or by
// this process's effective user (only root in a secure-execution process:
// setuid, setgid or raised capabilities), and writable by no one else.
#pragma once

#include <cstdint>
#include <string>

#include "chring.h"

namespace chring {

// An open plugin file that passed the rules; the descriptor is what gets
// checked and loaded, so the file cannot be swapped after the check. On
// Windows (trust_win.cpp) it is a handle that shares reading only: while
// it is open no one can write, rename or delete the file, and the loader
// maps the file by its canonical path.
struct TrustedFile {
#if defined(_WIN32)
    void *handle = nullptr;  // a HANDLE; nullptr when none
    uint64_t file_id[2] = {0, 0};  // volume serial number, file index
#else
    int fd = -1;
#endif
    std::string path;  // canonical (symbolic links resolved)
    uint64_t size = 0;
    TrustedFile() = default;
    TrustedFile(const TrustedFile &) = delete;
    TrustedFile &operator=(const TrustedFile &) = delete;
    ~TrustedFile();
#if !defined(_WIN32)
    int release();  // gives up ownership of fd
#endif
};

// Resolves `path` (relative paths against the working directory: an
// explicit load is the caller's own choice), then opens every directory
// from / down without following links and checks each: owned by root or
// the effective user (root only when AT_SECURE), not writable by group or others (an ancestor may be
// if it is sticky, like /tmp, since then no one else can rename what is in
// it; the plugin's own directory may not be, since anyone could add a
// file). Then opens the file (O_NOFOLLOW) and checks it the same way, and
// that it is a regular file.
// CHR_EPLUGIN_NOFILE: missing, unreadable, not a regular file;
// CHR_EPLUGIN_UNTRUSTED: a rule is broken (the message says which).
// Windows: the file and its directory, each owned by the user, SYSTEM,
// Administrators or TrustedInstaller, with no access list entry that lets
// anyone else write, and no link or junction (docs/windows.md).
chr_status open_trusted_plugin(const std::string &path, TrustedFile *out, const char *who);

// The same rules for a search directory (which must be absolute), before
// its entries are listed. On success `canonical` is its resolved path.
chr_status check_trusted_directory(const std::string &dir, std::string *canonical, const char *who);

}  // namespace chring
