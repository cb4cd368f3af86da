#include "private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/lock/token.hpp"
#include "core/util/error.hpp"
#include "output.hpp"

namespace redlock::cli {

namespace {

// A new file beside PATH that nobody can have planted (O_EXCL, O_NOFOLLOW), mode 0600; -1 on failure.
int create_beside(const std::string& path, std::string& tmp) {
  tmp = path + ".tmp." + std::to_string(getpid()) + "." + make_token().substr(0, 12);
  return ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

}  // namespace

void require_private_file(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  int err = 0;
  struct stat st {};
  std::string tmp;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    err = EISDIR;
  } else if (int fd = create_beside(path, tmp); fd < 0) {
    err = errno;
  } else {
    ::close(fd);
    ::unlink(tmp.c_str());
  }
  if (err) config_error(option + " '" + printable(path) + "': " + std::strerror(err));
}

int write_private_file(const std::string& path, const std::string& content) {
  std::string tmp;
  int fd = create_beside(path, tmp);
  if (fd < 0) return errno;
  bool ok =
      fchmod(fd, 0600) == 0 && ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  int err = ok ? 0 : errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) ::unlink(tmp.c_str());
  return err;
}
}  // namespace redlock::cli
