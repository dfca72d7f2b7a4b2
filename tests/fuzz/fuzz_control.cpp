// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: lines a control socket client sends, one per input
// line, through the command table into a live registry (one subsystem, one
// port, a keyed host; a fresh one per input), so that every change and
// refusal runs for real.
// Whatever the input: no crash, every reply starts "ok" or "error", and no
// reply carries a DH-HMAC-CHAP secret it was given. RAM namespaces become
// null ones here (the same parsing and rules, without the memory a large
// size would map).
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "lib/base/log.hpp"
#include "mpnvme-target/control/control.hpp"

using namespace mpnvme;
using namespace mpnvme::target;

namespace {

// The configuration each input starts from (a registry of its own, so
// that what one input added does not pile up).
const TargetConfig &config() {
  static const TargetConfig cfg = [] {
    set_log_level("off");
    TargetConfig c;
    SubsystemConfig s;
    s.nqn = "nqn.2026-12.io.mpnvme:fuzz";
    s.namespaces.push_back(parse_namespace_spec("null:1m", 1, "fuzz"));
    c.subsystems.push_back(s);
    PortConfig p;
    p.addr = {"127.0.0.1", "4420", false};
    c.ports.push_back(p);
    dhchap::ControllerAuthConfig a;
    a.host_key = dhchap::parse_secret("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "fuzz");
    c.host_auth["nqn.2026-12.io.mpnvme:fuzz-auth"] = a;
    // Small, so that inputs reach each limit's refusal (ram: becomes null:
    // below, so --max-ram is the unit tests' and the integration test's).
    c.limits.max_subsystems = 4;
    c.limits.max_namespaces = 8;
    finalize(c);
    return c;
  }();
  return cfg;
}

void replace_all(std::string &s, const std::string &from, const std::string &to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Registry reg(config());
  static const ControlLimits limits{{"/nonexistent-fuzz-dir"}};
  std::string text(reinterpret_cast<const char *>(data), size);
  replace_all(text, "ram:", "null:");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::string reply = control_command(reg, limits, line);
    if (reply.rfind("ok", 0) != 0 && reply.rfind("error", 0) != 0) __builtin_trap();
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      const size_t at = w.find("DHHC-1:");
      if (at != std::string::npos && w.size() - at >= 12 && reply.find(w.substr(at)) != std::string::npos) __builtin_trap();
    }
  }
  return 0;
}
