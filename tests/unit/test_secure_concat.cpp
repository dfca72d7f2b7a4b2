// SPDX-License-Identifier: GPL-2.0-only
// Secure channel concatenation without a peer: the generated PSK, its
// digest, identity and TLS PSK against vectors computed independently
// (tests/unit/vectors/secure_concat.py, Python's hmac and hashlib from the
// specification's formulas; the kernel lab checks the same derivation
// against Linux 7.2 end to end), and the engine's host transaction against
// mpnvme-target's controller transaction under nvmet's rules: who may ask,
// on which queue, with what, and that both sides derive one key.
#include <cstring>
#include <fmt/format.h>
#include <string>

#include "lib/auth/dhchap_controller.hpp"
#include "lib/auth/dhchap_host.hpp"
#include "lib/tls/tls_psk.hpp"
#include "mpnvme-target/core/generated_psks.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;
using namespace mpnvme::dhchap;

namespace {

const std::string kHost = "nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349";
const std::string kSubsys = "blktests-subsystem-1";

SecretBytes pattern(size_t n, unsigned mul, unsigned add, bool down = false) {
  SecretBytes b(n);
  for (size_t i = 0; i < n; i++)
    b.data()[i] = static_cast<uint8_t>(down ? add - i : mul * i + add);
  return b;
}

std::string hex(const SecretBytes &b) {
  std::string s;
  for (size_t i = 0; i < b.size(); i++)
    s += fmt::format("{:02x}", b.data()[i]);
  return s;
}

Secret secret_of(Hash h, uint8_t fill) {
  Secret s;
  s.transform = static_cast<uint8_t>(h);
  s.key = SecretBytes(std::vector<uint8_t>(hash_len(h), fill));
  return s;
}

struct Pair {
  bool host_ok = false, ctrl_ok = false;
  std::string host_error, ctrl_error;
  std::optional<tls::OfferedPsk> host_psk, ctrl_psk;
};

// One transaction: the engine's host (asking for `sc`) against the
// target's controller on a queue with `policy`.
Pair run(const HostAuthConfig &h, const ControllerAuthConfig &c, SecureChannel sc, ConcatPolicy policy) {
  HostTransaction host(h, kHost, kSubsys, 7, sc);
  ControllerTransaction ctrl(c, kHost, kSubsys, nullptr, policy);
  Pair p;
  try {
    ctrl.on_send(host.negotiate());
    ctrl.on_send(host.on_challenge(ctrl.on_receive(kMaxMessage)));
    if (auto s2 = host.on_success1(ctrl.on_receive(kMaxMessage))) ctrl.on_send(*s2);
    p.host_ok = true;
    if (sc != SecureChannel::None) p.host_psk = tls::generated_offer(c.hashes.front(), host.generated_psk(), kHost, kSubsys);
  } catch (const AuthError &e) {
    p.host_error = e.what();
    if (e.answer) ctrl.on_send(host.failure2(*e.answer));
  }
  p.ctrl_ok = ctrl.authenticated();
  p.ctrl_error = ctrl.failure();
  if (p.ctrl_ok && ctrl.secure_channel() != SecureChannel::None)
    p.ctrl_psk = tls::generated_offer(c.hashes.front(), ctrl.generated_psk(), kHost, kSubsys);
  return p;
}

ControllerAuthConfig controller(Hash h, DhGroup g) {
  ControllerAuthConfig c;
  c.host_key = secret_of(h, 0x41);
  c.hashes = {h};
  c.groups = {g};
  return c;
}

HostAuthConfig host_with(const ControllerAuthConfig &c) {
  HostAuthConfig h;
  h.secret = c.host_key;
  return h;
}

const ConcatPolicy kAdminPlain{true, false, true};

} // namespace

static void derivation_matches_independent_vectors(void **) {
  struct Vector {
    Hash h;
    const char *generated, *identity, *tls;
  } const vectors[] = {
      {Hash::Sha256, "9e93bce3695b6a24ae395db4f7071aa2cba19bf9947596dec5ea9eb2dbfafbbe",
       "NVMe1G01 nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349 blktests-subsystem-1 "
       "ujE2iA8xKXnzmMELIwhx+tbQokMNqYXaC5QTTaW4oAw=",
       "f696438b025884964e86c7402aea394a8f85d07a795fdac677e635f0eaf660c7"},
      {Hash::Sha384, "ce2a113d79a8df67d311d3607c19762b30f10b1d67d2ccaaa45f9ee982672fb3f4468e53197f6a0871ff71b65de8997d",
       "NVMe1G02 nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349 blktests-subsystem-1 "
       "63rwi4FJB9mHMmB01wb3jhWVP703aGoWRhAbM+28oRDLKLOfCOiJgkiriwQ6QeMV",
       "fa1031ecdb264467aae1b5ac886868c69c025cba3493a2fb5ad7d8370465cd994148e70453a4773fb4f908dfb04c16ee"},
  };
  for (const Vector &v : vectors) {
    const size_t n = hash_len(v.h);
    const SecretBytes ks = pattern(256, 7, 1), c1 = pattern(n, 1, 0x10), c2 = pattern(n, 0, 0xf0, true);
    const SecretBytes generated = generated_psk(v.h, ks, c1, c2);
    assert_string_equal(hex(generated).c_str(), v.generated);
    const tls::OfferedPsk o = tls::generated_offer(v.h, generated, kHost, kSubsys);
    assert_string_equal(tls::to_string(o.identity).c_str(), v.identity);
    assert_string_equal(hex(o.psk).c_str(), v.tls);
    // The identity reads back as a generated version 1 one.
    const auto back = tls::parse_identity(v.identity);
    assert_true(back && back->generated && back->version == 1);
  }
  // SHA-512 has no TLS 1.3 suite: no TLS PSK from such a transaction.
  bool threw = false;
  try {
    (void)tls::generated_offer(Hash::Sha512, pattern(64, 1, 0), kHost, kSubsys);
  } catch (const std::invalid_argument &) {
    threw = true;
  }
  assert_true(threw);
}

static void both_sides_derive_one_key(void **) {
  for (Hash h : {Hash::Sha256, Hash::Sha384})
    for (DhGroup g : {DhGroup::Ffdhe2048, DhGroup::Ffdhe3072}) {
      const ControllerAuthConfig c = controller(h, g);
      const Pair p = run(host_with(c), c, SecureChannel::NewTlsPsk, kAdminPlain);
      if (!p.host_ok || !p.ctrl_ok)
        fail_msg("%s: host '%s' controller '%s'", hash_name(h).c_str(), p.host_error.c_str(), p.ctrl_error.c_str());
      assert_true(p.host_psk && p.ctrl_psk);
      assert_string_equal(tls::to_string(p.host_psk->identity).c_str(), tls::to_string(p.ctrl_psk->identity).c_str());
      assert_true(p.host_psk->psk == p.ctrl_psk->psk);
      assert_int_equal(p.host_psk->psk.size(), hash_len(h));
    }
  // Each transaction generates another key (fresh challenges, same DH keys).
  const ControllerAuthConfig c = controller(Hash::Sha256, DhGroup::Ffdhe2048);
  const Pair a = run(host_with(c), c, SecureChannel::NewTlsPsk, kAdminPlain);
  const Pair b = run(host_with(c), c, SecureChannel::NewTlsPsk, kAdminPlain);
  assert_false(a.ctrl_psk->psk == b.ctrl_psk->psk);
  // REPLACETLSPSK on an admin queue that runs TLS: the same derivation.
  const Pair r = run(host_with(c), c, SecureChannel::ReplaceTlsPsk, {true, true, true});
  assert_true(r.ctrl_ok && r.host_psk && r.host_psk->psk == r.ctrl_psk->psk);
}

// nvmet's refusals, with the reason in AUTH_Failure1 and in the log.
static void controller_refuses_what_nvmet_refuses(void **) {
  const ControllerAuthConfig c = controller(Hash::Sha256, DhGroup::Ffdhe2048);
  struct Case {
    SecureChannel sc;
    ConcatPolicy policy;
    const char *log;
  } const cases[] = {
      {SecureChannel::NewTlsPsk, {false, false, true}, "on an I/O queue"},
      {SecureChannel::NewTlsPsk, {true, true, true}, "NEWTLSPSK on a queue that already runs TLS"},
      {SecureChannel::ReplaceTlsPsk, {true, false, true}, "REPLACETLSPSK on a queue without TLS"},
      {SecureChannel::NewTlsPsk, {true, false, false}, "on a port without TLS"},
      {SecureChannel::Sc, kAdminPlain, "secure channel concatenation SC"},
  };
  for (const Case &k : cases) {
    const Pair p = run(host_with(c), c, k.sc, k.policy);
    assert_false(p.ctrl_ok);
    if (!strstr(p.ctrl_error.c_str(), k.log)) fail_msg("'%s' lacks '%s'", p.ctrl_error.c_str(), k.log);
    assert_string_equal(p.host_error.c_str(),
                        "controller sent AUTH_Failure1 after AUTH_Negotiate, reason 'secure channel concatenation mismatch'");
  }
  // Only the NULL group allowed: no session key, so no concatenation.
  ControllerAuthConfig null_only = controller(Hash::Sha256, DhGroup::Null);
  HostAuthConfig h = host_with(null_only);
  Pair p = run(h, null_only, SecureChannel::NewTlsPsk, kAdminPlain);
  assert_false(p.ctrl_ok);
  assert_non_null(strstr(p.ctrl_error.c_str(), "none of the allowed DH groups usable with secure channel concatenation"));
  // Only SHA-512 allowed: no TLS suite for the generated PSK.
  ControllerAuthConfig sha512 = controller(Hash::Sha512, DhGroup::Ffdhe2048);
  p = run(host_with(sha512), sha512, SecureChannel::NewTlsPsk, kAdminPlain);
  assert_false(p.ctrl_ok);
  assert_non_null(strstr(p.ctrl_error.c_str(), "none of the allowed hash functions usable with secure channel concatenation"));
  // Without concatenation the same controller still authenticates SHA-512 and NULL.
  assert_true(run(host_with(sha512), sha512, SecureChannel::None, kAdminPlain).ctrl_ok);
  assert_true(run(h, null_only, SecureChannel::None, kAdminPlain).ctrl_ok);
}

// The host's response covers SC_C (Linux 6.19 and later, both sides): a
// reply computed with 0 there, as 6.14 to 6.18 did, does not authenticate.
static void response_covers_sc_c(void **) {
  const ControllerAuthConfig c = controller(Hash::Sha256, DhGroup::Ffdhe2048);
  ControllerTransaction ctrl(c, kHost, kSubsys, nullptr, kAdminPlain);
  Negotiate n;
  n.t_id = 3;
  n.sc_c = static_cast<uint8_t>(SecureChannel::NewTlsPsk);
  n.hashes = {Hash::Sha256};
  n.groups = {DhGroup::Ffdhe2048};
  ctrl.on_send(encode(n));
  const Challenge ch = parse_challenge(ctrl.on_receive(kMaxMessage));
  const DhKey mine(ch.group);
  const SecretBytes ks = mine.shared_secret(ch.dhv);
  Reply r;
  r.t_id = 3;
  r.response = host_response(Hash::Sha256, transformed_key(c.host_key, kHost), augmented_challenge(Hash::Sha256, ch.c1, &ks),
                             ch.seqnum, 3, 0, kHost, kSubsys);
  r.c2 = pattern(32, 3, 1);
  r.dhv = mine.public_value();
  ctrl.on_send(encode(r));
  assert_true(ctrl.failing());
  assert_string_equal(ctrl.failure().c_str(), "the host's response does not match its key");
  // A reply without C2 gives no generated PSK: refused.
  ControllerTransaction again(c, kHost, kSubsys, nullptr, kAdminPlain);
  again.on_send(encode(n));
  const Challenge ch2 = parse_challenge(again.on_receive(kMaxMessage));
  const SecretBytes ks2 = mine.shared_secret(ch2.dhv);
  r.response = host_response(Hash::Sha256, transformed_key(c.host_key, kHost), augmented_challenge(Hash::Sha256, ch2.c1, &ks2),
                             ch2.seqnum, 3, n.sc_c, kHost, kSubsys);
  r.c2.reset();
  again.on_send(encode(r));
  assert_true(again.failing());
  assert_non_null(strstr(again.failure().c_str(), "without the challenge C2"));
}

// What the host refuses: a controller secret (nothing would prove it), a
// controller that picks the NULL group, and lists that leave nothing.
static void host_refuses(void **) {
  ControllerAuthConfig c = controller(Hash::Sha256, DhGroup::Ffdhe2048);
  HostAuthConfig h = host_with(c);
  h.ctrl_secret = secret_of(Hash::Sha256, 0x42);
  bool threw = false;
  try {
    HostTransaction t(h, kHost, kSubsys, 1, SecureChannel::NewTlsPsk);
  } catch (const std::invalid_argument &e) {
    threw = strstr(e.what(), "would prove nothing") != nullptr;
  }
  assert_true(threw);
  h.ctrl_secret.reset();
  // A controller that answers with the NULL group anyway.
  HostTransaction t(h, kHost, kSubsys, 1, SecureChannel::NewTlsPsk);
  const Negotiate sent = parse_negotiate(t.negotiate());
  assert_int_equal(sent.sc_c, static_cast<uint8_t>(SecureChannel::NewTlsPsk));
  for (DhGroup g : sent.groups)
    assert_true(g != DhGroup::Null);
  for (Hash x : sent.hashes)
    assert_true(x != Hash::Sha512);
  Challenge ch;
  ch.t_id = sent.t_id;
  ch.hash = Hash::Sha256;
  ch.group = DhGroup::Null;
  ch.seqnum = 5;
  ch.c1 = pattern(32, 1, 0);
  std::string why;
  try {
    (void)t.on_challenge(encode(ch));
  } catch (const AuthError &e) {
    why = e.what();
    assert_true(e.answer == Failure::ConcatMismatch);
  }
  assert_string_equal(why.c_str(), "the controller chose DH group null, which secure channel concatenation does not allow");
  h.groups = {DhGroup::Null};
  HostTransaction nothing(h, kHost, kSubsys, 2, SecureChannel::NewTlsPsk);
  threw = false;
  try {
    (void)nothing.negotiate();
  } catch (const AuthError &) {
    threw = true;
  }
  assert_true(threw);
}

// The target's store: found by identity, the newest kPerPair per host and
// subsystem, a replaced one retired, a host's all gone when its keys
// change, and none minted by a transaction that began before the change.
static void target_keeps_the_newest_generated_psks(void **) {
  using mpnvme::target::GeneratedPsks;
  GeneratedPsks store;
  std::vector<std::string> ids;
  for (unsigned i = 0; i < GeneratedPsks::kPerPair + 2; i++) {
    const tls::OfferedPsk o = tls::generated_offer(Hash::Sha256, pattern(32, 1, i), kHost, kSubsys);
    assert_true(store.insert(o, store.epoch(kHost)));
    ids.push_back(tls::to_string(o.identity));
    const auto found = store.find(ids.back());
    assert_true(found && found->psk == o.psk && found->hash == tls::PskHash::Sha256);
  }
  assert_int_equal(store.size(), GeneratedPsks::kPerPair);
  assert_false(store.find(ids[0]) || store.find(ids[1])); // the two oldest made room
  assert_true(store.find(ids[2]).has_value());
  // REPLACETLSPSK retires the PSK it replaces.
  store.erase(ids[2]);
  assert_false(store.find(ids[2]).has_value());
  assert_int_equal(store.size(), GeneratedPsks::kPerPair - 1);
  const tls::OfferedPsk other = tls::generated_offer(Hash::Sha384, pattern(48, 1, 0), "nqn.other-host", kSubsys);
  assert_true(store.insert(other, store.epoch("nqn.other-host")));
  // A transaction that started before the host's keys changed mints no PSK.
  const uint64_t before = store.epoch(kHost);
  store.forget_host(kHost);
  assert_int_equal(store.size(), 1);
  assert_false(store.find(ids.back()).has_value());
  assert_true(store.find(tls::to_string(other.identity)).has_value());
  const tls::OfferedPsk late = tls::generated_offer(Hash::Sha256, pattern(32, 3, 7), kHost, kSubsys);
  assert_false(store.insert(late, before));
  assert_false(store.find(tls::to_string(late.identity)).has_value());
  assert_true(store.insert(late, store.epoch(kHost)));
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(derivation_matches_independent_vectors),
      cmocka_unit_test(both_sides_derive_one_key),
      cmocka_unit_test(controller_refuses_what_nvmet_refuses),
      cmocka_unit_test(response_covers_sc_c),
      cmocka_unit_test(host_refuses),
      cmocka_unit_test(target_keeps_the_newest_generated_psks),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
