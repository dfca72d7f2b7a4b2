// SPDX-License-Identifier: GPL-2.0-only
// What happens to a command that came back: the Linux host's
// nvme_decide_disposition for multipath requests. The raw status and the
// transport-abort flag come in; errno is made later, at the fio boundary.
#pragma once
#include <cstdint>

#include "engine/host/queue.hpp"

namespace mpnvme::host {

enum class Disposition : uint8_t {
  Complete, // done: success, or an error that is final
  Retry,    // the same command again (any usable path), counted in retries
  Failover, // a path error: again on another usable path, not counted
};

// Path related status (SCT 3h: internal path error, ANA persistent loss /
// inaccessible / transition, controller and host pathing errors, aborted
// by host), as nvme_is_path_error.
bool is_path_error(uint16_t status);
// An ANA status: the controller's ANA log must be read again.
bool is_ana_error(uint16_t status);

// Success completes. A command the transport aborted (queue torn down before
// the controller answered) fails over, as the kernel's HOST_ABORTED_CMD.
// Otherwise DNR or `retries` >= `max_retries` completes with the error, a
// path error fails over, and anything else is retried.
Disposition decide_disposition(const Completion &c, unsigned retries, unsigned max_retries);

} // namespace mpnvme::host
