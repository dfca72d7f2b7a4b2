// SPDX-License-Identifier: GPL-2.0-only
// The errno fio reports for a command that ended for good: the fio
// boundary's job, after the multipath layer decided that a completion is
// final (not retried, not failed over).
#pragma once
#include "engine/host/queue.hpp"

namespace mpnvme::host {

// 0 for success; ENOSPC beyond the namespace, EINVAL for a refused command,
// EIO for media and other errors, ENOLINK for path errors and commands that
// no path could complete (as the kernel's BLK_STS_TRANSPORT).
int completion_errno(const Completion &c);

} // namespace mpnvme::host
