// SPDX-License-Identifier: GPL-2.0-only
// The kernel toolkit's decisions that need no kernel: which transport a
// controller's connection runs over (its sysfs says tcp either way with the
// NVMe-over-MPTCP series), and what the kernel host is told from a job file.
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "lib/config/job_engine_options.hpp"
#include "tests/unit/cmocka_cxx.hpp"
#include "toolkit/common/mptcp_sockets.hpp"
#include "toolkit/nvmet/connect_options.hpp"

using namespace mpnvme;
using namespace mpnvme::toolkit;

static void address_fields(void **) {
  const std::string a = "traddr=10.1.1.1,trsvcid=4420,src_addr=10.1.1.2";
  assert_string_equal(address_field(a, "traddr").c_str(), "10.1.1.1");
  assert_string_equal(address_field(a, "trsvcid").c_str(), "4420");
  assert_string_equal(address_field(a, "src_addr").c_str(), "10.1.1.2");
  assert_string_equal(address_field(a, "host_iface").c_str(), "");
  assert_string_equal(address_field("traddr=10.1.1.10", "traddr").c_str(), "10.1.1.10");
}

static void transport_from_the_connection(void **) {
  const std::vector<MptcpPeer> mptcp = {{"10.1.2.1", "10.1.2.2", 4421}};
  // The MPTCP connection to the controller's address and port, from its source.
  assert_string_equal(controller_transport("tcp", "traddr=10.1.2.1,trsvcid=4421,src_addr=10.1.2.2", mptcp).c_str(), "mptcp");
  assert_string_equal(controller_transport("tcp", "traddr=10.1.2.1,trsvcid=4421", mptcp).c_str(), "mptcp");
  // Another port, address or source: a TCP controller.
  assert_string_equal(controller_transport("tcp", "traddr=10.1.2.1,trsvcid=4420", mptcp).c_str(), "tcp");
  assert_string_equal(controller_transport("tcp", "traddr=10.1.2.10,trsvcid=4421", mptcp).c_str(), "tcp");
  assert_string_equal(controller_transport("tcp", "traddr=10.1.2.1,trsvcid=4421,src_addr=10.1.3.2", mptcp).c_str(), "tcp");
  assert_string_equal(controller_transport("tcp", "traddr=10.1.2.1,trsvcid=4421", {}).c_str(), "tcp");
  // Other transports are what sysfs says.
  assert_string_equal(controller_transport("rdma", "traddr=10.1.2.1,trsvcid=4421", mptcp).c_str(), "rdma");
}

namespace {
JobSection job(std::map<std::string, std::string> extra) {
  JobSection j;
  j.name = "seed";
  j.options = {{"ioengine", "external:/x/fio-mpnvme.so"}, {"traddr", "10.1.1.1,10.1.2.1"}, {"subnqn", "nqn.2026-12.io.mpnvme:t"}};
  for (auto &[k, v] : extra)
    j.options[k] = v;
  return j;
}

ConnectRequest from_job(const std::vector<JobSection> &jobs, std::vector<std::string> *notes = nullptr) {
  ConnectRequest r;
  const EngineOptions e = job_engine_options(jobs.front(), "t.fio");
  const auto n = connect_options_from_job(r, e, jobs, "t.fio");
  if (notes) *notes = n;
  return r;
}
} // namespace

static void job_options_reach_the_kernel_host(void **) {
  const ConnectRequest r = from_job({job({{"numjobs", "2"},
                                          {"iodepth", "32"},
                                          {"hdr_digest", "1"},
                                          {"data_digest", "1"},
                                          {"kato", "7"},
                                          {"ctrl_loss_tmo", "-1"},
                                          {"reconnect_delay", "0.5"},
                                          {"fast_io_fail_tmo", "3"},
                                          {"tos", "46"},
                                          {"sk_priority", "5"},
                                          {"hostnqn", "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"},
                                          {"host_traddr", "10.1.1.2,10.1.2.2"}})});
  assert_int_equal(r.nr_io_queues, 2); // one I/O queue per fio job on every path, as the engine
  assert_int_equal(r.queue_size, 32);
  assert_true(r.hdr_digest && r.data_digest);
  assert_int_equal(r.keep_alive_tmo, 7);
  assert_int_equal(r.ctrl_loss_tmo, -1);
  assert_int_equal(r.reconnect_delay, 1); // whole seconds, at least 1
  assert_int_equal(r.fast_io_fail_tmo, 3);
  assert_int_equal(r.tos, 46);
  assert_int_equal(r.so_priority, 5);
  assert_string_equal(r.hostnqn.c_str(), "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555");
  assert_int_equal(r.hostid.size(), 36);     // the engine's host ID for that NQN
  assert_int_equal(r.host_traddr.size(), 2); // each path bound as the engine binds it
  assert_string_equal(r.host_traddr[0].c_str(), "10.1.1.2");
  assert_string_equal(r.host_traddr[1].c_str(), "10.1.2.2");
}

// No engine option is dropped silently: each is carried or has a reason,
// and a job that sets one the kernel host cannot take hears it by name.
static void options_not_carried_are_named(void **) {
  for (unsigned i = 0; const mpnvme_option_def *d = mpnvme_option_at(i); i++) {
    try {
      not_carried_because(d->name);
    } catch (const std::out_of_range &) {
      fail_msg("engine option %s: connect --job neither carries it nor says why not", d->name);
    }
  }
  for (const auto &name : options_with_a_fate())
    if (!find_engine_option(name)) fail_msg("connect --job's table names %s, which is no engine option", name.c_str());
  std::vector<std::string> notes;
  from_job({job({{"io_timeout", "30000"}, {"iodepth", "32"}}), job({{"poll", "busy"}, {"dhchap_hash", "sha256"}})}, &notes);
  assert_int_equal(notes.size(), 3);
  for (const char *want : {"dhchap_hash=sha256: not carried to the kernel host: the kernel host offers every hash",
                           "io_timeout=30000: not carried to the kernel host: the kernel's is nvme_core.io_timeout",
                           "poll=busy: not carried to the kernel host: the engine's own"})
    if (std::none_of(notes.begin(), notes.end(), [&](const std::string &n) { return n.find(want) == 0; }))
      fail_msg("no note '%s'", want);
  assert_null(not_carried_because("kato"));
  // Without hostnqn/hostid in the job the kernel's own identity stays.
  assert_true(from_job({job({{"iodepth", "32"}})}).hostnqn.empty());
}

static void job_defaults_are_the_engines(void **) {
  std::vector<std::string> notes;
  const ConnectRequest r = from_job({job({{"iodepth", "4"}}), job({{"numjobs", "3"}})}, &notes);
  assert_int_equal(r.nr_io_queues, 4); // 1 + 3 jobs
  assert_int_equal(r.queue_size, 16);  // iodepth 4, raised to the kernel's smallest
  assert_int_equal(notes.size(), 1);
  assert_non_null(strstr(notes[0].c_str(), "raised to 16"));
  assert_false(r.hdr_digest || r.data_digest);
  assert_int_equal(r.keep_alive_tmo, 5);
  assert_int_equal(r.ctrl_loss_tmo, 600);
  assert_int_equal(r.reconnect_delay, 10);
  assert_int_equal(r.fast_io_fail_tmo, -1);
  assert_int_equal(r.tos, -1);
  assert_int_equal(r.so_priority, -1);
  // nr_io_queues= multiplies each job's queues, as in the engine.
  assert_int_equal(from_job({job({{"numjobs", "2"}, {"nr_io_queues", "3"}}), job({})}).nr_io_queues, 7);
  // queue_size= wins over iodepth, as in the engine.
  assert_int_equal(from_job({job({{"iodepth", "4"}, {"queue_size", "128"}})}).queue_size, 128);
}

static void admin_values_the_kernel_cannot_follow(void **) {
  std::vector<std::string> notes;
  const ConnectRequest r = from_job({job({{"tos", "admin:0,io:46"}, {"iodepth", "32"}})}, &notes);
  assert_int_equal(r.tos, 46);
  assert_int_equal(notes.size(), 1);
  assert_non_null(strstr(notes[0].c_str(), "one TOS and one socket priority for every queue"));
  from_job({job({{"tos", "46"}, {"iodepth", "32"}})}, &notes);
  assert_int_equal(notes.size(), 0);
}

static void bad_fio_numbers_name_the_job(void **) {
  const struct {
    const char *key, *value;
  } bad[] = {{"numjobs", "two"}, {"numjobs", "0"}, {"iodepth", "+8"}, {"iodepth", "65537"}};
  for (const auto &b : bad) {
    const std::string want = fmt::format("t.fio: job seed: {}={}: not a number", b.key, b.value);
    try {
      from_job({job({{b.key, b.value}})});
    } catch (const std::runtime_error &e) {
      if (!strstr(e.what(), want.c_str())) fail_msg("message '%s' lacks '%s'", e.what(), want.c_str());
      continue;
    }
    fail_msg("%s=%s accepted", b.key, b.value);
  }
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(address_fields),
      cmocka_unit_test(transport_from_the_connection),
      cmocka_unit_test(job_options_reach_the_kernel_host),
      cmocka_unit_test(job_defaults_are_the_engines),
      cmocka_unit_test(admin_values_the_kernel_cannot_follow),
      cmocka_unit_test(bad_fio_numbers_name_the_job),
      cmocka_unit_test(options_not_carried_are_named),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
