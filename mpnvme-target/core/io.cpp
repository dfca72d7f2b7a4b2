// SPDX-License-Identifier: GPL-2.0-only
// SubmissionQueue: the NVM I/O commands (Read, Write, Flush, Write Zeroes,
// Dataset Management) against the namespace backends, once the admission
// gate lets them. What changes a namespace does so inside its placement
// fence, so that a change of rights waits for it or stops it.
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <vector>

#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {
using namespace nvme;

Namespace *SubmissionQueue::io_namespace(Request &r) {
  auto &nss = ctrl_->subsys.namespaces;
  auto it = nss.find(r.sqe.nsid());
  if (it != nss.end()) return &it->second;
  refuse(r, kStatusInvalidNs, fmt::format("namespace {:#x} does not exist", r.sqe.nsid()));
  return nullptr;
}

// What a backend may do with a request: finish it now, name its read data,
// use the command's buffer, or hand an operation to the event loop
// (on_file_done completes it).
class SubmissionQueue::RequestDone final : public BackendCompletion {
public:
  RequestDone(SubmissionQueue &q, Request &r) : q_(q), r_(r) {}
  void complete(uint16_t status) override { q_.complete(r_, status); }
  void refuse(uint16_t status, const std::string &why) override { q_.refuse(r_, status, why); }
  void send_data(const uint8_t *data, uint32_t len) override {
    r_.out = data; // sent straight from there
    r_.out_len = len;
  }
  uint8_t *buffer(uint32_t len) override { return q_.buffer(r_, len); }
  void submit(FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) override {
    q_.transport_.submit_file(r_, op, fd, buf, len, off);
  }

private:
  SubmissionQueue &q_;
  Request &r_;
};

void SubmissionQueue::exec_io(Request &r) {
  // A Write received in place: its data is in the namespace already, each
  // byte placed under a right the gate confirmed, unless it was revoked.
  if (r.placement.granted()) {
    if (const uint16_t st = r.placement.revoked())
      return refuse(r, st, "its rights on the namespace ended while its data arrived");
    return complete(r, 0);
  }
  Namespace *ns = io_namespace(r);
  if (!ns) return;
  const uint64_t epoch = ns->fence->epoch(); // read before the check it vouches for
  if (Verdict v = admit_namespace(standing(), port_, r.sqe, *ns); !v) return refuse(r, v.status, v.why);
  switch (r.sqe.opcode()) {
  case kCmdResvRegister:
  case kCmdResvAcquire:
  case kCmdResvRelease: return reservation_command(r, *ns);
  case kCmdResvReport: return reservation_report(r, *ns->reservations);
  default: break;
  }
  RequestDone done(*this, r);
  Backend &be = *ns->backend;
  if (r.sqe.opcode() == kCmdRead) {
    const uint64_t slba = r.sqe.slba(), nlb = r.sqe.nlb();
    if (!be.contains(slba, nlb)) return refuse_lba_range(r, be, slba, nlb);
    return read_write(r, be, done);
  }
  if (namespace_access(r.sqe) != NsAccess::Write)
    return refuse(r, kStatusInvalidOpcode, fmt::format("I/O opcode {:#04x} is not supported", r.sqe.opcode()));
  // Inside the fence: a change of rights that came after the check above
  // is seen here, and one that comes later waits until this has placed.
  r.placement.grant(*this, r, *ns, epoch);
  if (!r.placement.enter()) return refuse(r, r.placement.revoked(), "its rights on the namespace ended before it ran");
  modify(r, *ns, done);
  r.placement.leave();
  r.placement.clear();
}

// Write, Write Zeroes, Dataset Management, Flush: inside the fence.
void SubmissionQueue::modify(Request &r, Namespace &ns, RequestDone &done) {
  Backend &be = *ns.backend;
  switch (r.sqe.opcode()) {
  case kCmdWrite: {
    const uint64_t slba = r.sqe.slba(), nlb = r.sqe.nlb();
    if (!be.contains(slba, nlb)) return refuse_lba_range(r, be, slba, nlb);
    return read_write(r, be, done);
  }
  case kCmdFlush: return be.flush(done);
  case kCmdWriteZeroes: {
    const uint64_t slba = r.sqe.slba(), nlb = r.sqe.nlb();
    if (!be.contains(slba, nlb)) return refuse_lba_range(r, be, slba, nlb);
    return be.write_zeroes(slba * be.lba(), nlb * be.lba(), done);
  }
  default: return deallocate(r, be, done);
  }
}

void SubmissionQueue::refuse_lba_range(Request &r, const Backend &be, uint64_t lba, uint64_t n) {
  refuse(r, kStatusLbaOutOfRange, fmt::format("LBAs {}..{} beyond the namespace's {}", lba, lba + n - 1, be.blocks()));
}

// Read and Write of blocks the namespace has: the SGL must match them.
void SubmissionQueue::read_write(Request &r, Backend &be, RequestDone &done) {
  const uint8_t op = r.sqe.opcode();
  const uint64_t off = r.sqe.slba() * be.lba(), len = r.sqe.nlb() * be.lba();
  if (r.sqe.sgl_len() != len || (op == kCmdWrite && r.in_len != len))
    return done.refuse(kStatusSglLengthInvalid, fmt::format("{} LBAs ({} bytes) with a {}-byte SGL", r.sqe.nlb(), len,
                                                            op == kCmdWrite ? r.in_len : r.sqe.sgl_len()));
  if (op == kCmdRead) return be.read(off, static_cast<uint32_t>(len), done);
  be.write(off, static_cast<uint32_t>(len), r.in, done);
}

// Dataset Management: only the deallocate attribute does anything.
void SubmissionQueue::deallocate(Request &r, Backend &be, RequestDone &done) {
  const uint32_t nr = (r.sqe.cdw(10) & 0xff) + 1;
  if (r.in_len < nr * kDsmRangeLen) return refuse(r, kStatusSglLengthInvalid, fmt::format("{} ranges in {} bytes", nr, r.in_len));
  if (!(r.sqe.cdw(11) & (1u << 2))) return complete(r, 0); // no deallocate: hints only
  std::vector<ByteRange> ranges(nr);
  for (uint32_t i = 0; i < nr; i++) {
    const uint8_t *d = r.in + i * kDsmRangeLen;
    const uint64_t lba = wire::get64(d, 8), n = wire::get32(d, 4);
    if (n && !be.contains(lba, n)) return refuse_lba_range(r, be, lba, n);
    ranges[i] = {lba * be.lba(), n * be.lba()};
  }
  be.deallocate(ranges, done);
}

void SubmissionQueue::on_file_done(Request &r, int res) {
  if (res < 0) {
    log().error("{} qid {}: cid {:#x} {}: backend I/O failed: {}", label_, qid_, r.cid, opcode_name(r.sqe.opcode(), false),
                strerror(-res));
    return complete(r, res == -ENOSPC ? kStatusCapacityExceeded : kStatusWriteFault);
  }
  if (r.sqe.opcode() == kCmdRead) {
    r.out = buffer(r, static_cast<uint32_t>(res));
    r.out_len = static_cast<uint32_t>(res);
  }
  complete(r, 0);
}

} // namespace mpnvme::target
