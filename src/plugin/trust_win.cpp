// The trust rules of trust.hpp on Windows (docs/windows.md, "Which plugin
// files are trusted"): Windows has no mode bits, so "owned by root or the
// effective user, writable by no one else" reads as: the owner is this
// process's user, SYSTEM, Administrators or TrustedInstaller, and no entry
// of the access list that applies to the object lets another account
// write, append, delete, or change its owner or access list. Checked for
// the file and the directory holding it; the directories above are not
// (on Windows any user may create folders in C:\, and the right to add a
// file is per directory). A volume that keeps no access lists (FAT, exFAT)
// has nothing to check: there the file passes the other checks only.
#include "plugin/trust.hpp"

#include <aclapi.h>
#include <sddl.h>
#include <windows.h>

#include <cwctype>
#include <memory>
#include <vector>

#include "base/errors.hpp"
#include "plugin/win_path.hpp"

namespace chring {
namespace {

struct Handle {
    HANDLE h = INVALID_HANDLE_VALUE;
    explicit Handle(HANDLE x) : h(x) {}
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    ~Handle() {
        if (h != INVALID_HANDLE_VALUE) ::CloseHandle(h);
    }
    bool ok() const { return h != INVALID_HANDLE_VALUE; }
};

// This process's user, from its token; empty on failure.
std::vector<unsigned char> process_user_sid() {
    HANDLE token = nullptr;
    std::vector<unsigned char> sid;
    if (!::OpenProcessToken(::GetCurrentProcess(), TOKEN_QUERY, &token)) return sid;
    DWORD size = 0;
    ::GetTokenInformation(token, TokenUser, nullptr, 0, &size);
    std::vector<unsigned char> buf(size ? size : 1);
    if (size && ::GetTokenInformation(token, TokenUser, buf.data(), size, &size)) {
        PSID user = reinterpret_cast<TOKEN_USER *>(buf.data())->User.Sid;
        sid.assign(static_cast<unsigned char *>(user),
                   static_cast<unsigned char *>(user) + ::GetLengthSid(user));
    }
    ::CloseHandle(token);
    return sid;
}

// NT SERVICE\TrustedInstaller, which owns Windows' own files.
constexpr const char *kTrustedInstaller = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464";

bool well_known(PSID sid, WELL_KNOWN_SID_TYPE type) { return ::IsWellKnownSid(sid, type) != FALSE; }

bool trusted_sid(PSID sid) {
    static const std::vector<unsigned char> user = process_user_sid();
    if (!user.empty() && ::EqualSid(sid, const_cast<unsigned char *>(user.data()))) return true;
    if (well_known(sid, WinLocalSystemSid) || well_known(sid, WinBuiltinAdministratorsSid)) return true;
    PSID ti = nullptr;
    bool is_ti = false;
    if (::ConvertStringSidToSidA(kTrustedInstaller, &ti)) {
        is_ti = ::EqualSid(sid, ti) != FALSE;
        ::LocalFree(ti);
    }
    return is_ti;
}

std::string sid_text(PSID sid) {
    char *text = nullptr;
    if (!::ConvertSidToStringSidA(sid, &text) || !text) return "an unknown account";
    std::string out = text;
    ::LocalFree(text);
    return out;
}

// Rights that let an account change what the object holds or who may.
constexpr ACCESS_MASK kWriteRights = FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA |
                                     FILE_DELETE_CHILD | DELETE | WRITE_DAC | WRITE_OWNER |
                                     GENERIC_WRITE | GENERIC_ALL;

// Whether the volume holding `h` keeps access lists at all.
bool volume_has_acls(HANDLE h) {
    DWORD flags = 0;
    if (!::GetVolumeInformationByHandleW(h, nullptr, 0, nullptr, nullptr, &flags, nullptr, 0))
        return true;  // unknown: check what GetSecurityInfo says
    return (flags & FILE_PERSISTENT_ACLS) != 0;
}

// `what` is "plugin" or "plugin directory", `path` its name.
chr_status check_owner_and_acl(HANDLE h, const char *what, const std::string &path, const char *who) {
    if (!volume_has_acls(h)) return CHR_OK;
    PSID owner = nullptr;
    PACL dacl = nullptr;
    PSECURITY_DESCRIPTOR sd = nullptr;
    DWORD err = ::GetSecurityInfo(h, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                                  &owner, nullptr, &dacl, nullptr, &sd);
    if (err == ERROR_NOT_SUPPORTED || err == ERROR_INVALID_FUNCTION) return CHR_OK;  // no ACLs to read
    if (err != ERROR_SUCCESS)
        return fail(CHR_EPLUGIN_UNTRUSTED, "%s: refusing %s '%s': cannot read its owner and access list: %s",
                    who, what, path.c_str(), win::error_text(err).c_str());
    std::unique_ptr<void, decltype(&::LocalFree)> keep(sd, &::LocalFree);
    if (owner && !trusted_sid(owner))
        return fail(CHR_EPLUGIN_UNTRUSTED,
                    "%s: refusing %s '%s': owned by %s, not by this user, SYSTEM or Administrators", who,
                    what, path.c_str(), sid_text(owner).c_str());
    if (!dacl)  // a null access list grants everyone everything
        return fail(CHR_EPLUGIN_UNTRUSTED, "%s: refusing %s '%s': it has no access list (anyone may write it)",
                    who, what, path.c_str());
    for (DWORD i = 0; i < dacl->AceCount; ++i) {
        ACE_HEADER *ace = nullptr;
        if (!::GetAce(dacl, i, reinterpret_cast<void **>(&ace)) || !ace) continue;
        if (ace->AceType != ACCESS_ALLOWED_ACE_TYPE || (ace->AceFlags & INHERIT_ONLY_ACE)) continue;
        auto *allowed = reinterpret_cast<ACCESS_ALLOWED_ACE *>(ace);
        PSID sid = reinterpret_cast<PSID>(&allowed->SidStart);
        if ((allowed->Mask & kWriteRights) && !trusted_sid(sid) && !(owner && ::EqualSid(sid, owner)))
            return fail(CHR_EPLUGIN_UNTRUSTED,
                        "%s: refusing %s '%s': writable by %s (access mask 0x%lx)", who, what,
                        path.c_str(), sid_text(sid).c_str(), static_cast<unsigned long>(allowed->Mask));
    }
    return CHR_OK;
}

bool absolute(const std::wstring &p) {
    if (p.size() >= 3 && std::iswalpha(p[0]) && p[1] == L':' && (p[2] == L'\\' || p[2] == L'/'))
        return true;
    return p.size() >= 2 && (p[0] == L'\\' || p[0] == L'/') && (p[1] == L'\\' || p[1] == L'/');
}

std::wstring full_path(const std::wstring &p) {
    DWORD n = ::GetFullPathNameW(p.c_str(), 0, nullptr, nullptr);
    if (n == 0) return std::wstring();
    std::wstring buf(n, L'\0');
    n = ::GetFullPathNameW(p.c_str(), n, &buf[0], nullptr);
    buf.resize(n);
    return buf;
}

bool missing(DWORD err) {
    return err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND || err == ERROR_INVALID_NAME ||
           err == ERROR_BAD_NETPATH || err == ERROR_DIRECTORY;
}

// Opens and checks the directory `dir` (a canonical path).
chr_status check_directory(const std::wstring &dir, std::string *canonical, const char *who) {
    Handle d(::CreateFileW(dir.c_str(), READ_CONTROL | FILE_READ_ATTRIBUTES,
                           FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                           FILE_FLAG_BACKUP_SEMANTICS, nullptr));
    std::string name = win::narrow(dir);
    if (!d.ok())
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin directory '%s': %s", who, name.c_str(),
                    win::error_text(::GetLastError()).c_str());
    BY_HANDLE_FILE_INFORMATION info;
    if (!::GetFileInformationByHandle(d.h, &info) || !(info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY))
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin directory '%s' is not a directory", who, name.c_str());
    std::wstring real = win::final_path(d.h);
    if (real.empty()) real = dir;
    if (canonical) *canonical = win::narrow(real);
    return check_owner_and_acl(d.h, "plugin directory", win::narrow(real), who);
}

}  // namespace

TrustedFile::~TrustedFile() {
    if (handle) ::CloseHandle(static_cast<HANDLE>(handle));
}

chr_status open_trusted_plugin(const std::string &path, TrustedFile *out, const char *who) {
    std::wstring wide;
    if (!win::widen(path, &wide) || wide.empty())
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not a valid UTF-8 path", who, path.c_str());
    std::wstring full = full_path(wide);
    if (full.empty())
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' does not exist", who, path.c_str());
    // Share reading only: from here until the handle closes no one can
    // open the file for writing, rename it or delete it. The reparse point
    // itself is opened, so a link is seen as one.
    HANDLE h = ::CreateFileW(full.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING,
                             FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS, nullptr);
    if (h == INVALID_HANDLE_VALUE) {
        DWORD err = ::GetLastError();
        if (missing(err))
            return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' does not exist", who, path.c_str());
        if (err == ERROR_SHARING_VIOLATION)
            return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is open for writing elsewhere", who,
                        path.c_str());
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not readable: %s", who, path.c_str(),
                    win::error_text(err).c_str());
    }
    TrustedFile file;
    file.handle = h;
    BY_HANDLE_FILE_INFORMATION info;
    if (!::GetFileInformationByHandle(h, &info))
        return fail(CHR_EPLUGIN_NOFILE, "%s: cannot read the attributes of plugin '%s': %s", who,
                    path.c_str(), win::error_text(::GetLastError()).c_str());
    if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        return fail(CHR_EPLUGIN_UNTRUSTED, "%s: refusing plugin '%s': it is a symbolic link or junction",
                    who, path.c_str());
    if ((info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) || ::GetFileType(h) != FILE_TYPE_DISK)
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not a regular file", who, path.c_str());

    std::wstring real = win::final_path(h);
    if (real.empty()) real = full;
    size_t slash = real.find_last_of(L"\\/");
    if (slash == std::wstring::npos)
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin '%s' is not a regular file", who, path.c_str());
    std::wstring dir = real.substr(0, slash);
    if (dir.size() == 2 && dir[1] == L':') dir += L'\\';  // a drive's root
    if (chr_status st = check_directory(dir, nullptr, who)) return st;
    std::string real_utf8 = win::narrow(real);
    if (chr_status st = check_owner_and_acl(h, "plugin", real_utf8, who)) return st;

    out->path = std::move(real_utf8);
    out->size = (static_cast<uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
    out->file_id[0] = info.dwVolumeSerialNumber;
    out->file_id[1] = (static_cast<uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
    out->handle = file.handle;
    file.handle = nullptr;
    return CHR_OK;
}

chr_status check_trusted_directory(const std::string &dir, std::string *canonical, const char *who) {
    std::wstring wide;
    if (!win::widen(dir, &wide) || !absolute(wide))
        return fail(CHR_EPLUGIN_UNTRUSTED,
                    "%s: refusing plugin search directory '%s': not an absolute path", who, dir.c_str());
    Handle probe(::CreateFileW(wide.c_str(), FILE_READ_ATTRIBUTES,
                               FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                               OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr));
    if (!probe.ok()) {
        DWORD err = ::GetLastError();
        return fail(CHR_EPLUGIN_NOFILE, "%s: plugin search directory '%s': %s", who, dir.c_str(),
                    missing(err) ? "does not exist" : win::error_text(err).c_str());
    }
    std::wstring real = win::final_path(probe.h);
    return check_directory(real.empty() ? full_path(wide) : real, canonical, who);
}

}  // namespace chring
