// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-target configuration: namespace specs, nvmetcli-style JSON, fio job
// files, and every refusal with the offending field in the message.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "lib/config/jobfile.hpp"
#include "lib/config/target_config.hpp"
#include "mpnvme-target/core/ram_budget.hpp"
#include "mpnvme-target/transport/connection_budget.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;
using namespace mpnvme::target;

namespace {
std::string write_temp(const std::string &text, const char *suffix) {
  std::string path = std::string("/tmp/mpnvme-cfg-XXXXXX") + suffix;
  int fd = mkstemps(path.data(), static_cast<int>(strlen(suffix)));
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  return path;
}

SubsystemConfig subsystem(const char *nqn) {
  SubsystemConfig s;
  s.nqn = nqn;
  return s;
}

template <typename E, typename F> void expect_refused(F &&f, const char *needle) {
  try {
    f();
  } catch (const E &e) {
    if (!strstr(e.what(), needle)) fail_msg("message '%s' lacks '%s'", e.what(), needle);
    return;
  }
  fail_msg("accepted although '%s' was expected", needle);
}
} // namespace

static void namespace_specs(void **) {
  NamespaceConfig n = parse_namespace_spec("ram:1g", 1, "--ns");
  assert_true(n.backing == Backing::Ram);
  assert_int_equal(n.size, 1ull << 30);
  assert_int_equal(n.lba, 512);
  n = parse_namespace_spec("null:64m,lba=4096,nsid=7", 1, "--ns");
  assert_true(n.backing == Backing::Null);
  assert_int_equal(n.lba, 4096);
  assert_int_equal(n.nsid, 7);
  n = parse_namespace_spec("/dev/loop0", 3, "--ns");
  assert_true(n.backing == Backing::File);
  assert_string_equal(n.path.c_str(), "/dev/loop0");
  assert_int_equal(n.nsid, 3);
  n = parse_namespace_spec("file:/var/tmp/x.img", 1, "--ns");
  assert_string_equal(n.path.c_str(), "/var/tmp/x.img");
  // A UUID given (blktests names its namespace by one) survives finalize.
  SubsystemConfig sc;
  sc.nqn = "nqn.2026-12.io.mpnvme:uuid";
  sc.namespaces = {parse_namespace_spec("ram:1m,uuid=91fdba0d-f87b-4c25-b80f-db7be1418b9e", 1, "--ns"),
                   parse_namespace_spec("ram:1m,nsid=2", 1, "--ns")};
  finalize_subsystem(sc, TargetLimits{});
  const std::array<uint8_t, 16> given = {0x91, 0xfd, 0xba, 0x0d, 0xf8, 0x7b, 0x4c, 0x25,
                                         0xb8, 0x0f, 0xdb, 0x7b, 0xe1, 0x41, 0x8b, 0x9e};
  assert_true(sc.namespaces[0].uuid == given);
  const std::array<uint8_t, 16> none{};
  assert_true((sc.namespaces[1].uuid != none && sc.namespaces[1].uuid != given));
  assert_false(sc.serial.empty());
  assert_int_equal(parse_size("4k", "size"), 4096);
  assert_int_equal(parse_size("2GiB", "size"), 2ull << 30);
  assert_int_equal(parse_size("512", "size"), 512);
  // Every 64-bit count of bytes, and not one more.
  assert_true(parse_size("18446744073709551615", "size") == UINT64_MAX);
  expect_refused<std::invalid_argument>([] { parse_size("18446744073709551616", "size"); }, "not a size");
}

static void namespace_specs_refused(void **) {
  using E = std::invalid_argument;
  expect_refused<E>([] { parse_namespace_spec("disk:1g", 1, "--ns"); }, "--ns 'disk:1g': unknown backing");
  expect_refused<E>([] { parse_namespace_spec("ram:0", 1, "--ns"); }, "size must be above 0");
  expect_refused<E>([] { parse_namespace_spec("ram:1x", 1, "--ns"); }, "not a size");
  expect_refused<E>([] { parse_namespace_spec("ram:1g,lba=1024", 1, "--ns"); }, "lba must be 512 or 4096");
  expect_refused<E>([] { parse_namespace_spec("ram:1g,nsid=0", 1, "--ns"); }, "nsid must be a number");
  // The largest NSID is nvmet's: all but 0xFFFFFFFF (every namespace).
  assert_int_equal(parse_namespace_spec("null:1m,nsid=4294967294", 1, "--ns").nsid, kMaxNsid);
  expect_refused<E>([] { parse_namespace_spec("null:1m,nsid=4294967295", 1, "--ns"); },
                    "nsid must be a number from 1 to 4294967294");
  expect_refused<E>([] { parse_namespace_spec("ram:1g,color=red", 1, "--ns"); }, "unknown attribute 'color=red'");
  expect_refused<E>([] { parse_namespace_spec("ram:6k,lba=4096", 1, "--ns"); }, "not a multiple of the LBA size");
  expect_refused<E>([] { parse_namespace_spec("file:", 1, "--ns"); }, "empty path");
  expect_refused<E>([] { parse_namespace_spec("ram:1m,uuid=91fdba0d", 1, "--ns"); }, "uuid '91fdba0d' is not a UUID");
}

static void nvmetcli_json(void **) {
  const std::string path = write_temp(R"({
    "hosts": [{"nqn": "nqn.2014-08.org.nvmexpress:uuid:h1"}],
    "subsystems": [{
      "nqn": "nqn.2026-11.io.mpnvme:json", "attr": {"allow_any_host": "0", "serial": "abc", "model": "m",
                                                  "cntlid_min": "0100", "cntlid_max": 199},
      "allowed_hosts": ["nqn.2014-08.org.nvmexpress:uuid:h1"],
      "namespaces": [{"nsid": 2, "enable": 1, "ana_grpid": 3,
                      "device": {"path": "ram:8m", "uuid": "0f6f4a94-8f2a-4b57-9f38-4d8c2b1e2a10"}}]}],
    "ports": [{"portid": 5, "addr": {"trtype": "tcp", "adrfam": "ipv6", "traddr": "::1", "trsvcid": "4421"},
               "param": {"inline_data_size": "8192", "so_priority": "3"},
               "ana_groups": [{"grpid": 3, "ana": {"state": "non-optimized"}}],
               "subsystems": ["nqn.2026-11.io.mpnvme:json"]}]})",
                                      ".json");
  TargetConfig c = load_json_config(path);
  unlink(path.c_str());
  finalize(c);
  assert_int_equal(c.subsystems.size(), 1);
  const SubsystemConfig &s = c.subsystems[0];
  assert_false(s.allow_any_host);
  assert_string_equal(s.allowed_hosts[0].c_str(), "nqn.2014-08.org.nvmexpress:uuid:h1");
  assert_string_equal(s.serial.c_str(), "abc");
  assert_int_equal(s.cntlid_min, 100);
  assert_int_equal(s.cntlid_max, 199);
  assert_int_equal(controller_limit(s, c.limits), 100);
  assert_int_equal(s.namespaces[0].nsid, 2);
  assert_int_equal(s.namespaces[0].anagrpid, 3);
  assert_int_equal(s.namespaces[0].uuid[0], 0x0f);
  const PortConfig &p = c.ports[0];
  assert_int_equal(p.id, 5);
  assert_true(p.addr.ipv6);
  assert_string_equal(p.addr.service.c_str(), "4421");
  assert_true(p.transport == Transport::Tcp);
  assert_int_equal(p.inline_data_size, 8192);
  assert_int_equal(*p.sk_priority, 3);
  assert_true(p.ana_state(3) == AnaState::NonOptimized);
  assert_true(p.ana_state(1) == AnaState::Optimized);
}

static void nvmetcli_json_refused(void **) {
  using E = std::runtime_error;
  struct Case {
    const char *json, *needle;
  } cases[] = {
      {"{", "not JSON"},
      {R"({"subsystems":[{"attr":{}}]})", "subsystems[0].nqn: required"},
      {R"({"subsystems":[{"nqn":"n","namespaces":[{"device":{}}]}]})", "namespaces[0].device.path: required"},
      {R"({"subsystems":[{"nqn":"n","namespaces":[{"device":{"path":"ram:1m","uuid":"x"}}]}]})",
       "device.uuid: 'x' is not a UUID"},
      {R"({"ports":[{"addr":{"trtype":"rdma","traddr":"1.2.3.4"}}]})", "ports[0].addr.trtype: 'rdma'"},
      {R"({"ports":[{"addr":{"adrfam":"ib","traddr":"1.2.3.4"}}]})", "ports[0].addr.adrfam: 'ib'"},
      {R"({"ports":[{"addr":{"traddr":"1.2.3.4","trsvcid":"99999"}}]})", "trsvcid: '99999' is not a port"},
      {R"({"ports":[{"addr":{"traddr":"1.2.3.4"},"param":{"tos":"300"}}]})", "param.tos: '300'"},
      {R"({"ports":[{"addr":{"traddr":"1.2.3.4"},"ana_groups":[{"grpid":2,"ana":{"state":"sleepy"}}]}]})", "ana.state: 'sleepy'"},
      {R"({"subsystems":[{"nqn":"n","namespaces":[{"nsid":0,"device":{"path":"ram:1m"}}]}]})", "namespaces[0].nsid: 0"},
      {R"({"subsystems":[{"nqn":"n","namespaces":[{"nsid":4294967295,"device":{"path":"ram:1m"}}]}]})",
       "namespaces[0].nsid: 4294967295 (accepted: 1..4294967294)"},
      {R"({"subsystems":[{"nqn":"n","namespaces":[{"nsid":-1,"device":{"path":"ram:1m"}}]}]})", "namespaces[0].nsid: -1"},
      {R"({"subsystems":[{"nqn":"n","attr":{"cntlid_max":"65536"}}]})", "subsystems[0].attr.cntlid_max: '65536'"},
      // Decimal, as nvmet's "%hu": not octal, not hex, not empty.
      {R"({"subsystems":[{"nqn":"n","attr":{"cntlid_min":"0x10"}}]})", "attr.cntlid_min: '0x10' (accepted: a controller ID"},
      {R"({"subsystems":[{"nqn":"n","attr":{"cntlid_min":""}}]})", "attr.cntlid_min: ''"},
      {R"({"subsystems":[{"nqn":"n","attr":{"cntlid_max":18446744073709551615}}]})", "cntlid_max: '18446744073709551615'"},
      {R"({"subsystems":[{"nqn":"n","attr":{"cntlid_max":"8\u001b[2K"}}]})", "cntlid_max: '8\\x1b[2K'"},
  };
  for (const Case &k : cases) {
    const std::string path = write_temp(k.json, ".json");
    try {
      load_json_config(path);
      unlink(path.c_str());
      fail_msg("accepted %s", k.json);
    } catch (const std::exception &e) {
      unlink(path.c_str());
      if (!strstr(e.what(), k.needle)) fail_msg("message '%s' lacks '%s'", e.what(), k.needle);
    }
  }
  (void)sizeof(E);
}

// Each limit refused by finalize as `subsystem add` refuses it at run time
// (the same functions), naming its option.
static void limits_refused(void **) {
  TargetConfig c;
  PortConfig p;
  p.addr = {"127.0.0.1", "4420", false};
  c.ports.push_back(p);
  c.limits.max_subsystems = 2;
  c.limits.max_namespaces = 2;
  for (const char *nqn : {"nqn.a", "nqn.b", "nqn.c"})
    c.subsystems.push_back(subsystem(nqn));
  expect_refused<LimitReached>([&] { finalize(c); }, "the target holds 2 subsystem(s), the most --max-subsystems allows");
  c.subsystems.pop_back();
  c.subsystems[0].namespaces = {parse_namespace_spec("ram:1m", 1, "x"), parse_namespace_spec("ram:1m", 2, "x"),
                                parse_namespace_spec("ram:1m", 3, "x")};
  expect_refused<LimitReached>([&] { finalize(c); }, "nqn.a: 3 namespaces, more than the 2 --max-namespaces allows");
  c.subsystems[0].namespaces.pop_back();
  c.subsystems[1].max_controllers = 0;
  expect_refused<std::invalid_argument>([&] { finalize(c); }, "nqn.b: max-controllers=0 outside 1..65519");
  c.subsystems[1].max_controllers = 3;
  finalize(c);
  assert_int_equal(controller_limit(c.subsystems[1], c.limits), 3);
  assert_string_equal(controller_limit_option(c.subsystems[1], c.limits).c_str(), "its max-controllers=");
  assert_int_equal(controller_limit(c.subsystems[0], c.limits), kMaxCntlid);
  assert_string_equal(controller_limit_option(c.subsystems[0], c.limits).c_str(), "--max-controllers");
  // nvmet's cntlid_min and cntlid_max: 1 <= min < max <= 0xffef; the range
  // bounds the controllers where it allows fewer than the limits.
  c.subsystems[0].cntlid_min = 0;
  expect_refused<std::invalid_argument>([&] { finalize(c); }, "nqn.a: cntlid_min 0 and cntlid_max 65519");
  c.subsystems[0].cntlid_min = 21;
  c.subsystems[0].cntlid_max = 20;
  expect_refused<std::invalid_argument>([&] { finalize(c); }, "nqn.a: cntlid_min 21 and cntlid_max 20");
  c.subsystems[0].cntlid_min = 20;
  c.subsystems[0].cntlid_max = 0xfff0;
  expect_refused<std::invalid_argument>([&] { finalize(c); }, "nqn.a: cntlid_min 20 and cntlid_max 65520");
  c.subsystems[0].cntlid_max = 20; // one ID, as nvmet takes it
  finalize(c);
  assert_int_equal(controller_limit(c.subsystems[0], c.limits), 1);
  c.subsystems[0].cntlid_max = 29;
  finalize(c);
  assert_int_equal(controller_limit(c.subsystems[0], c.limits), 10);
  assert_string_equal(controller_limit_option(c.subsystems[0], c.limits).c_str(), "its controller ID range 20..29");
  c.subsystems[0].max_controllers = 4;
  assert_int_equal(controller_limit(c.subsystems[0], c.limits), 4);
  assert_string_equal(controller_limit_option(c.subsystems[0], c.limits).c_str(), "its max-controllers=");
  // A subsystem NQN with a control character or a space is refused, and
  // the refusal does not repeat the raw byte.
  SubsystemConfig odd = subsystem("nqn.a\x1b[2Jb");
  expect_refused<std::invalid_argument>([&] { finalize_subsystem(odd, c.limits); }, "subsystem NQN 'nqn.a\\x1b");
  odd.nqn = "nqn.a b";
  expect_refused<std::invalid_argument>([&] { finalize_subsystem(odd, c.limits); }, "control characters or spaces");
  // As nvmet: SN and MN printable ASCII of 20 and 40 bytes at most; and a
  // key where a name belongs, refused without repeating it.
  SubsystemConfig named = subsystem("nqn.named");
  named.model = "m\x1b[31m";
  expect_refused<std::invalid_argument>([&] { finalize_subsystem(named, c.limits); }, "model 'm\\x1b[31m'");
  named.model = "m";
  named.serial = std::string(21, '1');
  expect_refused<std::invalid_argument>([&] { finalize_subsystem(named, c.limits); }, "at most 20 printable ASCII");
  named.serial = "1";
  named.allowed_hosts = {"DHHC-1:00:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0AAAAAA==:"};
  expect_refused<std::invalid_argument>([&] { finalize_subsystem(named, c.limits); }, "a key given where a host NQN belongs");
  named.allowed_hosts.clear();
  // Not UTF-8, NEL (C1), an overlong '.', RIGHT-TO-LEFT OVERRIDE, RIGHT-TO-LEFT
  // ISOLATE, LINE SEPARATOR, ARABIC LETTER MARK.
  for (const char *bad : {"nqn.a\xff", "nqn.a\xc2\x85", "nqn.a\xc0\xae",
                          "nqn.a\xe2\x80\xae"
                          "txt.exe",
                          "nqn.a\xe2\x81\xa7"
                          "b",
                          "nqn.a\xe2\x80\xa8"
                          "b",
                          "nqn.a\xd8\x9c"
                          "b"}) {
    named.nqn = bad;
    expect_refused<std::invalid_argument>([&] { finalize_subsystem(named, c.limits); }, "not UTF-8, or control characters");
  }
  named.nqn = "nqn.2026-12.io.mpnvme:caf\xc3\xa9"; // UTF-8 is an NQN's
  finalize_subsystem(named, c.limits);
  // A namespace attribute given twice would silently win over the first.
  expect_refused<std::invalid_argument>([] { parse_namespace_spec("ram:1m,nsid=1,nsid=2", 1, "--ns"); }, "nsid given twice");
  // A namespace numbered after one at the top would be 0xFFFFFFFF.
  SubsystemConfig top = subsystem("nqn.top");
  top.namespaces = {parse_namespace_spec("null:1m,nsid=4294967294", 1, "x"), parse_namespace_spec("null:1m", 0xffffffffu, "x")};
  expect_refused<std::invalid_argument>([&] { finalize_subsystem(top, c.limits); }, "nsid 4294967295 outside 1..4294967294");
}

// --max-ram: taken whole or not at all, given back when the grant goes.
static void ram_budget(void **) {
  RamBudget budget(100 << 20);
  RamGrant a = budget.take(60 << 20, "nqn.a");
  assert_int_equal(budget.held(), 60 << 20);
  expect_refused<LimitReached>([&] { budget.take(50 << 20, "nqn.b"); },
                               "nqn.b: RAM namespaces of 52428800 bytes (50.0 MiB): --max-ram 104857600 bytes (100.0 MiB) "
                               "leaves 41943040 bytes (40.0 MiB) (62914560 bytes (60.0 MiB) held by RAM namespaces)");
  assert_int_equal(budget.held(), 60 << 20);
  {
    RamGrant b = budget.take(40 << 20, "nqn.b");
    assert_int_equal(budget.held(), 100 << 20);
  }
  assert_int_equal(budget.held(), 60 << 20);
  a = RamGrant();
  assert_int_equal(budget.held(), 0);
  assert_int_equal(budget.take(0, "nqn.c").bytes(), 0);
  assert_true(default_max_ram() > 0);
}

static void finalize_refusals(void **) {
  using E = std::invalid_argument;
  TargetConfig c;
  expect_refused<E>([&] { finalize(c); }, "no subsystem configured");
  c.subsystems.push_back(subsystem("nqn.a"));
  expect_refused<E>([&] { finalize(c); }, "no port configured");
  PortConfig p;
  p.addr = {"127.0.0.1", "4420", false};
  p.subsystems = {"nqn.b"};
  c.ports.push_back(p);
  expect_refused<E>([&] { finalize(c); }, "port 1 serves unknown subsystem nqn.b");
  c.ports[0].subsystems.clear();
  c.subsystems.push_back(subsystem("nqn.a"));
  expect_refused<E>([&] { finalize(c); }, "subsystem nqn.a configured twice");
  c.subsystems.pop_back();
  c.subsystems[0].namespaces = {parse_namespace_spec("ram:1m", 1, "x"), parse_namespace_spec("ram:1m", 1, "x")};
  expect_refused<E>([&] { finalize(c); }, "nsid 1 configured twice");
  c.subsystems[0].namespaces.pop_back();
  finalize(c);
  // Identifiers are stable and distinct per namespace.
  const std::array<uint8_t, 16> zero{};
  assert_false(c.subsystems[0].namespaces[0].nguid == zero);
  assert_int_equal(c.subsystems[0].namespaces[0].uuid[6] >> 4, 4);
}

static void from_jobfile(void **) {
  setenv("MPNVME_TEST_PORT", "4433", 1);
  const std::string path = write_temp(R"(; comment
[global]
traddr=10.1.1.1,10.1.2.1:4434,[fd00::1]:4435
trsvcid=${MPNVME_TEST_PORT}
subnqn=nqn.2026-11.io.mpnvme:job
size=64m

[a]
nsid=1
numjobs=2
offset_increment=64m

[b]
nsid=2
size=1g
transport=tcp
)",
                                      ".fio");
  TargetConfig c = config_from_jobfile(path);
  unlink(path.c_str());
  finalize(c);
  assert_int_equal(c.subsystems.size(), 1);
  assert_int_equal(c.subsystems[0].namespaces.size(), 2);
  assert_int_equal(c.subsystems[0].namespaces[0].size, 128ull << 20); // two jobs of 64m side by side
  assert_int_equal(c.subsystems[0].namespaces[1].size, 1ull << 30);
  assert_int_equal(c.ports.size(), 3);
  assert_string_equal(c.ports[0].addr.service.c_str(), "4433");
  assert_string_equal(c.ports[1].addr.service.c_str(), "4434");
  assert_true(c.ports[2].addr.ipv6);

  const std::string bad = write_temp("[x]\ntraddr=1.2.3.4\nsize=1m\n", ".fio");
  expect_refused<std::runtime_error>([&] { config_from_jobfile(bad); }, "[x]: subnqn: required");
  unlink(bad.c_str());
  // The engine's parser reads the job: what the engine refuses, the target
  // refuses with the same message (no transport becomes MPTCP by default,
  // no nsid passes unchecked).
  struct {
    const char *line, *needle;
  } refused[] = {
      {"transport=rdma", "[x]: transport=rdma: invalid value (accepted: mptcp, tcp)"},
      {"nsid=abc", "[x]: nsid=abc: invalid value"},
      {"nsid=4294967296", "[x]: nsid=4294967296: invalid value"},
      {"iopolicy=fastest", "[x]: iopolicy=fastest: invalid value"},
      {"numjobs=x\noffset_increment=1m", "[x]: numjobs=x: not a job count"},
      {"numjobs=0\noffset_increment=1m", "[x]: numjobs=0: not a job count"},
      {"numjobs=1000000\noffset_increment=1m", "[x]: numjobs=1000000: not a job count"},
  };
  for (const auto &r : refused) {
    const std::string f = write_temp(std::string("[x]\ntraddr=1.2.3.4\nsubnqn=n\n") + r.line + "\n", ".fio");
    expect_refused<std::runtime_error>([&] { config_from_jobfile(f); }, r.needle);
    unlink(f.c_str());
  }
  const std::string env = write_temp("[x]\ntraddr=${MPNVME_NOT_SET_ANYWHERE}\n", ".fio");
  expect_refused<std::runtime_error>([&] { read_jobfile(env); }, ":2: environment variable MPNVME_NOT_SET_ANYWHERE is not set");
  unlink(env.c_str());
  // Without size= the namespace decides the job's size: 1 GiB, or more
  // when another job of the file reaches beyond it.
  const std::string nosize = write_temp("[x]\ntraddr=1.2.3.4\nsubnqn=n\n[y]\ntraddr=1.2.3.4\nsubnqn=n\nnsid=2\n"
                                        "offset=1g\nsize=2g\n[z]\ntraddr=1.2.3.4\nsubnqn=n\nnsid=2\n",
                                        ".fio");
  const TargetConfig ns = config_from_jobfile(nosize);
  assert_int_equal(ns.subsystems[0].namespaces[0].size, kJobNamespaceBytes);
  assert_int_equal(ns.subsystems[0].namespaces[1].size, 3ull << 30);
  unlink(nosize.c_str());
}

// DH-HMAC-CHAP: JSON hosts with nvmet's attribute names, the command line,
// and a job's options; refusals name the field and never the secret.
static void authentication_config(void **) {
  const std::string key = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
  const std::string json = R"J({"hosts": [{"nqn": "h1", "dhchap_key": ")J" + key + R"J(", "dhchap_ctrl_key": ")J" + key +
                           R"J(", "dhchap_hash": "hmac(sha512)", "dhchap_dhgroup": "ffdhe3072"}, {"nqn": "h2"}],
      "subsystems": [{"nqn": "n", "namespaces": [{"device": {"path": "ram:1m"}}]}]})J";
  std::string path = write_temp(json, ".json");
  TargetConfig c = load_json_config(path);
  unlink(path.c_str());
  assert_int_equal(c.host_auth.size(), 1); // h2 has no key: not asked to authenticate
  const auto &a = c.host_auth.at("h1");
  assert_true(a.ctrl_key.has_value());
  assert_int_equal(a.hashes.size(), 1);
  assert_true(a.hashes[0] == dhchap::Hash::Sha512);
  assert_true(a.groups[0] == dhchap::DhGroup::Ffdhe3072);
  std::string bad = json;
  bad.replace(bad.find("KfiaR"), 5, "KfiaS");
  path = write_temp(bad, ".json");
  try {
    load_json_config(path);
    fail_msg("a key with a wrong CRC was accepted");
  } catch (const std::exception &e) {
    assert_non_null(strstr(e.what(), "hosts[0].dhchap_key: the key's CRC does not match"));
    assert_null(strstr(e.what(), "AAECAwQF"));
  }
  unlink(path.c_str());
  HostAuth cli;
  AuthOptions o;
  o.keys = {std::string("h3=") + key};
  o.groups = "ffdhe2048,null";
  add_cli_auth(cli, o);
  assert_true(cli.at("h3").groups[0] == dhchap::DhGroup::Ffdhe2048);
  o.ctrl_keys = {std::string("h4=") + key};
  expect_refused<std::invalid_argument>([&] { add_cli_auth(cli, o); }, "--dhchap-ctrl-key for h4: needs a --dhchap-key");
  o.ctrl_keys.clear();
  o.keys = {"h5"};
  expect_refused<std::invalid_argument>([&] { add_cli_auth(cli, o); }, "--dhchap-key: expected HOSTNQN=SECRET or HOSTNQN=@FILE");
  // A job with a secret: its host only, with the job's secret.
  const std::string job = write_temp(std::string("[j]\nioengine=external:x\ntraddr=127.0.0.1\nsubnqn=nqn.j\nhostnqn=nqn.jh\n"
                                                 "dhchap_secret=") +
                                         key + "\n",
                                     ".fio");
  TargetConfig jc = config_from_jobfile(job);
  unlink(job.c_str());
  assert_true(jc.host_auth.count("nqn.jh"));
  assert_false(jc.subsystems[0].allow_any_host);
  assert_string_equal(jc.subsystems[0].allowed_hosts[0].c_str(), "nqn.jh");
  assert_true(jc.ports[0].tls == TlsPort::None);
  // concat=1: its port takes TLS and plaintext (the first admin queue is
  // plaintext), and the host's DH-HMAC-CHAP key is all a TLS port needs.
  const std::string cc = "[j]\nioengine=external:x\ntraddr=127.0.0.1:4430\nsubnqn=nqn.j\nhostnqn=nqn.jh\nconcat=1\n"
                         "dhchap_secret=" +
                         key + "\n";
  std::string f = write_temp(cc, ".fio");
  jc = config_from_jobfile(f);
  unlink(f.c_str());
  assert_true(jc.ports[0].tls == TlsPort::Optional);
  assert_true(jc.tls_keys.empty() && jc.host_auth.count("nqn.jh"));
  finalize(jc);
  // A port a tls=1 job requires TLS on cannot serve a concat=1 job.
  f = write_temp(cc + "[t]\nioengine=external:x\ntraddr=127.0.0.1:4430\nsubnqn=nqn.j\nhostnqn=nqn.th\ntls=1\n"
                      "tls_key=NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:\n",
                 ".fio");
  expect_refused<std::invalid_argument>([&] { config_from_jobfile(f); },
                                        "port 127.0.0.1:4430 serves a job with tls=1, which requires TLS, and one with concat=1");
  unlink(f.c_str());
}

// The control socket's "host key" changes what it names and keeps the
// rest, as a write to one of nvmet's attributes does (blktests' nvme/043-045
// change a hash, a group or a key alone).
static void host_auth_change(void **) {
  const std::string key = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
  HostAuthChange first = host_auth_change_from_attributes({{"dhchap_key", key}, {"dhchap_ctrl_key", key}}, "host key");
  const dhchap::ControllerAuthConfig keyed = first.applied_to(nullptr);
  assert_true(keyed.ctrl_key.has_value());
  const size_t all_hashes = keyed.hashes.size();
  HostAuthChange hash = host_auth_change_from_attributes({{"dhchap_hash", "hmac(sha512)"}}, "host key");
  const dhchap::ControllerAuthConfig rehashed = hash.applied_to(&keyed);
  assert_true(rehashed.host_key == keyed.host_key);
  assert_true(rehashed.ctrl_key.has_value());
  assert_int_equal(rehashed.hashes.size(), 1);
  assert_true(rehashed.hashes[0] == dhchap::Hash::Sha512);
  assert_true(rehashed.groups == keyed.groups);
  assert_true(all_hashes > 1);
  HostAuthChange drop = host_auth_change_from_attributes({{"dhchap_ctrl_key", ""}}, "host key");
  const dhchap::ControllerAuthConfig unkeyed = drop.applied_to(&rehashed);
  assert_false(unkeyed.ctrl_key.has_value());
  assert_true(unkeyed.hashes == rehashed.hashes);
  expect_refused<std::invalid_argument>([&] { hash.applied_to(nullptr); }, "the host has no key yet: dhchap_key= is required");
  expect_refused<std::invalid_argument>(
      [&] {
        host_auth_change_from_attributes({{"dhchap_dhgroup", "ffdhe1"}}, "host key");
      },
      "host key.dhchap_dhgroup");
}

// Keys name the hosts that get in: with a key on the command line, a
// subsystem that did not say "any host" exactly admits the keyed and the
// listed hosts only; --allow-any-host and JSON's attr.allow_any_host are
// taken as they are.
static void keys_close_the_door(void **) {
  const std::string key = "DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:";
  auto config = [&](SubsystemConfig s) {
    TargetConfig c;
    c.subsystems.push_back(std::move(s));
    PortConfig p;
    p.addr = {"127.0.0.1", "4420", false};
    c.ports.push_back(p);
    AuthOptions o;
    o.keys = {"nqn.keyed=" + key};
    add_cli_auth(c.host_auth, o);
    finalize(c);
    return c.subsystems[0];
  };
  SubsystemConfig open = config(subsystem("nqn.a")); // --subnqn without --allow-host
  assert_false(open.allow_any_host);
  assert_int_equal(open.allowed_hosts.size(), 1);
  assert_string_equal(open.allowed_hosts[0].c_str(), "nqn.keyed");
  SubsystemConfig listed = subsystem("nqn.a"); // --allow-host nqn.listed
  listed.allow_any_host = false;
  listed.allowed_hosts = {"nqn.listed"};
  listed = config(listed);
  assert_int_equal(listed.allowed_hosts.size(), 2);
  SubsystemConfig any = subsystem("nqn.a"); // --allow-any-host
  any.allow_any_host_explicit = true;
  assert_true(config(any).allow_any_host);
  const std::string json = write_temp(R"J({"subsystems": [{"nqn": "n", "attr": {"allow_any_host": "1"}},
      {"nqn": "m", "namespaces": [{"device": {"path": "ram:1m"}}]}]})J",
                                      ".json");
  TargetConfig j = load_json_config(json);
  unlink(json.c_str());
  assert_true(config(j.subsystems[0]).allow_any_host);  // said exactly
  assert_false(config(j.subsystems[1]).allow_any_host); // not said: closed by the key
}

// A JSON syntax error is reported by position, never by the text around
// it, which may be part of a key.
static void json_errors_show_no_text(void **) {
  const std::string path = write_temp(R"J({"hosts": [{"nqn": "h1", "dhchap_key": "DHHC-1:00:SECRETSECRET" x}]})J", ".json");
  try {
    load_json_config(path);
    fail_msg("broken JSON accepted");
  } catch (const std::exception &e) {
    assert_non_null(strstr(e.what(), "not JSON: syntax error at byte"));
    assert_null(strstr(e.what(), "SECRET"));
  }
  unlink(path.c_str());
}

// A PSK identity from the wire: NQNs too long for the derivation are
// refused with a reason, never thrown out of the lookup (it runs inside
// OpenSSL's callback).
static void long_identity_refused(void **) {
  TlsKeys keys;
  const std::string host = "nqn.2014-08.org.nvmexpress:" + std::string(100, 'h');
  keys[host] = tls::parse_psk("NVMeTLSkey-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "test");
  const std::string identity = "NVMe0R01 " + host + " nqn.2026-11.io.mpnvme:" + std::string(160, 's');
  std::string refusal;
  assert_false(psk_for_identity(
                   keys, [](const std::string &) { return true; }, identity, false, refusal)
                   .has_value());
  assert_non_null(strstr(refusal.c_str(), "longer than the 255 its PSK derivation can take"));
  refusal.clear();
  const std::string overlong = "NVMe0R01 nqn." + std::string(230, 'h') + " nqn.s";
  assert_false(psk_for_identity(
                   keys, [](const std::string &) { return true; }, overlong, false, refusal)
                   .has_value());
  assert_non_null(strstr(refusal.c_str(), "an NQN longer than 223 bytes"));
}

// The two connection limits log in intervals of their own: a flood from
// one address must not hide that the target as a whole is full.
static void connection_refusals_logged_per_limit(void **) {
  ConnectionBudget budget(2, 1);
  const auto t0 = ConnectionBudget::Clock::now();
  std::string line;
  assert_true(budget.take("10.0.0.1", t0, line));
  assert_false(budget.take("10.0.0.1", t0, line));
  assert_non_null(strstr(line.c_str(), "1 connections from 10.0.0.1, the most --max-connections-per-address allows"));
  assert_false(budget.take("10.0.0.1", t0, line));
  assert_true(line.empty());
  assert_true(budget.take("10.0.0.2", t0, line));
  assert_false(budget.take("10.0.0.3", t0, line));
  assert_non_null(strstr(line.c_str(), "2 connections held, the most --max-connections allows"));
  budget.give_back("10.0.0.2");
  assert_false(budget.take("10.0.0.1", t0 + ConnectionBudget::kLogInterval, line));
  assert_non_null(strstr(line.c_str(), "the most --max-connections-per-address allows; 1 more refused since the last such line"));
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(namespace_specs),
      cmocka_unit_test(namespace_specs_refused),
      cmocka_unit_test(nvmetcli_json),
      cmocka_unit_test(nvmetcli_json_refused),
      cmocka_unit_test(finalize_refusals),
      cmocka_unit_test(from_jobfile),
      cmocka_unit_test(authentication_config),
      cmocka_unit_test(host_auth_change),
      cmocka_unit_test(keys_close_the_door),
      cmocka_unit_test(json_errors_show_no_text),
      cmocka_unit_test(long_identity_refused),
      cmocka_unit_test(limits_refused),
      cmocka_unit_test(ram_budget),
      cmocka_unit_test(connection_refusals_logged_per_limit),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
