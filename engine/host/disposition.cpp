// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/disposition.hpp"

namespace mpnvme::host {

bool is_path_error(uint16_t status) { return nvme::status_sct(status) == 3; }

bool is_ana_error(uint16_t status) {
  const uint8_t sc = nvme::status_sc(status);
  return nvme::status_sct(status) == 3 && sc >= 0x01 && sc <= 0x03;
}

Disposition decide_disposition(const Completion &c, unsigned retries, unsigned max_retries) {
  if (c.ok()) return Disposition::Complete;
  if (c.aborted) return Disposition::Failover;
  if (nvme::status_dnr(c.status) || retries >= max_retries) return Disposition::Complete;
  if (is_path_error(c.status)) return Disposition::Failover;
  return Disposition::Retry;
}

} // namespace mpnvme::host
