// SPDX-License-Identifier: GPL-2.0-only
// The host queue's data path and its defences: over a socketpair through
// its Channel, by a scripted controller that sends well-formed and hostile
// PDUs; and socket-free, fed one byte at a time.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "engine/host/channel.hpp"
#include "engine/host/fio_errno.hpp"
#include "lib/wire/crc32c.hpp"
#include "lib/wire/wire.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;
using namespace mpnvme::host;

namespace {

struct Peer {
  int fd = -1;
  void read_exact(void *buf, size_t n) {
    auto *p = static_cast<uint8_t *>(buf);
    while (n) {
      ssize_t r = ::recv(fd, p, n, 0);
      assert_true(r > 0);
      p += r;
      n -= static_cast<size_t>(r);
    }
  }
  std::vector<uint8_t> read(size_t n) {
    std::vector<uint8_t> v(n);
    read_exact(v.data(), n);
    return v;
  }
  void write(const void *buf, size_t n) { assert_int_equal(::send(fd, buf, n, 0), static_cast<ssize_t>(n)); }
  void write(const std::vector<uint8_t> &v) { write(v.data(), v.size()); }
};

struct Fixture {
  std::unique_ptr<Channel> ch;
  Queue *q = nullptr;
  Peer peer;
  pdu::Digests dg;
  Fixture(pdu::Digests digests, uint32_t maxh2cdata = 1 << 20, uint16_t slots = 8, uint32_t incapsule = 8192) : dg(digests) {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    peer.fd = sv[1];
    make_blocking(sv[1]); // the scripted peer reads synchronously
    QueueParams p;
    p.qid = 1;
    p.slots = slots;
    p.digests = digests;
    p.incapsule_limit = incapsule;
    p.label = "test qid 1";
    ch = std::make_unique<Channel>(Fd(sv[0]), p);
    q = &ch->queue();
    pdu::IcResp r;
    r.digests = digests;
    r.maxh2cdata = maxh2cdata;
    uint8_t b[pdu::kIcLen];
    pdu::encode_icresp(b, r);
    peer.write(b, sizeof b);
    ch->initialize(std::chrono::steady_clock::now() + std::chrono::seconds(2));
    auto icreq = peer.read(pdu::kIcLen);
    pdu::IcReq got;
    assert_true(bool(pdu::decode_icreq(icreq.data(), got)));
    assert_int_equal(got.digests.header, digests.header);
    assert_int_equal(got.maxr2t, 0);
  }
  ~Fixture() { ::close(peer.fd); }
  // Blocking, but a read that waits 2 s for the host fails the test instead
  // of hanging it.
  static void make_blocking(int fd) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  // Read one CapsuleCmd from the host; returns SQE and any in-capsule data.
  nvme::Sqe read_capsule(std::vector<uint8_t> *data = nullptr) {
    auto h = peer.read(pdu::kCommonLen);
    pdu::Common c = pdu::decode_common(h.data());
    assert_int_equal(c.type, static_cast<int>(pdu::Type::CapsuleCmd));
    auto rest = peer.read(c.plen - pdu::kCommonLen);
    h.insert(h.end(), rest.begin(), rest.end());
    if (dg.header) assert_true(pdu::header_digest_ok(h.data(), pdu::kCmdHlen));
    nvme::Sqe sqe;
    memcpy(sqe.b.data(), h.data() + 8, 64);
    if (data && c.pdo) {
      const size_t dlen = c.plen - c.pdo - (dg.data ? 4 : 0);
      data->assign(h.begin() + c.pdo, h.begin() + c.pdo + static_cast<long>(dlen));
      if (dg.data) assert_int_equal(wire::get32(h.data(), c.pdo + dlen), crc32c(data->data(), dlen));
    }
    return sqe;
  }
  std::vector<uint8_t> header(pdu::Type t, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen) {
    std::vector<uint8_t> h(hlen + (dg.header ? 4 : 0));
    pdu::encode_common(h.data(), t, static_cast<uint8_t>(flags | (dg.header ? pdu::kFlagHdgst : 0)), hlen, pdo, plen);
    return h;
  }
  void seal(std::vector<uint8_t> &h, size_t hlen) {
    if (dg.header) pdu::put_header_digest(h.data(), hlen);
  }
  void send_resp(uint16_t cid, uint16_t status) {
    auto h = header(pdu::Type::CapsuleResp, 0, 24, 0, 24 + (dg.header ? 4 : 0));
    nvme::Cqe c;
    c.cid = cid;
    c.status = status;
    nvme::encode_cqe(h.data() + 8, c);
    seal(h, 24);
    peer.write(h);
  }
  void send_c2h(uint16_t cid, uint32_t off, const std::vector<uint8_t> &data, uint8_t flags, bool corrupt_ddgst = false) {
    const uint8_t pdo = static_cast<uint8_t>(24 + (dg.header ? 4 : 0));
    const uint32_t plen = pdo + static_cast<uint32_t>(data.size()) + (dg.data ? 4 : 0);
    auto h = header(pdu::Type::C2HData, static_cast<uint8_t>(flags | (dg.data ? pdu::kFlagDdgst : 0)), 24, pdo, plen);
    wire::put16(h.data(), 8, cid);
    wire::put32(h.data(), 12, off);
    wire::put32(h.data(), 16, static_cast<uint32_t>(data.size()));
    seal(h, 24);
    peer.write(h);
    peer.write(data);
    if (dg.data) {
      uint8_t d[4];
      wire::put32(d, 0, crc32c(data.data(), data.size()) ^ (corrupt_ddgst ? 1u : 0u));
      peer.write(d, 4);
    }
  }
  void send_r2t(uint16_t cid, uint16_t ttag, uint32_t off, uint32_t len) {
    auto h = header(pdu::Type::R2T, 0, 24, 0, 24 + (dg.header ? 4 : 0));
    wire::put16(h.data(), 8, cid);
    wire::put16(h.data(), 10, ttag);
    wire::put32(h.data(), 12, off);
    wire::put32(h.data(), 16, len);
    seal(h, 24);
    peer.write(h);
  }
  // Submit and send one command; returns the capsule as the controller sees it.
  nvme::Sqe issue(const Command &c, std::vector<uint8_t> *data = nullptr) {
    assert_true(q->submit(c));
    ch->send();
    return read_capsule(data);
  }
  // Complete `cid` with success and check the host reports success.
  void complete_ok(uint16_t cid) {
    send_resp(cid, 0);
    auto done = wait(1);
    assert_int_equal(done.size(), 1);
    assert_true(done[0].ok());
  }
  // Drive the queue until `n` completions are there (or it fails).
  std::vector<Completion> wait(size_t n) {
    std::vector<Completion> out;
    for (int i = 0; i < 200 && out.size() < n; i++) {
      ch->send();
      ch->wait(10);
      for (auto &c : q->completions())
        out.push_back(c);
      q->completions().clear();
    }
    return out;
  }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++)
    v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

Command read_cmd(std::vector<uint8_t> &buf, void *cookie) {
  Command c;
  c.sqe = nvme::make_rw(nvme::kCmdRead, 1, 0, static_cast<uint32_t>(buf.size() / 512));
  c.data = buf.data();
  c.len = static_cast<uint32_t>(buf.size());
  c.dir = DataDir::FromController;
  c.cookie = cookie;
  return c;
}

Command write_cmd(std::vector<uint8_t> &buf, void *cookie) {
  Command c = read_cmd(buf, cookie);
  c.sqe = nvme::make_rw(nvme::kCmdWrite, 1, 0, static_cast<uint32_t>(buf.size() / 512));
  c.dir = DataDir::ToController;
  return c;
}

} // namespace

static void read_with_success_flag(pdu::Digests dg) {
  Fixture f(dg);
  std::vector<uint8_t> buf(8192, 0);
  int cookie;
  nvme::Sqe sqe = f.issue(read_cmd(buf, &cookie));
  assert_int_equal(sqe.opcode(), nvme::kCmdRead);
  assert_int_equal(sqe.sgl_type(), nvme::kSglTransportDataBlock);
  assert_int_equal(sqe.sgl_len(), 8192);
  assert_int_equal(sqe.b[1] & 0xc0, 0x40); // PSDT = SGL
  auto data = pattern(8192, 3);
  std::vector<uint8_t> a(data.begin(), data.begin() + 3000), b(data.begin() + 3000, data.end());
  f.send_c2h(sqe.cid(), 0, a, 0);
  f.send_c2h(sqe.cid(), 3000, b, pdu::kFlagLast | pdu::kFlagSuccess);
  auto done = f.wait(1);
  assert_int_equal(done.size(), 1);
  assert_ptr_equal(done[0].cookie, &cookie);
  assert_true(done[0].ok());
  assert_memory_equal(buf.data(), data.data(), data.size());
}
static void read_success_plain(void **) { read_with_success_flag({false, false}); }
static void read_success_digests(void **) { read_with_success_flag({true, true}); }

static void read_then_capsule_resp(void **) {
  Fixture f({false, false});
  std::vector<uint8_t> buf(4096);
  int cookie;
  nvme::Sqe sqe = f.issue(read_cmd(buf, &cookie));
  f.send_c2h(sqe.cid(), 0, pattern(4096, 9), pdu::kFlagLast);
  f.complete_ok(sqe.cid());
  assert_memory_equal(buf.data(), pattern(4096, 9).data(), buf.size());
}

static void write_in_capsule(void **) {
  Fixture f({true, true});
  auto buf = pattern(4096, 1);
  int cookie;
  std::vector<uint8_t> got;
  nvme::Sqe sqe = f.issue(write_cmd(buf, &cookie), &got);
  assert_int_equal(sqe.sgl_type(), nvme::kSglDataBlockOffset);
  assert_int_equal(sqe.sgl_len(), 4096);
  assert_true(got == buf);
  f.complete_ok(sqe.cid());
}

static void write_r2t_split_by_maxh2cdata(void **) {
  Fixture f({true, true}, 8192, 8, 0);
  auto buf = pattern(20480, 5);
  int cookie;
  nvme::Sqe sqe = f.issue(write_cmd(buf, &cookie));
  assert_int_equal(sqe.sgl_type(), nvme::kSglTransportDataBlock);
  f.send_r2t(sqe.cid(), 0x77, 0, 20480);
  f.ch->wait(1000); // takes the R2T and sends the H2CData it asks for
  std::vector<uint8_t> got;
  uint32_t expect_off = 0;
  for (int i = 0; i < 3; i++) {
    auto h = f.peer.read(28);
    pdu::Common c = pdu::decode_common(h.data());
    assert_int_equal(c.type, static_cast<int>(pdu::Type::H2CData));
    assert_true(pdu::header_digest_ok(h.data(), 24));
    pdu::DataHdr d = pdu::decode_data_hdr(h.data());
    assert_int_equal(d.ttag, 0x77);
    assert_int_equal(d.datao, expect_off);
    assert_true(d.datal <= 8192);
    assert_int_equal(bool(c.flags & pdu::kFlagLast), i == 2);
    auto data = f.peer.read(d.datal);
    auto dd = f.peer.read(4);
    assert_int_equal(wire::get32(dd.data(), 0), crc32c(data.data(), data.size()));
    got.insert(got.end(), data.begin(), data.end());
    expect_off += d.datal;
  }
  assert_true(got == buf);
  f.complete_ok(sqe.cid());
}

static void data_digest_mismatch_fails_io_and_queue(void **) {
  Fixture f({false, true});
  std::vector<uint8_t> buf(4096), buf2(4096);
  int c1, c2;
  assert_true(f.q->submit(read_cmd(buf, &c1)));
  assert_true(f.q->submit(read_cmd(buf2, &c2)));
  f.ch->send();
  nvme::Sqe sqe = f.read_capsule();
  f.read_capsule();
  f.send_c2h(sqe.cid(), 0, pattern(4096, 2), pdu::kFlagLast | pdu::kFlagSuccess, true);
  auto done = f.wait(2);
  assert_int_equal(done.size(), 2);
  assert_ptr_equal(done[0].cookie, &c1);
  assert_int_equal(done[0].status, nvme::kStatusDataXferError);
  assert_false(done[0].aborted);
  assert_ptr_equal(done[1].cookie, &c2);
  assert_true(done[1].aborted);
  assert_true(f.q->failed());
  assert_non_null(strstr(f.q->failure().c_str(), "data digest"));
  assert_false(f.q->submit(read_cmd(buf, &c1)));
}

static void expect_termreq(Fixture &f, pdu::Fes fes) {
  auto h = f.peer.read(24);
  pdu::Common c = pdu::decode_common(h.data());
  assert_int_equal(c.type, static_cast<int>(pdu::Type::H2CTermReq));
  assert_int_equal(pdu::decode_termreq(h.data()).fes, static_cast<int>(fes));
}

static void header_digest_mismatch_sends_termreq(void **) {
  Fixture f({true, false});
  std::vector<uint8_t> buf(4096);
  int c1;
  nvme::Sqe sqe = f.issue(read_cmd(buf, &c1));
  auto h = f.header(pdu::Type::CapsuleResp, 0, 24, 0, 28);
  nvme::Cqe cqe;
  cqe.cid = sqe.cid();
  nvme::encode_cqe(h.data() + 8, cqe);
  f.seal(h, 24);
  h[25] ^= 0xff; // corrupt the digest
  f.peer.write(h);
  auto done = f.wait(1);
  assert_int_equal(done.size(), 1);
  assert_true(done[0].aborted);
  assert_true(f.q->failed());
  expect_termreq(f, pdu::Fes::HeaderDigestError);
}

static void hostile_pdus(void **) {
  struct Case {
    const char *name;
    pdu::Fes fes;
  };
  // Each case: one read and one write in flight, then one bad PDU.
  for (int k = 0; k < 7; k++) {
    Fixture f({false, false}, 1 << 20, 8, 0);
    std::vector<uint8_t> rbuf(4096), wbuf = pattern(4096, 1);
    int c1, c2;
    assert_true(f.q->submit(read_cmd(rbuf, &c1)));
    assert_true(f.q->submit(write_cmd(wbuf, &c2)));
    f.ch->send();
    nvme::Sqe rd = f.read_capsule(), wr = f.read_capsule();
    pdu::Fes want = pdu::Fes::InvalidHeaderField;
    switch (k) {
    case 0: f.send_resp(0x0123, 0); break;                                   // cid not in flight
    case 1: f.send_c2h(wr.cid(), 0, pattern(512, 1), pdu::kFlagLast); break; // C2HData for a write
    case 2:
      f.send_c2h(rd.cid(), 4000, pattern(512, 1), 0);
      want = pdu::Fes::DataOutOfRange;
      break;
    case 3: f.send_r2t(rd.cid(), 1, 0, 512); break; // R2T for a read
    case 4:
      f.send_r2t(wr.cid(), 1, 2048, 4096);
      want = pdu::Fes::DataOutOfRange;
      break;
    case 5: // both R2Ts arrive in one read, before any H2CData is generated
      f.send_r2t(wr.cid(), 1, 0, 1024);
      f.send_r2t(wr.cid(), 2, 1024, 1024);
      want = pdu::Fes::R2TLimitExceeded;
      break;
    case 6: { // plen smaller than the header
      auto h = f.header(pdu::Type::C2HData, 0, 24, 24, 16);
      f.peer.write(h);
      break;
    }
    }
    auto done = f.wait(2);
    assert_int_equal(done.size(), 2);
    assert_true(done[0].aborted && done[1].aborted);
    assert_int_equal(completion_errno(done[0]), ENOLINK);
    assert_true(f.q->failed());
    expect_termreq(f, want);
  }
}

static void controller_termreq_and_close(void **) {
  {
    Fixture f({false, false});
    std::vector<uint8_t> buf(512);
    int c1;
    f.issue(read_cmd(buf, &c1));
    uint8_t t[pdu::kTermMaxPlen];
    size_t n = pdu::encode_termreq(t, pdu::Type::C2HTermReq, {2, 0}, nullptr, 0);
    f.peer.write(t, n);
    auto done = f.wait(1);
    assert_int_equal(done.size(), 1);
    assert_true(done[0].aborted);
    assert_non_null(strstr(f.q->failure().c_str(), "PDU sequence error"));
  }
  {
    Fixture f({false, false});
    std::vector<uint8_t> buf(512);
    int c1;
    f.issue(read_cmd(buf, &c1));
    shutdown(f.peer.fd, SHUT_RDWR);
    auto done = f.wait(1);
    assert_int_equal(done.size(), 1);
    assert_true(done[0].aborted);
    assert_non_null(strstr(f.q->failure().c_str(), "closed by the controller"));
  }
}

static void status_errors_and_short_success(void **) {
  Fixture f({false, false});
  std::vector<uint8_t> buf(4096);
  int c1, c2;
  assert_true(f.q->submit(read_cmd(buf, &c1)));
  assert_true(f.q->submit(read_cmd(buf, &c2)));
  f.ch->send();
  nvme::Sqe a = f.read_capsule(), b = f.read_capsule();
  f.send_resp(a.cid(), nvme::kStatusLbaOutOfRange);
  f.send_c2h(b.cid(), 0, pattern(1024, 1), pdu::kFlagLast | pdu::kFlagSuccess); // 1 KiB of 4
  auto done = f.wait(2);
  assert_int_equal(done.size(), 2);
  assert_int_equal(done[0].status, nvme::kStatusLbaOutOfRange);
  assert_int_equal(completion_errno(done[0]), ENOSPC);
  assert_int_equal(done[1].status, nvme::kStatusDataXferError);
  assert_int_equal(completion_errno(done[1]), EIO);
  assert_false(f.q->failed());
}

static void busy_and_stale_cid(void **) {
  Fixture f({false, false}, 1 << 20, 2);
  std::vector<uint8_t> buf(512);
  int c;
  assert_true(f.q->submit(read_cmd(buf, &c)));
  assert_true(f.q->submit(read_cmd(buf, &c)));
  assert_false(f.q->submit(read_cmd(buf, &c))); // all slots busy
  assert_false(f.q->failed());
  f.ch->send();
  nvme::Sqe a = f.read_capsule();
  f.read_capsule();
  f.send_resp(a.cid(), 0);
  f.send_c2h(a.cid(), 0, pattern(512, 1), 0); // data for a cid that already completed
  auto done = f.wait(2);
  // First completes (error: no data), then the stale C2HData fails the queue.
  assert_int_equal(done.size(), 2);
  assert_int_equal(done[0].status, nvme::kStatusDataXferError);
  assert_true(done[1].aborted);
}

// A command the controller never answers: it ends aborted once its timeout
// passed (not before, and not never), the queue with it, and the failure
// names the command and the time.
static void command_deadline(void **) {
  Fixture f({false, false});
  Command c;
  c.sqe = nvme::make_cmd(nvme::kCmdFlush, 1);
  const auto t0 = std::chrono::steady_clock::now();
  const Completion r = f.ch->execute(c, std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - t0;
  assert_true(r.aborted);
  assert_true(took >= std::chrono::milliseconds(300));
  assert_true(took < std::chrono::seconds(10)); // a hang check, not a timing claim
  assert_true(f.q->failed());
  assert_non_null(strstr(f.q->failure().c_str(), "Flush timed out after 300 ms"));
  f.read_capsule(); // it was sent
}

// Socket-free: the queue fed one byte at a time, so every header, padding,
// payload and digest boundary falls between two deliveries, with header and
// data digests and a controller that pads C2HData to an 8-byte pdo.
static void byte_at_a_time(void **) {
  QueueParams p;
  p.qid = 1;
  p.slots = 4;
  p.digests = {true, true};
  p.label = "bytes";
  Queue q(p);
  auto sent = [&q] {
    std::vector<uint8_t> out;
    iovec iov[16];
    while (size_t n = q.tx_iov(iov, 16)) {
      size_t total = 0;
      for (size_t i = 0; i < n; i++) {
        auto *b = static_cast<uint8_t *>(iov[i].iov_base);
        out.insert(out.end(), b, b + iov[i].iov_len);
        total += iov[i].iov_len;
      }
      q.on_sent(total);
    }
    return out;
  };
  auto feed = [&q](const std::vector<uint8_t> &bytes) {
    for (uint8_t b : bytes) {
      iovec iov[2];
      q.rx_iov(iov);
      *static_cast<uint8_t *>(iov[0].iov_base) = b;
      q.on_received(1);
    }
  };
  q.start();
  assert_int_equal(sent().size(), pdu::kIcLen);
  pdu::IcResp r;
  r.digests = {true, true};
  r.maxh2cdata = 4096;
  std::vector<uint8_t> ic(pdu::kIcLen);
  pdu::encode_icresp(ic.data(), r);
  feed(ic);
  assert_true(q.ready());

  std::vector<uint8_t> rbuf(6000, 0), wbuf = pattern(5000, 4);
  int rc, wc;
  assert_true(q.submit(read_cmd(rbuf, &rc)));
  assert_true(q.submit(write_cmd(wbuf, &wc)));
  auto capsules = sent();
  assert_int_equal(capsules.size(), 2 * (pdu::kCmdHlen + 4)); // no in-capsule data: limit 0
  const uint16_t rcid = wire::get16(capsules.data(), 8 + 2), wcid = wire::get16(capsules.data(), 76 + 8 + 2);

  // C2HData in two PDUs, each with 4 bytes of padding (pdo 32 > 24 + 4).
  const auto data = pattern(6000, 11);
  std::vector<uint8_t> stream;
  for (uint32_t off : {0u, 2500u}) {
    const uint32_t len = off ? 3500 : 2500;
    std::vector<uint8_t> h(32, 0);
    pdu::encode_data_hdr(h.data(), pdu::Type::C2HData,
                         static_cast<uint8_t>(pdu::kFlagHdgst | pdu::kFlagDdgst | (off ? pdu::kFlagLast | pdu::kFlagSuccess : 0)),
                         32, 32 + len + 4, {rcid, 0, off, len});
    pdu::put_header_digest(h.data(), 24);
    stream.insert(stream.end(), h.begin(), h.end());
    stream.insert(stream.end(), data.begin() + off, data.begin() + off + len);
    uint8_t d[4];
    wire::put32(d, 0, crc32c(data.data() + off, len));
    stream.insert(stream.end(), d, d + 4);
  }
  // An R2T for the whole write: answered with two H2CData PDUs (maxh2cdata 4096).
  std::vector<uint8_t> r2t(28, 0);
  pdu::encode_r2t(r2t.data(), pdu::kFlagHdgst, 28, {wcid, 9, 0, 5000});
  pdu::put_header_digest(r2t.data(), 24);
  stream.insert(stream.end(), r2t.begin(), r2t.end());
  feed(stream);
  assert_int_equal(q.completions().size(), 1);
  assert_ptr_equal(q.completions()[0].cookie, &rc);
  assert_true(q.completions()[0].ok());
  assert_memory_equal(rbuf.data(), data.data(), data.size());
  q.completions().clear();

  auto h2c = sent();
  std::vector<uint8_t> got;
  for (size_t at = 0; at < h2c.size();) {
    const pdu::Common c = pdu::decode_common(h2c.data() + at);
    assert_int_equal(c.type, static_cast<int>(pdu::Type::H2CData));
    assert_true(pdu::header_digest_ok(h2c.data() + at, 24));
    const uint32_t len = c.plen - c.pdo - 4;
    assert_int_equal(wire::get32(h2c.data(), at + c.pdo + len), crc32c(h2c.data() + at + c.pdo, len));
    got.insert(got.end(), h2c.begin() + static_cast<long>(at + c.pdo), h2c.begin() + static_cast<long>(at + c.pdo + len));
    at += c.plen;
  }
  assert_true(got == wbuf);
  std::vector<uint8_t> resp(28, 0);
  pdu::encode_common(resp.data(), pdu::Type::CapsuleResp, pdu::kFlagHdgst, 24, 0, 28);
  nvme::Cqe cqe;
  cqe.cid = wcid;
  nvme::encode_cqe(resp.data() + 8, cqe);
  pdu::put_header_digest(resp.data(), 24);
  feed(resp);
  assert_int_equal(q.completions().size(), 1);
  assert_ptr_equal(q.completions()[0].cookie, &wc);
  assert_true(q.completions()[0].ok());
  assert_false(q.failed());
  assert_int_equal(q.inflight(), 0);
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(read_success_plain),
      cmocka_unit_test(read_success_digests),
      cmocka_unit_test(read_then_capsule_resp),
      cmocka_unit_test(write_in_capsule),
      cmocka_unit_test(write_r2t_split_by_maxh2cdata),
      cmocka_unit_test(data_digest_mismatch_fails_io_and_queue),
      cmocka_unit_test(header_digest_mismatch_sends_termreq),
      cmocka_unit_test(hostile_pdus),
      cmocka_unit_test(controller_termreq_and_close),
      cmocka_unit_test(status_errors_and_short_success),
      cmocka_unit_test(busy_and_stale_cid),
      cmocka_unit_test(byte_at_a_time),
      cmocka_unit_test(command_deadline),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
