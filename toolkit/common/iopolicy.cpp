// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/common/iopolicy.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <unistd.h>

namespace mpnvme::toolkit {

static bool kernel_at_least(int major, int minor) {
  int ma = 0, mi = 0;
  sscanf(kernel_release().c_str(), "%d.%d", &ma, &mi);
  return ma > major || (ma == major && mi >= minor);
}

std::string policy_support_problem(const std::string &policy) {
  if (policy == "queue-depth" && !kernel_at_least(6, 11))
    return fmt::format("the queue-depth policy needs Linux 6.11 or later (this kernel is {})", kernel_release());
  return "";
}

// Write then read back: sysfs stores may be refused with EINVAL, or accepted
// by an older kernel that keeps its previous value.
static void write_and_verify(const std::string &file, const std::string &policy) {
  if (geteuid() != 0) throw std::runtime_error(fmt::format("{}: writing the iopolicy needs root", file));
  int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: {}", file, strerror(errno)));
  const ssize_t n = ::write(fd, policy.data(), policy.size());
  const int err = errno;
  ::close(fd);
  if (n < 0) {
    std::string why = strerror(err);
    if (err == EINVAL) {
      const std::string problem = policy_support_problem(policy);
      why = problem.empty() ? "the kernel does not accept this policy (EINVAL)" : fmt::format("EINVAL: {}", problem);
    }
    throw std::runtime_error(fmt::format("{}: writing '{}' refused: {}", file, policy, why));
  }
  const std::string now = read_first_line(file);
  if (now != policy) throw std::runtime_error(fmt::format("{}: wrote '{}' but the kernel reports '{}'", file, policy, now));
}

void set_subsystem_iopolicy(const SubsystemInfo &s, const std::string &policy) {
  write_and_verify(s.sysfs_dir + "/iopolicy", policy);
}

void set_default_iopolicy(const std::string &policy) { write_and_verify("/sys/module/nvme_core/parameters/iopolicy", policy); }

} // namespace mpnvme::toolkit
