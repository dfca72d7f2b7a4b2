// SPDX-License-Identifier: GPL-2.0-only
// SubmissionQueue: the life of a command. init admits it and grants its
// data, execute runs it, and every completion and every refusal (with its
// reason in the log) goes through here. The command sets are in
// fabrics.cpp, auth.cpp, admin.cpp, log_pages.cpp and io.cpp.
#include "mpnvme-target/core/submission_queue.hpp"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "lib/base/printable.hpp"

namespace mpnvme::target {
using namespace nvme;

namespace {
// Data transfer direction from the opcode (bits 1:0): 01 host to controller.
bool host_to_ctrl(const Sqe &s) {
  // Fabrics command types encode the direction the same way (Connect,
  // Authentication Send).
  if (s.opcode() == kFabricsOpcode) return (s.fctype() & 3) == 1;
  return (s.opcode() & 3) == 1;
}
} // namespace

void put_padded(uint8_t *dst, size_t n, const std::string &s) {
  std::memset(dst, ' ', n);
  std::memcpy(dst, s.data(), std::min(n, s.size()));
}

SubmissionQueue::SubmissionQueue(Registry &reg, PortState &port, QueueTransport &transport, std::string peer)
    : reg_(reg), port_(port), transport_(transport), peer_(std::move(peer)) {
  label_ = fmt::format("port {} {}", port_.cfg.id, peer_);
  setup_deadline_ = std::chrono::steady_clock::now() + kSetupDeadline;
}

SubmissionQueue::~SubmissionQueue() {
  if (!ctrl_) return;
  if (qid_ == 0) { // the admin queue owns the controller association
    ctrl_->dead = true;
    reg_.remove_controller(*ctrl_);
    log().info("{}: controller {} of {} (host {}) removed", label_, ctrl_->cntlid, ctrl_->subsys.cfg.nqn,
               printable(ctrl_->hostnqn));
  } else {
    std::lock_guard lk(ctrl_->mu);
    ctrl_->io_qids.erase(qid_);
  }
}

uint64_t SubmissionQueue::mdts_bytes() const { return 4096ull << reg_.config().mdts; }

uint32_t SubmissionQueue::max_incapsule() const {
  if (!ctrl_) return kConnectDataLen; // Connect's data, nothing else, before Connect
  return qid_ == 0 ? kAdminInlineBytes : port_.cfg.inline_data_size;
}

Intake SubmissionQueue::refuse_intake(Request &r, uint16_t status, const std::string &why) {
  refuse(r, status, why);
  return Intake::Refused;
}

// A new command whose capsule carried `incapsule` data bytes: the gate
// first, then its data, nothing of which is granted before.
Intake SubmissionQueue::init(Request &r, uint32_t incapsule) {
  if (sqsize_) sqhd_ = static_cast<uint16_t>((sqhd_ + 1) % sqsize_);
  if (Verdict v = admit_command(standing(), r.sqe); !v) return refuse_intake(r, v.status, v.why);
  const uint32_t len = r.sqe.sgl_len();
  // The MDTS rule holds in both directions, before any buffer is sized.
  if (len > mdts_bytes())
    return refuse_intake(r, kStatusInvalidField, fmt::format("{}-byte transfer above MDTS ({} bytes)", len, mdts_bytes()));
  if (incapsule || (host_to_ctrl(r.sqe) && len > 0)) return grant_data(r, incapsule);
  return Intake::Execute;
}

// Where a command's data goes: a write bound for a namespace passes the
// namespace's gate first and then lands in RAM in place; everything else
// in the command's buffer, of the size the command says.
Intake SubmissionQueue::grant_data(Request &r, uint32_t incapsule) {
  const uint32_t len = incapsule ? incapsule : r.sqe.sgl_len();
  if (!incapsule) {
    // Data the host sends after an R2T. nvmet-tcp takes any descriptor but
    // the in-capsule one as a transport data block; so do we.
    if (r.sqe.sgl_type() == kSglDataBlockOffset)
      return refuse_intake(r, kStatusSglTypeInvalid,
                           fmt::format("in-capsule SGL for {} bytes sent without data in the capsule", len));
    if (!ctrl_)
      return refuse_intake(r, kStatusSglLengthInvalid, "Connect without its data in the capsule (no R2T before Connect)");
  }
  if (auth_pending_ && len > dhchap::kMaxMessage)
    return refuse_intake(
        r, kStatusInvalidField,
        fmt::format("{} bytes before authentication, more than a DH-HMAC-CHAP message ({})", len, dhchap::kMaxMessage));
  if (ctrl_ && qid_ != 0 && r.sqe.opcode() != kFabricsOpcode) {
    Namespace *ns = io_namespace(r);
    if (!ns) return Intake::Refused;
    const uint64_t epoch = ns->fence->epoch(); // read before the check it vouches for
    if (Verdict v = admit_namespace(standing(), port_, r.sqe, *ns); !v) return refuse_intake(r, v.status, v.why);
    if (!incapsule && r.sqe.opcode() == kCmdWrite) {
      Backend &be = *ns->backend;
      const uint64_t slba = r.sqe.slba(), nlb = r.sqe.nlb();
      // A Write RAM takes in place: received straight into the namespace,
      // each receive and copy inside the namespace's fence. Not with a data
      // digest: bytes that fail it must never have landed (nvmet receives
      // into its own pages too), so they go to the buffer and are copied
      // once the digest held.
      uint8_t *dst = be.contains(slba, nlb) && len == nlb * be.lba() && !transport_.checks_data_after_receipt()
                         ? be.write_destination(slba * be.lba(), len)
                         : nullptr;
      if (dst) {
        r.placement.grant(*this, r, *ns, epoch);
        r.in = dst;
        r.in_len = len;
        return Intake::Receive;
      }
    }
  }
  r.in = buffer(r, len);
  if (!r.in) return refuse_intake(r, kStatusInternal, fmt::format("no memory for {} bytes of command data", len));
  r.in_len = len;
  return Intake::Receive;
}

Verdict SubmissionQueue::may_place(const Request &r, const Namespace &ns) const {
  if (Verdict v = admit_command(standing(), r.sqe); !v) return v;
  return admit_namespace(standing(), port_, r.sqe, ns);
}

void SubmissionQueue::execute(Request &r) {
  if (Verdict v = admit_command(standing(), r.sqe); !v) return refuse(r, v.status, v.why);
  // Keep-alive counts commands the queue may run: a refused one (before
  // authentication) does not keep a controller alive.
  if (ctrl_) ctrl_->touch();
  if (r.sqe.opcode() == kFabricsOpcode) return exec_fabrics(r);
  if (qid_ == 0) return exec_admin(r);
  exec_io(r);
}

void SubmissionQueue::fail(Request &r, uint16_t status) { complete(r, status); }

void SubmissionQueue::complete(Request &r, uint16_t status, uint32_t dw0, uint32_t dw1) {
  r.status = status;
  r.dw0 = dw0;
  r.dw1 = dw1;
  if (status)
    log().debug("{} qid {}: cid {:#x} {} failed: {}", label_, qid_, r.cid, opcode_name(r.sqe.opcode(), qid_ == 0),
                status_string(status));
  transport_.complete(r);
}

// A host command refused for a reason the host should fix: the status goes
// on the wire, the reason to the log at info, once per status and command
// per queue (a host that repeats it is not worth a line each time).
void SubmissionQueue::refuse(Request &r, uint16_t status, const std::string &why, uint32_t dw0) {
  const uint8_t op = r.sqe.opcode();
  const uint32_t key = static_cast<uint32_t>(status) << 16 | op << 8 | (op == kFabricsOpcode ? r.sqe.fctype() : 0);
  const bool first = refused_.insert(key).second;
  const char *what = op == kFabricsOpcode ? fabrics_name(r.sqe.fctype()) : opcode_name(op, qid_ == 0);
  const std::string host = ctrl_ ? printable(ctrl_->hostnqn) : !connect_host_.empty() ? connect_host_ : "(not connected)";
  const std::string queue = ctrl_ ? fmt::format("qid {}", qid_) : "before Connect";
  if (first)
    log().info("{} {}: refused {} (cid {:#x}) from host {}: {}: {}", label_, queue, what, r.cid, host, status_string(status),
               why);
  else
    log().debug("{} {}: refused {} (cid {:#x}): {}", label_, queue, what, r.cid, why);
  complete(r, status, dw0);
}

void SubmissionQueue::return_data(Request &r, const uint8_t *data, uint32_t len) {
  // The host says how much it wants (SGL length); send at most that.
  r.out = data;
  r.out_len = std::min(len, r.sqe.sgl_len());
  complete(r, 0);
}

// A host that asked for a challenge and left without answering it made an
// attempt that failed (a peer collecting challenges is slowed down like a
// guesser); one that left before asking never tried (blktests' nvme/041
// connects without a key and at once again with one, as against nvmet).
void SubmissionQueue::peer_left() {
  if (auth_pending_ && auth_ && auth_->started()) count_auth_failure();
}

bool SubmissionQueue::tick(std::chrono::steady_clock::time_point now) {
  if (port_.disabled) {
    transport_.end("port disabled");
    return false;
  }
  if (!ctrl_) {
    if (now <= setup_deadline_) return true;
    log().warn("{}: no Connect within {} s of the connection: closed", label_, kSetupDeadline.count());
    transport_.end("set-up not finished in time");
    return false;
  }
  if (auth_expire(now)) return false;
  // A host sends no keep-alive before its admin queue is live: while that
  // queue authenticates, the transaction's deadlines bound it, not the KATO (a host
  // computing ffdhe8192 on a slow CPU outlasted a 5 s KATO: blktests'
  // nvme/043 on one vCPU).
  if (qid_ == 0 && auth_) ctrl_->touch();
  if (qid_ == 0 && !ctrl_->dead && ctrl_->kato_expired(now)) {
    log().warn("{}: keep alive timeout ({} ms) for host {}: controller {} torn down", label_, ctrl_->kato_ms,
               printable(ctrl_->hostnqn), ctrl_->cntlid);
    ctrl_->dead = true;
  }
  if (ctrl_->dead) {
    transport_.end("controller ended");
    return false;
  }
  deliver_aens();
  return true;
}

} // namespace mpnvme::target
