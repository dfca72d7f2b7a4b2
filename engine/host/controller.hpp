// SPDX-License-Identifier: GPL-2.0-only
// One NVMe-oF controller association over one path, shared by the jobs of a
// fio process that name the same subsystem and path (as the kernel host
// and SPDK's plugin share one controller): one admin queue, one keep-alive.
//
// After the first connection an admin thread owns the admin queue: Keep
// Alive every KATO/2, an Asynchronous Event Request always outstanding, the
// ANA log read again on an ANA change notice, and error recovery with the
// kernel's controller states: a failure (keep-alive, admin queue, or one
// reported by a job: I/O timeout, transport error) moves LIVE -> RESETTING
// -> CONNECTING; a reconnect is tried every reconnect_delay until
// ctrl_loss_tmo, then the controller is DELETED. Reconnecting rebuilds the
// admin queue and every job's I/O queue and hands those over.
//
// Jobs see the controller through lock-free reads (state, generation, ANA
// state of their namespace) and an eventfd that wakes them on any change.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/host/ana_reads.hpp"
#include "engine/host/channel.hpp"
#include "engine/host/clock.hpp"
#include "engine/host/identify.hpp"
#include "engine/host/recovery.hpp"
#include "lib/auth/dhchap_host.hpp"
#include "lib/config/host_identity.hpp"
#include "lib/config/priority_pairs.hpp"
#include "lib/net/paths.hpp"
#include "lib/net/sock.hpp"
#include "lib/tls/tls_options.hpp"
#include "lib/wire/nvme.hpp"

namespace mpnvme::host {

struct ControllerConfig {
  PathAddr path;
  SocketSettings socket; // transport, binding, timeout (priority/TOS per queue below)
  PriorityPairs sk_priority, tos;
  std::string subnqn;
  HostIdentity host;
  // The values below come from the engine options (engine_options.hpp).
  uint32_t kato_ms = 0; // 0 disables keep-alive
  pdu::Digests digests;
  bool disable_sqflow = false;
  bool fabrics_disconnect = false; // send Fabrics Disconnect on I/O queues at the end
  std::chrono::milliseconds admin_timeout{0};
  RecoveryOptions recovery;
  uint16_t queues_wanted = 64;                  // I/O queues asked for with Set Features Number of Queues
  bool size_probe = false;                      // fio setup's short association: logged at debug only
  std::chrono::milliseconds mptcp_join_wait{0}; // I/O queues: wait for the subflows to settle
  dhchap::HostAuthConfig auth;                  // DH-HMAC-CHAP on every queue, per path
  tls::HostTlsConfig tls;                       // a TLS handshake before every ICReq
  // Jobs whose configurations are equal in every field share one controller.
  bool operator==(const ControllerConfig &) const = default;
};

// One job's I/O queue on a controller: what the job asked for, and the
// handover point where the admin thread leaves each new connection.
class IoAttachment {
public:
  // `wake_fd` is the job's eventfd; the attachment keeps a duplicate of its
  // own, so a wake-up after the job closed its end goes nowhere harmful.
  IoAttachment(uint16_t qid, uint16_t slots, uint32_t nsid, NsIds expected, int wake_fd);
  ~IoAttachment();
  IoAttachment(const IoAttachment &) = delete;
  IoAttachment &operator=(const IoAttachment &) = delete;
  const uint16_t qid, slots;
  const uint32_t nsid;
  const NsIds expected; // the namespace the job runs against (from its first path)

  // Written by the admin thread, read by the job without locks.
  std::atomic<AnaState> ana{AnaState::Optimized};
  // An ANA status was seen: unusable until an ANA read that covers this
  // request number (AnaReads) has been applied; 0 = none.
  std::atomic<uint64_t> ana_pending{0};
  std::atomic<uint32_t> anagrpid{0}; // the namespace's ANA group on this controller
  // The generation of the connection the job uses (0: none). A reset waits
  // in RESETTING until no job holds an older one: their commands are back.
  std::atomic<uint32_t> held_generation{0};

  // The job takes a new connection, if one was handed over since.
  bool has_connection() const { return has_.load(std::memory_order_acquire); }
  std::unique_ptr<Channel> take(uint32_t &generation);
  // A connection of an older association than one handed over before is
  // closed, not handed over: a job's own connect that a reset overtook
  // must not displace the reconnect's.
  void hand_over(std::unique_ptr<Channel> ch, uint32_t generation);
  void wake() const;
  // Why this path cannot serve the job's namespace (identity changed), or
  // empty.
  std::string refusal() const;
  void set_refusal(std::string why);

private:
  Fd wake_;
  mutable std::mutex mu_;
  std::unique_ptr<Channel> ready_;
  uint32_t ready_generation_ = 0;
  std::atomic<bool> has_{false};
  std::string refusal_;
};

// What an I/O queue's connection needs from the association it joins,
// taken on the admin thread (prepare_io), so that the connection itself can
// be made on any thread: a job connects its own queue at attach, side by
// side with the other jobs, while the admin thread goes on.
struct IoQueueTicket {
  uint32_t generation = 0; // the association the queue joins
  uint16_t cntlid = 0;
  uint32_t incapsule_limit = 0;
  std::optional<tls::Offer> generated; // concat=1: the PSK of the association's admin queue
};

struct NamespaceInfo {
  IdController ctrl;
  IdNamespace ns;
  uint32_t mqes = 0;       // CAP.MQES + 1: entries an I/O queue may have
  uint32_t generation = 0; // the association it was read on
};

class HostController {
public:
  explicit HostController(ControllerConfig cfg);
  ~HostController(); // stops the admin thread, then CC.SHN and close
  HostController(const HostController &) = delete;
  HostController &operator=(const HostController &) = delete;

  // The first connection, in the caller's thread. False, with the reason in
  // reason(), when it failed: the controller is then CONNECTING and the
  // admin thread keeps trying.
  bool connect_first();
  // Start the admin thread (not for fio's size probe).
  void start();

  // Identify Namespace and its identifiers (runs on the admin thread).
  // Throws std::runtime_error naming the path and the step.
  NamespaceInfo identify_namespace(uint32_t nsid);
  // Register a job's I/O queue (qid `preferred` when free) and connect it
  // now if the controller is live; later reconnects hand over new ones.
  // `identified`: the job's namespace as identify_namespace() just read it
  // on this controller, not read again while the association is the same.
  std::shared_ptr<IoAttachment> attach(uint16_t preferred, uint16_t slots, uint32_t nsid, const NsIds &expected, int wake_fd,
                                       const NamespaceInfo *identified = nullptr);
  void detach(const std::shared_ptr<IoAttachment> &a);

  CtrlState state() const { return rec_.state(); }
  // Bumped at every reset: a connection of an older generation is gone.
  uint32_t generation() const { return rec_.generation(); }
  // Since when the controller is not live, and why.
  Clock::time_point down_since() const { return rec_.down_since(); }
  std::string reason() const { return rec_.reason(); }
  // fast_io_fail_tmo passed since the controller went down: queued I/O
  // that has no other path fails instead of waiting.
  bool failfast_expired(Clock::time_point now) const { return rec_.failfast_expired(now); }
  // A job saw this path fail (I/O timeout, transport error on its queue).
  void report_failure(uint32_t generation, const std::string &why);
  // A job saw an ANA status: read the ANA log again; `mark` is set to the
  // request's number until a read that covers it has been applied.
  void request_ana_read(std::atomic<uint64_t> *mark);
  // Commands in flight on all I/O queues (maintained by the jobs for the
  // queue-depth policy, as the kernel's nr_active).
  std::atomic<unsigned> nr_active{0};

  const ControllerConfig &config() const { return cfg_; }
  const std::string &label() const { return label_; }
  IdController id() const;

  // fio's size probe: identify, then shut down (no admin thread).
  void shutdown();

private:
  struct Task {
    std::function<void()> fn;
    std::exception_ptr error;
    bool done = false;
  };

  // association set-up (controller.cpp)
  // open_channel, send_connect and connect_io read only their arguments
  // and the constant configuration: any thread may call them.
  std::unique_ptr<Channel> open_channel(uint16_t qid, uint16_t slots, const std::optional<tls::Offer> &generated) const;
  Completion send_connect(Channel &ch, uint16_t qid, uint16_t sqsize, uint8_t cattr, uint32_t kato, uint16_t cntlid) const;
  void connect_admin(Channel &ch);
  Completion admin(const nvme::Sqe &sqe, uint8_t *data = nullptr, uint32_t len = 0, DataDir dir = DataDir::None);
  uint64_t property_get(uint32_t off, bool eight);
  void property_set(uint32_t off, uint64_t v);
  void wait_csts(uint32_t mask, uint32_t want, const char *what);
  void connect_association();
  NamespaceInfo identify_ns_now(uint32_t nsid);
  void connect_io(IoAttachment &a, const IoQueueTicket &t) const;
  IoQueueTicket prepare_io(IoAttachment &a, const NamespaceInfo *identified = nullptr);
  void prepare_io_or_retry(const std::shared_ptr<IoAttachment> &a);
  void retry_io();
  bool handed_back() const;
  void read_ana_log_now();
  void apply_ana(const AnaLog &log, uint64_t covered);
  uint16_t pick_qid(uint16_t preferred) const;

  // admin thread (controller_thread.cpp)
  void run();
  void live_step();
  void resetting_step();
  void reconnect_step();
  void wait_for_work(int timeout_ms);
  void run_tasks();
  void call(const std::function<void()> &fn);
  void submit_async(const nvme::Sqe &sqe, void *cookie, uint8_t *data = nullptr, uint32_t len = 0);
  void on_admin_completion(const Completion &c);
  void on_async_event(uint32_t dw0);
  void go_down(const std::string &why);
  void wake_jobs() const;
  void wake_self() const;

  const ControllerConfig cfg_;
  const std::string label_;

  ControllerRecovery rec_;
  mutable std::mutex mu_; // what other threads read: id, attachments, tasks
  std::vector<std::shared_ptr<IoAttachment>> attachments_;
  std::vector<Task *> tasks_;
  std::condition_variable task_done_;

  // Owned by the admin thread once it runs.
  std::unique_ptr<Channel> admin_;
  // Secure channel concatenation: the TLS PSK this association's admin
  // queue generated, for the queues that follow; a new association makes
  // another (as Linux revokes the key on every reset and reconnect).
  std::optional<tls::Offer> generated_;
  nvme::Cap cap_{0};
  IdController id_;
  uint16_t cntlid_ = 0;
  uint16_t granted_ = 0;
  bool enabled_ = false;
  bool ana_enabled_ = false;
  std::vector<uint8_t> ana_buf_;
  // The association's last ANA log (none until it is read, emptied with
  // every new association): a new I/O queue takes its state from it
  // instead of reading the log again (a change notice reads it anew).
  std::optional<AnaLog> ana_last_;
  bool aer_outstanding_ = false, ka_outstanding_ = false;
  AnaReads ana_reads_;
  Clock::time_point ka_sent_{}, next_ka_{};
  // Jobs' I/O queues a reconnect could not connect: tried again every
  // reconnect_delay while the controller is live.
  std::vector<std::weak_ptr<IoAttachment>> io_retry_;
  Clock::time_point io_retry_at_{};
  std::atomic<uint32_t> failed_generation_{0}; // a job reported this generation failed
  std::string job_failure_;                    // under mu_
  Fd wake_;                                    // eventfd: jobs and the destructor wake the admin thread
  std::thread thread_;
  std::thread::id thread_id_;
  std::atomic<bool> stop_{false};
  // cookies for the admin commands the thread keeps going
  char ka_cookie_ = 0, aer_cookie_ = 0, ana_cookie_ = 0;
};

} // namespace mpnvme::host
