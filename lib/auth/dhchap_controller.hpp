// SPDX-License-Identifier: GPL-2.0-only
// The controller's side of DH-HMAC-CHAP on one queue, as nvmet runs it
// (nvme/target/fabrics-cmd-auth.c): Authentication Send carries the host's
// messages in, Authentication Receive takes the controller's out, and the
// queue may do nothing else until the transaction has succeeded. Unlike
// nvmet 6.12 the controller picks a DH group the host offered. Socket-free.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/auth/dhchap_messages.hpp"
#include "lib/auth/dhchap_secret.hpp"

namespace mpnvme::dhchap {

// What a host must prove (nvmet's hosts/NQN/dhchap_* attributes).
struct ControllerAuthConfig {
  Secret host_key;                // dhchap_key
  std::optional<Secret> ctrl_key; // dhchap_ctrl_key: answers a host's challenge
  // Allowed, in preference order: the first one the host offers is used.
  std::vector<Hash> hashes{std::begin(kHashes), std::end(kHashes)};
  std::vector<DhGroup> groups{std::begin(kDhGroups), std::end(kDhGroups)};
};

// The controller's DH keys, one per group, shared by every queue's
// transaction of one controller and its re-authentications, as nvmet keeps
// one per controller: a challenge then costs no key generation (the
// costly part for the large groups), so neither a host's queues nor a peer restarting
// negotiations make the target generate keys. Thread-safe: the queues of a
// controller may sit on different reactors.
class DhKeyCache {
public:
  std::shared_ptr<const DhKey> get(DhGroup g);

private:
  std::mutex mu_;
  std::map<DhGroup, std::shared_ptr<const DhKey>> keys_;
};

// What a queue allows of secure channel concatenation, by nvmet's rules:
// only an admin queue may ask, NEWTLSPSK where the queue has no TLS yet,
// REPLACETLSPSK where it has; and only where the port serves TLS, so that
// the host can come back with the PSK.
struct ConcatPolicy {
  bool admin_queue = false;
  bool tls_active = false;
  bool tls_offered = false;
};

class ControllerTransaction {
public:
  // Negotiations (the first and restarts) one transaction takes before it
  // fails: a restart costs little, but not nothing, and a host has no use
  // for many.
  static constexpr unsigned kMaxNegotiations = 4;
  // `keys`: where the controller's DH keys come from (null: a fresh one
  // for each challenge).
  ControllerTransaction(const ControllerAuthConfig &cfg, std::string hostnqn, std::string subnqn, DhKeyCache *keys = nullptr,
                        ConcatPolicy concat = {});
  ~ControllerTransaction();
  // One Authentication Send's payload. A message that does not fit the
  // step moves the transaction to failure, which the next Receive reports
  // (AUTH_Failure1); the command itself succeeds, as with nvmet.
  void on_send(std::span<const uint8_t> msg);
  // One Authentication Receive of at most `al` bytes: the challenge, the
  // success message or the failure. Empty: `al` is too small for it.
  std::vector<uint8_t> on_receive(size_t al);

  bool authenticated() const { return step_ == Step::Done; }
  // Failed: the controller sent AUTH_Failure1 or the host AUTH_Failure2.
  bool failed() const { return step_ == Step::Failed; }
  // Failed or about to say so: the next Receive carries AUTH_Failure1 (a
  // wrong response, say), whether or not the host ever asks for it.
  bool failing() const { return step_ == Step::Failure1 || step_ == Step::Failed; }
  // The host's response matched its key: whatever fails after that (the
  // host refusing the controller's answer) is no guess at the host's key.
  bool host_proved() const { return host_proved_; }
  // The host has asked for a challenge: leaving now, unanswered, is an
  // attempt that failed, not a host that never tried.
  bool started() const { return negotiations_ > 0; }
  // For the log, once: the step and the reason (never a key).
  const std::string &failure() const { return why_; }
  std::string agreed() const; // "hmac(sha256), DH group null"
  // What the host asked for in AUTH_Negotiate (None: no concatenation).
  SecureChannel secure_channel() const { return sc_; }
  Hash hash() const { return hash_; } // the transaction's, once negotiated
  // After success with concatenation: HMAC(KS, C1 || C2), from which
  // tls::generated_offer derives the TLS PSK the host will present.
  SecretBytes generated_psk() const;

private:
  enum class Step { Negotiate, Challenge, Reply, Success1, Success2, Failure1, Done, Failed };
  void negotiate(std::span<const uint8_t> msg);
  void reply(std::span<const uint8_t> msg);
  void set_failure(Failure f, std::string why);
  std::string concat_refusal() const;
  std::vector<uint8_t> challenge();

  // A copy: the control socket may change the host's keys mid-transaction.
  const ControllerAuthConfig cfg_;
  std::string hostnqn_, subnqn_;
  ConcatPolicy policy_;
  SecureChannel sc_ = SecureChannel::None;
  SecretBytes session_, c2_; // concatenation's inputs besides C1
  Step step_ = Step::Negotiate;
  bool host_proved_ = false;
  Failure failure_ = Failure::Failed;
  std::string why_;
  uint16_t t_id_ = 0;
  Hash hash_ = Hash::Sha256;
  DhGroup group_ = DhGroup::Null;
  uint32_t s1_ = 0;
  SecretBytes c1_;
  DhKeyCache *keys_;
  unsigned negotiations_ = 0;
  std::shared_ptr<const DhKey> dh_;
  std::optional<SecretBytes> ctrl_answer_; // the response to the host's challenge
};

} // namespace mpnvme::dhchap
