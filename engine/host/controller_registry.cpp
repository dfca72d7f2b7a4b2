// SPDX-License-Identifier: GPL-2.0-only
#include "controller_registry.hpp"

#include <map>
#include <mutex>
#include <string>

namespace mpnvme::host {

std::shared_ptr<Controller> acquire_controller(const ControllerConfig &cfg) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<Controller>> controllers;
  const std::string key = cfg.key();
  // Held while a new controller connects: a second job of the same path
  // waits for that instead of opening a second association.
  std::lock_guard lk(mu);
  std::erase_if(controllers, [](const auto &kv) { return kv.second.expired(); });
  // A controller given up (ctrl_loss_tmo) is not handed to a new job: that
  // job starts a fresh association.
  if (auto c = controllers[key].lock(); c && c->state() != CtrlState::Deleted) return c;
  auto c = std::make_shared<Controller>(cfg);
  c->connect_first();
  c->start();
  controllers[key] = c;
  return c;
}

} // namespace mpnvme::host
