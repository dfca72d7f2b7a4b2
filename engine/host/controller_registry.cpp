// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/controller_registry.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

namespace mpnvme::host {
namespace {

// One configuration's controller, and the lock its first connection is
// made under: a second job of the same configuration waits for that
// connection instead of opening a second association, while jobs of other
// paths go on (one dead path must not stall the open of every job).
struct Entry {
  ControllerConfig cfg;
  std::weak_ptr<HostController> ctrl;
  std::shared_ptr<std::mutex> connecting = std::make_shared<std::mutex>();
};

std::mutex registry_mu; // the entries only, never held across a connect
std::vector<Entry> entries;

Entry *find(const ControllerConfig &cfg) {
  auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry &e) { return e.cfg == cfg; });
  return it == entries.end() ? nullptr : &*it;
}

} // namespace

std::shared_ptr<HostController> acquire_controller(const ControllerConfig &cfg) {
  std::shared_ptr<std::mutex> connecting;
  {
    std::lock_guard lk(registry_mu);
    // Entries nobody uses or waits on any more go (use_count is exact here:
    // copies are only made under this lock).
    std::erase_if(entries, [](const Entry &e) { return e.ctrl.expired() && e.connecting.use_count() == 1; });
    Entry *e = find(cfg);
    if (!e) e = &entries.emplace_back(Entry{cfg, {}});
    connecting = e->connecting;
  }
  std::lock_guard one_connect(*connecting);
  {
    std::lock_guard lk(registry_mu);
    // A controller given up (ctrl_loss_tmo) is not handed to a new job: that
    // job starts a fresh association.
    if (auto c = find(cfg)->ctrl.lock(); c && c->state() != CtrlState::Deleted) return c;
  }
  auto c = std::make_shared<HostController>(cfg);
  c->connect_first();
  c->start();
  std::lock_guard lk(registry_mu);
  find(cfg)->ctrl = c;
  return c;
}

} // namespace mpnvme::host
