// SPDX-License-Identifier: GPL-2.0-only
#include "lib/wire/nvme.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include "lib/wire/wire.hpp"

namespace mpnvme::nvme {
using namespace wire;

uint16_t Sqe::cid() const { return get16(b.data(), 2); }
void Sqe::set_cid(uint16_t cid) { put16(b.data(), 2, cid); }
uint32_t Sqe::nsid() const { return get32(b.data(), 4); }
uint32_t Sqe::cdw(int n) const { return get32(b.data(), static_cast<size_t>(n) * 4); }
void Sqe::set_cdw(int n, uint32_t v) { put32(b.data(), static_cast<size_t>(n) * 4, v); }
void Sqe::set_sgl(uint64_t addr, uint32_t len, uint8_t type) {
  put64(b.data(), 24, addr);
  put32(b.data(), 32, len);
  b[36] = b[37] = b[38] = 0;
  b[39] = type;
}
uint32_t Sqe::sgl_len() const { return get32(b.data(), 32); }
uint8_t Sqe::sgl_type() const { return b[39]; }
uint64_t Sqe::sgl_addr() const { return get64(b.data(), 24); }

Sqe make_cmd(uint8_t opcode, uint32_t nsid) {
  Sqe s;
  s.b[0] = opcode;
  s.b[1] = kPsdtSgl;
  put32(s.b.data(), 4, nsid);
  s.set_sgl(0, 0, kSglTransportDataBlock);
  return s;
}

Sqe make_rw(uint8_t opcode, uint32_t nsid, uint64_t slba, uint32_t nlb) {
  Sqe s = make_cmd(opcode, nsid);
  put64(s.b.data(), 40, slba);
  s.set_cdw(12, (nlb - 1) & 0xffff);
  return s;
}

Sqe make_identify(uint8_t cns, uint32_t nsid) {
  Sqe s = make_cmd(kAdminIdentify, nsid);
  s.set_cdw(10, cns);
  return s;
}

Sqe make_set_features(uint8_t fid, uint32_t cdw11) {
  Sqe s = make_cmd(kAdminSetFeatures, 0);
  s.set_cdw(10, fid);
  s.set_cdw(11, cdw11);
  return s;
}

Sqe make_get_log_page(uint8_t lid, uint32_t bytes) {
  Sqe s = make_cmd(kAdminGetLogPage, 0xffffffff);
  const uint32_t numd = bytes / 4 - 1; // 0's based dwords
  s.set_cdw(10, lid | (numd & 0xffff) << 16);
  s.set_cdw(11, numd >> 16);
  return s;
}

static Sqe make_fabrics(uint8_t fctype) {
  Sqe s;
  s.b[0] = kFabricsOpcode;
  s.b[1] = kPsdtSgl;
  s.b[4] = fctype;
  s.set_sgl(0, 0, kSglTransportDataBlock);
  return s;
}

Sqe make_property_get(uint32_t offset, bool eight_bytes) {
  Sqe s = make_fabrics(kFctPropertyGet);
  s.b[40] = eight_bytes ? 1 : 0;
  put32(s.b.data(), 44, offset);
  return s;
}

Sqe make_property_set(uint32_t offset, uint64_t value, bool eight_bytes) {
  Sqe s = make_fabrics(kFctPropertySet);
  s.b[40] = eight_bytes ? 1 : 0;
  put32(s.b.data(), 44, offset);
  put64(s.b.data(), 48, value);
  return s;
}

Sqe make_connect(uint16_t qid, uint16_t sqsize_0based, uint8_t cattr, uint32_t kato_ms) {
  Sqe s = make_fabrics(kFctConnect);
  put16(s.b.data(), 40, 0); // recfmt
  put16(s.b.data(), 42, qid);
  put16(s.b.data(), 44, sqsize_0based);
  s.b[46] = cattr;
  put32(s.b.data(), 48, kato_ms);
  return s;
}

Sqe make_disconnect() { return make_fabrics(kFctDisconnect); }

// Bytes 40..43: reserved, SPSP0, SPSP1, SECP; 44..47: TL or AL.
static Sqe make_auth(uint8_t fctype, uint8_t secp, uint8_t spsp0, uint8_t spsp1, uint32_t len) {
  Sqe s = make_fabrics(fctype);
  s.b[41] = spsp0;
  s.b[42] = spsp1;
  s.b[43] = secp;
  put32(s.b.data(), 44, len);
  return s;
}

Sqe make_auth_send(uint8_t secp, uint8_t spsp0, uint8_t spsp1, uint32_t tl) {
  return make_auth(kFctAuthSend, secp, spsp0, spsp1, tl);
}

Sqe make_auth_receive(uint8_t secp, uint8_t spsp0, uint8_t spsp1, uint32_t al) {
  return make_auth(kFctAuthReceive, secp, spsp0, spsp1, al);
}

static void put_str(uint8_t *dst, size_t cap, const std::string &s) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

static std::string get_str(const uint8_t *src, size_t cap) {
  size_t n = strnlen(reinterpret_cast<const char *>(src), cap);
  return std::string(reinterpret_cast<const char *>(src), n);
}

void encode_connect_data(uint8_t out[kConnectDataLen], const ConnectData &d) {
  std::memset(out, 0, kConnectDataLen);
  std::memcpy(out, d.hostid.data(), 16);
  put16(out, 16, d.cntlid);
  put_str(out + 256, 256, d.subnqn);
  put_str(out + 512, 256, d.hostnqn);
}

ConnectData decode_connect_data(const uint8_t in[kConnectDataLen]) {
  ConnectData d;
  std::memcpy(d.hostid.data(), in, 16);
  d.cntlid = get16(in, 16);
  d.subnqn = get_str(in + 256, 256);
  d.hostnqn = get_str(in + 512, 256);
  return d;
}

Cqe decode_cqe(const uint8_t *p) {
  Cqe c;
  c.dw0 = get32(p, 0);
  c.dw1 = get32(p, 4);
  c.sqhd = get16(p, 8);
  c.sqid = get16(p, 10);
  c.cid = get16(p, 12);
  c.status = static_cast<uint16_t>(get16(p, 14) >> 1);
  return c;
}

void encode_cqe(uint8_t *p, const Cqe &c) {
  put32(p, 0, c.dw0);
  put32(p, 4, c.dw1);
  put16(p, 8, c.sqhd);
  put16(p, 10, c.sqid);
  put16(p, 12, c.cid);
  put16(p, 14, static_cast<uint16_t>(c.status << 1));
}

// Every generic status the specification defines (NVMe 2.0 figure 100).
static const char *generic_sc(uint8_t sc) {
  switch (sc) {
  case NVME_SC_SUCCESS: return "Successful Completion";
  case NVME_SC_INVALID_OPCODE: return "Invalid Command Opcode";
  case NVME_SC_INVALID_FIELD: return "Invalid Field in Command";
  case NVME_SC_CMDID_CONFLICT: return "Command ID Conflict";
  case NVME_SC_DATA_XFER_ERROR: return "Data Transfer Error";
  case NVME_SC_POWER_LOSS: return "Commands Aborted due to Power Loss Notification";
  case NVME_SC_INTERNAL: return "Internal Error";
  case NVME_SC_ABORT_REQ: return "Command Abort Requested";
  case NVME_SC_ABORT_QUEUE: return "Command Aborted due to SQ Deletion";
  case NVME_SC_FUSED_FAIL: return "Command Aborted due to Failed Fused Command";
  case NVME_SC_FUSED_MISSING: return "Command Aborted due to Missing Fused Command";
  case NVME_SC_INVALID_NS: return "Invalid Namespace or Format";
  case NVME_SC_CMD_SEQ_ERROR: return "Command Sequence Error";
  case NVME_SC_SGL_INVALID_LAST: return "Invalid SGL Segment Descriptor";
  case NVME_SC_SGL_INVALID_COUNT: return "Invalid Number of SGL Descriptors";
  case NVME_SC_SGL_INVALID_DATA: return "Data SGL Length Invalid";
  case NVME_SC_SGL_INVALID_METADATA: return "Metadata SGL Length Invalid";
  case NVME_SC_SGL_INVALID_TYPE: return "SGL Descriptor Type Invalid";
  case NVME_SC_CMB_INVALID_USE: return "Invalid Use of Controller Memory Buffer";
  case NVME_SC_PRP_INVALID_OFFSET: return "PRP Offset Invalid";
  case NVME_SC_AWU_EXCEEDED: return "Atomic Write Unit Exceeded";
  case NVME_SC_OP_DENIED: return "Operation Denied";
  case NVME_SC_SGL_INVALID_OFFSET: return "SGL Offset Invalid";
  case NVME_SC_HOSTID_FORMAT: return "Host Identifier Inconsistent Format";
  case NVME_SC_KAT_EXPIRED: return "Keep Alive Timer Expired";
  case NVME_SC_KAT_INVALID: return "Keep Alive Timeout Invalid";
  case NVME_SC_CMD_ABORTED_PREMEPT: return "Command Aborted due to Preempt and Abort";
  case NVME_SC_SANITIZE_FAILED: return "Sanitize Failed";
  case NVME_SC_SANITIZE_IN_PROGRESS: return "Sanitize In Progress";
  case NVME_SC_SGL_INVALID_GRANULARITY: return "SGL Data Block Granularity Invalid";
  case NVME_SC_CMD_IN_CMBQ_NOT_SUPP: return "Command Not Supported for Queue in CMB";
  case NVME_SC_NS_WRITE_PROTECTED: return "Namespace is Write Protected";
  case NVME_SC_CMD_INTERRUPTED: return "Command Interrupted";
  case NVME_SC_TRAN_TPORT_ERROR: return "Transient Transport Error";
  case NVME_SC_PROHIBITED_BY_CMD_AND_FEAT: return "Command Prohibited by Command and Feature Lockdown";
  case NVME_SC_ADMIN_CMD_MEDIA_NOT_READY: return "Admin Command Media Not Ready";
  case NVME_SC_LBA_RANGE: return "LBA Out of Range";
  case NVME_SC_CAP_EXCEEDED: return "Capacity Exceeded";
  case NVME_SC_NS_NOT_READY: return "Namespace Not Ready";
  case NVME_SC_RESERVATION_CONFLICT: return "Reservation Conflict";
  case NVME_SC_FORMAT_IN_PROGRESS: return "Format In Progress";
  }
  return "unknown generic status";
}

// The command specific statuses of the commands this project sends or serves.
static const char *specific_sc(uint8_t sc) {
  switch (sc) {
  case NVME_SC_CQ_INVALID: return "Completion Queue Invalid";
  case NVME_SC_QID_INVALID: return "Invalid Queue Identifier";
  case NVME_SC_QUEUE_SIZE: return "Invalid Queue Size";
  case NVME_SC_ABORT_LIMIT: return "Abort Command Limit Exceeded";
  case NVME_SC_ASYNC_LIMIT: return "Asynchronous Event Request Limit Exceeded";
  case NVME_SC_INVALID_LOG_PAGE: return "Invalid Log Page";
  case NVME_SC_FEATURE_NOT_SAVEABLE: return "Feature Identifier Not Saveable";
  case NVME_SC_FEATURE_NOT_CHANGEABLE: return "Feature Not Changeable";
  case NVME_SC_FEATURE_NOT_PER_NS: return "Feature Not Namespace Specific";
  case NVME_SC_IOCS_NOT_SUPPORTED: return "I/O Command Set Not Supported";
  case NVME_SC_IOCS_NOT_ENABLED: return "I/O Command Set Not Enabled";
  case NVME_SC_IOCS_COMBINATION_REJECTED: return "I/O Command Set Combination Rejected";
  case NVME_SC_INVALID_IOCS: return "Invalid I/O Command Set";
  case NVME_SC_CONNECT_FORMAT: return "Connect Incompatible Format"; // also NVM: Conflicting Attributes
  case NVME_SC_CONNECT_CTRL_BUSY: return "Connect Controller Busy";
  case NVME_SC_CONNECT_INVALID_PARAM: return "Connect Invalid Parameters";
  case NVME_SC_CONNECT_RESTART_DISC: return "Connect Restart Discovery";
  case NVME_SC_CONNECT_INVALID_HOST: return "Connect Invalid Host";
  case NVME_SC_DISCONNECT_INVALID_QTYPE: return "Invalid Queue Type";
  case NVME_SC_DISCOVERY_RESTART: return "Discover Restart";
  case NVME_SC_AUTH_REQUIRED: return "Authentication Required";
  }
  return "unknown command specific status";
}

static const char *media_sc(uint8_t sc) {
  switch (sc) {
  case NVME_SC_WRITE_FAULT: return "Write Fault";
  case NVME_SC_READ_ERROR: return "Unrecovered Read Error";
  case NVME_SC_GUARD_CHECK: return "End-to-end Guard Check Error";
  case NVME_SC_APPTAG_CHECK: return "End-to-end Application Tag Check Error";
  case NVME_SC_REFTAG_CHECK: return "End-to-end Reference Tag Check Error";
  case NVME_SC_COMPARE_FAILED: return "Compare Failure";
  case NVME_SC_ACCESS_DENIED: return "Access Denied";
  case NVME_SC_UNWRITTEN_BLOCK: return "Deallocated or Unwritten Logical Block";
  }
  return "unknown media status";
}

static const char *path_sc(uint8_t sc) {
  switch (sc) {
  case NVME_SC_ANA_INTERNAL_PATH_ERROR: return "Internal Path Error";
  case NVME_SC_ANA_PERSISTENT_LOSS: return "Asymmetric Access Persistent Loss";
  case NVME_SC_ANA_INACCESSIBLE: return "Asymmetric Access Inaccessible";
  case NVME_SC_ANA_TRANSITION: return "Asymmetric Access Transition";
  case NVME_SC_CTRL_PATH_ERROR: return "Controller Pathing Error";
  case NVME_SC_HOST_PATH_ERROR: return "Host Pathing Error";
  case NVME_SC_CMD_ABORTED_BY_HOST: return "Command Aborted By Host";
  }
  return "unknown path status";
}

std::string status_string(uint16_t status) {
  const uint8_t sct = status_sct(status), sc = status_sc(status);
  const char *text = "unknown status type";
  switch (sct) {
  case 0: text = generic_sc(sc); break;
  case 1: text = specific_sc(sc); break;
  case 2: text = media_sc(sc); break;
  case 3: text = path_sc(sc); break;
  }
  return fmt::format("{} (sct {:#x} sc {:#04x}{})", text, sct, sc, status_dnr(status) ? ", DNR" : "");
}

const char *opcode_name(uint8_t opcode, bool admin) {
  if (opcode == kFabricsOpcode) return "Fabrics";
  if (admin) {
    switch (opcode) {
    case kAdminGetLogPage: return "Get Log Page";
    case kAdminIdentify: return "Identify";
    case kAdminSetFeatures: return "Set Features";
    case kAdminGetFeatures: return "Get Features";
    case kAdminAsyncEvent: return "Async Event Request";
    case kAdminKeepAlive: return "Keep Alive";
    case kAdminAbort: return "Abort";
    }
    return "admin command";
  }
  switch (opcode) {
  case kCmdFlush: return "Flush";
  case kCmdWrite: return "Write";
  case kCmdRead: return "Read";
  case kCmdWriteZeroes: return "Write Zeroes";
  case kCmdDsm: return "Dataset Management";
  case kCmdResvRegister: return "Reservation Register";
  case kCmdResvReport: return "Reservation Report";
  case kCmdResvAcquire: return "Reservation Acquire";
  case kCmdResvRelease: return "Reservation Release";
  }
  return "I/O command";
}

const char *fabrics_name(uint8_t fctype) {
  switch (fctype) {
  case kFctConnect: return "Connect";
  case kFctPropertyGet: return "Property Get";
  case kFctPropertySet: return "Property Set";
  case kFctDisconnect: return "Disconnect";
  case kFctAuthSend: return "Authentication Send";
  case kFctAuthReceive: return "Authentication Receive";
  }
  return "Fabrics command";
}

} // namespace mpnvme::nvme
