// SPDX-License-Identifier: GPL-2.0-only
#include "lib/auth/dhchap_controller.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace mpnvme::dhchap {

namespace {
template <typename T> std::optional<T> first_offered(const std::vector<T> &allowed, const std::vector<T> &offered) {
  for (T a : allowed)
    if (std::find(offered.begin(), offered.end(), a) != offered.end()) return a;
  return std::nullopt;
}
} // namespace

std::shared_ptr<const DhKey> DhKeyCache::get(DhGroup g) {
  std::lock_guard lk(mu_);
  std::shared_ptr<const DhKey> &k = keys_[g];
  if (!k) k = std::make_shared<const DhKey>(g);
  return k;
}

ControllerTransaction::ControllerTransaction(const ControllerAuthConfig &cfg, std::string hostnqn, std::string subnqn,
                                             DhKeyCache *keys, ConcatPolicy concat)
    : cfg_(cfg), hostnqn_(std::move(hostnqn)), subnqn_(std::move(subnqn)), policy_(concat), keys_(keys) {}

ControllerTransaction::~ControllerTransaction() = default;

void ControllerTransaction::set_failure(Failure f, std::string why) {
  failure_ = f;
  why_ = std::move(why);
  step_ = Step::Failure1;
}

void ControllerTransaction::on_send(std::span<const uint8_t> msg) {
  if (step_ == Step::Failed || step_ == Step::Failure1) return;
  Header h{};
  try {
    h = parse_header(msg);
  } catch (const ProtocolError &e) {
    return set_failure(e.failure, e.what());
  }
  if (h.type == AuthType::Common && h.id == static_cast<uint8_t>(Msg::Negotiate)) return negotiate(msg); // (re)start
  if (h.type == AuthType::Common && h.id == static_cast<uint8_t>(Msg::Failure2)) {
    const FailureMessage f = parse_failure(msg);
    why_ = fmt::format("the host refused the controller: AUTH_Failure2, reason '{}'", failure_name(f.explanation));
    step_ = Step::Failed;
    return;
  }
  const Msg want = step_ == Step::Reply ? Msg::Reply : step_ == Step::Success2 ? Msg::Success2 : Msg::Negotiate;
  if (h.id != static_cast<uint8_t>(want) || h.type != AuthType::Dhchap)
    return set_failure(Failure::IncorrectProtocol,
                       fmt::format("{} where {} was due", message_name(h.id), message_name(static_cast<uint8_t>(want))));
  if (h.t_id != t_id_)
    return set_failure(Failure::IncorrectPayload,
                       fmt::format("{} for transaction {}, not {}", message_name(h.id), h.t_id, t_id_));
  if (want == Msg::Reply) return reply(msg);
  step_ = Step::Done; // Success2: the host accepted the controller's answer
}

void ControllerTransaction::negotiate(std::span<const uint8_t> msg) {
  host_proved_ = false;
  Negotiate n;
  try {
    n = parse_negotiate(msg);
  } catch (const ProtocolError &e) {
    return set_failure(e.failure, e.what());
  }
  t_id_ = n.t_id;
  if (++negotiations_ > kMaxNegotiations)
    return set_failure(Failure::IncorrectProtocol,
                       fmt::format("AUTH_Negotiate {} times in one transaction ({} at most)", negotiations_, kMaxNegotiations));
  c1_ = SecretBytes(); // a new challenge for the new negotiation
  sc_ = static_cast<SecureChannel>(n.sc_c);
  if (const std::string why = concat_refusal(); !why.empty()) return set_failure(Failure::ConcatMismatch, why);
  // Concatenation needs a session key (no NULL group) and a TLS suite for
  // the hash (no SHA-512): pick among the rest.
  const bool concat = sc_ != SecureChannel::None;
  const std::vector<Hash> hashes = concat ? concat_usable(cfg_.hashes) : cfg_.hashes;
  const std::vector<DhGroup> groups = concat ? concat_usable(cfg_.groups) : cfg_.groups;
  const char *with = sc_ != SecureChannel::None ? " usable with secure channel concatenation" : "";
  const auto hash = first_offered(hashes, n.hashes);
  if (!hash) return set_failure(Failure::HashUnusable, fmt::format("the host offers none of the allowed hash functions{}", with));
  const auto group = first_offered(groups, n.groups);
  if (!group)
    return set_failure(sc_ != SecureChannel::None ? Failure::ConcatMismatch : Failure::DhGroupUnusable,
                       fmt::format("the host offers none of the allowed DH groups{}", with));
  hash_ = *hash;
  group_ = *group;
  step_ = Step::Challenge;
}

// Why this queue may not have the concatenation the host asked for ("": it may).
std::string ControllerTransaction::concat_refusal() const {
  const std::string name = secure_channel_name(static_cast<uint8_t>(sc_));
  switch (sc_) {
  case SecureChannel::None: return "";
  case SecureChannel::NewTlsPsk:
    if (policy_.tls_active) return "NEWTLSPSK on a queue that already runs TLS (REPLACETLSPSK replaces its PSK)";
    break;
  case SecureChannel::ReplaceTlsPsk:
    if (!policy_.tls_active) return "REPLACETLSPSK on a queue without TLS (NEWTLSPSK generates a first PSK)";
    break;
  default: return fmt::format("secure channel concatenation {} (NEWTLSPSK and REPLACETLSPSK are offered)", name);
  }
  if (!policy_.admin_queue)
    return fmt::format("secure channel concatenation ({}) on an I/O queue: only the admin queue may ask", name);
  if (!policy_.tls_offered)
    return fmt::format("secure channel concatenation ({}) on a port without TLS: the host could not come back with the "
                       "generated PSK (give the port --tls)",
                       name);
  return "";
}

void ControllerTransaction::reply(std::span<const uint8_t> msg) {
  Reply r;
  try {
    r = parse_reply(msg, hash_len(hash_));
  } catch (const ProtocolError &e) {
    return set_failure(e.failure, e.what());
  }
  std::optional<SecretBytes> session;
  if (dh_) {
    try {
      session = dh_->shared_secret(r.dhv);
    } catch (const std::exception &e) {
      return set_failure(Failure::DhGroupUnusable, fmt::format("the host's DH value: {}", e.what()));
    }
  } else if (!r.dhv.empty()) {
    return set_failure(Failure::IncorrectPayload, "a DH value without a DH group");
  }
  const SecretBytes *skey = session ? &*session : nullptr;
  const SecretBytes want = host_response(hash_, transformed_key(cfg_.host_key, hostnqn_), augmented_challenge(hash_, c1_, skey),
                                         s1_, t_id_, static_cast<uint8_t>(sc_), hostnqn_, subnqn_);
  if (!(want == r.response)) return set_failure(Failure::Failed, "the host's response does not match its key");
  host_proved_ = true;
  ctrl_answer_.reset();
  if (sc_ != SecureChannel::None) {
    if (!r.c2) return set_failure(Failure::Failed, "a reply without the challenge C2 that secure channel concatenation needs");
    session_ = std::move(*session);
    c2_ = *r.c2;
  }
  // S2 = 0: the host does not ask the controller to prove itself (its C2,
  // if any, feeds the generated PSK), as nvmet reads it.
  if (r.c2 && r.seqnum) {
    if (!cfg_.ctrl_key)
      return set_failure(Failure::Failed, "the host challenges the controller, which has no dhchap_ctrl_key for it");
    ctrl_answer_ = controller_response(hash_, transformed_key(*cfg_.ctrl_key, subnqn_), augmented_challenge(hash_, *r.c2, skey),
                                       r.seqnum, t_id_, hostnqn_, subnqn_);
  }
  step_ = Step::Success1;
}

// The challenge of this negotiation: made once (a Receive too short for it
// gets it again, unchanged, with a longer one).
std::vector<uint8_t> ControllerTransaction::challenge() {
  if (c1_.empty()) {
    s1_ = 0;
    while (!s1_)
      random_bytes(reinterpret_cast<uint8_t *>(&s1_), sizeof s1_);
    c1_ = SecretBytes(hash_len(hash_));
    random_bytes(c1_.data(), c1_.size());
    dh_.reset();
    if (group_ != DhGroup::Null) dh_ = keys_ ? keys_->get(group_) : std::make_shared<const DhKey>(group_);
  }
  Challenge c;
  c.t_id = t_id_;
  c.hash = hash_;
  c.group = group_;
  c.seqnum = s1_;
  c.c1 = c1_;
  if (dh_) c.dhv = dh_->public_value();
  return encode(c);
}

// The message due at this step, and the step after it, only when the host
// gave room for it: as nvmet, a Receive too short changes nothing.
std::vector<uint8_t> ControllerTransaction::on_receive(size_t al) {
  std::vector<uint8_t> out;
  Step next = step_;
  switch (step_) {
  case Step::Challenge:
    out = challenge();
    next = Step::Reply;
    break;
  case Step::Success1: {
    Success1 s;
    s.t_id = t_id_;
    s.hl = static_cast<uint8_t>(hash_len(hash_));
    s.response = ctrl_answer_;
    out = encode(s);
    next = ctrl_answer_ ? Step::Success2 : Step::Done;
    break;
  }
  default: {
    // Out of turn (or after a failure): AUTH_Failure1, and the transaction is over.
    if (step_ != Step::Failure1) set_failure(Failure::IncorrectProtocol, "Authentication Receive out of turn");
    FailureMessage f;
    f.t_id = t_id_;
    f.explanation = static_cast<uint8_t>(failure_);
    out = encode(f);
    next = Step::Failed;
  }
  }
  if (out.size() > al) return {};
  step_ = next;
  out.resize(al, 0); // the host asked for `al` bytes: the rest is zero, as nvmet sends it
  return out;
}

std::string ControllerTransaction::agreed() const {
  return fmt::format("{}, DH group {}{}", hash_name(hash_), dhgroup_name(group_),
                     sc_ != SecureChannel::None ? ", secure channel " + secure_channel_name(static_cast<uint8_t>(sc_))
                     : ctrl_answer_             ? ", bidirectional"
                                                : "");
}

SecretBytes ControllerTransaction::generated_psk() const {
  if (step_ != Step::Done || sc_ == SecureChannel::None)
    throw std::logic_error("generated_psk: no successful secure channel concatenation");
  return dhchap::generated_psk(hash_, session_, c1_, c2_);
}

} // namespace mpnvme::dhchap
