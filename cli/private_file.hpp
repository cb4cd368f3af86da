// Files that carry a token (--token-file, --report): mode 0600 from the first byte, never written
// through a link someone planted.
#pragma once

#include <string>

namespace redlock::cli {

// Writes CONTENT to PATH, mode 0600 from the first byte whatever the umask: a new temporary file
// of a name nobody can guess in the same directory (O_EXCL: no file or link planted there is
// followed), renamed over PATH. Returns 0, or the errno of what failed.
int write_private_file(const std::string& path, const std::string& content);
// That write_private_file(PATH) can work, found out before a lock is taken for nothing: makes and
// removes such a temporary file, and PATH must not be a directory. Else a configuration error
// that names OPTION. Nothing to check when PATH is empty.
void require_private_file(const std::string& path, const std::string& option);

}  // namespace redlock::cli
