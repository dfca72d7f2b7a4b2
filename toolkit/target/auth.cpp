// SPDX-License-Identifier: GPL-2.0-only
// Connection: in-band authentication (DH-HMAC-CHAP). A host with a key
// (--dhchap-key, the JSON hosts, a job's dhchap_secret) is told at Connect
// that it must authenticate (AUTHREQ.ATR), and until it has, its queue
// takes Authentication Send and Receive only, on every queue, as nvmet.
// The transaction itself is lib/dhchap_controller.*. A failure is logged
// once (host, queue, step, reason), the queue is closed, and the address
// waits before it may connect again (Registry::auth_failed).
#include <fmt/format.h>

#include "connection.hpp"
#include "log.hpp"
#include "wire.hpp"

namespace mpnvme::target {
using namespace nvme;

uint32_t Connection::begin_authentication(const std::string &hostnqn, const std::string &subnqn) {
  const auto it = reg_.config().host_auth.find(hostnqn);
  if (it == reg_.config().host_auth.end()) return 0;
  auth_ = std::make_unique<dhchap::ControllerTransaction>(it->second, hostnqn, subnqn);
  auth_pending_ = true;
  return dhchap::kConnectAuthRequired;
}

// Before authentication only Authentication Send and Receive (and a
// Disconnect) are allowed, as nvmet_check_auth_status.
bool Connection::authentication_gate(const Cmd &c, uint16_t slot) {
  const bool fabrics = c.sqe.opcode() == kFabricsOpcode;
  const uint8_t t = fabrics ? c.sqe.fctype() : 0;
  if (fabrics && (t == kFctAuthSend || t == kFctAuthReceive || t == kFctDisconnect)) return true;
  refuse(slot, kStatusAuthRequired, "the host has not authenticated on this queue (DH-HMAC-CHAP)");
  return false;
}

bool Connection::auth_fields_valid(const Cmd &c, uint16_t slot) {
  const uint8_t *s = c.sqe.b.data();
  if (!auth_) {
    refuse(slot, kStatusInvalidField, "authentication for a host without a key");
    return false;
  }
  if (s[43] != dhchap::kSecp || s[41] != dhchap::kSpsp0 || s[42] != dhchap::kSpsp1 || wire::get32(s, 44) == 0) {
    refuse(slot, kStatusInvalidField,
           fmt::format("security protocol {:#04x}/{:#04x}/{:#04x}, length {} (DH-HMAC-CHAP: 0xe9/0x01/0x01, not 0)", s[43], s[41],
                       s[42], wire::get32(s, 44)));
    return false;
  }
  return true;
}

void Connection::auth_send(Cmd &c, uint16_t slot) {
  if (!auth_fields_valid(c, slot)) return;
  const uint32_t tl = wire::get32(c.sqe.b.data(), 44);
  if (c.data_len < tl)
    return refuse(slot, kStatusSglLengthInvalid, fmt::format("{} bytes sent for a transfer of {}", c.data_len, tl));
  auth_->on_send(std::span<const uint8_t>(c.buf, tl));
  complete(slot, 0);
  auth_finished();
}

void Connection::auth_receive(Cmd &c, uint16_t slot) {
  if (!auth_fields_valid(c, slot)) return;
  const uint32_t al = wire::get32(c.sqe.b.data(), 44);
  const std::vector<uint8_t> msg = auth_->on_receive(std::min<uint32_t>(al, dhchap::kMaxMessage));
  if (msg.empty()) return refuse(slot, kStatusInvalidField, fmt::format("an allocation length of {} bytes is too small", al));
  if (!ensure_buf(c, static_cast<uint32_t>(msg.size()))) return complete(slot, kStatusInternal);
  std::copy(msg.begin(), msg.end(), c.buf);
  return_data(c, slot, static_cast<uint32_t>(msg.size()));
  auth_finished();
}

// After each step: authenticated (the queue is open), or failed (logged
// once, the queue closed once the failure message has gone out).
void Connection::auth_finished() {
  if (auth_->authenticated()) {
    log().info("{} qid {}: host {} authenticated ({})", label_, qid_, ctrl_->hostnqn, auth_->agreed());
    auth_pending_ = false;
    auth_.reset();
  } else if (auth_->failed()) {
    log().warn("{} qid {}: host {} failed DH-HMAC-CHAP authentication: {}", label_, qid_, ctrl_->hostnqn, auth_->failure());
    reg_.auth_failed(peer_);
    close("authentication failed");
  }
}

} // namespace mpnvme::target
