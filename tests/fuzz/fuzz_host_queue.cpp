// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: bytes from a hostile controller into the engine's host
// queue (the same socket-free Queue the fio engine drives). The harness
// accepts the connection (ICResp with the digests of input byte 0, bits 0
// and 1) and keeps a read, an in-capsule write, an R2T write, a flush and a
// small read in flight, resubmitting each as it completes; the input is
// then delivered in chunks of input byte 1, through the same two-iovec
// receive the engine uses (C2HData payload straight into the read buffer).
// Whatever the input, the queue must neither crash, nor write outside the
// buffers it was given, nor lose track of its commands.
#include <cstring>
#include <vector>

#include "engine/host/queue.hpp"
#include "lib/base/log.hpp"

using namespace mpnvme;
using namespace mpnvme::host;

namespace {

struct Io {
  std::vector<uint8_t> buf;
  Command cmd;
};

void drain(Queue &q) {
  iovec iov[64];
  while (size_t n = q.tx_iov(iov, 64)) {
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
      bytes += iov[i].iov_len;
    q.on_sent(bytes);
  }
}

// Deliver up to `n` bytes of `data` the way recvmsg would.
size_t deliver(Queue &q, const uint8_t *data, size_t n) {
  iovec iov[2];
  const size_t k = q.rx_iov(iov);
  size_t done = 0;
  for (size_t i = 0; i < k && done < n; i++) {
    const size_t take = std::min(n - done, iov[i].iov_len);
    std::memcpy(iov[i].iov_base, data + done, take);
    done += take;
  }
  if (done) q.on_received(done);
  return done;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool quiet = (set_log_level("off"), true);
  (void)quiet;
  if (size < 2) return 0;
  const pdu::Digests dg{(data[0] & 1) != 0, (data[0] & 2) != 0};
  const size_t chunk = data[1] | 1;
  data += 2;
  size -= 2;

  QueueParams p;
  p.qid = 1;
  p.slots = 8;
  p.digests = dg;
  p.incapsule_limit = 8192;
  p.label = "fuzz";
  Queue q(p);
  q.start();
  drain(q);
  pdu::IcResp r;
  r.digests = dg;
  r.maxh2cdata = 8192;
  uint8_t ic[pdu::kIcLen];
  pdu::encode_icresp(ic, r);
  deliver(q, ic, sizeof ic);
  if (!q.ready()) __builtin_trap();

  Io ios[5];
  const struct {
    uint8_t opcode;
    uint32_t len;
    DataDir dir;
  } spec[5] = {{nvme::kCmdRead, 8192, DataDir::FromController},
               {nvme::kCmdWrite, 4096, DataDir::ToController},
               {nvme::kCmdWrite, 65536, DataDir::ToController},
               {nvme::kCmdFlush, 0, DataDir::None},
               {nvme::kCmdRead, 512, DataDir::FromController}};
  for (int i = 0; i < 5; i++) {
    ios[i].buf.assign(spec[i].len, static_cast<uint8_t>(i));
    Command &c = ios[i].cmd;
    c.sqe = spec[i].len ? nvme::make_rw(spec[i].opcode, 1, 0, spec[i].len / 512) : nvme::make_cmd(spec[i].opcode, 1);
    c.data = ios[i].buf.empty() ? nullptr : ios[i].buf.data();
    c.len = spec[i].len;
    c.dir = spec[i].dir;
    c.cookie = &ios[i];
    if (!q.submit(c)) __builtin_trap();
  }
  drain(q);

  while (size && !q.failed()) {
    const size_t n = deliver(q, data, std::min(size, chunk));
    data += n;
    size -= n;
    drain(q);
    for (const Completion &c : q.completions()) {
      auto *io = static_cast<Io *>(c.cookie);
      if (io < ios || io >= ios + 5) __builtin_trap(); // a completion for a command never submitted
      q.submit(io->cmd);                               // keep it busy (fails only when full)
    }
    q.completions().clear();
    if (q.inflight() > q.capacity()) __builtin_trap();
  }
  q.fail("end of input");
  if (q.inflight() != 0) __builtin_trap();
  return 0;
}
