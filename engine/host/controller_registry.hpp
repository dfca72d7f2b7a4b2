// SPDX-License-Identifier: GPL-2.0-only
// The controllers of this fio process. Jobs of one process (fio thread
// mode) whose configurations name the same path, subsystem and settings
// share one controller; in process mode each process has its own, so each
// keeps one association per path, as separate kernel hosts would.
#pragma once
#include <memory>

#include "engine/host/controller.hpp"

namespace mpnvme::host {

// The live or reconnecting controller for `cfg`, created on first use: its
// first connection is tried here (its state tells how that went) and its
// admin thread started.
std::shared_ptr<HostController> acquire_controller(const ControllerConfig &cfg);

} // namespace mpnvme::host
