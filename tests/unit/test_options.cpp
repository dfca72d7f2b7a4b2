// SPDX-License-Identifier: GPL-2.0-only
// Option parsing: traddr path lists, priority pairs and every engine option,
// including each rejected form and the option name in the message.
#include <cstring>
#include <stdexcept>
#include <string>

#include "lib/config/engine_options.hpp"
#include "lib/config/host_identity.hpp"
#include "lib/config/priority_pairs.hpp"
#include "lib/net/paths.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;

// Expect std::invalid_argument whose message contains `needle`.
template <typename F> static void expect_refused(F &&f, const char *needle) {
  try {
    f();
  } catch (const std::invalid_argument &e) {
    if (!strstr(e.what(), needle)) fail_msg("message '%s' lacks '%s'", e.what(), needle);
    return;
  }
  fail_msg("accepted although '%s' was expected to be refused", needle);
}

static void paths_forms(void **) {
  auto p = parse_paths("10.1.1.1", "4420");
  assert_int_equal(p.size(), 1);
  assert_string_equal(p[0].addr.c_str(), "10.1.1.1");
  assert_string_equal(p[0].service.c_str(), "4420");
  p = parse_paths("10.1.1.1,10.1.2.1:4421,[fd00::1]:4422,fd00::2", "4420");
  assert_int_equal(p.size(), 4);
  assert_string_equal(p[1].service.c_str(), "4421");
  assert_true(p[2].ipv6);
  assert_string_equal(p[2].addr.c_str(), "fd00::1");
  assert_string_equal(p[2].service.c_str(), "4422");
  assert_string_equal(p[2].display().c_str(), "[fd00::1]:4422");
  assert_true(p[3].ipv6);
  assert_string_equal(p[3].service.c_str(), "4420");
  p = parse_paths("[::1]", "9");
  assert_string_equal(p[0].service.c_str(), "9");
}

static void paths_rejected(void **) {
  expect_refused([] { parse_paths("", "4420"); }, "traddr: required");
  expect_refused([] { parse_paths("10.0.0.1,", "4420"); }, "empty entry");
  expect_refused([] { parse_paths("10.0.0.1:0", "4420"); }, "port must be");
  expect_refused([] { parse_paths("10.0.0.1:65536", "4420"); }, "port must be");
  expect_refused([] { parse_paths("10.0.0.1:abc", "4420"); }, "'10.0.0.1:abc'");
  expect_refused([] { parse_paths("[fd00::1", "4420"); }, "missing ']'");
  expect_refused([] { parse_paths("[10.0.0.1]:4420", "4420"); }, "not an IPv6");
  expect_refused([] { parse_paths("[fd00::1]x", "4420"); }, "':PORT'");
  expect_refused([] { parse_paths(":4420", "4420"); }, "empty address");
  expect_refused([] { parse_paths("a:x", "4420", "listen"); }, "listen:");
}

static void priority_pairs_resolution(void **) {
  auto pp = PriorityPairs::parse("3", "sk_priority", 255);
  assert_int_equal(*pp.for_queue(0), 3);
  assert_int_equal(*pp.for_queue(17), 3);
  pp = PriorityPairs::parse("admin:0,io:6", "sk_priority", 255);
  assert_int_equal(*pp.for_queue(0), 0);
  assert_int_equal(*pp.for_queue(1), 6);
  assert_int_equal(*pp.for_queue(99), 6);
  pp = PriorityPairs::parse("io:4,2-3:6,3:1", "sk_priority", 255); // later pairs win
  assert_false(pp.for_queue(0).has_value());
  assert_int_equal(*pp.for_queue(1), 4);
  assert_int_equal(*pp.for_queue(2), 6);
  assert_int_equal(*pp.for_queue(3), 1);
  assert_int_equal(*pp.for_queue(4), 4);
  assert_true(pp.any_nonzero());
  pp = PriorityPairs::parse("io:0xb8,admin:0x0", "tos", 255);
  assert_int_equal(*pp.for_queue(3), 0xb8);
  assert_int_equal(*pp.for_queue(0), 0);
  pp = PriorityPairs::parse("", "tos", 255);
  assert_true(pp.empty());
  assert_false(pp.for_queue(1).has_value());
  pp = PriorityPairs::parse("admin:0", "tos", 255);
  assert_false(pp.any_nonzero());
  assert_false(pp.for_queue(1).has_value());
}

static void priority_pairs_rejected(void **) {
  expect_refused([] { PriorityPairs::parse("x", "sk_priority", 255); }, "sk_priority: bad entry 'x'");
  expect_refused([] { PriorityPairs::parse("io", "sk_priority", 255); }, "missing ':VALUE'");
  expect_refused([] { PriorityPairs::parse("io:", "tos", 255); }, "value must be");
  expect_refused([] { PriorityPairs::parse("io:256", "tos", 255); }, "tos: bad entry 'io:256'");
  expect_refused([] { PriorityPairs::parse("-1", "tos", 255); }, "tos:");
  expect_refused([] { PriorityPairs::parse("0:1", "tos", 255); }, "selector must be");
  expect_refused([] { PriorityPairs::parse("4-2:1", "tos", 255); }, "range must be");
  expect_refused([] { PriorityPairs::parse("1-:1", "tos", 255); }, "range must be");
  expect_refused([] { PriorityPairs::parse("adm:1", "tos", 255); }, "selector must be");
  expect_refused([] { PriorityPairs::parse("io:1,,admin:2", "tos", 255); }, "tos: bad entry ''");
  expect_refused([] { PriorityPairs::parse("io:1x", "tos", 255); }, "value must be");
  expect_refused([] { PriorityPairs::parse("io:0x", "tos", 255); }, "value must be");
  expect_refused([] { PriorityPairs::parse("io:0x100", "tos", 255); }, "value must be");
  expect_refused([] { PriorityPairs::parse("io:0xg1", "tos", 255); }, "value must be");
}

// Options as given: the required ones; the rest take the table's defaults.
struct Opts {
  OptionValues v{{"traddr", "127.0.0.1"},
                 {"subnqn", "nqn.2026-11.io.mpnvme:test"},
                 {"hostnqn", "nqn.2014-08.org.nvmexpress:uuid:0f6f4a94-8f2a-4b57-9f38-4d8c2b1e2a10"}};
  void set(const char *name, const char *value) {
    if (value)
      v[name] = value;
    else
      v.erase(name);
  }
};

static void engine_options_defaults(void **) {
  Opts t;
  EngineOptions e = parse_engine_options(t.v);
  assert_int_equal(e.paths.size(), 1);
  assert_string_equal(e.paths[0].service.c_str(), "4420");
  assert_true(e.transport == Transport::Mptcp);
  assert_int_equal(e.nsid, 1);
  assert_int_equal(e.kato_ms, 5000);
  assert_true(e.iopolicy == IoPolicy::Numa);
  assert_true(e.trim_mode == TrimMode::Dsm);
  assert_true(e.poll == PollMode::Hybrid);
  assert_string_equal(e.log_level.c_str(), "warn");
  assert_false(e.digests.header);
  assert_true(e.disable_sqflow);
  assert_true(e.defer_send);
  assert_false(e.fabrics_disconnect);
  assert_int_equal(e.connect_timeout.count(), 10000);
  assert_int_equal(e.mptcp_join_wait.count(), 0);
  // Without /etc/nvme/hostid, the host ID derives from the uuid in the host NQN.
  const HostIdentityFiles none{"/nonexistent/hostnqn", "/nonexistent/hostid"};
  HostIdentity id = resolve_host_identity(t.v["hostnqn"], "", none);
  assert_int_equal(id.hostid[0], 0x0f);
  assert_int_equal(id.hostid[15], 0x10);
  // A generated host NQN when there is no file, stable within the process.
  id = resolve_host_identity("", "", none);
  assert_int_equal(id.hostnqn.rfind("nqn.2014-08.org.nvmexpress:uuid:", 0), 0);
  assert_string_equal(id.hostnqn.c_str(), resolve_host_identity("", "", none).hostnqn.c_str());
  assert_int_equal(id.hostid[0], std::stoul(id.hostnqn.substr(32, 2), nullptr, 16));
  t.set("transport", "tcp");
  t.set("iopolicy", "queue-depth");
  t.set("trim_mode", "write_zeroes");
  t.set("traddr", "10.0.0.1,10.0.0.2:4421");
  t.set("sk_priority", "admin:0,io:6");
  t.set("hdr_digest", "1");
  t.set("data_digest", "1");
  t.set("poll", "busy");
  e = parse_engine_options(t.v);
  assert_true(e.transport == Transport::Tcp);
  assert_true(e.iopolicy == IoPolicy::QueueDepth);
  assert_true(e.trim_mode == TrimMode::WriteZeroes);
  assert_true(e.poll == PollMode::Busy);
  assert_int_equal(e.paths.size(), 2);
  assert_int_equal(*e.sk_priority.for_queue(1), 6);
  assert_true(e.digests.header && e.digests.data);
  // The enumerations' names come from the table's choices.
  assert_string_equal(iopolicy_name(IoPolicy::ServiceTime), "service-time");
  assert_string_equal(iopolicy_name(IoPolicy::RoundRobin), "round-robin");
  assert_int_equal(kernel_iopolicy_names().size(), 3);
  assert_false(kernel_has_iopolicy(IoPolicy::ServiceTime));
}

// Recovery options with nvme-cli's names and the kernel's defaults, and the
// per-path binding lists.
static void engine_options_multipath(void **) {
  Opts t;
  EngineOptions e = parse_engine_options(t.v);
  assert_int_equal(e.recovery.io_timeout.count(), 30000);
  assert_int_equal(e.recovery.reconnect_delay.count(), 10000);
  assert_true(e.recovery.ctrl_loss_tmo && e.recovery.ctrl_loss_tmo->count() == 600000);
  assert_false(e.recovery.fast_io_fail_tmo.has_value());
  assert_int_equal(e.max_retries, 5);
  assert_int_equal(e.host_traddr.size(), 1);
  t.set("traddr", "10.1.1.1,10.1.2.1,10.1.3.1");
  t.set("reconnect_delay", "0.5");
  t.set("ctrl_loss_tmo", "-1");
  t.set("fast_io_fail_tmo", "2.25");
  t.set("iopolicy", "service-time");
  t.set("host_traddr", "10.1.1.2,10.1.2.2,10.1.3.2");
  t.set("host_iface", "h1");
  e = parse_engine_options(t.v);
  assert_int_equal(e.recovery.reconnect_delay.count(), 500);
  assert_false(e.recovery.ctrl_loss_tmo.has_value());
  assert_int_equal(e.recovery.fast_io_fail_tmo->count(), 2250);
  assert_true(e.iopolicy == IoPolicy::ServiceTime);
  assert_int_equal(e.host_traddr.size(), 3);
  assert_string_equal(e.host_traddr[2].c_str(), "10.1.3.2");
  assert_int_equal(e.host_iface.size(), 3);
  assert_string_equal(e.host_iface[1].c_str(), "h1");
}

static void engine_options_rejected(void **) {
  const std::string long_nqn(300, 'n');
  struct Case {
    const char *option, *value, *needle;
  } cases[] = {
      {"transport", "rdma", "transport=rdma: invalid value (accepted: mptcp, tcp)"},
      {"subnqn", nullptr, "subnqn: required"},
      {"subnqn", long_nqn.c_str(), "subnqn: longer"},
      {"traddr", nullptr, "traddr: required"},
      {"trsvcid", "http", "trsvcid=http"},
      {"iopolicy", "random", "iopolicy=random"},
      {"trim_mode", "unmap", "trim_mode=unmap"},
      {"log_level", "loud", "log_level=loud"},
      {"sk_priority", "io:x", "sk_priority"},
      {"tos", "300", "tos"},
      {"hostid", "not-a-uuid", "hostid"},
      {"reconnect_delay", "soon", "reconnect_delay=soon"},
      {"reconnect_delay", "0.01", "reconnect_delay=0.01"},
      {"reconnect_delay", "-1", "reconnect_delay=-1"},
      {"ctrl_loss_tmo", "1h", "ctrl_loss_tmo=1h"},
      {"ctrl_loss_tmo", "-2", "ctrl_loss_tmo=-2"},
      {"fast_io_fail_tmo", "never", "fast_io_fail_tmo=never"},
      {"host_traddr", "10.1.1.2,10.1.2.2", "host_traddr=10.1.1.2,10.1.2.2: 2 entries for 1 traddr paths"},
      {"traddr", "${MPNVME_TRADDR}", "traddr=${MPNVME_TRADDR}: the environment variable MPNVME_TRADDR is not set"},
      {"iopolicy", "${MPNVME_IOPOLICY}", "the environment variable MPNVME_IOPOLICY is not set"},
      {"poll", "spin", "poll=spin: invalid value (accepted: hybrid, block, busy)"},
      {"nsid", "0", "nsid=0"},
      {"nsid", "4294967295", "nsid=4294967295"},
      {"nsid", "1x", "nsid=1x"},
      {"nsid", "-1", "nsid=-1"},
      {"queue_size", "1", "queue_size=1"},
      {"queue_size", "4096", "queue_size=4096"},
      {"kato", "7200", "kato=7200"},
      {"connect_timeout", "0", "connect_timeout=0"},
      {"connect_timeout", "601", "connect_timeout=601"},
      {"io_timeout", "50", "io_timeout=50"},
      {"max_retries", "1000", "max_retries=1000"},
      {"mptcp_join_wait", "10001", "mptcp_join_wait=10001"},
      {"hdr_digest", "yes", "hdr_digest=yes: invalid value (accepted: 0, 1)"},
      {"defer_send", "2", "defer_send=2"},
      {"no_such_option", "1", "no_such_option=1: not an mpnvme engine option"},
  };
  for (const Case &c : cases) {
    Opts t;
    t.set(c.option, c.value);
    expect_refused([&] { parse_engine_options(t.v); }, c.needle);
  }
}

// fio's parse-time check of one value says what the full parse says.
static void parse_time_check_matches(void **) {
  char msg[512] = "";
  unsigned iopolicy = 0, nsid = 0, count = 0;
  for (unsigned i = 0; const mpnvme_option_def *d = mpnvme_option_at(i); i++, count++) {
    if (!strcmp(d->name, "iopolicy")) iopolicy = i;
    if (!strcmp(d->name, "nsid")) nsid = i;
    // Every default passes its own check (fio applies the defaults through it).
    if (d->def && mpnvme_check_option(i, d->def, msg, sizeof msg)) fail_msg("default of %s refused: %s", d->name, msg);
    assert_non_null(find_engine_option(d->name));
  }
  assert_in_range(count, 20, MPNVME_OPTION_SLOTS);
  assert_int_equal(mpnvme_check_option(iopolicy, "fastest", msg, sizeof msg), -1);
  assert_string_equal(msg, "iopolicy=fastest: invalid value (accepted: numa, round-robin, queue-depth, service-time)");
  assert_int_equal(mpnvme_check_option(nsid, "0", msg, sizeof msg), -1);
  assert_non_null(strstr(msg, "nsid=0: invalid value"));
  assert_int_equal(mpnvme_check_option(nsid, "7", msg, sizeof msg), 0);
  Opts t;
  t.set("iopolicy", "fastest");
  expect_refused([&] { parse_engine_options(t.v); },
                 "iopolicy=fastest: invalid value (accepted: numa, round-robin, queue-depth, service-time)");
}

// DH-HMAC-CHAP options: a bad secret is refused when the job starts with a
// message that names the option and never shows the value, and fio's
// parse-time check lets it through (fio would print the value it refuses).
static void dhchap_options(void **) {
  const char *good = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
  const char *bad = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaS:"; // CRC off
  Opts t;
  t.set("dhchap_secret", good);
  t.set("dhchap_hash", "hmac(sha512),sha256");
  EngineOptions e = parse_engine_options(t.v);
  assert_true(e.auth.secret.has_value());
  assert_int_equal(e.auth.hashes.size(), 2);
  assert_true(e.auth.hashes[0] == mpnvme::dhchap::Hash::Sha512);
  assert_int_equal(e.auth.groups.size(), 6);
  t.set("dhchap_secret", bad);
  try {
    parse_engine_options(t.v);
    fail_msg("a secret with a wrong CRC was accepted");
  } catch (const std::invalid_argument &e2) {
    assert_non_null(strstr(e2.what(), "dhchap_secret: the key's CRC does not match"));
    assert_null(strstr(e2.what(), "AAECAwQFBgcICQoL"));
  }
  char msg[256] = "";
  for (unsigned i = 0; const mpnvme_option_def *d = mpnvme_option_at(i); i++)
    if (!strcmp(d->name, "dhchap_secret")) assert_int_equal(mpnvme_check_option(i, bad, msg, sizeof msg), 0);
  assert_true(mpnvme_option_is_secret("dhchap_ctrl_secret"));
  assert_false(mpnvme_option_is_secret("dhchap_secret_file"));
  t.set("dhchap_secret", nullptr);
  t.set("dhchap_ctrl_secret", good);
  expect_refused([&] { parse_engine_options(t.v); }, "dhchap_ctrl_secret: needs dhchap_secret");
  t.set("dhchap_secret", good);
  t.set("dhchap_secret_file", "/nonexistent");
  expect_refused([&] { parse_engine_options(t.v); }, "dhchap_secret and dhchap_secret_file: give the secret once");
  t.set("dhchap_secret", nullptr);
  expect_refused([&] { parse_engine_options(t.v); }, "dhchap_secret_file: cannot read /nonexistent");
  t.set("dhchap_secret_file", nullptr);
  t.set("dhchap_dhgroup", "ffdhe1024");
  expect_refused([&] { parse_engine_options(t.v); }, "dhchap_dhgroup: 'ffdhe1024' is not a DH group");
}

// The secure channel's options: a key turns nothing on by itself, tls=1
// needs one, the key's suite must be allowed, kernel TLS is refused for
// MPTCP, an identity that claims to be an NVMe one must be, and the key is
// never shown.
// concat=1: what Linux refuses with --concat, and what leaves no TLS PSK.
static void concat_options(void **) {
  Opts t;
  t.set("concat", "1");
  expect_refused([&] { parse_engine_options(t.v); }, "concat=1: needs dhchap_secret=");
  t.set("dhchap_secret", "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:");
  EngineOptions e = parse_engine_options(t.v);
  assert_true(e.tls.concat && !e.tls.enabled && !e.tls.key);
  t.set("tls", "1");
  expect_refused([&] { parse_engine_options(t.v); }, "concat=1 and tls=1: concatenation generates the TLS PSK");
  t.set("tls", nullptr);
  t.set("tls_key", "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_key: concat=1 generates the TLS PSK and its identity; drop it");
  t.set("tls_key", nullptr);
  t.set("tls_identity", "NVMe1G01 nqn.h nqn.s abc");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_identity: concat=1 generates");
  t.set("tls_identity", nullptr);
  t.set("dhchap_ctrl_secret", "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:");
  expect_refused([&] { parse_engine_options(t.v); },
                 "dhchap_ctrl_secret with concat=1: under concatenation the host sends S2 = 0");
  t.set("dhchap_ctrl_secret", nullptr);
  t.set("dhchap_dhgroup", "null");
  expect_refused([&] { parse_engine_options(t.v); }, "dhchap_dhgroup: concat=1 needs a DH group other than null");
  t.set("dhchap_dhgroup", "null,ffdhe3072");
  parse_engine_options(t.v);
  t.set("dhchap_hash", "sha512");
  expect_refused([&] { parse_engine_options(t.v); }, "dhchap_hash: concat=1 needs sha256 or sha384");
  t.set("dhchap_hash", "sha256,sha384");
  t.set("tls_ciphers", "TLS_AES_256_GCM_SHA384");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_ciphers: leaves out TLS_AES_128_GCM_SHA256, which the PSK of a");
  t.set("dhchap_hash", "sha384");
  assert_true(parse_engine_options(t.v).tls.concat);
  t.set("tls_mode", "ktls");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_mode=ktls: MPTCP sockets do not take kernel TLS");
  t.set("transport", "tcp");
  assert_true(parse_engine_options(t.v).tls.mode == mpnvme::tls::Mode::Kernel);
}

static void tls_options(void **) {
  Opts t;
  const char *k1 = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:";
  t.set("tls_key", k1);
  expect_refused([&] { parse_engine_options(t.v); }, "tls_key: needs tls=1");
  t.set("tls", "1");
  EngineOptions e = parse_engine_options(t.v);
  assert_true(e.tls.enabled && e.tls.key && e.tls.key->hmac == 1);
  assert_true(e.tls.mode == mpnvme::tls::Mode::Auto);
  assert_int_equal(e.tls.suites.size(), 2);
  t.set("tls_ciphers", "TLS_AES_256_GCM_SHA384");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_ciphers: the PSK goes with TLS_AES_128_GCM_SHA256");
  t.set("tls_ciphers", "TLS_CHACHA20_POLY1305_SHA256");
  expect_refused([&] { parse_engine_options(t.v); }, "unknown cipher suite 'TLS_CHACHA20_POLY1305_SHA256'");
  t.set("tls_ciphers", nullptr);
  t.set("tls_mode", "ktls");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_mode=ktls: MPTCP sockets do not take kernel TLS");
  t.set("transport", "tcp");
  assert_true(parse_engine_options(t.v).tls.mode == mpnvme::tls::Mode::Kernel);
  t.set("tls_identity", "NVMe0R03 nqn.h nqn.s");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_identity=NVMe0R03 nqn.h nqn.s: not an NVMe PSK identity");
  t.set("tls_identity", "NVMe0R01 nqn.h nqn.s");
  assert_string_equal(parse_engine_options(t.v).tls.identity.c_str(), "NVMe0R01 nqn.h nqn.s");
  t.set("tls_key", nullptr);
  expect_refused([&] { parse_engine_options(t.v); }, "tls=1: needs tls_key= or tls_key_file=");
  std::string bad = k1;
  bad[20] = bad[20] == 'A' ? 'B' : 'A';
  t.set("tls_key", bad.c_str());
  try {
    parse_engine_options(t.v);
    fail_msg("a key with a wrong CRC was taken");
  } catch (const std::invalid_argument &e2) {
    assert_non_null(strstr(e2.what(), "tls_key: the key's CRC does not match"));
    assert_null(strstr(e2.what(), bad.substr(16, 12).c_str()));
  }
  assert_true(mpnvme_option_is_secret("tls_key"));
  assert_false(mpnvme_option_is_secret("tls_key_file"));
  t.set("tls_key", k1);
  t.set("tls_key_file", "/nonexistent");
  expect_refused([&] { parse_engine_options(t.v); }, "tls_key and tls_key_file: give the key once");
  t.set("tls_key", nullptr);
  expect_refused([&] { parse_engine_options(t.v); }, "tls_key_file: cannot read /nonexistent");
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(paths_forms),
      cmocka_unit_test(paths_rejected),
      cmocka_unit_test(priority_pairs_resolution),
      cmocka_unit_test(priority_pairs_rejected),
      cmocka_unit_test(engine_options_defaults),
      cmocka_unit_test(engine_options_multipath),
      cmocka_unit_test(engine_options_rejected),
      cmocka_unit_test(parse_time_check_matches),
      cmocka_unit_test(dhchap_options),
      cmocka_unit_test(tls_options),
      cmocka_unit_test(concat_options),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
