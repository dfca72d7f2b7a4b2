// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target: bytes from a hostile host into one mpnvme-target
// connection. The first input byte picks the starting point: bit 0 clear, a
// raw socket; bit 0 set, an I/O queue already connected to a live controller
// (bit 1: with header and data digests negotiated), so that capsules,
// in-capsule data, R2T/H2CData and digests are all reachable. Seeds with
// valid sessions come from seeds.py (one with DH-HMAC-CHAP messages for a
// host that must authenticate). Whatever the
// input, the connection must neither crash nor grow without bound.
#include <cstring>
#include <memory>
#include <vector>

#include "lib/base/log.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/transport/connection.hpp"

using namespace mpnvme;
using namespace mpnvme::target;

namespace {

// Sends go nowhere; file I/O does not occur (RAM and null namespaces only).
class SinkIo : public ConnIo {
public:
  void want_send(Connection &) override {}
  void submit_file(Connection &, uint16_t, FileOp, int, uint8_t *, uint64_t, uint64_t) override { __builtin_trap(); }
};

Registry &registry() {
  static std::unique_ptr<Registry> reg = [] {
    set_log_level("off");
    TargetConfig c;
    SubsystemConfig s;
    s.nqn = "nqn.2026-11.io.mpnvme:fuzz";
    s.namespaces.push_back(parse_namespace_spec("ram:1m", 1, "fuzz"));
    s.namespaces.push_back(parse_namespace_spec("null:1m,lba=4096", 2, "fuzz"));
    c.subsystems.push_back(s);
    PortConfig p;
    p.addr = {"127.0.0.1", "4420", false};
    c.ports.push_back(p);
    c.maxh2cdata = 8192;
    c.mdts = 4;
    // A host that must authenticate (DH-HMAC-CHAP): seeds.py's auth session.
    dhchap::ControllerAuthConfig a;
    a.host_key = dhchap::parse_secret("DHHC-1:00:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:", "fuzz");
    a.ctrl_key = a.host_key;
    a.groups = {dhchap::DhGroup::Null, dhchap::DhGroup::Ffdhe2048};
    c.host_auth["nqn.2026-12.io.mpnvme:fuzz-auth"] = a;
    finalize(c);
    return std::make_unique<Registry>(c);
  }();
  return *reg;
}

void drain(Connection &c) {
  iovec iov[256];
  while (c.has_pending_send()) {
    size_t n = c.build_send(iov, 256), bytes = 0;
    for (size_t i = 0; i < n; i++)
      bytes += iov[i].iov_len;
    c.on_sent(bytes);
  }
}

void feed(Connection &c, const uint8_t *data, size_t size, size_t chunk) {
  while (size && !c.closing()) {
    iovec in[2];
    const size_t k = c.rx_iov(in);
    size_t n = 0;
    for (size_t i = 0; i < k && n < std::min(size, chunk); i++) {
      const size_t part = std::min(in[i].iov_len, std::min(size, chunk) - n);
      std::memcpy(in[i].iov_base, data + n, part);
      n += part;
      if (part < in[i].iov_len) break; // a short receive fills the first iovec only partly
    }
    c.on_received(n);
    drain(c);
    data += n;
    size -= n;
  }
}

std::vector<uint8_t> capsule(const nvme::Sqe &sqe, const uint8_t *data, uint32_t len) {
  std::vector<uint8_t> p(pdu::kCmdHlen + len);
  pdu::encode_common(p.data(), pdu::Type::CapsuleCmd, 0, pdu::kCmdHlen, len ? pdu::kCmdHlen : 0, static_cast<uint32_t>(p.size()));
  nvme::Sqe s = sqe;
  if (len) s.set_sgl(0, len, nvme::kSglDataBlockOffset);
  std::memcpy(p.data() + 8, s.b.data(), 64);
  if (len) std::memcpy(p.data() + pdu::kCmdHlen, data, len);
  return p;
}

std::vector<uint8_t> icreq(bool digests = false) {
  std::vector<uint8_t> b(pdu::kIcLen);
  pdu::IcReq r;
  r.digests = {digests, digests};
  pdu::encode_icreq(b.data(), r);
  return b;
}

std::vector<uint8_t> connect_pdu(uint16_t qid, uint16_t cntlid) {
  uint8_t data[nvme::kConnectDataLen];
  nvme::ConnectData d;
  d.cntlid = cntlid;
  d.subnqn = "nqn.2026-11.io.mpnvme:fuzz";
  d.hostnqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001";
  nvme::encode_connect_data(data, d);
  return capsule(nvme::make_connect(qid, 31, nvme::kConnectDisableSqFlow, 0), data, sizeof data);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  Registry &reg = registry();
  PortState &port = *reg.ports()[0];
  SinkIo io;
  const uint8_t mode = data[0], chunk = static_cast<uint8_t>(data[1] | 1);
  data += 2;
  size -= 2;
  if (mode & 1) {
    // A live controller (admin queue connected and enabled, one I/O queue
    // granted), then the fuzz input on an I/O queue of it.
    Connection admin(reg, io, -1, port, "fuzz-admin");
    std::vector<uint8_t> s = icreq(), c = connect_pdu(0, nvme::kDynamicCntlid);
    s.insert(s.end(), c.begin(), c.end());
    for (const nvme::Sqe &sqe : {nvme::make_property_set(nvme::kRegCc, nvme::kCcDefault | nvme::kCcEnable, false),
                                 nvme::make_set_features(nvme::kFeatNumQueues, 0)}) {
      auto p = capsule(sqe, nullptr, 0);
      s.insert(s.end(), p.begin(), p.end());
    }
    feed(admin, s.data(), s.size(), s.size());
    Connection ioq(reg, io, -1, port, "fuzz-io");
    const bool digests = mode & 2;
    std::vector<uint8_t> q = icreq(digests);
    feed(ioq, q.data(), q.size(), q.size());
    if (!digests) { // with digests the input carries its own Connect
      std::vector<uint8_t> qc = connect_pdu(1, 1);
      feed(ioq, qc.data(), qc.size(), qc.size());
    }
    feed(ioq, data, size, chunk);
    ioq.tick(std::chrono::steady_clock::now());
  } else {
    Connection conn(reg, io, -1, port, "fuzz");
    feed(conn, data, size, chunk);
    conn.tick(std::chrono::steady_clock::now());
  }
  return 0;
}
