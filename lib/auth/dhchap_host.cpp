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

HostTransaction::HostTransaction(const HostAuthConfig &cfg, std::string hostnqn, std::string subnqn, uint16_t t_id)
    : cfg_(cfg), hostnqn_(std::move(hostnqn)), subnqn_(std::move(subnqn)), t_id_(t_id) {}

std::vector<uint8_t> HostTransaction::negotiate() const {
  Negotiate n;
  n.t_id = t_id_;
  n.hashes = cfg_.hashes;
  n.groups = cfg_.groups;
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
  if (std::find(cfg_.hashes.begin(), cfg_.hashes.end(), c.hash) == cfg_.hashes.end())
    throw AuthError(fmt::format("the controller chose {}, which dhchap_hash= does not allow", hash_name(c.hash)),
                    Failure::HashUnusable);
  if (std::find(cfg_.groups.begin(), cfg_.groups.end(), c.group) == cfg_.groups.end())
    throw AuthError(fmt::format("the controller chose DH group {}, which dhchap_dhgroup= does not allow", dhgroup_name(c.group)),
                    Failure::DhGroupUnusable);
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
                             t_id_, 0, hostnqn_, subnqn_);
  if (cfg_.ctrl_secret) {
    SecretBytes c2(hash_len(hash_));
    random_bytes(c2.data(), c2.size());
    r.seqnum = nonzero_seqnum();
    expected_ctrl_response_ = controller_response(hash_, transformed_key(*cfg_.ctrl_secret, subnqn_),
                                                  augmented_challenge(hash_, c2, skey), r.seqnum, t_id_, 0, hostnqn_, subnqn_);
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
  if (!cfg_.ctrl_secret) return std::nullopt;
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
  return fmt::format("{}, DH group {}{}", hash_name(hash_), dhgroup_name(group_), cfg_.ctrl_secret ? ", bidirectional" : "");
}

} // namespace mpnvme::dhchap
