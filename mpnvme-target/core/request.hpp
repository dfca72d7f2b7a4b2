// SPDX-License-Identifier: GPL-2.0-only
// One command as the controller core sees it (nvmet's struct nvmet_req):
// its SQE, where the host's data goes as admission granted it, what goes
// back, and its status; and the calls the core makes of the transport that
// carries its queue (nvmet's nvmet_fabrics_ops). The transport never
// decides what a command may do; the core never touches a PDU.
#pragma once
#include <cstdint>
#include <string>

#include "lib/wire/nvme.hpp"
#include "mpnvme-target/backend/backend.hpp"
#include "mpnvme-target/core/placement.hpp"

namespace mpnvme::target {

struct Request {
  nvme::Sqe sqe;
  uint16_t cid = 0;
  uint16_t tag = 0; // the transport's slot: file I/O completions come back by it
  // Data from the host, as init granted it: `in_len` bytes to `in` (the
  // command's buffer, or namespace memory behind `placement`).
  uint32_t in_len = 0;
  uint8_t *in = nullptr;
  Placement placement;
  // Data to the host, sent from `out` until the response has gone.
  const uint8_t *out = nullptr;
  uint32_t out_len = 0;
  uint16_t status = 0;
  uint32_t dw0 = 0, dw1 = 0;
  bool parked = false; // an Asynchronous Event Request waiting for an event

  void start(const uint8_t *sqe_bytes) {
    std::copy(sqe_bytes, sqe_bytes + sqe.b.size(), sqe.b.begin());
    cid = sqe.cid();
    in_len = out_len = 0;
    in = nullptr;
    out = nullptr;
    placement.clear();
    status = 0;
    dw0 = dw1 = 0;
    parked = false;
  }
};

class QueueTransport {
public:
  // The request is done (status, dw0/dw1, out data): send its data and
  // response.
  virtual void complete(Request &r) = 0;
  // The command's own buffer of at least `len` bytes (page aligned, for
  // O_DIRECT), or nullptr when there is no memory for it.
  virtual uint8_t *buffer(Request &r, uint32_t len) = 0;
  // Start file I/O for the request; SubmissionQueue::on_file_done follows.
  virtual void submit_file(Request &r, FileOp op, int fd, uint8_t *buf, uint64_t len, uint64_t off) = 0;
  // End the connection once what is queued has gone (Disconnect, a failed
  // authentication).
  virtual void end(const std::string &why) = 0;
  // An I/O queue was connected (+1) or went away (-1) on this connection:
  // the event loops balance I/O queues, which carry the load.
  virtual void io_queue_connected(int delta) = 0;
  // The transport checks received data afterwards (a data digest): it may
  // still refuse bytes it has received, so none may be received in place.
  virtual bool checks_data_after_receipt() const = 0;

protected:
  ~QueueTransport() = default;
};

} // namespace mpnvme::target
