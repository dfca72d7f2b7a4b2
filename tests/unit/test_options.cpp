// SPDX-License-Identifier: GPL-2.0-only
// Option parsing: traddr path lists, priority pairs and every engine option,
// including each rejected form and the option name in the message.
#include <cstring>
#include <stdexcept>
#include <string>

#include "../../engine/host/options.hpp"
#include "cmocka_cxx.hpp"
#include "host_identity.hpp"
#include "paths.hpp"
#include "priority_pairs.hpp"

using namespace mpnvme;
using namespace mpnvme::host;

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

// Options as fio hands them over after applying the defaults of fio_glue.c.
struct Opts {
  mpnvme_opts o{};
  Opts() {
    o.traddr = strdup("127.0.0.1");
    o.trsvcid = strdup("4420");
    o.transport = strdup("mptcp");
    o.subnqn = strdup("nqn.2026-11.io.mpnvme:test");
    o.hostnqn = strdup("nqn.2014-08.org.nvmexpress:uuid:0f6f4a94-8f2a-4b57-9f38-4d8c2b1e2a10");
    o.nsid = 1;
    o.kato = 5;
    o.iopolicy = strdup("numa");
    o.log_level = strdup("warn");
    o.trim_mode = strdup("dsm");
    o.disable_sqflow = 1;
    o.connect_timeout = 10;
    o.io_timeout = 30000;
    o.reconnect_delay = strdup("10");
    o.ctrl_loss_tmo = strdup("600");
    o.fast_io_fail_tmo = strdup("off");
    o.max_retries = 5;
    o.poll = strdup("hybrid");
  }
  ~Opts() {
    for (char *p :
         {o.traddr, o.trsvcid, o.transport, o.subnqn, o.hostnqn, o.hostid, o.host_traddr, o.host_iface, o.sk_priority, o.tos,
          o.iopolicy, o.log_level, o.trim_mode, o.reconnect_delay, o.ctrl_loss_tmo, o.fast_io_fail_tmo, o.path_stats, o.poll})
      free(p);
  }
  void set(char *mpnvme_opts::*field, const char *v) {
    free(o.*field);
    o.*field = v ? strdup(v) : nullptr;
  }
};

static void engine_options_defaults(void **) {
  Opts t;
  EngineOptions e = parse_engine_options(t.o);
  assert_int_equal(e.paths.size(), 1);
  assert_true(e.transport == Transport::Mptcp);
  assert_int_equal(e.kato_ms, 5000);
  assert_true(e.iopolicy == IoPolicy::Numa);
  assert_true(e.trim_mode == TrimMode::Dsm);
  assert_false(e.digests.header);
  // Without /etc/nvme/hostid, the host ID derives from the uuid in the host NQN.
  const HostIdentityFiles none{"/nonexistent/hostnqn", "/nonexistent/hostid"};
  HostIdentity id = resolve_host_identity(t.o.hostnqn, "", none);
  assert_int_equal(id.hostid[0], 0x0f);
  assert_int_equal(id.hostid[15], 0x10);
  // A generated host NQN when there is no file, stable within the process.
  id = resolve_host_identity("", "", none);
  assert_int_equal(id.hostnqn.rfind("nqn.2014-08.org.nvmexpress:uuid:", 0), 0);
  assert_string_equal(id.hostnqn.c_str(), resolve_host_identity("", "", none).hostnqn.c_str());
  assert_int_equal(id.hostid[0], std::stoul(id.hostnqn.substr(32, 2), nullptr, 16));
  t.set(&mpnvme_opts::transport, "tcp");
  t.set(&mpnvme_opts::iopolicy, "queue-depth");
  t.set(&mpnvme_opts::trim_mode, "write_zeroes");
  t.set(&mpnvme_opts::traddr, "10.0.0.1,10.0.0.2:4421");
  t.set(&mpnvme_opts::sk_priority, "admin:0,io:6");
  t.o.hdr_digest = t.o.data_digest = 1;
  e = parse_engine_options(t.o);
  assert_true(e.transport == Transport::Tcp);
  assert_true(e.iopolicy == IoPolicy::QueueDepth);
  assert_true(e.trim_mode == TrimMode::WriteZeroes);
  assert_int_equal(e.paths.size(), 2);
  assert_int_equal(*e.sk_priority.for_queue(1), 6);
  assert_true(e.digests.header && e.digests.data);
}

// Recovery options with nvme-cli's names and the kernel's defaults, and the
// per-path binding lists.
static void engine_options_multipath(void **) {
  Opts t;
  EngineOptions e = parse_engine_options(t.o);
  assert_int_equal(e.recovery.io_timeout.count(), 30000);
  assert_int_equal(e.recovery.reconnect_delay.count(), 10000);
  assert_true(e.recovery.ctrl_loss_tmo && e.recovery.ctrl_loss_tmo->count() == 600000);
  assert_false(e.recovery.fast_io_fail_tmo.has_value());
  assert_int_equal(e.max_retries, 5);
  assert_int_equal(e.host_traddr.size(), 1);
  t.set(&mpnvme_opts::traddr, "10.1.1.1,10.1.2.1,10.1.3.1");
  t.set(&mpnvme_opts::reconnect_delay, "0.5");
  t.set(&mpnvme_opts::ctrl_loss_tmo, "-1");
  t.set(&mpnvme_opts::fast_io_fail_tmo, "2.25");
  t.set(&mpnvme_opts::iopolicy, "service-time");
  t.set(&mpnvme_opts::host_traddr, "10.1.1.2,10.1.2.2,10.1.3.2");
  t.set(&mpnvme_opts::host_iface, "h1");
  e = parse_engine_options(t.o);
  assert_int_equal(e.recovery.reconnect_delay.count(), 500);
  assert_false(e.recovery.ctrl_loss_tmo.has_value());
  assert_int_equal(e.recovery.fast_io_fail_tmo->count(), 2250);
  assert_true(e.iopolicy == IoPolicy::ServiceTime);
  assert_true(e.poll == PollMode::Hybrid);
  assert_int_equal(e.host_traddr.size(), 3);
  assert_string_equal(e.host_traddr[2].c_str(), "10.1.3.2");
  assert_int_equal(e.host_iface.size(), 3);
  assert_string_equal(e.host_iface[1].c_str(), "h1");
}

static void engine_options_rejected(void **) {
  struct Case {
    char *mpnvme_opts::*field;
    const char *value;
    const char *needle;
  } cases[] = {
      {&mpnvme_opts::transport, "rdma", "transport=rdma"},
      {&mpnvme_opts::subnqn, nullptr, "subnqn: required"},
      {&mpnvme_opts::traddr, nullptr, "traddr: required"},
      {&mpnvme_opts::trsvcid, "http", "trsvcid=http"},
      {&mpnvme_opts::iopolicy, "random", "iopolicy=random"},
      {&mpnvme_opts::trim_mode, "unmap", "trim_mode=unmap"},
      {&mpnvme_opts::log_level, "loud", "log_level=loud"},
      {&mpnvme_opts::sk_priority, "io:x", "sk_priority"},
      {&mpnvme_opts::tos, "300", "tos"},
      {&mpnvme_opts::hostid, "not-a-uuid", "hostid"},
      {&mpnvme_opts::reconnect_delay, "soon", "reconnect_delay=soon"},
      {&mpnvme_opts::reconnect_delay, "0.01", "reconnect_delay=0.01"},
      {&mpnvme_opts::reconnect_delay, "-1", "reconnect_delay=-1"},
      {&mpnvme_opts::ctrl_loss_tmo, "1h", "ctrl_loss_tmo=1h"},
      {&mpnvme_opts::ctrl_loss_tmo, "-2", "ctrl_loss_tmo=-2"},
      {&mpnvme_opts::fast_io_fail_tmo, "never", "fast_io_fail_tmo=never"},
      {&mpnvme_opts::host_traddr, "10.1.1.2,10.1.2.2", "host_traddr=10.1.1.2,10.1.2.2: 2 entries for 1 traddr paths"},
      {&mpnvme_opts::traddr, "${MPNVME_TRADDR}", "traddr=${MPNVME_TRADDR}: the environment variable MPNVME_TRADDR is not set"},
      {&mpnvme_opts::iopolicy, "${MPNVME_IOPOLICY}", "the environment variable MPNVME_IOPOLICY is not set"},
      {&mpnvme_opts::poll, "spin", "poll=spin: invalid value (accepted: hybrid, block, busy)"},
  };
  for (const Case &c : cases) {
    Opts t;
    t.set(c.field, c.value);
    expect_refused([&] { parse_engine_options(t.o); }, c.needle);
  }
  {
    Opts t;
    t.o.nsid = 0;
    expect_refused([&] { parse_engine_options(t.o); }, "nsid=0");
  }
  {
    Opts t;
    t.o.queue_size = 1;
    expect_refused([&] { parse_engine_options(t.o); }, "queue_size=1");
    t.o.queue_size = 4096;
    expect_refused([&] { parse_engine_options(t.o); }, "queue_size=4096");
  }
  struct NumCase {
    unsigned mpnvme_opts::*field;
    unsigned value;
    const char *needle;
  } numeric[] = {
      {&mpnvme_opts::kato, 7200, "kato=7200"},
      {&mpnvme_opts::connect_timeout, 0, "connect_timeout=0"},
      {&mpnvme_opts::connect_timeout, 601, "connect_timeout=601"},
      {&mpnvme_opts::io_timeout, 50, "io_timeout=50"},
      {&mpnvme_opts::max_retries, 1000, "max_retries=1000"},
      {&mpnvme_opts::mptcp_join_wait, 10001, "mptcp_join_wait=10001"},
  };
  for (const NumCase &c : numeric) {
    Opts t;
    t.o.*c.field = c.value;
    expect_refused([&] { parse_engine_options(t.o); }, c.needle);
  }
  {
    Opts t;
    t.set(&mpnvme_opts::subnqn, std::string(300, 'n').c_str());
    expect_refused([&] { parse_engine_options(t.o); }, "subnqn: longer");
  }
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
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
