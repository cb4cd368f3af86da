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

const char* kind_of(const struct stat& st, bool link) {
  if (S_ISDIR(st.st_mode)) return link ? "a link to a directory" : "a directory";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return link ? "a link to a device" : "a device";
  if (S_ISFIFO(st.st_mode)) return link ? "a link to a pipe" : "a pipe";
  return link ? "a link to something not a regular file" : "not a regular file";
}

// Whether the symbolic link PATH names a file of the system's own: one under /dev or /proc
// (/dev/stdout names /proc/self/fd/1, whatever standard output is).
bool names_system_file(const std::string& path) {
  char target[4096];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0) return false;
  const std::string_view t(target, static_cast<std::size_t>(n));
  return t.starts_with("/proc/") || t.starts_with("/dev/") || path.starts_with("/dev/") || path.starts_with("/proc/");
}

// What is at PATH when it is something a file of ours must not replace (a device, a pipe, a socket,
// a directory: renamed over, it would be gone), or a symbolic link to one, or to a file of the
// system's own; nullptr when PATH is a regular file, nothing, or a symbolic link to a regular file or
// to nothing (replaced, never followed: the file it names stays as it is).
const char* not_replaceable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return nullptr;
  if (!S_ISLNK(st.st_mode)) return kind_of(st, false);
  if (names_system_file(path)) return "a link into /dev or /proc";
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0 || S_ISREG(target.st_mode)) return nullptr;
  return kind_of(target, true);
}

std::string refusal(const std::string& option, const std::string& path, const char* what) {
  return option + " '" + printable(path) + "' is " + what + "; only a regular file is replaced";
}

}  // namespace

void require_private_file(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  if (const char* what = not_replaceable(path)) config_error(refusal(option, path, what));
  std::string tmp;
  if (int fd = create_beside(path, tmp); fd < 0) {
    config_error(option + " '" + printable(path) + "': " + std::strerror(errno));
  } else {
    ::close(fd);
    ::unlink(tmp.c_str());
  }
}

std::string write_private_file(const std::string& path, const std::string& content, const std::string& option) {
  // Checked before, and again here: what appeared there since is left alone too.
  if (const char* what = not_replaceable(path)) return refusal(option, path, what);
  std::string tmp;
  int fd = create_beside(path, tmp);
  bool ok = fd >= 0 && fchmod(fd, 0600) == 0 &&
            ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  int err = ok ? 0 : errno;
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (fd >= 0 && !ok) ::unlink(tmp.c_str());
  return ok ? "" : option + " '" + printable(path) + "': " + std::strerror(err);
}
}  // namespace redlock::cli
