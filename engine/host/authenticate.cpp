// SPDX-License-Identifier: GPL-2.0-only
#include "engine/host/authenticate.hpp"

#include <atomic>
#include <fmt/format.h>
#include <stdexcept>
#include <vector>

#include "lib/base/log.hpp"

namespace mpnvme::host {

namespace {

using namespace dhchap;

// Transaction identifiers, one per transaction in the process, as the
// Linux host numbers them per controller.
std::atomic<uint16_t> next_t_id{1};

struct Exchange {
  Channel &ch;
  const std::string &where;
  std::chrono::milliseconds timeout;

  // A command that did not complete failed with its queue; the caller's
  // recovery handles it like any other. nvmet closes the connection right
  // after refusing an authentication, sometimes before its AUTH_Failure1
  // has gone out: say so, the refusal is the likely reason.
  void check(const Completion &r, const char *what) const {
    if (r.aborted)
      throw std::runtime_error(fmt::format("DH-HMAC-CHAP failed on {}: the connection ended during {} ({}); nvmet closes "
                                           "it right after refusing an authentication",
                                           where, what, ch.queue().failure()));
    if (r.status)
      throw std::runtime_error(
          fmt::format("DH-HMAC-CHAP failed on {}: {} refused: {}", where, what, nvme::status_string(r.status)));
  }

  void send(std::vector<uint8_t> msg, const std::string &name) const {
    Command c;
    c.sqe = nvme::make_auth_send(kSecp, kSpsp0, kSpsp1, static_cast<uint32_t>(msg.size()));
    c.data = msg.data();
    c.len = static_cast<uint32_t>(msg.size());
    c.dir = DataDir::ToController;
    const Completion r = ch.execute(c, timeout);
    std::fill(msg.begin(), msg.end(), 0);
    check(r, fmt::format("Authentication Send ({})", name).c_str());
  }

  std::vector<uint8_t> receive(const char *after) const {
    std::vector<uint8_t> buf(kMaxMessage, 0);
    Command c;
    c.sqe = nvme::make_auth_receive(kSecp, kSpsp0, kSpsp1, static_cast<uint32_t>(buf.size()));
    c.data = buf.data();
    c.len = static_cast<uint32_t>(buf.size());
    c.dir = DataDir::FromController;
    check(ch.execute(c, timeout), fmt::format("Authentication Receive (after {})", after).c_str());
    return buf;
  }
};

} // namespace

bool needs_authentication(uint32_t dw0, const HostAuthConfig &cfg, const std::string &where, uint16_t qid, bool concat) {
  if ((dw0 & kConnectConcatRequired) && (qid != 0 || !concat))
    throw std::runtime_error(fmt::format(
        "DH-HMAC-CHAP failed on {}: the controller requires secure channel concatenation "
        "(TLS from the authentication), {}",
        where, qid == 0 ? "which concat=1 asks for" : "which only an admin queue can have (Linux refuses it on I/O queues too)"));
  if (dw0 & (kConnectAuthRequired | kConnectConcatRequired)) {
    if (!cfg.secret)
      throw std::runtime_error(fmt::format("{}: the controller requires DH-HMAC-CHAP authentication: set dhchap_secret= "
                                           "(or dhchap_secret_file=) to the host's secret",
                                           where));
    return true;
  }
  // Not asked: with a controller secret the host authenticates anyway, as
  // an unproven controller is not one it trusts.
  return cfg.ctrl_secret.has_value();
}

std::optional<tls::Offer> authenticate(Channel &ch, const HostAuthConfig &cfg, const std::string &hostnqn,
                                       const std::string &subnqn, const std::string &where, std::chrono::milliseconds timeout,
                                       SecureChannel sc) {
  const Exchange x{ch, where, timeout};
  HostTransaction t(cfg, hostnqn, subnqn, next_t_id.fetch_add(1), sc);
  try {
    x.send(t.negotiate(), "AUTH_Negotiate");
    std::vector<uint8_t> msg = x.receive("AUTH_Negotiate");
    x.send(t.on_challenge(msg), "DH-HMAC-CHAP_Reply");
    msg = x.receive("DH-HMAC-CHAP_Reply");
    if (auto success2 = t.on_success1(msg)) x.send(std::move(*success2), "DH-HMAC-CHAP_Success2");
  } catch (const AuthError &e) {
    if (e.answer) {
      try {
        x.send(t.failure2(*e.answer), "AUTH_Failure2");
      } catch (const std::exception &) {
        // The queue is given up anyway; the first reason is the one to report.
      }
    }
    throw std::runtime_error(fmt::format("DH-HMAC-CHAP failed on {}: {}", where, e.what()));
  }
  log().debug("{}: authenticated ({})", where, t.agreed());
  if (sc == SecureChannel::None) return std::nullopt;
  // The agreed hash is SHA-256 or SHA-384: the host offered no other.
  tls::OfferedPsk g = tls::generated_offer(t.hash(), t.generated_psk(), hostnqn, subnqn);
  return tls::Offer{tls::to_string(g.identity), std::move(g.psk), g.identity.hash};
}

} // namespace mpnvme::host
