// SPDX-License-Identifier: GPL-2.0-only
// Connection: the life of a command. A new command fetches its data with
// an R2T or runs; every completion, and every refusal with its reason in
// the log, goes through here. The command sets are in fabrics.cpp,
// admin.cpp, log_pages.cpp and io.cpp.
#include <algorithm>
#include <fmt/format.h>

#include "lib/base/log.hpp"
#include "mpnvme-target/transport/connection.hpp"

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

uint64_t Connection::mdts_bytes() const { return 4096ull << reg_.config().mdts; }

// A new command (capsule and any in-capsule data received): fetch the rest of
// its data with an R2T, or execute it.
void Connection::dispatch(uint16_t slot) {
  Cmd &c = cmds_[slot];
  const uint32_t len = c.sqe.sgl_len();
  // The MDTS rule holds in both directions, before any buffer is sized.
  if (len > mdts_bytes())
    return refuse(slot, kStatusInvalidField, fmt::format("{}-byte transfer above MDTS ({} bytes)", len, mdts_bytes()));
  if (host_to_ctrl(c.sqe) && len > 0 && c.data_len == 0) {
    // Data the host sends after an R2T. nvmet-tcp takes any descriptor but
    // the in-capsule one as a transport data block; so do we.
    if (c.sqe.sgl_type() == kSglDataBlockOffset)
      return refuse(slot, kStatusSglTypeInvalid,
                    fmt::format("in-capsule SGL for {} bytes sent without data in the capsule", len));
    c.in = backend_write_destination(c);
    if (!c.in) {
      if (!ensure_buf(c, len)) return complete(slot, kStatusInternal);
      c.in = c.buf;
    }
    c.data_len = len;
    return send_r2t(slot);
  }
  execute(slot);
}

void Connection::execute(uint16_t slot) {
  Cmd &c = cmds_[slot];
  const bool fabrics = c.sqe.opcode() == kFabricsOpcode;
  if (!ctrl_ && !(fabrics && c.sqe.fctype() == kFctConnect)) return refuse(slot, kStatusSeqError, "command before Connect");
  if (auth_pending_ && !authentication_gate(c, slot)) return;
  // Keep-alive counts commands the queue may run: a refused one (before
  // authentication) does not keep a controller alive.
  if (ctrl_) ctrl_->touch();
  if (fabrics) {
    exec_fabrics(c, slot);
  } else if (qid_ == 0) {
    if (!(ctrl_->csts & kCstsRdy))
      return refuse(slot, kStatusSeqError, "admin command while the controller is not ready (CC.EN)");
    exec_admin(c, slot);
  } else {
    exec_io(c, slot);
  }
}

void Connection::complete(uint16_t slot, uint16_t status, uint32_t dw0, uint32_t dw1) {
  Cmd &c = cmds_[slot];
  c.status = status;
  c.dw0 = dw0;
  c.dw1 = dw1;
  if (status) {
    stats_.errors++;
    log().debug("{} qid {}: cid {:#x} {} failed: {}", label_, qid_, c.cid, opcode_name(c.sqe.opcode(), qid_ == 0),
                status_string(status));
  }
  finish(slot);
}

// A host command refused for a reason the host should fix: the status goes
// on the wire, the reason to the log at info, once per status and command
// per connection (a host that repeats it is not worth a line each time).
void Connection::refuse(uint16_t slot, uint16_t status, const std::string &why, uint32_t dw0) {
  const Cmd &c = cmds_[slot];
  const uint8_t op = c.sqe.opcode();
  const uint32_t key = static_cast<uint32_t>(status) << 16 | op << 8 | (op == kFabricsOpcode ? c.sqe.fctype() : 0);
  const bool first = refused_.insert(key).second;
  const char *what = op == kFabricsOpcode ? fabrics_name(c.sqe.fctype()) : opcode_name(op, qid_ == 0);
  const std::string host = ctrl_ ? ctrl_->hostnqn : !connect_host_.empty() ? connect_host_ : "(not connected)";
  const std::string queue = qid_ == 0xffff ? "before Connect" : fmt::format("qid {}", qid_);
  if (first)
    log().info("{} {}: refused {} (cid {:#x}) from host {}: {}: {}", label_, queue, what, c.cid, host, status_string(status),
               why);
  else
    log().debug("{} {}: refused {} (cid {:#x}): {}", label_, queue, what, c.cid, why);
  complete(slot, status, dw0);
}

void Connection::return_data(Cmd &c, uint16_t slot, uint32_t len) {
  // The host says how much it wants (SGL length); send at most that.
  c.out = c.buf;
  c.out_len = std::min(len, c.sqe.sgl_len());
  complete(slot, 0);
}

} // namespace mpnvme::target
