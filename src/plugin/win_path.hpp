// Windows only: paths cross the C API as UTF-8 and Windows' own functions
// take UTF-16; these convert, and strip the \\?\ prefix that
// GetFinalPathNameByHandleW puts on a canonical name.
#pragma once

#if defined(_WIN32)

#include <windows.h>

#include <string>

namespace chring {
namespace win {

// UTF-8 to UTF-16; false on invalid UTF-8.
inline bool widen(const std::string &in, std::wstring *out) {
    out->clear();
    if (in.empty()) return true;
    int n = ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, in.data(), static_cast<int>(in.size()),
                                  nullptr, 0);
    if (n <= 0) return false;
    out->resize(static_cast<size_t>(n));
    return ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, in.data(), static_cast<int>(in.size()),
                                 &(*out)[0], n) == n;
}

inline std::string narrow(const std::wstring &in) {
    if (in.empty()) return std::string();
    int n = ::WideCharToMultiByte(CP_UTF8, 0, in.data(), static_cast<int>(in.size()), nullptr, 0,
                                  nullptr, nullptr);
    if (n <= 0) return std::string();
    std::string out(static_cast<size_t>(n), '\0');
    ::WideCharToMultiByte(CP_UTF8, 0, in.data(), static_cast<int>(in.size()), &out[0], n, nullptr,
                          nullptr);
    return out;
}

// The canonical name of an open file or directory (links resolved), as a
// plain drive path ("C:\dir\file") when it has one; empty on failure.
inline std::wstring final_path(HANDLE h) {
    std::wstring buf(MAX_PATH, L'\0');
    for (int tries = 0; tries < 2; ++tries) {
        DWORD n = ::GetFinalPathNameByHandleW(h, &buf[0], static_cast<DWORD>(buf.size()),
                                              FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
        if (n == 0) return std::wstring();
        if (n < buf.size()) {
            buf.resize(n);
            if (buf.compare(0, 8, L"\\\\?\\UNC\\") == 0) return L"\\\\" + buf.substr(8);
            if (buf.compare(0, 4, L"\\\\?\\") == 0) return buf.substr(4);
            return buf;
        }
        buf.assign(n + 1, L'\0');
    }
    return std::wstring();
}

// The text of a Windows error code, one line.
inline std::string error_text(DWORD code) {
    wchar_t *text = nullptr;
    DWORD n = ::FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM |
                                   FORMAT_MESSAGE_IGNORE_INSERTS,
                               nullptr, code, 0, reinterpret_cast<wchar_t *>(&text), 0, nullptr);
    std::string out;
    if (n && text) out = narrow(std::wstring(text, n));
    if (text) ::LocalFree(text);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == '.'))
        out.pop_back();
    if (out.empty()) out = "Windows error " + std::to_string(code);
    return out;
}

}  // namespace win
}  // namespace chring

#endif
