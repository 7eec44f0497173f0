// Replacing a file so that a reader sees the old bytes or the new ones,
// never a mix or a truncated file, even if the writer is killed midway.
#pragma once

#include <string>
#include <string_view>

namespace chring::cli::etcd {

// The temporary file write_file_atomically uses for `path`:
// ".NAME.chring-tmp" in the same directory (one writer per file).
std::string temporary_path(const std::string &path);

// Writes `data` to the temporary file (created 0666 & ~umask, truncated if a
// killed writer left one), fsyncs it, renames it over `path` and fsyncs the
// directory. Throws CliError naming the step and errno; on failure `path`
// is untouched and the temporary file removed.
void write_file_atomically(const std::string &path, std::string_view data);

}  // namespace chring::cli::etcd
