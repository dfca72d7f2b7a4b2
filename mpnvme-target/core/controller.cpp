// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/controller.hpp"

namespace mpnvme::target {

TargetController::TargetController(uint16_t id, std::shared_ptr<Subsystem> s, PortState &p, std::string host,
                                   std::array<uint8_t, 16> hid, uint32_t kato, bool key)
    : cntlid(id), subsys_owner(std::move(s)), subsys(*subsys_owner), port(p), hostnqn(std::move(host)), hostid(hid), keyed(key),
      kato_ms(kato) {
  touch();
}

void TargetController::touch() {
  last_activity_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool TargetController::kato_expired(std::chrono::steady_clock::time_point now) const {
  if (!kato_ms) return false;
  const auto last = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(last_activity_ns.load()));
  return now - last > std::chrono::milliseconds(kato_ms);
}

void TargetController::post_event(uint32_t event) {
  std::lock_guard lk(mu);
  aen_events.push_back(event);
}

} // namespace mpnvme::target
