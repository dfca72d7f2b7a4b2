// SPDX-License-Identifier: GPL-2.0-only
// DH-HMAC-CHAP messages as a hostile controller (or host) may send them:
// the host transaction's challenge and success handling, and the parsers
// the target uses, must refuse without reading out of bounds.
//   byte 0: bit 0 bidirectional, bit 1 restrict to SHA-256 and null,
//           bit 2 secure channel concatenation (NEWTLSPSK; no controller
//           secret then), bits 3-5 the controller side's queue (admin,
//           TLS active, TLS offered: ConcatPolicy)
//   bytes 1-2: length of the challenge message, little-endian
//   then the challenge, then the Success1 message; the controller side
//   takes the same two as AUTH_Negotiate and Reply
#include <cstddef>
#include <cstdint>
#include <span>

#include "lib/auth/dhchap_controller.hpp"
#include "lib/auth/dhchap_host.hpp"
#include "lib/tls/tls_psk.hpp"

using namespace mpnvme::dhchap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  static const Secret host = parse_secret("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "fuzz");
  HostAuthConfig cfg;
  cfg.secret = host;
  const bool concat = data[0] & 4;
  if ((data[0] & 1) && !concat) cfg.ctrl_secret = host;
  if (data[0] & 2) {
    cfg.hashes = {Hash::Sha256};
    cfg.groups = {DhGroup::Null};
  }
  const size_t first = std::min<size_t>(data[1] | data[2] << 8, size - 3);
  const std::span<const uint8_t> challenge(data + 3, first), success(data + 3 + first, size - 3 - first);
  HostTransaction t(cfg, "nqn.2014-08.org.nvmexpress:uuid:fuzz", "nqn.fuzz:sub", 1,
                    concat ? SecureChannel::NewTlsPsk : SecureChannel::None);
  try {
    t.on_challenge(challenge);
    t.on_success1(success);
    // A controller that let the host through: the PSK both would use.
    if (concat) (void)mpnvme::tls::generated_offer(t.hash(), t.generated_psk(), "nqn.h", "nqn.fuzz:sub");
  } catch (const AuthError &) {
  }
  // The controller side: the same bytes as the host's AUTH_Negotiate and Reply.
  ControllerAuthConfig ccfg;
  ccfg.host_key = host;
  ControllerTransaction c(ccfg, "nqn.2014-08.org.nvmexpress:uuid:fuzz", "nqn.fuzz:sub", nullptr,
                          {bool(data[0] & 8), bool(data[0] & 16), bool(data[0] & 32)});
  c.on_send(challenge);
  (void)c.on_receive(kMaxMessage);
  c.on_send(success);
  (void)c.on_receive(kMaxMessage);
  if (c.authenticated() && c.secure_channel() != SecureChannel::None) (void)c.generated_psk();
  // The parsers the controller side uses, on the same bytes.
  for (std::span<const uint8_t> m : {challenge, success}) {
    try {
      parse_negotiate(m);
    } catch (const ProtocolError &) {
    }
    try {
      parse_reply(m, 32);
    } catch (const ProtocolError &) {
    }
    try {
      parse_failure(m);
    } catch (const ProtocolError &) {
    }
  }
  return 0;
}
