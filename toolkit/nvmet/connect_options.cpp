// SPDX-License-Identifier: GPL-2.0-only
#include "toolkit/nvmet/connect_options.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

namespace mpnvme::toolkit {

namespace {

// The kernel's bounds of queue_size (NVMF_MIN_QUEUE_SIZE, NVMF_MAX_QUEUE_SIZE).
constexpr unsigned kKernelMinQueue = 16, kKernelMaxQueue = 1024;

unsigned fio_number(const JobSection &j, const char *key, unsigned dflt, const std::string &path) {
  const auto v = j.get(key);
  if (!v) return dflt;
  if (const auto n = parse_count(*v, 65536)) return *n;
  throw std::runtime_error(fmt::format("{}: job {}: {}={}: not a number the kernel host can use", path, j.name, key, *v));
}

// What connect --job does with each engine option: nullptr, carried (to
// /dev/nvme-fabrics, nvme_tcp's so_priority, the subsystem's iopolicy, the
// .nvme keyring); otherwise why not, said to the user when the job sets it.
const std::map<std::string, const char *> kFate = {
    {"traddr", nullptr},
    {"trsvcid", nullptr},
    {"transport", nullptr},
    {"subnqn", nullptr},
    {"hostnqn", nullptr},
    {"hostid", nullptr},
    {"host_traddr", nullptr},
    {"host_iface", nullptr},
    {"queue_size", nullptr},
    {"nr_io_queues", nullptr},
    {"kato", nullptr},
    {"hdr_digest", nullptr},
    {"data_digest", nullptr},
    {"sk_priority", nullptr},
    {"tos", nullptr},
    {"iopolicy", nullptr},
    {"disable_sqflow", nullptr},
    {"reconnect_delay", nullptr},
    {"ctrl_loss_tmo", nullptr},
    {"fast_io_fail_tmo", nullptr},
    {"dhchap_secret", nullptr},
    {"dhchap_ctrl_secret", nullptr},
    {"dhchap_secret_file", nullptr},
    {"dhchap_ctrl_secret_file", nullptr},
    {"tls", nullptr},
    {"tls_key", nullptr},
    {"tls_key_file", nullptr},
    {"tls_compat", nullptr},
    {"nsid", "the kernel host attaches every namespace of the subsystem"},
    {"connect_timeout", "the kernel host has no connect timeout of its own"},
    {"io_timeout", "the kernel's is nvme_core.io_timeout, one module parameter for every controller: not changed"},
    {"max_retries", "the kernel's is nvme_core.max_retries, one module parameter for every controller: not changed"},
    {"dhchap_hash", "the kernel host offers every hash it has"},
    {"dhchap_dhgroup", "the kernel host offers every DH group it has"},
    {"tls_identity", "the kernel host (tlshd) chooses its PSK identity"},
    {"tls_ciphers", "tlshd chooses the cipher suite"},
    {"tls_mode", "the kernel host's records are kernel TLS after tlshd's handshake"},
    {"concat", "this libnvme (Debian 12's 1.3) cannot ask the kernel for secure channel concatenation; nvme connect "
               "--concat (nvme-cli 2.12 and later) can: the kernel host authenticates with DH-HMAC-CHAP, without TLS"},
    {"trim_mode", "how the engine issues trims; fio's trims reach the kernel host as discards"},
    {"log_level", "the engine's own logging"},
    {"path_stats", "the engine's own statistics (mpnvme-iopolicy show has the kernel host's)"},
    {"fabrics_disconnect", "the engine's own shutdown"},
    {"poll", "the engine's own completion polling"},
    {"defer_send", "the engine's own send batching"},
    {"mptcp_join_wait", "the engine's own start-up; the kernel host starts I/O as soon as it connects"},
};

// Notes for the options the job sets that the kernel host cannot be given.
void note_not_carried(const std::vector<JobSection> &jobs, std::vector<std::string> &notes) {
  std::map<std::string, std::string> given; // first value seen, once per option
  for (const auto &j : jobs)
    for (const auto &[k, v] : j.options)
      if (find_engine_option(k) && not_carried_because(k)) given.emplace(k, v);
  for (const auto &[k, v] : given)
    notes.push_back(fmt::format("{}={}: not carried to the kernel host: {}", k, v, not_carried_because(k)));
}

// Kernel options are whole seconds; -1 is "forever" or "off".
int whole_seconds(const std::optional<std::chrono::milliseconds> &ms) {
  return ms ? static_cast<int>(std::ceil(ms->count() / 1000.0)) : -1;
}

} // namespace

const char *not_carried_because(const std::string &name) { return kFate.at(name); }

std::vector<std::string> options_with_a_fate() {
  std::vector<std::string> names;
  for (const auto &[name, why] : kFate)
    names.push_back(name);
  return names;
}

std::vector<std::string> connect_options_from_job(ConnectRequest &r, const EngineOptions &e, const std::vector<JobSection> &jobs,
                                                  const std::string &path) {
  std::vector<std::string> notes;
  // The engine opens nr_io_queues I/O queues per fio job on every path,
  // each with queue_size entries (iodepth when unset): the kernel gets as
  // many queues (it keeps at most one per CPU) of the same size.
  unsigned queues = 0, depth = 0;
  for (const auto &j : jobs) {
    queues += fio_number(j, "numjobs", 1, path) * fio_number(j, "nr_io_queues", 1, path);
    depth = std::max(depth, fio_number(j, "iodepth", 1, path));
  }
  r.nr_io_queues = static_cast<int>(queues);
  unsigned size = e.queue_size ? e.queue_size : std::max(depth, 2u);
  if (size < kKernelMinQueue) {
    notes.push_back(fmt::format("queue size {} raised to {}, the kernel's smallest", size, kKernelMinQueue));
    size = kKernelMinQueue;
  }
  r.queue_size = static_cast<int>(std::min(size, kKernelMaxQueue));
  r.hdr_digest = e.digests.header;
  r.data_digest = e.digests.data;
  r.keep_alive_tmo = static_cast<int>(e.kato_ms / 1000);
  r.ctrl_loss_tmo = whole_seconds(e.recovery.ctrl_loss_tmo);
  r.reconnect_delay = std::max(1, whole_seconds(std::optional(e.recovery.reconnect_delay)));
  r.fast_io_fail_tmo = whole_seconds(e.recovery.fast_io_fail_tmo);
  r.disable_sqflow = e.disable_sqflow;
  r.host_traddr = e.host_traddr; // per path, as the engine binds them
  r.host_iface = e.host_iface;
  const auto sets = [&](const char *key) {
    return std::any_of(jobs.begin(), jobs.end(), [&](const JobSection &j) { return j.get(key).has_value(); });
  };
  if (sets("hostnqn") || sets("hostid")) { // else the kernel's own (/etc/nvme), as libnvme picks it
    r.hostnqn = e.host.hostnqn;
    r.hostid = format_uuid(e.host.hostid);
  }
  // One TOS and one socket priority for all of the kernel host's queues:
  // the I/O queues' (the admin queue carries almost nothing).
  if (const auto tos = e.tos.for_queue(1)) r.tos = static_cast<int>(*tos);
  if (const auto prio = e.sk_priority.for_queue(1)) r.so_priority = static_cast<int>(*prio);
  if (e.tos.for_queue(0) != e.tos.for_queue(1) || e.sk_priority.for_queue(0) != e.sk_priority.for_queue(1))
    notes.push_back("the kernel host has one TOS and one socket priority for every queue: the I/O queues' apply to its "
                    "admin queue too");
  note_not_carried(jobs, notes);
  return notes;
}

} // namespace mpnvme::toolkit
