// SPDX-License-Identifier: GPL-2.0-only
// The host side of one fio job: nr_io_queues I/O queues on each path's
// controller, the I/O policy that picks a path per command (then the
// path's queue with the fewest commands in flight), and the multipath rules
// that decide what a completion means (complete, retry, fail over) before
// fio sees an errno. Commands that have no usable path wait for one, within
// fast_io_fail_tmo / ctrl_loss_tmo; every command has an io_timeout
// deadline. One thread (the fio job) drives it; it waits on all its paths'
// sockets and an eventfd the controllers' admin threads signal.
#pragma once
#include <array>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "engine/host/controller.hpp"
#include "engine/host/numa.hpp"
#include "engine/host/path_policy.hpp"
#include "engine/host/path_stats.hpp"
#include "engine/mpnvme_engine.h"
#include "lib/config/engine_options.hpp"
#include "lib/net/sock.hpp"
#include "lib/wire/nvme.hpp"

namespace mpnvme::host {

// A path's recent service rate for the service-time policy: bytes completed
// per second of time with commands in flight, smoothed.
class RateMeter {
public:
  void busy(Clock::time_point now, bool any_inflight_before);
  void completed(Clock::time_point now, uint64_t bytes);
  double bytes_per_sec() const { return rate_; }

private:
  Clock::time_point busy_start_{};
  Clock::duration busy_{};
  uint64_t bytes_ = 0;
  double rate_ = 0;
};

class Session {
public:
  Session(EngineOptions opts, const mpnvme_job &job);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  // Connect every path, check they reach one namespace, attach an I/O queue
  // on each. Throws std::runtime_error / std::invalid_argument.
  void open();
  // fio setup: the namespace size from the first reachable path.
  void probe();
  uint64_t size_bytes() const { return size_bytes_; }
  const EngineOptions &options() const { return o_; }

  int queue(const mpnvme_io &io, int &error);
  void commit();
  int getevents(unsigned min, unsigned max, long long timeout_ns);
  // Completions received and not yet handed to fio.
  unsigned ready() const;
  void *event(unsigned i, int &error) const;

private:
  struct Request {
    void *io_u = nullptr;
    Command cmd;
    uint64_t bytes = 0;
    int path = -1; // in flight there; -1 while waiting for a path
    Clock::time_point issued{}, deadline{}, waiting_since{};
    uint8_t retries = 0;
  };
  // One I/O queue of the job: paths_ holds nr_io_queues of them per traddr
  // path, queue-major (entry k * paths + i is queue k of path i), so that
  // the first `paths` entries are one per path.
  struct Path {
    size_t route = 0; // its traddr path (o_.paths index)
    std::shared_ptr<HostController> ctrl;
    std::shared_ptr<IoAttachment> att;
    std::unique_ptr<Channel> ch;
    uint32_t generation = 0;
    std::string label; // "path ADDR:PORT qid N"
    bool up = false;   // as last logged
    bool ever_up = false;
    Clock::time_point down_since{};
    unsigned inflight = 0;
    uint64_t inflight_bytes = 0;
    bool polling_out = false; // EPOLLOUT armed
    int numa_distance = kLocalDistance;
    RateMeter rate;
    PathStats stats;
  };
  struct Ready {
    void *io_u;
    int error;
  };

  // session.cpp: set-up, checks, reports
  ControllerConfig controller_config(size_t path) const;
  void check_geometry(const NamespaceInfo &info) const;
  unsigned queue_slots(uint32_t mqes) const;
  void check_same_namespace(const NamespaceInfo &ref, size_t ref_path, const NamespaceInfo &other, size_t path) const;
  void report_transport(const Path &p) const;
  void report_paths();
  void warn_one_subflow(const MptcpState &st, int fd) const;
  std::string path_states() const;

  // session_io.cpp: the data path
  bool build(const mpnvme_io &io, Request &r, int &error);
  bool usable(const Path &p) const;
  int pick_path(uint64_t bytes);
  int least_busy_queue(size_t route) const;
  bool submit(Request &r);
  void harvest(size_t path, Clock::time_point now);
  void finish(Request &r, const Completion &c, Clock::time_point now);
  void maintain(Clock::time_point now);
  void adopt(size_t path, Clock::time_point now);
  void path_down(size_t path, const std::string &why, Clock::time_point now);
  void check_deadlines(Clock::time_point now);
  void resubmit_waiting(Clock::time_point now);
  bool any_path_available(Clock::time_point now) const;
  void fail_request(Request &r, const std::string &why);
  int wait_ms(Clock::time_point now, Clock::time_point fio_deadline) const;
  void wait(int timeout_ms);
  void watch_output(size_t path);
  void send_all();

  EngineOptions o_;
  mpnvme_job job_;
  std::string job_name_;
  std::vector<Path> paths_;
  PathSelector selector_;
  std::vector<PathView> views_;   // one per traddr path
  std::vector<Request> requests_; // by fio io_u index
  std::deque<Request *> waiting_; // no usable path yet (or a retry to place)
  std::vector<Ready> ready_;
  size_t handed_ = 0;
  int epfd_ = -1, wake_fd_ = -1;
  uint32_t lba_bytes_ = 512, lba_shift_ = 9;
  uint64_t size_bytes_ = 0;
  std::vector<std::array<uint8_t, nvme::kDsmRangeLen>> dsm_; // one range per io_u
  Clock::time_point next_deadline_check_{};
  uint64_t recent_latency_ns_ = 0; // completion time, smoothed (hybrid polling)
  bool opened_ = false;
};

} // namespace mpnvme::host
