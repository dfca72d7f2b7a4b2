// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/fio_errno.hpp"

#include <cerrno>

namespace mpnvme::host {

int completion_errno(const Completion &c) {
  if (c.aborted) return ENOLINK;
  const uint16_t s = c.status;
  if (s == 0) return 0;
  const uint8_t sct = nvme::status_sct(s), sc = nvme::status_sc(s);
  if (sct == 0 && (sc == 0x80 || sc == 0x81)) return ENOSPC; // LBA out of range, capacity exceeded
  if (sct == 0 && (sc == 0x01 || sc == 0x02)) return EINVAL; // invalid opcode or field
  if (sct == 3) return ENOLINK;                              // path related
  return EIO;
}

} // namespace mpnvme::host
