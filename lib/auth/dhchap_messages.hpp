// SPDX-License-Identifier: GPL-2.0-only
// DH-HMAC-CHAP on the wire (NVMe Base Specification, in-band
// authentication): the messages carried by Authentication Send and
// Receive, their encoding and strict parsing, and the responses both
// sides compute. Socket-free: the engine's authentication transaction and
// the target's use these, and the fuzzers drive the parsers.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/crypto/dhchap_crypto.hpp"

namespace mpnvme::dhchap {

// Authentication Send/Receive: security protocol (SECP) and its specific
// fields (SPSP0/1) for DH-HMAC-CHAP.
constexpr uint8_t kSecp = 0xe9, kSpsp0 = 0x01, kSpsp1 = 0x01;
// The Connect response's AUTHREQ bits (CQE DW0): authentication required,
// secure channel concatenation required.
constexpr uint32_t kConnectAuthRequired = 1u << 17, kConnectConcatRequired = 1u << 18;
// AUTH_Negotiate's SC_C: secure channel concatenation. NewTlsPsk asks for a
// TLS PSK generated from this transaction (on a queue without TLS),
// ReplaceTlsPsk for a new one in place of the PSK the queue's TLS runs on;
// Sc (a secure channel without a PSK) Linux refuses, and so does mpnvme.
enum class SecureChannel : uint8_t { None = 0x00, Sc = 0x01, NewTlsPsk = 0x02, ReplaceTlsPsk = 0x03 };
std::string secure_channel_name(uint8_t sc_c); // "none", "NEWTLSPSK", ...
// What concatenation can use of a list: hashes with a TLS 1.3 suite (not
// SHA-512) and DH groups with a session key (not NULL). Both sides and the
// engine's options filter through these.
std::vector<Hash> concat_usable(std::vector<Hash> hashes);
std::vector<DhGroup> concat_usable(std::vector<DhGroup> groups);
// The largest message either side sends or accepts (the Linux host's
// buffer; an 8192-bit group's reply is 1.2 KiB).
constexpr size_t kMaxMessage = 4096;

enum class AuthType : uint8_t { Common = 0x00, Dhchap = 0x01 };
enum class Msg : uint8_t {
  Negotiate = 0x00,
  Challenge = 0x01,
  Reply = 0x02,
  Success1 = 0x03,
  Success2 = 0x04,
  Failure2 = 0xf0,
  Failure1 = 0xf1,
};
std::string message_name(uint8_t id); // AUTH_Negotiate, DH-HMAC-CHAP_Challenge, ...

// Reason code explanations of AUTH_Failure1/2 (reason code 01h,
// authentication failure).
enum class Failure : uint8_t {
  Failed = 0x01,
  NotUsable = 0x02,
  ConcatMismatch = 0x03,
  HashUnusable = 0x04,
  DhGroupUnusable = 0x05,
  IncorrectPayload = 0x06,
  IncorrectProtocol = 0x07,
};
std::string failure_name(uint8_t explanation); // 'authentication failed', ...

// A message that cannot be used, with the explanation a Failure message
// gives for it.
struct ProtocolError : std::runtime_error {
  ProtocolError(Failure f, const std::string &why) : std::runtime_error(why), failure(f) {}
  Failure failure;
};

struct Negotiate {
  uint16_t t_id = 0;
  uint8_t sc_c = 0; // SecureChannel
  std::vector<Hash> hashes;
  std::vector<DhGroup> groups;
};

struct Challenge {
  uint16_t t_id = 0;
  Hash hash = Hash::Sha256;
  DhGroup group = DhGroup::Null;
  uint32_t seqnum = 0;
  SecretBytes c1;           // hash_len(hash) bytes
  std::vector<uint8_t> dhv; // the controller's public value, empty for Null
};

struct Reply {
  uint16_t t_id = 0;
  uint32_t seqnum = 0; // S2: 0 unless the host challenges the controller
  SecretBytes response;
  std::optional<SecretBytes> c2; // the host's challenge to the controller
  std::vector<uint8_t> dhv;      // the host's public value
};

struct Success1 {
  uint16_t t_id = 0;
  uint8_t hl = 0;
  std::optional<SecretBytes> response; // the controller's, when the host challenged it
};

struct FailureMessage {
  bool first = true; // Failure1 (controller) or Failure2 (host)
  uint16_t t_id = 0;
  uint8_t reason = 0x01, explanation = 0;
};

std::vector<uint8_t> encode(const Negotiate &m);
std::vector<uint8_t> encode(const Challenge &m);
std::vector<uint8_t> encode(const Reply &m);
std::vector<uint8_t> encode(const Success1 &m);
std::vector<uint8_t> encode_success2(uint16_t t_id);
std::vector<uint8_t> encode(const FailureMessage &m);

// The message's type and identifier, checked to be a complete header.
struct Header {
  AuthType type;
  uint8_t id;
  uint16_t t_id;
};
Header parse_header(std::span<const uint8_t> b);
// Each parser checks lengths, identifiers and field ranges and throws
// ProtocolError with the explanation to answer with. `hl` is the hash
// length of the transaction's hash.
Negotiate parse_negotiate(std::span<const uint8_t> b);
Challenge parse_challenge(std::span<const uint8_t> b);
Reply parse_reply(std::span<const uint8_t> b, size_t hl);
Success1 parse_success1(std::span<const uint8_t> b, size_t hl);
FailureMessage parse_failure(std::span<const uint8_t> b);

// The challenge as the response covers it: with a DH exchange,
// HMAC(H(session key), challenge); without, the challenge.
SecretBytes augmented_challenge(Hash h, const SecretBytes &challenge, const SecretBytes *session_key);
// The host's response (the host key transformed with the host NQN):
// HMAC(key, Ca || S1 || T_ID || SC_C || "HostHost" || hostnqn || 0 || subnqn).
SecretBytes host_response(Hash h, const SecretBytes &key, const SecretBytes &challenge, uint32_t seqnum, uint16_t t_id,
                          uint8_t sc_c, const std::string &hostnqn, const std::string &subnqn);
// The controller's (its key transformed with the subsystem NQN):
// HMAC(key, Ca2 || S2 || T_ID || 0 || "Controller" || subnqn || 0 || hostnqn).
// Both Linux sides put 0 where the specification has SC_C here; only the
// host's response carries it (since Linux 6.19).
SecretBytes controller_response(Hash h, const SecretBytes &key, const SecretBytes &challenge, uint32_t seqnum, uint16_t t_id,
                                const std::string &hostnqn, const std::string &subnqn);
// Secure channel concatenation: the PSK a successful transaction generates,
// HMAC(KS, C1 || C2) with the session key KS (the DH shared secret, as
// both Linux sides compute it). tls::generated_offer turns it into the
// TLS PSK and its identity.
SecretBytes generated_psk(Hash h, const SecretBytes &session_key, const SecretBytes &c1, const SecretBytes &c2);

} // namespace mpnvme::dhchap
