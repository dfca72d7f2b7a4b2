// SPDX-License-Identifier: GPL-2.0-only
// The host's side of one DH-HMAC-CHAP transaction on one queue, as the
// Linux host runs it (nvme/host/auth.c): AUTH_Negotiate, the controller's
// challenge answered with a reply (and, with a controller key, the host's
// own challenge), the controller's Success1 checked, Success2. Socket-free:
// the engine carries the messages in Authentication Send/Receive.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lib/auth/dhchap_messages.hpp"
#include "lib/auth/dhchap_secret.hpp"

namespace mpnvme::dhchap {

struct HostAuthConfig {
  std::optional<Secret> secret;      // dhchap_secret: the host's key
  std::optional<Secret> ctrl_secret; // dhchap_ctrl_secret: the controller must prove it has this one
  std::vector<Hash> hashes{std::begin(kHashes), std::end(kHashes)};
  std::vector<DhGroup> groups{std::begin(kDhGroups), std::end(kDhGroups)};
  bool operator==(const HostAuthConfig &) const = default;
};

// Why the transaction ended. `answer`: the explanation the host sends in
// AUTH_Failure2 (the host refused); none when the controller refused.
struct AuthError : std::runtime_error {
  AuthError(const std::string &what, std::optional<Failure> answer) : std::runtime_error(what), answer(answer) {}
  std::optional<Failure> answer;
};

class HostTransaction {
public:
  // `sc`: secure channel concatenation asked for in AUTH_Negotiate (the
  // admin queue of a host with concat=1). The host then offers no NULL DH
  // group and no SHA-512 (neither yields a TLS PSK), always challenges the
  // controller with C2 for the generated PSK, and sends S2 = 0: the
  // controller does not answer C2 (as between the Linux host and nvmet),
  // so a controller secret proves nothing and is refused with it.
  HostTransaction(const HostAuthConfig &cfg, std::string hostnqn, std::string subnqn, uint16_t t_id,
                  SecureChannel sc = SecureChannel::None);
  std::vector<uint8_t> negotiate() const;
  // The controller's answer to the negotiation: the reply to send.
  std::vector<uint8_t> on_challenge(std::span<const uint8_t> msg);
  // The controller's answer to the reply: Success2 to send when the host
  // challenged the controller (and the controller passed), else nothing.
  std::optional<std::vector<uint8_t>> on_success1(std::span<const uint8_t> msg);
  std::vector<uint8_t> failure2(Failure f) const;
  // "hmac(sha256), ffdhe2048, bidirectional": what was agreed, for the log.
  std::string agreed() const;
  // After a successful transaction with secure channel concatenation: the
  // generated PSK, HMAC(KS, C1 || C2).
  SecretBytes generated_psk() const;
  Hash hash() const { return hash_; } // as the controller chose it

private:
  // A Failure1 instead of the expected message, or a message for another transaction.
  void check_controller_refusal(std::span<const uint8_t> msg, const char *after) const;

  // What AUTH_Negotiate offers: the configured lists, without what
  // concatenation cannot use.
  std::vector<Hash> offered_hashes() const;
  std::vector<DhGroup> offered_groups() const;

  const HostAuthConfig &cfg_;
  std::string hostnqn_, subnqn_;
  uint16_t t_id_;
  SecureChannel sc_;
  Hash hash_ = Hash::Sha256;
  DhGroup group_ = DhGroup::Null;
  SecretBytes expected_ctrl_response_;
  // Concatenation's inputs, kept until generated_psk().
  SecretBytes session_, c1_, c2_;
};

} // namespace mpnvme::dhchap
