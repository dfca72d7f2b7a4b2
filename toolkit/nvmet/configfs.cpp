// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/nvmet/configfs.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "toolkit/common/topology.hpp"

namespace mpnvme::toolkit {

std::string nvmet_root = "/sys/kernel/config/nvmet";

// What an errno means when nvmet's configfs returns it.
static std::string explain(const std::string &path, int err) {
  const bool port_attr = path.find("/ports/") != std::string::npos &&
                         (path.find("/addr_") != std::string::npos || path.find("/param_") != std::string::npos);
  switch (err) {
  case EBUSY:
    if (path.find("/namespaces/") != std::string::npos)
      return "the namespace is enabled: write 0 to its enable file before changing it";
    return "in use";
  case EACCES:
    if (port_attr)
      return "the port is enabled (a subsystem is linked to it): unlink its subsystems before changing addr_* or param_*";
    return "permission denied (root is needed)";
  case EADDRINUSE: return "another port or program already listens on this address and port";
  case EINVAL:
    if (path.find("addr_trtype") != std::string::npos)
      return "the kernel's nvmet does not know this transport type; mptcp needs a kernel with the NVMe-over-MPTCP series";
    if (path.find("/serial") != std::string::npos || path.find("/model") != std::string::npos)
      return "serial and model cannot change once a host identified the subsystem";
    return "the kernel refused the value";
  case ENOENT:
    if (path.size() > 7 && path.compare(path.size() - 7, 7, "/enable") == 0) return "the namespace's device_path does not exist";
    return "no such object (is nvmet loaded and configfs mounted?)";
  case EEXIST: return "already exists";
  case ENOTEMPTY: return "not empty: remove what it contains first";
  case ENODEV: return "no such device";
  case EPERM: return "not permitted (root is needed)";
  default: return "";
  }
}

void configfs_error(const std::string &path, const std::string &what, int err) {
  const std::string e = explain(path, err);
  throw std::runtime_error(fmt::format("{}: {}: {}{}", path, what, strerror(err), e.empty() ? "" : " (" + e + ")"));
}

bool exists(const std::string &path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

std::string read_attr(const std::string &path) { return read_first_line(path); }

std::vector<std::string> list_dir(const std::string &path) {
  std::vector<std::string> out;
  DIR *d = opendir(path.c_str());
  if (!d) return out;
  while (dirent *e = readdir(d))
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

void Journal::mkdir(const std::string &path) {
  if (exists(path)) return;
  if (::mkdir(path.c_str(), 0755) < 0) configfs_error(path, "mkdir", errno);
  undo_.push_back([path] { remove_dir(path, false); });
}

void write_attr(const std::string &path, const std::string &value, bool secret) {
  // A key's value never goes into a message.
  const std::string shown = secret ? "(a secret)" : "'" + value + "'";
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) configfs_error(path, fmt::format("open to write {}", shown), errno);
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n < 0) configfs_error(path, fmt::format("write {}", shown), err);
}

void Journal::write(const std::string &path, const std::string &value, bool secret) {
  const std::string old = read_attr(path);
  write_attr(path, value, secret);
  if (!old.empty() && old != value) undo_.push_back([path, old, secret] { write_attr(path, old, secret); });
}

void Journal::symlink(const std::string &target, const std::string &link) {
  if (exists(link)) return;
  if (::symlink(target.c_str(), link.c_str()) < 0) configfs_error(link, fmt::format("link to {}", target), errno);
  undo_.push_back([link] { remove_link(link, false); });
}

void Journal::rollback() noexcept {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) {
    try {
      (*it)();
    } catch (...) { // best effort: keep undoing the rest
    }
  }
  undo_.clear();
}

void remove_dir(const std::string &path, bool strict) {
  if (::rmdir(path.c_str()) < 0 && strict && errno != ENOENT) configfs_error(path, "rmdir", errno);
}

void remove_link(const std::string &path, bool strict) {
  if (::unlink(path.c_str()) < 0 && strict && errno != ENOENT) configfs_error(path, "unlink", errno);
}

} // namespace mpnvme::toolkit
