// SPDX-License-Identifier: GPL-2.0-only
// DH-HMAC-CHAP without a peer: the secret representation against what
// nvme-cli 2.3 (libnvme) generates, the key transformation against
// libnvme's, FFDHE agreement and refusal of values outside the group, and
// the host transaction against a controller played by this test (the
// kernel lab tests run it against nvmet).
#include <algorithm>
#include <cstring>
#include <string>

#include "lib/auth/dhchap_controller.hpp"
#include "lib/auth/dhchap_host.hpp"
#include "mpnvme-target/core/auth_backoff.hpp"
#include "tests/unit/cmocka_cxx.hpp"
#include "tests/unit/key_refusal.hpp"

using namespace mpnvme;
using namespace mpnvme::dhchap;

namespace {

std::vector<uint8_t> counting(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++)
    v[i] = static_cast<uint8_t>(i);
  return v;
}

bool refused(const std::string &text, const char *expect) {
  return key_refused([](const std::string &t, const char *o) { return parse_secret(t, o); }, text, "dhchap_secret", 10, expect);
}

} // namespace

// `nvme gen-dhchap-key --secret=000102...1f --hmac=0 --key-length=32`
static void parses_nvme_cli_secret(void **) {
  const Secret s = parse_secret("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "dhchap_secret");
  assert_int_equal(s.transform, 0);
  assert_int_equal(s.key.size(), 32);
  assert_memory_equal(s.key.data(), counting(32).data(), 32);
  // The trailing colon is optional, as for the kernel.
  assert_true(parse_secret("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR", "x") == s);
}

// nvme-cli's --hmac=N --nqn=NQN prints the key transformed by libnvme:
// HMAC-SHA-2(key, NQN || "NVMe-over-Fabrics"), the transformation the
// kernel applies to a DHHC-1:0N: key. Ours must give the same bytes.
static void transform_matches_libnvme(void **) {
  Secret s;
  s.transform = 1;
  s.key = SecretBytes(counting(32));
  const Secret by_cli = parse_secret("DHHC-1:01:WulleCBkG4oCs0iIC3Cit9gBDCLWiZ9PNXuhqytWkBIZkvGy:", "x");
  assert_true(transformed_key(s, "nqn.2014-08.org.nvmexpress:uuid:test") == by_cli.key);
  assert_false(transformed_key(s, "nqn.2014-08.org.nvmexpress:uuid:other") == by_cli.key);
  std::vector<uint8_t> k48 = counting(32), tail = counting(16);
  k48.insert(k48.end(), tail.begin(), tail.end());
  s.transform = 2;
  s.key = SecretBytes(k48);
  const Secret cli384 = parse_secret("DHHC-1:02:gaXIkmPxEUbMpcu7KXGUA9JW6pVHjb3MzGj2DoigWZuZeRws6a0ORy8J19xTqBD2QkNHOQ==:", "x");
  assert_true(transformed_key(s, "nqn.x") == cli384.key);
  s.transform = 0; // untransformed: the key as it is
  assert_true(transformed_key(s, "nqn.x") == s.key);
}

static void refuses_bad_secrets(void **) {
  const std::string good = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
  std::string flipped = good;
  flipped[20] = flipped[20] == 'A' ? 'B' : 'A';
  assert_true(refused(flipped, "CRC does not match"));
  assert_true(refused("DHHC-2:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "not a DH-HMAC-CHAP secret"));
  assert_true(refused("DHHC-1:04:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "unknown key transformation 04"));
  assert_true(refused("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+Kfia*:", "not base64"));
  assert_true(refused("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=:", "a key of 28 bytes"));
  // A 32-byte key marked for SHA-384 (48 bytes): the kernel would read past it.
  std::string marked = good;
  marked[8] = '2';
  assert_true(refused(marked, "needs a 48-byte key"));
}

static void ffdhe_agrees_and_refuses_bad_values(void **) {
  const DhKey a(DhGroup::Ffdhe2048), b(DhGroup::Ffdhe2048);
  const std::vector<uint8_t> pa = a.public_value(), pb = b.public_value();
  assert_int_equal(pa.size(), 256);
  assert_true(a.shared_secret(pb) == b.shared_secret(pa));
  assert_int_equal(a.shared_secret(pb).size(), 256);
  std::vector<uint8_t> bad(256, 0);
  for (uint8_t last : {0, 1}) { // 0 and 1 are not in the group
    bad[255] = last;
    bool threw = false;
    try {
      a.shared_secret(bad);
    } catch (const std::runtime_error &) {
      threw = true;
    }
    assert_true(threw);
  }
  std::vector<uint8_t> big(256, 0xff); // above the prime
  bool threw = false;
  try {
    a.shared_secret(big);
  } catch (const std::runtime_error &) {
    threw = true;
  }
  assert_true(threw);
  threw = false;
  try {
    a.shared_secret(std::vector<uint8_t>(255, 1)); // the wrong size
  } catch (const std::runtime_error &) {
    threw = true;
  }
  assert_true(threw);
}

namespace {

// A controller for one transaction, written from the specification's
// message layout with this library's encoders: enough to drive the host
// through every branch.
struct Controller {
  Secret host_key, ctrl_key;
  Hash hash = Hash::Sha256;
  DhGroup group = DhGroup::Null;
  std::string hostnqn = "nqn.2014-08.org.nvmexpress:uuid:host", subnqn = "nqn.2026-12.io.mpnvme:sub";
  Challenge sent;
  std::unique_ptr<DhKey> dh;

  std::vector<uint8_t> challenge(std::span<const uint8_t> negotiate) {
    const Negotiate n = parse_negotiate(negotiate);
    sent.t_id = n.t_id;
    sent.hash = hash;
    sent.group = group;
    sent.seqnum = 77;
    sent.c1 = SecretBytes(hash_len(hash));
    random_bytes(sent.c1.data(), sent.c1.size());
    if (group != DhGroup::Null) {
      dh = std::make_unique<DhKey>(group);
      sent.dhv = dh->public_value();
    }
    return encode(sent);
  }

  // Success1, with the controller's answer to the host's challenge; `lie`
  // answers with the wrong key.
  std::vector<uint8_t> success1(std::span<const uint8_t> reply_msg, bool *host_ok, bool lie = false) {
    const Reply r = parse_reply(reply_msg, hash_len(hash));
    std::optional<SecretBytes> skey;
    if (dh) skey = dh->shared_secret(r.dhv);
    const SecretBytes *sk = skey ? &*skey : nullptr;
    const SecretBytes want = host_response(hash, transformed_key(host_key, hostnqn), augmented_challenge(hash, sent.c1, sk),
                                           sent.seqnum, sent.t_id, 0, hostnqn, subnqn);
    *host_ok = want == r.response;
    Success1 s;
    s.t_id = sent.t_id;
    s.hl = static_cast<uint8_t>(hash_len(hash));
    if (r.c2) {
      Secret k = ctrl_key;
      if (lie) k.key.data()[0] ^= 1;
      s.response = controller_response(hash, transformed_key(k, subnqn), augmented_challenge(hash, *r.c2, sk), r.seqnum,
                                       sent.t_id, hostnqn, subnqn);
    }
    return encode(s);
  }
};

Secret secret_of(uint8_t transform, Hash h, uint8_t fill) {
  Secret s;
  s.transform = transform;
  s.key = SecretBytes(std::vector<uint8_t>(hash_len(h), fill));
  return s;
}

} // namespace

static void host_authenticates_each_hash_and_group(void **) {
  for (Hash h : kHashes)
    for (DhGroup g : {DhGroup::Null, DhGroup::Ffdhe2048, DhGroup::Ffdhe3072}) {
      Controller c;
      c.hash = h;
      c.group = g;
      c.host_key = secret_of(static_cast<uint8_t>(h), h, 0x11);
      c.ctrl_key = secret_of(0, h, 0x22);
      HostAuthConfig cfg;
      cfg.secret = c.host_key;
      cfg.ctrl_secret = c.ctrl_key;
      HostTransaction t(cfg, c.hostnqn, c.subnqn, 9);
      const auto reply = t.on_challenge(c.challenge(t.negotiate()));
      bool host_ok = false;
      const auto s1 = c.success1(reply, &host_ok);
      assert_true(host_ok);
      const auto s2 = t.on_success1(s1);
      assert_true(s2.has_value());
      assert_int_equal(parse_header(*s2).id, static_cast<uint8_t>(Msg::Success2));
      // With the wrong host key the controller's check fails.
      cfg.secret = secret_of(static_cast<uint8_t>(h), h, 0x12);
      HostTransaction wrong(cfg, c.hostnqn, c.subnqn, 10);
      (void)c.success1(wrong.on_challenge(c.challenge(wrong.negotiate())), &host_ok);
      assert_false(host_ok);
    }
}

static void host_refuses_an_unproven_controller(void **) {
  Controller c;
  c.host_key = secret_of(0, Hash::Sha256, 1);
  c.ctrl_key = secret_of(0, Hash::Sha256, 2);
  HostAuthConfig cfg;
  cfg.secret = c.host_key;
  cfg.ctrl_secret = c.ctrl_key;
  HostTransaction t(cfg, c.hostnqn, c.subnqn, 3);
  bool host_ok = false;
  const auto s1 = c.success1(t.on_challenge(c.challenge(t.negotiate())), &host_ok, /*lie=*/true);
  try {
    t.on_success1(s1);
    fail_msg("a controller with the wrong key was trusted");
  } catch (const AuthError &e) {
    assert_true(e.answer == Failure::Failed);
    assert_non_null(strstr(e.what(), "does not hold dhchap_ctrl_secret"));
  }
}

static void host_reports_failure1_and_refuses_unoffered_choices(void **) {
  HostAuthConfig cfg;
  cfg.secret = secret_of(0, Hash::Sha256, 1);
  HostTransaction t(cfg, "h", "s", 5);
  FailureMessage f;
  f.t_id = 5;
  f.explanation = static_cast<uint8_t>(Failure::HashUnusable);
  try {
    t.on_challenge(encode(f));
    fail_msg("Failure1 accepted");
  } catch (const AuthError &e) {
    assert_false(e.answer.has_value()); // the controller refused: nothing to answer
    assert_string_equal(e.what(), "controller sent AUTH_Failure1 after AUTH_Negotiate, reason 'hash function not usable'");
  }
  cfg.hashes = {Hash::Sha512};
  HostTransaction only512(cfg, "h", "s", 6);
  Controller c; // picks SHA-256, which was not offered
  try {
    only512.on_challenge(c.challenge(only512.negotiate()));
    fail_msg("a hash outside dhchap_hash= was accepted");
  } catch (const AuthError &e) {
    assert_true(e.answer == Failure::HashUnusable);
  }
}

// Every truncation of a valid message is refused, none read past its end.
static void parsers_refuse_truncations(void **) {
  Controller c;
  c.group = DhGroup::Ffdhe2048;
  HostAuthConfig cfg;
  cfg.secret = c.host_key = secret_of(0, Hash::Sha256, 1);
  HostTransaction t(cfg, c.hostnqn, c.subnqn, 1);
  const std::vector<uint8_t> ch = c.challenge(t.negotiate());
  for (size_t n = 0; n < ch.size(); n++) {
    std::vector<uint8_t> part(ch.begin(), ch.begin() + static_cast<long>(n));
    bool threw = false;
    try {
      parse_challenge(part);
    } catch (const ProtocolError &) {
      threw = true;
    }
    assert_true(threw);
  }
}

namespace {
// The engine's host transaction (checked against nvmet in the kernel lab)
// against mpnvme-target's controller transaction: the outcome for both.
struct Outcome {
  bool host_ok = false, ctrl_ok = false;
  std::string host_error, ctrl_error;
};

Outcome run_pair(const HostAuthConfig &h, const ControllerAuthConfig &c) {
  const std::string hostnqn = "nqn.2014-08.org.nvmexpress:uuid:pair", subnqn = "nqn.2026-12.io.mpnvme:pair";
  HostTransaction host(h, hostnqn, subnqn, 42);
  ControllerTransaction ctrl(c, hostnqn, subnqn);
  Outcome o;
  try {
    ctrl.on_send(host.negotiate());
    const auto reply = host.on_challenge(ctrl.on_receive(kMaxMessage));
    ctrl.on_send(reply);
    if (auto s2 = host.on_success1(ctrl.on_receive(kMaxMessage))) ctrl.on_send(*s2);
    o.host_ok = true;
  } catch (const AuthError &e) {
    o.host_error = e.what();
    if (e.answer) ctrl.on_send(host.failure2(*e.answer));
  }
  o.ctrl_ok = ctrl.authenticated();
  o.ctrl_error = ctrl.failure();
  return o;
}
} // namespace

static void engine_host_against_target_controller(void **) {
  for (Hash h : kHashes)
    for (DhGroup g : {DhGroup::Null, DhGroup::Ffdhe2048})
      for (bool bidi : {false, true}) {
        ControllerAuthConfig c;
        c.host_key = secret_of(static_cast<uint8_t>(h), h, 0x31);
        if (bidi) c.ctrl_key = secret_of(0, Hash::Sha512, 0x32);
        c.hashes = {h};
        c.groups = {g};
        HostAuthConfig hc;
        hc.secret = c.host_key;
        hc.ctrl_secret = c.ctrl_key;
        const Outcome o = run_pair(hc, c);
        if (!o.host_ok || !o.ctrl_ok)
          fail_msg("%s %s bidi %d: host '%s' controller '%s'", hash_name(h).c_str(), dhgroup_name(g).c_str(), bidi,
                   o.host_error.c_str(), o.ctrl_error.c_str());
      }
}

static void target_controller_refuses(void **) {
  ControllerAuthConfig c;
  c.host_key = secret_of(0, Hash::Sha256, 1);
  HostAuthConfig hc;
  hc.secret = secret_of(0, Hash::Sha256, 2); // the wrong key
  Outcome o = run_pair(hc, c);
  assert_false(o.ctrl_ok);
  assert_string_equal(o.ctrl_error.c_str(), "the host's response does not match its key");
  assert_string_equal(o.host_error.c_str(),
                      "controller sent AUTH_Failure1 after DH-HMAC-CHAP_Reply, reason 'authentication failed'");
  hc.secret = c.host_key;
  hc.ctrl_secret = secret_of(0, Hash::Sha256, 3); // the controller has no controller key
  o = run_pair(hc, c);
  assert_false(o.ctrl_ok);
  assert_non_null(strstr(o.ctrl_error.c_str(), "no dhchap_ctrl_key"));
  hc.ctrl_secret.reset();
  c.groups = {DhGroup::Ffdhe3072};
  hc.groups = {DhGroup::Null, DhGroup::Ffdhe2048}; // nothing in common
  o = run_pair(hc, c);
  assert_false(o.ctrl_ok);
  assert_string_equal(o.host_error.c_str(), "controller sent AUTH_Failure1 after AUTH_Negotiate, reason 'DH group not usable'");
  // A Receive before any Send: Failure1, and the transaction is over.
  ControllerTransaction t(c, "h", "s");
  const auto f = t.on_receive(kMaxMessage);
  assert_int_equal(parse_failure(f).explanation, static_cast<uint8_t>(Failure::IncorrectProtocol));
  assert_true(t.failed());
}

static void failed_authentication_backs_off(void **) {
  using mpnvme::target::AuthBackoff;
  AuthBackoff b;
  const auto t0 = AuthBackoff::Clock::now();
  bool log_it = false;
  assert_string_equal(AuthBackoff::address("10.1.1.2:51234").c_str(), "10.1.1.2");
  assert_string_equal(AuthBackoff::address("[fe80::1]:4420").c_str(), "fe80::1");
  assert_false(b.waiting("10.1.1.2", t0, &log_it));
  b.failed("10.1.1.2", t0);
  assert_true(b.waiting("10.1.1.2", t0 + std::chrono::milliseconds(500), &log_it));
  assert_true(log_it);
  assert_true(b.waiting("10.1.1.2", t0 + std::chrono::milliseconds(600), &log_it));
  assert_false(log_it); // logged once per wait
  assert_false(b.waiting("10.1.1.3", t0, &log_it));
  assert_false(b.waiting("10.1.1.2", t0 + std::chrono::milliseconds(1001), &log_it));
  b.failed("10.1.1.2", t0 + std::chrono::seconds(2)); // again: twice as long
  assert_true(b.waiting("10.1.1.2", t0 + std::chrono::milliseconds(3900), &log_it));
  assert_false(b.waiting("10.1.1.2", t0 + std::chrono::milliseconds(4001), &log_it));

  // --auth-backoff: the first wait is the knob's; the control socket lists
  // and forgives.
  AuthBackoff quick(std::chrono::milliseconds(200));
  quick.failed("10.1.1.2", t0);
  assert_true(quick.waiting("10.1.1.2", t0 + std::chrono::milliseconds(150), &log_it));
  assert_false(quick.waiting("10.1.1.2", t0 + std::chrono::milliseconds(201), &log_it));
  quick.failed("10.1.1.2", t0 + std::chrono::milliseconds(300));
  const auto listed = quick.waiting_now(t0 + std::chrono::milliseconds(400));
  assert_int_equal(listed.size(), 1);
  assert_string_equal(listed[0].addr.c_str(), "10.1.1.2");
  assert_int_equal(listed[0].failures, 2);
  assert_true(listed[0].left == std::chrono::milliseconds(300)); // 400 ms from 300: 100 gone
  assert_true(quick.forgive("10.1.1.2"));
  assert_false(quick.waiting("10.1.1.2", t0 + std::chrono::milliseconds(400), &log_it));
  assert_false(quick.forgive("10.1.1.2"));
  AuthBackoff off(std::chrono::milliseconds(0));
  off.failed("10.1.1.2", t0);
  assert_false(off.waiting("10.1.1.2", t0, &log_it));
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(parses_nvme_cli_secret),
      cmocka_unit_test(transform_matches_libnvme),
      cmocka_unit_test(refuses_bad_secrets),
      cmocka_unit_test(ffdhe_agrees_and_refuses_bad_values),
      cmocka_unit_test(host_authenticates_each_hash_and_group),
      cmocka_unit_test(host_refuses_an_unproven_controller),
      cmocka_unit_test(host_reports_failure1_and_refuses_unoffered_choices),
      cmocka_unit_test(parsers_refuse_truncations),
      cmocka_unit_test(engine_host_against_target_controller),
      cmocka_unit_test(target_controller_refuses),
      cmocka_unit_test(failed_authentication_backs_off),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
