// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/transport/descriptor_room.hpp"

#include <algorithm>
#include <dirent.h>
#include <sys/resource.h>

namespace mpnvme::target {

void raise_descriptor_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
}

namespace {

unsigned open_descriptors() {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  unsigned n = 0;
  while (const dirent *e = readdir(d))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n > 0 ? n - 1 : 0; // less the one opendir holds
}

} // namespace

DescriptorRoom descriptor_room_for_connections() {
  rlimit lim{};
  DescriptorRoom r{0, open_descriptors(), ~0U};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return r;
  r.limit = lim.rlim_cur;
  const unsigned long long used = r.open + kDescriptorReserve;
  r.connections = lim.rlim_cur > used ? static_cast<unsigned>(std::min<unsigned long long>(lim.rlim_cur - used, ~0U)) : 0;
  return r;
}

} // namespace mpnvme::target
