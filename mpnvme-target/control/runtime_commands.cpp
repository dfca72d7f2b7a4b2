// SPDX-License-Identifier: GPL-2.0-only
// The control socket's run-time commands: ANA states, ports down and up
// (fault injection), counters, and the authentication backoff.
#include <fmt/format.h>
#include <stdexcept>

#include "lib/base/log.hpp"
#include "mpnvme-target/control/command_table.hpp"

namespace mpnvme::target {

std::string port_stats(Registry &reg) {
  std::string out;
  for (auto &p : reg.ports()) {
    PortCounters &c = reg.counters(p->cfg.id);
    std::string ana;
    for (auto &[g, st] : p->ana_groups())
      ana += fmt::format(" ana{}={}", g, ana_state_name(st));
    out += fmt::format("port {} {} {}{}: connections {} commands {} rx_bytes {} tx_bytes {} errors {}{}\n", p->cfg.id,
                       transport_name(p->cfg.transport), p->cfg.addr.display(), p->disabled ? " (down)" : "",
                       c.connections.load(), c.commands.load(), c.rx_bytes.load(), c.tx_bytes.load(), c.errors.load(), ana);
  }
  return out;
}

namespace {

// A port number given as argument `place`.
PortState &port_arg(Registry &reg, Args &a) {
  const std::string w = a.next();
  unsigned id = 0;
  // A port ID is 16 bits: a larger number is no port, never one modulo 65536.
  if (w.empty() || w.find_first_not_of("0123456789") != std::string::npos || w.size() > 5 ||
      (id = static_cast<unsigned>(std::stoul(w))) > 0xffff || !reg.port(static_cast<uint16_t>(id)))
    throw std::invalid_argument(fmt::format("argument {} is not a port of this target", a.place()));
  return *reg.port(static_cast<uint16_t>(id));
}

std::string ana(Registry &reg, const ControlLimits &, Args &a) {
  PortState &p = port_arg(reg, a);
  const std::string g = a.next();
  const unsigned long grp =
      g.empty() || g.find_first_not_of("0123456789") != std::string::npos || g.size() > 3 ? 0 : std::stoul(g);
  if (grp == 0 || grp > kMaxAnaGroups)
    throw std::invalid_argument(fmt::format("argument {}: an ANA group is 1..{}", a.place(), kMaxAnaGroups));
  const auto st = parse_ana_state(a.next());
  if (!st)
    throw std::invalid_argument(
        fmt::format("argument {}: an ANA state is optimized, non-optimized, inaccessible, persistent-loss or change", a.place()));
  reg.set_ana(p.cfg.id, static_cast<uint32_t>(grp), *st);
  return "ok\n";
}

// port tls PORT none|optional|required: nvmet's addr_tsas and addr_treq
// as one word; connections already made keep what they met.
std::string port_tls(Registry &reg, const ControlLimits &, Args &a) {
  PortState &p = port_arg(reg, a);
  const std::string t = a.next();
  const TlsPort mode = t == "none" ? TlsPort::None : t == "optional" ? TlsPort::Optional : TlsPort::Required;
  if (t != "none" && t != "optional" && t != "required")
    throw std::invalid_argument(fmt::format("argument {} is not none, optional or required", a.place()));
  reg.set_port_tls(p.cfg.id, mode);
  return "ok\n";
}

std::string port(Registry &reg, const ControlLimits &, Args &a) {
  PortState &p = port_arg(reg, a);
  const std::string st = a.next();
  if (st != "down" && st != "up") throw std::invalid_argument(fmt::format("argument {} is not down or up", a.place()));
  p.disabled = st == "down";
  log().warn("port {} {} by the control socket", p.cfg.id, st == "down" ? "disabled" : "enabled");
  reg.wake();
  return "ok\n";
}

std::string stats(Registry &reg, const ControlLimits &, Args &) { return "ok\n" + port_stats(reg); }

// "backoff": the addresses waiting after failed authentications;
// "backoff forgive ADDR": let one connect again at once.
std::string backoff(Registry &reg, const ControlLimits &, Args &a) {
  const std::string sub = a.next();
  if (sub.empty()) {
    std::string out = "ok\n";
    for (const auto &w : reg.backoff().waiting_now(AuthBackoff::Clock::now()))
      out += fmt::format("{} waits {} ms after {} failure(s)\n", w.addr,
                         std::chrono::duration_cast<std::chrono::milliseconds>(w.left).count(), w.failures);
    return out;
  }
  const std::string addr = a.next();
  if (sub != "forgive" || addr.empty()) throw std::invalid_argument("usage: backoff [forgive ADDR]");
  if (!reg.backoff().forgive(addr)) throw std::invalid_argument(fmt::format("argument {} is not backing off", a.place()));
  log().warn("{} forgiven its failed authentications by the control socket", addr);
  return "ok\n";
}

} // namespace

const std::vector<ControlCommand> &runtime_commands() {
  static const std::vector<ControlCommand> table = {
      {"ana", "PORT GROUP STATE", "change an ANA group's state on a port; its controllers get an ANA change notice", ana},
      // Before "port": the first verb that fits is taken.
      {"port tls", "PORT none|optional|required",
       "the port's secure channel from now on (TLS 1.3 with a PSK: optional takes plaintext too, as nvmet's treq \"not "
       "required\"); connections already made keep theirs",
       port_tls},
      {"port", "PORT down|up", "drop a port's connections and refuse new ones (fault injection), or serve again", port},
      {"stats", "", "counters per port", stats},
      {"backoff", "[forgive ADDR]", "addresses waiting after failed authentications; let one in again at once", backoff},
  };
  return table;
}

} // namespace mpnvme::target
