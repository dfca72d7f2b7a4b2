// SPDX-License-Identifier: GPL-2.0-only
// One queue as the controller core sees it (nvmet's struct nvmet_sq and
// the command sets above it): what it is connected to, whether it has
// authenticated, and every command's life from its arrival to its
// completion. The transport (transport/connection.*) hands it requests and
// does what init says about their data; it decides nothing itself.
//
//   init     a new command, before any byte of its data: the admission
//            gate (core/admission.*) says whether it may run; a command
//            with data is then granted where the data goes (its buffer, or
//            a RAM namespace behind a Placement), at most its size, and
//            nothing at all before Connect but Connect's own 1 KiB.
//   execute  the command, once its data is in: the gate once more, then
//            fabrics.cpp, auth.cpp, admin.cpp, log_pages.cpp, io.cpp.
#pragma once
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "lib/auth/dhchap_controller.hpp"
#include "mpnvme-target/core/admission.hpp"
#include "mpnvme-target/core/registry.hpp"
#include "mpnvme-target/core/request.hpp"

namespace mpnvme::target {

constexpr uint32_t kNvmeVersion = 0x10300; // NVMe 1.3, as nvmet reports
constexpr unsigned kAerLimit = 4;          // Asynchronous Event Requests parked per controller
// Before a peer has proved anything it may not hold a connection for long:
// from accept to a finished Connect (a TLS handshake included: nvmet-tcp
// gives that 10 s), and from Connect to its first DH-HMAC-CHAP message.
constexpr std::chrono::seconds kSetupDeadline{10};
constexpr std::chrono::seconds kAuthDeadline{10};
// Each later step of a transaction has the controller's KATO, as nvmet
// gives it (120 s for a host that asked for none), but never less than
// kAuthDeadline; and no step nor the whole transaction takes longer than
// kAuthCeiling: a host computing ffdhe8192 on a slow CPU needs the one, a
// peer with a KATO of days, stepping slowly through renegotiations, may not
// hold a queue half-authenticated for as long.
constexpr std::chrono::seconds kAuthCeiling{120};
// Command buffers of an admin queue above this are given back after the
// command: a discovery or admin queue cannot keep queue entries x MDTS.
constexpr uint32_t kAdminBufferKept = 64 * 1024;

// ASCII fields of Identify data and log pages: space padded, no terminator.
void put_padded(uint8_t *dst, size_t n, const std::string &s);

struct ConnectRefusal; // fabrics.cpp

// What init decided about a new command.
enum class Intake : uint8_t {
  Refused, // completed with its status; any data it carries is read and dropped
  Receive, // its data (in the capsule or after an R2T) goes to in/in_len; then execute
  Execute, // it takes no data: execute now
};

class SubmissionQueue {
public:
  SubmissionQueue(Registry &reg, PortState &port, QueueTransport &transport, std::string peer);
  ~SubmissionQueue();
  SubmissionQueue(const SubmissionQueue &) = delete;
  SubmissionQueue &operator=(const SubmissionQueue &) = delete;

  Intake init(Request &r, uint32_t incapsule);
  void execute(Request &r);
  void on_file_done(Request &r, int res);
  // Whether `r` may still place its data in `ns` (a Placement's re-check).
  Verdict may_place(const Request &r, const Namespace &ns) const;
  // The largest in-capsule data a capsule may carry now: Connect's data
  // before Connect, the admin or I/O queue's limit after.
  uint32_t max_incapsule() const;
  // Response fields.
  uint16_t sqhd() const { return sqflow_disabled_ ? 0xffff : sqhd_; }
  uint16_t sqid() const { return connected() ? qid_ : 0; }
  bool sqflow_disabled() const { return sqflow_disabled_; }
  bool connected() const { return ctrl_ != nullptr; }
  // Keep-alive expiry, deadlines, events. False once the queue must end.
  bool tick(std::chrono::steady_clock::time_point now);
  // The connection's secure channel was opened with this PSK identity:
  // Connect must come from its host for its subsystem. A generated one
  // (secure channel concatenation) is the proof of a DH-HMAC-CHAP
  // transaction of that host: its queues need no other.
  void set_tls_identity(std::string identity, std::string hostnqn, std::string subnqn, bool generated);
  // "port P ADDR[ cntlid N]", for logs.
  const std::string &label() const { return label_; }
  // The transport failed the command (a data digest error).
  void fail(Request &r, uint16_t status);
  // The host closed the connection or sent Disconnect: a queue left in the
  // middle of authenticating counts as a failed authentication.
  void peer_left();

private:
  QueueStanding standing() const { return {ctrl_.get(), qid_, auth_pending_}; }
  uint64_t mdts_bytes() const;
  Intake refuse_intake(Request &r, uint16_t status, const std::string &why);
  Intake grant_data(Request &r, uint32_t incapsule);
  Intake grant_write(Request &r, Namespace &ns);
  void complete(Request &r, uint16_t status, uint32_t dw0 = 0, uint32_t dw1 = 0);
  void refuse(Request &r, uint16_t status, const std::string &why, uint32_t dw0 = 0);
  void return_data(Request &r, const uint8_t *data, uint32_t len);
  uint8_t *buffer(Request &r, uint32_t len) { return transport_.buffer(r, len); }
  // fabrics.cpp
  void exec_fabrics(Request &r);
  void connect(Request &r);
  void refuse_busy(Request &r, const std::string &subnqn, const ConnectRefusal &no);
  ConnectRefusal connect_admin(const nvme::ConnectData &d, uint32_t kato, const ConfigView &view,
                               const std::shared_ptr<Subsystem> &sub);
  ConnectRefusal connect_io(const nvme::ConnectData &d, uint16_t qid, const ConfigView &view, const Subsystem &sub);
  void property_get(Request &r);
  void property_set(Request &r);
  // auth.cpp
  uint32_t begin_authentication(std::optional<dhchap::ControllerAuthConfig> wants);
  void auth_send(Request &r);
  void auth_receive(Request &r);
  bool auth_fields_valid(Request &r);
  void auth_finished();
  void keep_generated_psk(); // after a transaction with secure channel concatenation
  void start_transaction(dhchap::ControllerAuthConfig wants);
  void count_auth_failure();
  bool auth_expire(std::chrono::steady_clock::time_point now); // true: expired, the queue ends
  void arm_auth_deadline(std::chrono::seconds window);
  std::chrono::seconds auth_step_window() const;
  // admin.cpp
  void exec_admin(Request &r);
  void identify(Request &r);
  void identify_controller(Request &r, uint8_t *buf);
  void identify_namespace(Request &r, uint8_t *buf);
  void identify_active_ns_list(Request &r, uint8_t *buf);
  void identify_ns_descriptors(Request &r, uint8_t *buf);
  void identify_nvm_command_set(Request &r, uint8_t *buf);
  void features(Request &r, bool set);
  uint32_t controller_feature(uint8_t fid, bool set, uint32_t v);
  void deliver_aens();
  void get_log_page(Request &r); // log_pages.cpp
  // io.cpp
  Namespace *io_namespace(Request &r);
  void exec_io(Request &r);
  class RequestDone;
  void modify(Request &r, Namespace &ns, RequestDone &done);
  void read_write(Request &r, Backend &be, RequestDone &done);
  void deallocate(Request &r, Backend &be, RequestDone &done);
  void refuse_lba_range(Request &r, const Backend &be, uint64_t lba, uint64_t n);
  void reservation_command(Request &r, Namespace &ns); // io_reservations.cpp
  void reservation_report(Request &r, const Reservations &rs);

  Registry &reg_;
  PortState &port_;
  QueueTransport &transport_;
  std::string peer_;
  std::string label_;
  uint16_t qid_ = 0;
  uint32_t sqsize_ = 0; // entries
  uint16_t sqhd_ = 0;
  bool sqflow_disabled_ = false;
  std::shared_ptr<TargetController> ctrl_;
  std::unordered_set<uint32_t> refused_; // refusals logged at info: status, opcode, fctype
  std::string connect_host_;             // host NQN of the Connect (printable), for refusals before a controller exists
  std::deque<Request *> aers_;           // parked Asynchronous Event Requests (admin queue)
  // TLS: set by the transport after the handshake (empty: no secure channel).
  std::string tls_identity_, tls_host_, tls_subsys_;
  bool tls_generated_ = false;
  // DH-HMAC-CHAP: set by Connect for a host with a key; until it has
  // authenticated, the queue takes Authentication Send/Receive only.
  std::unique_ptr<dhchap::ControllerTransaction> auth_;
  bool auth_pending_ = false;
  uint64_t auth_key_epoch_ = 0; // the host's key epoch when the transaction started (GeneratedPsks)
  bool auth_failure_counted_ = false;
  std::chrono::steady_clock::time_point auth_deadline_{};
  std::chrono::steady_clock::time_point auth_started_{};
  std::chrono::seconds auth_window_{}; // the step window auth_deadline_ was armed with, for the log
  std::chrono::steady_clock::time_point setup_deadline_;
};

} // namespace mpnvme::target
