// One NVMe-oF controller association over one path: the admin queue (ICReq,
// Connect, enable, Identify, Set Features, Keep Alive every KATO/2 from its
// own thread so that an idle fio job stays connected) and its I/O queue.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "../../lib/host_identity.hpp"
#include "../../lib/nvme.hpp"
#include "../../lib/priority_pairs.hpp"
#include "queue.hpp"

namespace mpnvme::host {

struct ControllerConfig {
  PathAddr path;
  SocketSettings socket; // transport, binding, timeout (priority/TOS per queue below)
  PriorityPairs sk_priority, tos;
  std::string subnqn;
  HostIdentity host;
  uint32_t nsid = 1;
  uint32_t kato_ms = 5000; // 0 disables keep-alive
  pdu::Digests digests;
  uint16_t io_qid = 1;
  uint16_t io_queue_size = 0; // command slots; 0 = as the caller asks in connect_io
  bool disable_sqflow = true;
  std::chrono::milliseconds admin_timeout{10000};
};

class Controller {
public:
  explicit Controller(ControllerConfig cfg);
  ~Controller();
  Controller(const Controller &) = delete;
  Controller &operator=(const Controller &) = delete;

  // Admin queue: connect, enable, Identify Controller and Namespace.
  // Throws std::runtime_error with the path and the failing step.
  void connect_admin();
  // I/O queue `io_qid` with `slots` command slots (bounded by CAP.MQES).
  void connect_io(uint16_t slots);
  void start_keep_alive();
  // Orderly: stop keep-alive, Disconnect the I/O queue, CC.SHN, close.
  void shutdown();

  Queue &io() { return *io_; }
  const nvme::IdController &id() const { return id_ctrl_; }
  const nvme::IdNamespace &ns() const { return id_ns_; }
  const nvme::Cap &cap() const { return cap_; }
  uint16_t cntlid() const { return cntlid_; }
  const std::string &label() const { return label_; }
  const ControllerConfig &config() const { return cfg_; }
  MptcpState mptcp_state() const;
  // True once a keep-alive failed (the association is gone).
  bool keep_alive_failed() const { return ka_failed_; }

private:
  std::unique_ptr<Queue> open_queue(uint16_t qid, uint16_t slots);
  void fabric_connect(Queue &q, uint16_t qid, uint16_t sqsize, uint8_t cattr, uint32_t kato);
  Completion admin(const nvme::Sqe &sqe, uint8_t *data = nullptr, uint32_t len = 0, DataDir dir = DataDir::None);
  uint64_t property_get(uint32_t off, bool eight);
  void property_set(uint32_t off, uint64_t v);
  void wait_csts(uint32_t mask, uint32_t want, const char *what);
  void keep_alive_loop();

  ControllerConfig cfg_;
  std::string label_;
  std::unique_ptr<Queue> admin_, io_;
  nvme::Cap cap_{0};
  nvme::IdController id_ctrl_;
  nvme::IdNamespace id_ns_;
  uint16_t cntlid_ = 0;
  bool enabled_ = false;

  std::mutex admin_mu_;
  std::thread ka_thread_;
  std::mutex ka_mu_;
  std::condition_variable ka_cv_;
  bool ka_stop_ = false;
  std::atomic<bool> ka_failed_{false};
};

} // namespace mpnvme::host
