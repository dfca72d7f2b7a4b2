// SPDX-License-Identifier: GPL-2.0-only
// SubmissionQueue: in-band authentication (DH-HMAC-CHAP). A host with a
// key (--dhchap-key, the JSON hosts, a job's dhchap_secret, the control
// socket) is told at Connect that it must authenticate (AUTHREQ.ATR), and
// until it has, the admission gate lets its queue take Authentication Send
// and Receive only, on every queue, as nvmet; it may authenticate again
// later. The transaction itself is lib/auth/dhchap_controller.*. A failure
// is logged once (host, queue, step, reason), counted against the address
// at once (Registry::auth_failed: it waits before it may connect again),
// and the queue is closed; so is one whose host does not send its first
// message within kAuthDeadline, a later one within auth_step_window(), or
// finish within kAuthCeiling, and one its host leaves before it
// authenticated.
#include <algorithm>

#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "lib/base/printable.hpp"
#include "lib/tls/tls_psk.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {
using namespace nvme;

uint32_t SubmissionQueue::begin_authentication(std::optional<dhchap::ControllerAuthConfig> wants) {
  if (!wants) return 0;
  start_transaction(std::move(*wants));
  auth_pending_ = true;
  return dhchap::kConnectAuthRequired;
}

// A transaction for a host with a key, drawing on its controller's DH
// keys, with kAuthDeadline for its first message.
void SubmissionQueue::start_transaction(dhchap::ControllerAuthConfig wants) {
  const dhchap::ConcatPolicy concat{qid_ == 0, !tls_identity_.empty(), port_.tls() != TlsPort::None};
  // Before the keys are copied: a change after this point outdates them.
  auth_key_epoch_ = reg_.generated_psks().epoch(ctrl_->hostnqn);
  auth_ = std::make_unique<dhchap::ControllerTransaction>(wants, ctrl_->hostnqn, ctrl_->subsys.cfg.nqn, &ctrl_->dh_keys, concat);
  auth_started_ = std::chrono::steady_clock::now();
  arm_auth_deadline(kAuthDeadline);
  auth_failure_counted_ = false;
}

void SubmissionQueue::arm_auth_deadline(std::chrono::seconds window) {
  auth_deadline_ = std::min(std::chrono::steady_clock::now() + window, auth_started_ + kAuthCeiling);
  auth_window_ = window;
}

// nvmet re-arms its transaction timer with the KATO (120 s without one)
// after every step, so a host whose DH computation takes longer than
// kAuthDeadline but less than its KATO authenticates there: it does here.
std::chrono::seconds SubmissionQueue::auth_step_window() const {
  const auto kato =
      ctrl_->kato_ms ? std::chrono::ceil<std::chrono::seconds>(std::chrono::milliseconds(ctrl_->kato_ms)) : kAuthCeiling;
  return std::clamp<std::chrono::seconds>(kato, kAuthDeadline, kAuthCeiling);
}

bool SubmissionQueue::auth_fields_valid(Request &r) {
  const uint8_t *s = r.sqe.b.data();
  // After a success the host may authenticate again (the Linux host does
  // when its secret changes): an Authentication Send opens a new
  // transaction with the host's keys as they are now, and the queue serves
  // I/O meanwhile, as nvmet's does.
  if (!auth_ && r.sqe.fctype() == kFctAuthSend)
    if (auto wants = reg_.view().host_auth(ctrl_->hostnqn)) start_transaction(std::move(*wants));
  if (!auth_) {
    refuse(r, kStatusInvalidField, "authentication for a host without a key");
    return false;
  }
  if (s[43] != dhchap::kSecp || s[41] != dhchap::kSpsp0 || s[42] != dhchap::kSpsp1 || wire::get32(s, 44) == 0) {
    refuse(r, kStatusInvalidField,
           fmt::format("security protocol {:#04x}/{:#04x}/{:#04x}, length {} (DH-HMAC-CHAP: 0xe9/0x01/0x01, not 0)", s[43], s[41],
                       s[42], wire::get32(s, 44)));
    return false;
  }
  return true;
}

void SubmissionQueue::auth_send(Request &r) {
  if (!auth_fields_valid(r)) return;
  const uint32_t tl = wire::get32(r.sqe.b.data(), 44);
  if (r.in_len < tl) return refuse(r, kStatusSglLengthInvalid, fmt::format("{} bytes sent for a transfer of {}", r.in_len, tl));
  auth_->on_send(std::span<const uint8_t>(r.in, tl));
  // A wrong response counts against the address now, not when (or if) the
  // host reads its AUTH_Failure1: a peer that drops the connection instead
  // may not come straight back.
  if (auth_->failing()) count_auth_failure();
  complete(r, 0);
  arm_auth_deadline(auth_step_window());
  auth_finished();
}

// Only a host that did not prove its key waits before it may try again: one
// that refuses the controller's answer (AUTH_Failure2, a host checking the
// controller with another key) has shown it holds its own.
void SubmissionQueue::count_auth_failure() {
  if (auth_failure_counted_ || (auth_ && auth_->host_proved())) return;
  auth_failure_counted_ = true;
  reg_.auth_failed(peer_);
}

void SubmissionQueue::auth_receive(Request &r) {
  if (!auth_fields_valid(r)) return;
  const uint32_t al = wire::get32(r.sqe.b.data(), 44);
  const std::vector<uint8_t> msg = auth_->on_receive(std::min<uint32_t>(al, dhchap::kMaxMessage));
  if (msg.empty()) return refuse(r, kStatusInvalidField, fmt::format("an allocation length of {} bytes is too small", al));
  uint8_t *buf = buffer(r, static_cast<uint32_t>(msg.size()));
  if (!buf) return complete(r, kStatusInternal);
  std::copy(msg.begin(), msg.end(), buf);
  return_data(r, buf, static_cast<uint32_t>(msg.size()));
  arm_auth_deadline(auth_step_window());
  auth_finished();
}

// After each step: authenticated (the queue is open), or failed (logged
// once, the queue closed once the failure message has gone out).
void SubmissionQueue::auth_finished() {
  if (auth_->authenticated()) {
    log().info("{} qid {}: host {} authenticated ({})", label_, qid_, printable(ctrl_->hostnqn), auth_->agreed());
    if (auth_->secure_channel() != dhchap::SecureChannel::None) keep_generated_psk();
    auth_pending_ = false;
    auth_.reset();
  } else if (auth_->failed()) {
    log().warn("{} qid {}: host {} failed DH-HMAC-CHAP authentication: {}", label_, qid_, printable(ctrl_->hostnqn),
               auth_->failure());
    count_auth_failure();
    transport_.end("authentication failed");
  }
}

// Secure channel concatenation: the host comes back over TLS with the
// PSK this transaction generated (the Linux host at once, on a new admin
// queue); the TLS server finds it by its identity, which is no secret.
void SubmissionQueue::keep_generated_psk() {
  try {
    const tls::OfferedPsk o = tls::generated_offer(auth_->hash(), auth_->generated_psk(), ctrl_->hostnqn, ctrl_->subsys.cfg.nqn);
    if (!reg_.generated_psks().insert(o, auth_key_epoch_)) {
      log().warn("{} qid {}: no TLS PSK kept for host {}: its keys changed during the transaction", label_, qid_,
                 printable(ctrl_->hostnqn));
      return;
    }
    // REPLACETLSPSK: the PSK this queue runs on gives way (the host uses
    // the new one from now on; this queue's TLS needs the old one no more).
    if (auth_->secure_channel() == dhchap::SecureChannel::ReplaceTlsPsk && tls_generated_)
      reg_.generated_psks().erase(tls_identity_);
    log().info("{} qid {}: TLS PSK generated for identity '{}'", label_, qid_, printable(tls::to_string(o.identity)));
  } catch (const std::exception &e) { // the transaction chose no SHA-512: not expected
    log().warn("{} qid {}: no TLS PSK generated: {}", label_, qid_, e.what());
  }
}

// A transaction that does not finish in time fails: a peer may not hold a
// queue open half-authenticated (nvmet expires stalled transactions too).
bool SubmissionQueue::auth_expire(std::chrono::steady_clock::time_point now) {
  if (!auth_ || now < auth_deadline_) return false;
  log().warn("{} qid {}: host {} did not finish DH-HMAC-CHAP authentication in time ({} s for its next message, {} s for "
             "the transaction)",
             label_, qid_, printable(ctrl_->hostnqn), auth_window_.count(), kAuthCeiling.count());
  count_auth_failure();
  transport_.end("authentication not finished in time");
  return true;
}

} // namespace mpnvme::target
