// SPDX-License-Identifier: GPL-2.0-only
// Connection: in-band authentication (DH-HMAC-CHAP). A host with a key
// (--dhchap-key, the JSON hosts, a job's dhchap_secret) is told at Connect
// that it must authenticate (AUTHREQ.ATR), and until it has, its queue
// takes Authentication Send and Receive only, on every queue, as nvmet;
// it may authenticate again later. The transaction itself is
// lib/dhchap_controller.*. A failure is logged once (host, queue, step,
// reason), counted against the address at once (Registry::auth_failed: it
// waits before it may connect again), and the queue is closed; so is one
// whose transaction does not finish within kAuthDeadline.
#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/transport/connection.hpp"

namespace mpnvme::target {
using namespace nvme;

uint32_t Connection::begin_authentication(const std::string &hostnqn, const std::string &subnqn) {
  if (!start_transaction(hostnqn, subnqn)) return 0;
  auth_pending_ = true;
  return dhchap::kConnectAuthRequired;
}

// A transaction for a host with a key, drawing on its controller's DH
// keys, with kAuthDeadline to finish.
bool Connection::start_transaction(const std::string &hostnqn, const std::string &subnqn) {
  const auto wants = reg_.host_auth(hostnqn);
  if (!wants) return false;
  auth_ = std::make_unique<dhchap::ControllerTransaction>(*wants, hostnqn, subnqn, &ctrl_->dh_keys);
  auth_deadline_ = std::chrono::steady_clock::now() + kAuthDeadline;
  auth_failure_counted_ = false;
  return true;
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
  // After a success the host may authenticate again (the Linux host does
  // when its secret changes): an Authentication Send opens a new
  // transaction, and the queue serves I/O meanwhile, as nvmet's does.
  const bool send = c.sqe.fctype() == kFctAuthSend;
  if (!auth_ && !(send && start_transaction(ctrl_->hostnqn, ctrl_->subsys.cfg.nqn))) {
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
  // A wrong response counts against the address now, not when (or if) the
  // host reads its AUTH_Failure1: a peer that drops the connection instead
  // may not come straight back.
  if (auth_->failing()) count_auth_failure();
  complete(slot, 0);
  auth_finished();
}

// Only a host that did not prove its key waits before it may try again: one
// that refuses the controller's answer (AUTH_Failure2, a host checking the
// controller with another key) has shown it holds its own.
void Connection::count_auth_failure() {
  if (auth_failure_counted_ || (auth_ && auth_->host_proved())) return;
  auth_failure_counted_ = true;
  reg_.auth_failed(peer_);
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
    count_auth_failure();
    close("authentication failed");
  }
}

// A transaction that does not finish in time fails: a peer may not hold a
// queue open half-authenticated (nvmet expires stalled transactions too).
void Connection::auth_expire(std::chrono::steady_clock::time_point now) {
  if (!auth_ || now < auth_deadline_) return;
  log().warn("{} qid {}: host {} did not finish DH-HMAC-CHAP authentication within {} s", label_, qid_, ctrl_->hostnqn,
             kAuthDeadline.count());
  count_auth_failure();
  close("authentication not finished in time");
}

} // namespace mpnvme::target
