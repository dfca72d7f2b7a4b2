// SPDX-License-Identifier: GPL-2.0-only
#include "lib/auth/dhchap_messages.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace mpnvme::dhchap {

namespace {

// Fixed parts: the common 8-byte header of every message, the 16-byte
// header of Challenge, Reply, Success1 and Success2, and the negotiate
// descriptor (authid, rsvd, halen, dhlen, 30 hash and 30 DH group slots).
constexpr size_t kFailureLen = 8, kDhchapHeader = 16, kDescriptorLen = 64, kIdSlots = 30;

void put16(std::vector<uint8_t> &b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++)
    b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

uint16_t get16(std::span<const uint8_t> b, size_t at) { return static_cast<uint16_t>(b[at] | b[at + 1] << 8); }

uint32_t get32(std::span<const uint8_t> b, size_t at) {
  return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | static_cast<uint32_t>(b[at + 3]) << 24;
}

std::vector<uint8_t> header(AuthType type, Msg id, uint16_t t_id, size_t size) {
  std::vector<uint8_t> b(size, 0);
  b[0] = static_cast<uint8_t>(type);
  b[1] = static_cast<uint8_t>(id);
  put16(b, 4, t_id);
  return b;
}

// The message must be a DH-HMAC-CHAP message of this kind and at least this long.
void expect(std::span<const uint8_t> b, AuthType type, Msg id, size_t len) {
  const Header h = parse_header(b);
  if (h.type != type || h.id != static_cast<uint8_t>(id))
    throw ProtocolError(Failure::IncorrectProtocol,
                        fmt::format("expected {}, got {} (type {:#04x})", message_name(static_cast<uint8_t>(id)),
                                    message_name(h.id), static_cast<unsigned>(h.type)));
  if (b.size() < len)
    throw ProtocolError(Failure::IncorrectPayload,
                        fmt::format("{} of {} bytes, shorter than its {}", message_name(h.id), b.size(), len));
}

void append(std::vector<uint8_t> &out, const std::string &s) { out.insert(out.end(), s.begin(), s.end()); }

// The HMAC input both responses share: challenge, sequence number,
// transaction, SC_C, the role's text and the two NQNs.
SecretBytes response(Hash h, const SecretBytes &key, const SecretBytes &challenge, uint32_t seqnum, uint16_t t_id, uint8_t sc_c,
                     const char *role, const std::string &first, const std::string &second) {
  std::vector<uint8_t> in(challenge.data(), challenge.data() + challenge.size());
  for (int i = 0; i < 4; i++)
    in.push_back(static_cast<uint8_t>(seqnum >> (8 * i)));
  in.push_back(static_cast<uint8_t>(t_id));
  in.push_back(static_cast<uint8_t>(t_id >> 8));
  in.push_back(sc_c);
  append(in, role);
  append(in, first);
  in.push_back(0);
  append(in, second);
  SecretBytes r = hmac(h, key.span(), in);
  std::fill(in.begin(), in.end(), 0);
  return r;
}

} // namespace

std::vector<Hash> concat_usable(std::vector<Hash> hashes) {
  std::erase(hashes, Hash::Sha512);
  return hashes;
}

std::vector<DhGroup> concat_usable(std::vector<DhGroup> groups) {
  std::erase(groups, DhGroup::Null);
  return groups;
}

std::string secure_channel_name(uint8_t sc_c) {
  switch (static_cast<SecureChannel>(sc_c)) {
  case SecureChannel::None: return "none";
  case SecureChannel::Sc: return "SC";
  case SecureChannel::NewTlsPsk: return "NEWTLSPSK";
  case SecureChannel::ReplaceTlsPsk: return "REPLACETLSPSK";
  }
  return fmt::format("{:#04x}", sc_c);
}

std::string message_name(uint8_t id) {
  switch (static_cast<Msg>(id)) {
  case Msg::Negotiate: return "AUTH_Negotiate";
  case Msg::Challenge: return "DH-HMAC-CHAP_Challenge";
  case Msg::Reply: return "DH-HMAC-CHAP_Reply";
  case Msg::Success1: return "DH-HMAC-CHAP_Success1";
  case Msg::Success2: return "DH-HMAC-CHAP_Success2";
  case Msg::Failure2: return "AUTH_Failure2";
  case Msg::Failure1: return "AUTH_Failure1";
  }
  return fmt::format("message {:#04x}", id);
}

std::string failure_name(uint8_t explanation) {
  switch (static_cast<Failure>(explanation)) {
  case Failure::Failed: return "authentication failed";
  case Failure::NotUsable: return "authentication protocol not usable";
  case Failure::ConcatMismatch: return "secure channel concatenation mismatch";
  case Failure::HashUnusable: return "hash function not usable";
  case Failure::DhGroupUnusable: return "DH group not usable";
  case Failure::IncorrectPayload: return "incorrect payload";
  case Failure::IncorrectProtocol: return "incorrect protocol message";
  }
  return fmt::format("explanation {:#04x}", explanation);
}

std::vector<uint8_t> encode(const Negotiate &m) {
  std::vector<uint8_t> b = header(AuthType::Common, Msg::Negotiate, m.t_id, 8 + kDescriptorLen);
  b[6] = m.sc_c;
  b[7] = 1; // one protocol descriptor: DH-HMAC-CHAP
  uint8_t *d = b.data() + 8;
  d[0] = 0x01; // authid: DH-HMAC-CHAP
  d[2] = static_cast<uint8_t>(std::min(m.hashes.size(), kIdSlots));
  d[3] = static_cast<uint8_t>(std::min(m.groups.size(), kIdSlots));
  for (size_t i = 0; i < d[2]; i++)
    d[4 + i] = static_cast<uint8_t>(m.hashes[i]);
  for (size_t i = 0; i < d[3]; i++)
    d[4 + kIdSlots + i] = static_cast<uint8_t>(m.groups[i]);
  return b;
}

std::vector<uint8_t> encode(const Challenge &m) {
  std::vector<uint8_t> b = header(AuthType::Dhchap, Msg::Challenge, m.t_id, kDhchapHeader + m.c1.size() + m.dhv.size());
  b[6] = static_cast<uint8_t>(m.c1.size());
  b[8] = static_cast<uint8_t>(m.hash);
  b[9] = static_cast<uint8_t>(m.group);
  put16(b, 10, static_cast<uint16_t>(m.dhv.size()));
  put32(b, 12, m.seqnum);
  std::copy(m.c1.data(), m.c1.data() + m.c1.size(), b.begin() + kDhchapHeader);
  std::copy(m.dhv.begin(), m.dhv.end(), b.begin() + static_cast<long>(kDhchapHeader + m.c1.size()));
  return b;
}

std::vector<uint8_t> encode(const Reply &m) {
  const size_t hl = m.response.size();
  std::vector<uint8_t> b = header(AuthType::Dhchap, Msg::Reply, m.t_id, kDhchapHeader + 2 * hl + m.dhv.size());
  b[6] = static_cast<uint8_t>(hl);
  b[8] = m.c2 ? 1 : 0;
  put16(b, 10, static_cast<uint16_t>(m.dhv.size()));
  put32(b, 12, m.seqnum);
  std::copy(m.response.data(), m.response.data() + hl, b.begin() + kDhchapHeader);
  if (m.c2) std::copy(m.c2->data(), m.c2->data() + hl, b.begin() + static_cast<long>(kDhchapHeader + hl));
  std::copy(m.dhv.begin(), m.dhv.end(), b.begin() + static_cast<long>(kDhchapHeader + 2 * hl));
  return b;
}

std::vector<uint8_t> encode(const Success1 &m) {
  std::vector<uint8_t> b = header(AuthType::Dhchap, Msg::Success1, m.t_id, kDhchapHeader + m.hl);
  b[6] = m.hl;
  if (m.response) {
    b[8] = 1;
    std::copy(m.response->data(), m.response->data() + m.hl, b.begin() + kDhchapHeader);
  }
  return b;
}

std::vector<uint8_t> encode_success2(uint16_t t_id) { return header(AuthType::Dhchap, Msg::Success2, t_id, kDhchapHeader); }

std::vector<uint8_t> encode(const FailureMessage &m) {
  std::vector<uint8_t> b = header(AuthType::Common, m.first ? Msg::Failure1 : Msg::Failure2, m.t_id, kFailureLen);
  b[6] = m.reason;
  b[7] = m.explanation;
  return b;
}

Header parse_header(std::span<const uint8_t> b) {
  if (b.size() < kFailureLen)
    throw ProtocolError(Failure::IncorrectPayload, fmt::format("an authentication message of {} bytes", b.size()));
  if (b[0] != static_cast<uint8_t>(AuthType::Common) && b[0] != static_cast<uint8_t>(AuthType::Dhchap))
    throw ProtocolError(Failure::IncorrectProtocol, fmt::format("authentication type {:#04x}", b[0]));
  return {static_cast<AuthType>(b[0]), b[1], get16(b, 4)};
}

Negotiate parse_negotiate(std::span<const uint8_t> b) {
  expect(b, AuthType::Common, Msg::Negotiate, 8);
  Negotiate m;
  m.t_id = get16(b, 4);
  m.sc_c = b[6];
  const size_t napd = b[7];
  if (napd == 0 || b.size() < 8 + napd * kDescriptorLen)
    throw ProtocolError(Failure::IncorrectPayload, fmt::format("AUTH_Negotiate with {} descriptors in {} bytes", napd, b.size()));
  for (size_t i = 0; i < napd; i++) {
    const uint8_t *d = b.data() + 8 + i * kDescriptorLen;
    if (d[0] != 0x01) continue; // another protocol than DH-HMAC-CHAP
    if (d[2] > kIdSlots || d[3] > kIdSlots)
      throw ProtocolError(Failure::IncorrectPayload, fmt::format("AUTH_Negotiate lists {} hashes, {} groups", d[2], d[3]));
    for (size_t k = 0; k < d[2]; k++)
      if (auto h = hash_from_id(d[4 + k])) m.hashes.push_back(*h);
    for (size_t k = 0; k < d[3]; k++)
      if (auto g = dhgroup_from_id(d[4 + kIdSlots + k])) m.groups.push_back(*g);
    return m;
  }
  throw ProtocolError(Failure::NotUsable, "AUTH_Negotiate offers no DH-HMAC-CHAP descriptor");
}

Challenge parse_challenge(std::span<const uint8_t> b) {
  expect(b, AuthType::Dhchap, Msg::Challenge, kDhchapHeader);
  Challenge m;
  m.t_id = get16(b, 4);
  const auto hash = hash_from_id(b[8]);
  if (!hash) throw ProtocolError(Failure::HashUnusable, fmt::format("the challenge names hash {:#04x}", b[8]));
  m.hash = *hash;
  const size_t hl = b[6];
  if (hl != hash_len(m.hash))
    throw ProtocolError(Failure::HashUnusable, fmt::format("a {}-byte challenge for {}", hl, hash_name(m.hash)));
  const auto group = dhgroup_from_id(b[9]);
  if (!group) throw ProtocolError(Failure::DhGroupUnusable, fmt::format("the challenge names DH group {:#04x}", b[9]));
  m.group = *group;
  const size_t dhvlen = get16(b, 10);
  if (dhvlen != dhgroup_value_len(m.group))
    throw ProtocolError(m.group == DhGroup::Null ? Failure::IncorrectPayload : Failure::DhGroupUnusable,
                        fmt::format("a {}-byte DH value for group {}", dhvlen, dhgroup_name(m.group)));
  if (b.size() < kDhchapHeader + hl + dhvlen)
    throw ProtocolError(Failure::IncorrectPayload,
                        fmt::format("a challenge of {} bytes for its {}", b.size(), kDhchapHeader + hl + dhvlen));
  m.seqnum = get32(b, 12);
  m.c1 = SecretBytes(b.subspan(kDhchapHeader, hl));
  m.dhv.assign(b.begin() + static_cast<long>(kDhchapHeader + hl), b.begin() + static_cast<long>(kDhchapHeader + hl + dhvlen));
  return m;
}

Reply parse_reply(std::span<const uint8_t> b, size_t hl) {
  expect(b, AuthType::Dhchap, Msg::Reply, kDhchapHeader);
  if (b[6] != hl) throw ProtocolError(Failure::HashUnusable, fmt::format("a reply with {}-byte values, not {}", b[6], hl));
  const size_t dhvlen = get16(b, 10);
  if (b.size() < kDhchapHeader + 2 * hl + dhvlen)
    throw ProtocolError(Failure::IncorrectPayload,
                        fmt::format("a reply of {} bytes for its {}", b.size(), kDhchapHeader + 2 * hl + dhvlen));
  Reply m;
  m.t_id = get16(b, 4);
  m.seqnum = get32(b, 12);
  m.response = SecretBytes(b.subspan(kDhchapHeader, hl));
  if (b[8] & 1) m.c2 = SecretBytes(b.subspan(kDhchapHeader + hl, hl));
  m.dhv.assign(b.begin() + static_cast<long>(kDhchapHeader + 2 * hl),
               b.begin() + static_cast<long>(kDhchapHeader + 2 * hl + dhvlen));
  return m;
}

Success1 parse_success1(std::span<const uint8_t> b, size_t hl) {
  expect(b, AuthType::Dhchap, Msg::Success1, kDhchapHeader);
  if (b[6] != hl)
    throw ProtocolError(Failure::HashUnusable, fmt::format("a success message with {}-byte values, not {}", b[6], hl));
  Success1 m;
  m.t_id = get16(b, 4);
  m.hl = b[6];
  if (b[8] & 1) {
    if (b.size() < kDhchapHeader + hl)
      throw ProtocolError(Failure::IncorrectPayload, fmt::format("a success message of {} bytes", b.size()));
    m.response = SecretBytes(b.subspan(kDhchapHeader, hl));
  }
  return m;
}

FailureMessage parse_failure(std::span<const uint8_t> b) {
  const Header h = parse_header(b);
  if (h.type != AuthType::Common || (h.id != static_cast<uint8_t>(Msg::Failure1) && h.id != static_cast<uint8_t>(Msg::Failure2)))
    throw ProtocolError(Failure::IncorrectProtocol, fmt::format("expected a failure message, got {}", message_name(h.id)));
  return {h.id == static_cast<uint8_t>(Msg::Failure1), h.t_id, b[6], b[7]};
}

SecretBytes augmented_challenge(Hash h, const SecretBytes &challenge, const SecretBytes *session_key) {
  if (!session_key) return challenge;
  const SecretBytes hashed = digest(h, session_key->span());
  return hmac(h, hashed.span(), challenge.span());
}

SecretBytes host_response(Hash h, const SecretBytes &key, const SecretBytes &challenge, uint32_t seqnum, uint16_t t_id,
                          uint8_t sc_c, const std::string &hostnqn, const std::string &subnqn) {
  return response(h, key, challenge, seqnum, t_id, sc_c, "HostHost", hostnqn, subnqn);
}

SecretBytes controller_response(Hash h, const SecretBytes &key, const SecretBytes &challenge, uint32_t seqnum, uint16_t t_id,
                                const std::string &hostnqn, const std::string &subnqn) {
  return response(h, key, challenge, seqnum, t_id, 0, "Controller", subnqn, hostnqn);
}

SecretBytes generated_psk(Hash h, const SecretBytes &session_key, const SecretBytes &c1, const SecretBytes &c2) {
  std::vector<uint8_t> in(c1.data(), c1.data() + c1.size());
  in.insert(in.end(), c2.data(), c2.data() + c2.size());
  SecretBytes psk = hmac(h, session_key.span(), in);
  std::fill(in.begin(), in.end(), 0);
  return psk;
}

} // namespace mpnvme::dhchap
