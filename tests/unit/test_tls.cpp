// SPDX-License-Identifier: GPL-2.0-only
// NVMe/TCP TLS without a peer: the PSK interchange format and the identity
// derivations against libnvme's published test vectors (its test/psk.c),
// identities parsed as nvmet would see them, and the user-space record
// layer (OpenSSL) between two sockets of this test: handshakes with right
// and wrong keys, a plaintext peer, data both ways, and records delivered
// one byte at a time (the kernel lab tests run it against tlshd).
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/auth/dhchap_secret.hpp"
#include "lib/tls/ktls_stream.hpp"
#include "lib/tls/tls_psk.hpp"
#include "lib/tls/tls_stream.hpp"
#include "tests/unit/cmocka_cxx.hpp"
#include "tests/unit/key_refusal.hpp"

using namespace mpnvme;
using namespace mpnvme::tls;

namespace {

const uint8_t kKey32[] = {0x55, 0x12, 0xDB, 0xB6, 0x73, 0x7D, 0x01, 0x06, 0xF6, 0x59, 0x75, 0xB7, 0x73, 0xDF, 0xB0, 0x11,
                          0xFF, 0xC3, 0x44, 0xBC, 0xF4, 0x42, 0xE2, 0xDD, 0x6D, 0x8B, 0xC4, 0x87, 0x0B, 0x5D, 0x5B, 0x03};
const char kHost[] = "nqn.psk-test-host";
const char kSubsys[] = "nqn.psk-test-subsys";

SecretBytes key48() {
  std::vector<uint8_t> k(kKey32, kKey32 + 32);
  k.insert(k.end(), kKey32 + 16, kKey32 + 32);
  return SecretBytes(k);
}

bool refused(const std::string &text, const char *expect) {
  return key_refused([](const std::string &t, const char *o) { return parse_psk(t, o); }, text, "tls_key", 16, expect);
}

// A well-formed interchange string with a 64-byte key (DH-HMAC-CHAP's size).
std::string encode_long_key() {
  const std::string s = dhchap::format_secret({0, SecretBytes(std::vector<uint8_t>(64, 7))});
  return "NVMeTLSkey-1:00:" + s.substr(10);
}

} // namespace

// libnvme's export/import vectors: the same bytes, the same text.
static void interchange_vectors(void **) {
  const char *k1 = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
  const char *k2 = "NVMeTLSkey-1:02:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwP/w0S89ELi3W2LxIcLXVsDn8kXZQ==:";
  ConfiguredPsk a = parse_psk(k1, "tls_key");
  assert_int_equal(a.hmac, 1);
  assert_true(a.key == SecretBytes(std::span<const uint8_t>(kKey32, 32)));
  assert_string_equal(format_psk(a).c_str(), k1);
  ConfiguredPsk b = parse_psk(k2, "tls_key");
  assert_int_equal(b.hmac, 2);
  assert_true(b.key == key48());
  assert_string_equal(format_psk(b).c_str(), k2);
  assert_true(psk_hash(b) == PskHash::Sha384);
  ConfiguredPsk c = parse_psk("NVMeTLSkey-1:00:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:", "tls_key");
  assert_int_equal(c.hmac, 0);
  assert_true(retained_psk(c, kHost) == c.key); // 00: the configured key is the retained one
}

static void interchange_refusals(void **) {
  std::string flipped = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
  flipped[20] = flipped[20] == 'A' ? 'B' : 'A';
  assert_true(refused(flipped, "CRC does not match"));
  assert_true(refused("NVMeTLSkey-2:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:", "not a TLS PSK"));
  assert_true(refused("NVMeTLSkey-1:03:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:", "unknown key transformation 03"));
  assert_true(refused("DHHC-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:", "not a TLS PSK"));
  assert_true(refused("NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLd%YvEhwtdWwNf9LrZ:", "not base64"));
  // A 48-byte key cannot be transformed with SHA-256.
  assert_true(refused("NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwP/w0S89ELi3W2LxIcLXVsDn8kXZQ==:",
                      "needs a 32-byte key"));
  // 64-byte keys are DH-HMAC-CHAP's, not TLS's.
  assert_true(refused(encode_long_key(), "a TLS PSK has 32 or 48"));
}

// libnvme's identity vectors: version 1 carries a digest of the retained
// key, so they check the retained-PSK derivation (RFC 8446 HkdfLabel, and
// the compat form) and the digest.
static void identity_vectors(void **) {
  ConfiguredPsk a{1, SecretBytes(std::span<const uint8_t>(kKey32, 32))};
  ConfiguredPsk b{2, key48()};
  assert_string_equal(to_string(host_psk(a, kHost, kSubsys, 1).identity).c_str(),
                      "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys iSbjiStwJ/1TrTvDlt2fjFmzvsytOJelidNnA+X5lEU=");
  assert_string_equal(
      to_string(host_psk(b, kHost, kSubsys, 1).identity).c_str(),
      "NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys QhW2+Rp6RzHlNtCslyRxMnwJ11tKKhz8JCAQpQ+XUD8f9td1VeH5h53yz2wKJG1a");
  assert_string_equal(to_string(host_psk(a, kHost, kSubsys, 1, true).identity).c_str(),
                      "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys 66GuqV08TsAGII39teWUfwQwizjv06Jy8jOcX3NAAzM=");
  assert_string_equal(
      to_string(host_psk(b, kHost, kSubsys, 1, true).identity).c_str(),
      "NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys RsKmYJ3nAn1ApjjMloJFbAkLPivONDAX/xW327YBUsn2eGShXSjCZvBaOxscLqmz");
  const OfferedPsk v0 = host_psk(a, kHost, kSubsys, 0);
  assert_string_equal(to_string(v0.identity).c_str(), "NVMe0R01 nqn.psk-test-host nqn.psk-test-subsys");
  assert_int_equal(v0.psk.size(), 32);
  // The TLS PSK depends on the identity: another subsystem, another key.
  assert_false(v0.psk == host_psk(a, kHost, "nqn.other", 0).psk);
  assert_false(v0.psk == host_psk(a, kHost, kSubsys, 1).psk);
  assert_false(v0.psk == host_psk(a, kHost, kSubsys, 0, true).psk);
}

static void identity_parsing(void **) {
  auto v1 = parse_identity("NVMe1R02 nqn.h nqn.s QhW2+Rp6");
  assert_true(v1.has_value());
  assert_int_equal(v1->version, 1);
  assert_true(v1->hash == PskHash::Sha384);
  assert_string_equal(v1->hostnqn.c_str(), "nqn.h");
  assert_string_equal(v1->subnqn.c_str(), "nqn.s");
  assert_string_equal(v1->digest.c_str(), "QhW2+Rp6");
  auto v0 = parse_identity("NVMe0G01 nqn.h nqn.s");
  assert_true(v0.has_value());
  assert_true(v0->generated);
  for (const char *bad : {"NVMe0R01 nqn.h", "NVMe0R01 nqn.h nqn.s extra", "NVMe1R01 nqn.h nqn.s", "NVMe2R01 nqn.h nqn.s",
                          "NVMe0X01 nqn.h nqn.s", "NVMe0R03 nqn.h nqn.s", "NVMe0R01  nqn.h nqn.s", "nvme0R01 nqn.h nqn.s", ""})
    if (parse_identity(bad)) fail_msg("'%s' parsed as an identity", bad);
}

// --- The record layer between two sockets of this test ---------------------

namespace {

struct Pair {
  int c = -1, s = -1;
  Pair() {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    c = sv[0];
    s = sv[1];
  }
  ~Pair() {
    close(c);
    close(s);
  }
};

std::optional<ServerPsk> lookup_of(const OfferedPsk &known, const std::string &identity, std::string &refusal) {
  if (identity != to_string(known.identity)) {
    refusal = "not this test's identity";
    return std::nullopt;
  }
  return ServerPsk{known.psk, known.identity.hash};
}

// Both handshakes stepped in turn until each is done or failed.
bool handshake(TlsStream &a, TlsStream &b) {
  HandshakeStep x = HandshakeStep::WantWrite, y = HandshakeStep::WantRead;
  for (int i = 0; i < 100; i++) {
    if (x != HandshakeStep::Done && x != HandshakeStep::Failed) x = a.handshake();
    if (y != HandshakeStep::Done && y != HandshakeStep::Failed) y = b.handshake();
    if ((x == HandshakeStep::Done || x == HandshakeStep::Failed) && (y == HandshakeStep::Done || y == HandshakeStep::Failed))
      break;
  }
  return x == HandshakeStep::Done && y == HandshakeStep::Done;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++)
    v[i] = static_cast<uint8_t>(i * 7 + seed + (i >> 9));
  return v;
}

// Everything `from` sends of `data` (as a header, a payload and a
// trailer: three iovecs, like a PDU), read by `to` into two iovecs at a time.
std::vector<uint8_t> transfer(TlsStream &from, TlsStream &to, const std::vector<uint8_t> &data) {
  std::vector<uint8_t> got(data.size());
  size_t sent = 0, recvd = 0;
  for (int spins = 0; recvd < data.size() && spins < 100000; spins++) {
    if (sent < data.size()) {
      const size_t head = std::min<size_t>(24, data.size() - sent);
      iovec iov[3] = {{const_cast<uint8_t *>(data.data() + sent), head}};
      size_t n = 1;
      if (sent + head < data.size()) {
        const size_t mid = std::min<size_t>(131072, data.size() - sent - head);
        iov[1] = {const_cast<uint8_t *>(data.data() + sent + head), mid};
        n = 2;
        if (sent + head + mid < data.size()) iov[n++] = {const_cast<uint8_t *>(data.data() + sent + head + mid), 4};
      }
      const ssize_t k = from.send(iov, n);
      if (k < 0) assert_int_equal(errno, EAGAIN);
      if (k > 0) sent += static_cast<size_t>(k);
    }
    assert_true(from.flush() >= 0); // the batch's records, gathered, go out
    const size_t room = data.size() - recvd;
    iovec r[2] = {{got.data() + recvd, std::min<size_t>(room, 5000)}, {got.data() + recvd + std::min<size_t>(room, 5000), 0}};
    r[1].iov_len = room - r[0].iov_len;
    const ssize_t k = to.recv(r, r[1].iov_len ? 2 : 1);
    if (k < 0) assert_int_equal(errno, EAGAIN);
    if (k > 0) recvd += static_cast<size_t>(k);
  }
  return got;
}

void nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

} // namespace

static void handshake_and_data(void **) {
  for (const ConfiguredPsk &k :
       {ConfiguredPsk{1, SecretBytes(std::span<const uint8_t>(kKey32, 32))}, ConfiguredPsk{2, key48()}}) {
    for (unsigned version : {0u, 1u}) {
      Pair p;
      const OfferedPsk offer = host_psk(k, kHost, kSubsys, version);
      auto c = TlsStream::client(p.c, to_string(offer.identity), offer.psk, offer.identity.hash);
      auto s = TlsStream::server(p.s, [&](const std::string &id, std::string &why) { return lookup_of(offer, id, why); },
                                 {PskHash::Sha256, PskHash::Sha384});
      assert_true(handshake(*c, *s));
      assert_string_equal(c->cipher().c_str(), cipher_suite(psk_hash(k)));
      assert_string_equal(s->identity().c_str(), to_string(offer.identity).c_str());
      const auto up = pattern(300000, 1), down = pattern(70000, 2);
      assert_true(transfer(*c, *s, up) == up);
      assert_true(transfer(*s, *c, down) == down);
      // The end: a close_notify reads as the end of the stream.
      c->close();
      uint8_t b;
      iovec one{&b, 1};
      assert_int_equal(s->recv(&one, 1), 0);
    }
  }
}

// A wrong key fails both sides (the binder does not verify), an unknown
// identity is refused with the lookup's reason, and neither side sends data.
static void wrong_key_and_identity(void **) {
  const ConfiguredPsk k{1, SecretBytes(std::span<const uint8_t>(kKey32, 32))};
  const OfferedPsk right = host_psk(k, kHost, kSubsys, 0);
  SecretBytes wrong = right.psk;
  wrong.data()[0] ^= 1;
  {
    Pair p;
    auto c = TlsStream::client(p.c, to_string(right.identity), wrong, right.identity.hash);
    auto s = TlsStream::server(p.s, [&](const std::string &id, std::string &why) { return lookup_of(right, id, why); },
                               {PskHash::Sha256});
    assert_false(handshake(*c, *s));
    assert_non_null(strstr(c->failure().c_str(), "the TLS handshake failed: "));
    assert_non_null(strstr(s->failure().c_str(), "the TLS handshake failed: "));
    assert_null(strstr(c->failure().c_str(), "plaintext"));
  }
  {
    Pair p;
    const OfferedPsk other = host_psk(k, "nqn.intruder", kSubsys, 0);
    auto c = TlsStream::client(p.c, to_string(other.identity), other.psk, other.identity.hash);
    auto s = TlsStream::server(p.s, [&](const std::string &id, std::string &why) { return lookup_of(right, id, why); },
                               {PskHash::Sha256});
    assert_false(handshake(*c, *s));
    assert_non_null(strstr(s->failure().c_str(), "PSK identity refused: not this test's identity"));
  }
}

// A host that speaks TLS to a plaintext NVMe/TCP port: the answer (a
// C2HTermReq) is named for what it is.
static void plaintext_peer(void **) {
  Pair p;
  const ConfiguredPsk k{1, SecretBytes(std::span<const uint8_t>(kKey32, 32))};
  const OfferedPsk o = host_psk(k, kHost, kSubsys, 0);
  auto c = TlsStream::client(p.c, to_string(o.identity), o.psk, o.identity.hash);
  assert_true(c->handshake() == HandshakeStep::WantRead);
  const uint8_t termreq[24] = {0x03, 0, 24, 0, 24, 0, 0, 0, 1};
  assert_int_equal(write(p.s, termreq, sizeof termreq), 24);
  shutdown(p.s, SHUT_WR);
  assert_true(c->handshake() == HandshakeStep::Failed);
  assert_non_null(strstr(c->failure().c_str(), "plaintext NVMe/TCP (PDU type 0x03)"));
  assert_int_equal(c->first_byte(), 3);
}

// The record layer fed one byte at a time: every record header, body and
// tag boundary falls between two deliveries, and the plaintext comes out
// whole and in order, with EAGAIN in between.
static void records_byte_at_a_time(void **) {
  Pair host, ctrl;        // host.c <-> (this test) <-> ctrl.s
  Pair &relay_in = host;  // the host writes into host.c, the test reads host.s
  Pair &relay_out = ctrl; // the test writes into ctrl.c, the controller reads ctrl.s
  nonblocking(host.s);
  const ConfiguredPsk k{2, key48()};
  const OfferedPsk o = host_psk(k, kHost, kSubsys, 1);
  auto c = TlsStream::client(host.c, to_string(o.identity), o.psk, o.identity.hash);
  auto s = TlsStream::server(ctrl.s, [&](const std::string &id, std::string &why) { return lookup_of(o, id, why); },
                             {PskHash::Sha384});
  // The handshake the other way goes straight (ctrl.s -> ctrl.c -> host.s
  // would need a second relay): the test forwards both directions whole.
  auto forward = [](int from, int to) {
    uint8_t buf[65536];
    for (;;) {
      const ssize_t n = recv(from, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) return;
      assert_int_equal(send(to, buf, static_cast<size_t>(n), 0), n);
    }
  };
  HandshakeStep x = HandshakeStep::WantWrite, y = HandshakeStep::WantRead;
  for (int i = 0; i < 100 && !(x == HandshakeStep::Done && y == HandshakeStep::Done); i++) {
    if (x != HandshakeStep::Done) x = c->handshake();
    forward(relay_in.s, relay_out.c);
    if (y != HandshakeStep::Done) y = s->handshake();
    forward(relay_out.c, relay_in.s);
  }
  assert_true(x == HandshakeStep::Done && y == HandshakeStep::Done);
  const auto data = pattern(40000, 3); // three records
  size_t sent = 0;
  while (sent < data.size()) {
    iovec iov{const_cast<uint8_t *>(data.data() + sent), data.size() - sent};
    const ssize_t n = c->send(&iov, 1);
    assert_true(n > 0);
    sent += static_cast<size_t>(n);
  }
  assert_int_equal(c->flush(), 0); // a UNIX socket is no MPTCP socket: nothing was gathered
  assert_false(c->output_pending());
  std::vector<uint8_t> got(data.size());
  size_t recvd = 0, eagains = 0, moved = 0;
  uint8_t b;
  while (recv(relay_in.s, &b, 1, MSG_DONTWAIT) == 1) {
    assert_int_equal(send(relay_out.c, &b, 1, 0), 1);
    moved++;
    iovec r{got.data() + recvd, got.size() - recvd};
    const ssize_t n = s->recv(&r, 1);
    if (n < 0) {
      assert_int_equal(errno, EAGAIN);
      eagains++;
    } else {
      assert_true(n > 0);
      recvd += static_cast<size_t>(n);
    }
  }
  assert_int_equal(recvd, data.size());
  assert_true(got == data);
  assert_true(moved > data.size());      // the ciphertext, record headers and tags included
  assert_true(eagains >= moved - 3 - 1); // nothing came out before a record was whole
}

// The record keys for kernel TLS: HKDF-Expand-Label of a traffic secret,
// checked against OpenSSL's own TLS 1.3 KDF (another construction of the
// label); and a handshake made for the kernel keeps both traffic secrets,
// works on in user space where the kernel will not take the socket (a UNIX
// socket here never does), without losing it.
static void kernel_hand_over(void **) {
  const SecretBytes secret(std::vector<uint8_t>(48, 0x42));
  for (PskHash h : kSuites) {
    for (const char *label : {"key", "iv"}) {
      const size_t len = std::string(label) == "iv" ? 12 : (h == PskHash::Sha256 ? 16 : 32);
      const SecretBytes ours = traffic_key(h, SecretBytes(std::span<const uint8_t>(secret.data(), hash_len(h))), label, len);
      EVP_KDF *kdf = EVP_KDF_fetch(nullptr, "TLS13-KDF", nullptr);
      EVP_KDF_CTX *kctx = EVP_KDF_CTX_new(kdf);
      int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
      const OSSL_PARAM params[] = {
          OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
          OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char *>(h == PskHash::Sha256 ? "SHA256" : "SHA384"),
                                           0),
          OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<uint8_t *>(secret.data()), hash_len(h)),
          OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PREFIX, const_cast<char *>("tls13 "), 6),
          OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_LABEL, const_cast<char *>(label), strlen(label)),
          OSSL_PARAM_construct_end()};
      std::vector<uint8_t> theirs(len);
      assert_int_equal(EVP_KDF_derive(kctx, theirs.data(), len, params), 1);
      EVP_KDF_CTX_free(kctx);
      EVP_KDF_free(kdf);
      assert_true(ours == SecretBytes(theirs));
    }
  }
  Pair p;
  const ConfiguredPsk k{2, key48()};
  const OfferedPsk o = host_psk(k, kHost, kSubsys, 1);
  auto c = TlsStream::client(p.c, to_string(o.identity), o.psk, o.identity.hash, true);
  auto s = TlsStream::server(
      p.s, [&](const std::string &id, std::string &why) { return lookup_of(o, id, why); }, {PskHash::Sha384}, true);
  assert_true(handshake(*c, *s));
  const TlsStream::KernelKeys ck = c->kernel_keys(), sk = s->kernel_keys();
  assert_true(ck.clean && sk.clean && !ck.server && sk.server);
  assert_true(ck.hash == PskHash::Sha384);
  assert_int_equal(ck.client_secret.size(), 48);
  assert_true(ck.client_secret == sk.client_secret && ck.server_secret == sk.server_secret);
  assert_false(ck.client_secret == ck.server_secret);
  std::string why;
  bool lost = true;
  assert_null(kernel_tls(p.c, *c, why, lost).get());
  assert_false(lost);
  assert_false(why.empty());
  c->keep_in_user_space();
  s->keep_in_user_space();
  const auto data = pattern(50000, 4);
  assert_true(transfer(*c, *s, data) == data);
  assert_false(c->kernel_keys().clean); // data went through user space
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(interchange_vectors), cmocka_unit_test(interchange_refusals),   cmocka_unit_test(identity_vectors),
      cmocka_unit_test(identity_parsing),    cmocka_unit_test(handshake_and_data),     cmocka_unit_test(wrong_key_and_identity),
      cmocka_unit_test(plaintext_peer),      cmocka_unit_test(records_byte_at_a_time), cmocka_unit_test(kernel_hand_over),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
