// The files the user names: reading a whole input (a ring file or a key
// file, from a path or standard input "-") never past a documented size,
// and replacing an output file atomically.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace chring::cli {

// What an input may be. Past file_max bytes the read fails with the name;
// a stop rule ends the read early where what follows cannot help (the
// caller's parser then reports the problem with its line).
struct InputLimits {
    const char *what;         // "ring file", "key file": named in messages
    size_t file_max;          // bytes in the whole input
    bool stop_at_nul = false;  // a NUL byte: the rest need not be read
    // A line of more than line_max + 1 bytes (without its LF; + 1 for a CR):
    // the read stops there, the text ending with line_max + 2 bytes of it.
    // 0 = no rule.
    size_t line_max = 0;
};

// The name an input has in messages: the path, or "<stdin>" for "-".
std::string input_name(const std::string &path);

// Reads all of `path` ("-" = standard input). Regular files, FIFOs,
// devices and process substitutions are read alike, in bounded chunks.
// Throws CliError "NAME: ..." when it cannot be opened, is a directory, is
// larger than limits.file_max or fails to read. *cut_line (if given): the
// 1-based line the line_max rule stopped in, else 0.
std::string read_input(const std::string &path, const InputLimits &limits, size_t *cut_line = nullptr);

// Replaces `path` with `data` so that a reader sees the old file or the
// new one, never part of it: a temporary file in the same directory
// (".NAME.chring-XXXXXX", flock'ed until renamed), written, fsync'ed,
// renamed over `path`, then the directory fsync'ed. The file keeps the old
// one's permissions, or gets 0666 less the umask. On failure the temporary
// file is removed and `path` is unchanged; throws CliError "PATH: cannot
// write the <what>: <reason>". First deletes the temporary files of
// writers of `path` that died mid-write (those no one holds locked); the
// one helper that writes a file atomically.
void write_file_atomically(const std::string &path, std::string_view data, const char *what);

}  // namespace chring::cli
