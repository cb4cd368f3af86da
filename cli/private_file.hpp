// Files that carry a token (--token-file, --report): mode 0600 from the first byte, never written
// through a link someone planted.
#pragma once

#include <string>

namespace redlock::cli {

// Writes CONTENT to PATH, mode 0600 from the first byte whatever the umask: a new temporary file
// of a name nobody can guess in the same directory (O_EXCL: no file or link planted there is
// followed), renamed over PATH. Only a regular file or a symbolic link (not followed) is replaced:
// where PATH is anything else (a device, a pipe, a socket, a directory), nothing is written.
// Returns what failed, in a message that names OPTION, or "" when written.
std::string write_private_file(const std::string& path, const std::string& content, const std::string& option);
// That write_private_file(PATH) can work, found out before a lock is taken for nothing: makes and
// removes such a temporary file, and PATH must be one it may replace. Else a configuration
// error that names OPTION. Nothing to check when PATH is empty.
void require_private_file(const std::string& path, const std::string& option);

}  // namespace redlock::cli
