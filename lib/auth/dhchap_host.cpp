// SPDX-License-Identifier: GPL-2.0-only
#include "lib/auth/dhchap_host.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace mpnvme::dhchap {

namespace {
// A non-zero sequence number for the host's challenge (0 says "no challenge").
uint32_t nonzero_seqnum() {
  uint32_t s = 0;
  while (!s)
    random_bytes(reinterpret_cast<uint8_t *>(&s), sizeof s);
  return s;
}
} // namespace

HostTransaction::HostTransaction(const HostAuthConfig &cfg, std::string hostnqn, std::string subnqn, uint16_t t_id,
                                 SecureChannel sc)
    : cfg_(cfg), hostnqn_(std::move(hostnqn)), subnqn_(std::move(subnqn)), t_id_(t_id), sc_(sc) {
  if (sc_ != SecureChannel::None && cfg_.ctrl_secret)
    throw std::invalid_argument("secure channel concatenation with a controller secret: the controller answers no "
                                "challenge under concatenation (S2 is 0), so the secret would prove nothing");
}

std::vector<Hash> HostTransaction::offered_hashes() const {
  return sc_ != SecureChannel::None ? concat_usable(cfg_.hashes) : cfg_.hashes;
}

std::vector<DhGroup> HostTransaction::offered_groups() const {
  return sc_ != SecureChannel::None ? concat_usable(cfg_.groups) : cfg_.groups;
}

std::vector<uint8_t> HostTransaction::negotiate() const {
  Negotiate n;
  n.t_id = t_id_;
  n.sc_c = static_cast<uint8_t>(sc_);
  n.hashes = offered_hashes();
  n.groups = offered_groups();
  if (n.hashes.empty() || n.groups.empty())
    throw AuthError("secure channel concatenation needs SHA-256 or SHA-384 and a DH group other than null; dhchap_hash= "
                    "and dhchap_dhgroup= allow none",
                    std::nullopt);
  return encode(n);
}

void HostTransaction::check_controller_refusal(std::span<const uint8_t> msg, const char *after) const {
  Header h{};
  try {
    h = parse_header(msg);
  } catch (const ProtocolError &e) {
    throw AuthError(fmt::format("the controller's answer to {}: {}", after, e.what()), e.failure);
  }
  if (h.type == AuthType::Common && h.id == static_cast<uint8_t>(Msg::Failure1)) {
    const FailureMessage f = parse_failure(msg);
    throw AuthError(fmt::format("controller sent AUTH_Failure1 after {}, reason '{}'", after, failure_name(f.explanation)),
                    std::nullopt);
  }
  if (h.t_id != t_id_)
    throw AuthError(fmt::format("the controller's answer to {} is for transaction {}, not {}", after, h.t_id, t_id_),
                    Failure::IncorrectPayload);
}

std::vector<uint8_t> HostTransaction::on_challenge(std::span<const uint8_t> msg) {
  check_controller_refusal(msg, "AUTH_Negotiate");
  Challenge c;
  try {
    c = parse_challenge(msg);
  } catch (const ProtocolError &e) {
    throw AuthError(fmt::format("unusable challenge: {}", e.what()), e.failure);
  }
  // The controller must pick from what was offered: a restricted list
  // (dhchap_hash=, dhchap_dhgroup=) is the user's policy, not a hint.
  const char *why_not =
      sc_ != SecureChannel::None ? "secure channel concatenation does not allow" : "dhchap_hash= does not allow";
  if (const auto h = offered_hashes(); std::find(h.begin(), h.end(), c.hash) == h.end())
    throw AuthError(fmt::format("the controller chose {}, which {}", hash_name(c.hash), why_not), Failure::HashUnusable);
  if (const auto g = offered_groups(); std::find(g.begin(), g.end(), c.group) == g.end())
    throw AuthError(fmt::format("the controller chose DH group {}, which {}", dhgroup_name(c.group),
                                sc_ != SecureChannel::None ? why_not : "dhchap_dhgroup= does not allow"),
                    c.group == DhGroup::Null && sc_ != SecureChannel::None ? Failure::ConcatMismatch : Failure::DhGroupUnusable);
  hash_ = c.hash;
  group_ = c.group;
  Reply r;
  r.t_id = t_id_;
  std::optional<SecretBytes> session;
  if (c.group != DhGroup::Null) {
    const DhKey mine(c.group);
    try {
      session = mine.shared_secret(c.dhv);
    } catch (const std::exception &e) {
      throw AuthError(fmt::format("the controller's DH value: {}", e.what()), Failure::DhGroupUnusable);
    }
    r.dhv = mine.public_value();
  }
  const SecretBytes *skey = session ? &*session : nullptr;
  r.response = host_response(hash_, transformed_key(*cfg_.secret, hostnqn_), augmented_challenge(hash_, c.c1, skey), c.seqnum,
                             t_id_, static_cast<uint8_t>(sc_), hostnqn_, subnqn_);
  if (sc_ != SecureChannel::None) {
    // C2 feeds the generated PSK only: S2 stays 0, the controller answers nothing.
    c2_ = SecretBytes(hash_len(hash_));
    random_bytes(c2_.data(), c2_.size());
    r.c2 = c2_;
    c1_ = c.c1;
    session_ = std::move(*session);
  } else if (cfg_.ctrl_secret) {
    SecretBytes c2(hash_len(hash_));
    random_bytes(c2.data(), c2.size());
    r.seqnum = nonzero_seqnum();
    expected_ctrl_response_ = controller_response(hash_, transformed_key(*cfg_.ctrl_secret, subnqn_),
                                                  augmented_challenge(hash_, c2, skey), r.seqnum, t_id_, hostnqn_, subnqn_);
    r.c2 = std::move(c2);
  }
  return encode(r);
}

std::optional<std::vector<uint8_t>> HostTransaction::on_success1(std::span<const uint8_t> msg) {
  check_controller_refusal(msg, "DH-HMAC-CHAP_Reply");
  Success1 s;
  try {
    s = parse_success1(msg, hash_len(hash_));
  } catch (const ProtocolError &e) {
    throw AuthError(fmt::format("unusable success message: {}", e.what()), e.failure);
  }
  if (!cfg_.ctrl_secret || sc_ != SecureChannel::None) return std::nullopt;
  // The host challenged the controller: only the right answer is trusted.
  if (!s.response) throw AuthError("the controller did not answer the host's challenge (bidirectional)", Failure::Failed);
  if (!(*s.response == expected_ctrl_response_))
    throw AuthError("the controller's response is wrong: it does not hold dhchap_ctrl_secret (bidirectional)", Failure::Failed);
  return encode_success2(t_id_);
}

std::vector<uint8_t> HostTransaction::failure2(Failure f) const {
  FailureMessage m;
  m.first = false;
  m.t_id = t_id_;
  m.explanation = static_cast<uint8_t>(f);
  return encode(m);
}

std::string HostTransaction::agreed() const {
  return fmt::format("{}, DH group {}{}", hash_name(hash_), dhgroup_name(group_),
                     sc_ != SecureChannel::None ? ", secure channel " + secure_channel_name(static_cast<uint8_t>(sc_))
                     : cfg_.ctrl_secret         ? ", bidirectional"
                                                : "");
}

SecretBytes HostTransaction::generated_psk() const {
  if (sc_ == SecureChannel::None || session_.empty())
    throw std::logic_error("generated_psk: no secure channel concatenation in this transaction");
  return dhchap::generated_psk(hash_, session_, c1_, c2_);
}

} // namespace mpnvme::dhchap
