// SPDX-License-Identifier: GPL-2.0-only
// NVMe command set pieces the host and target share: opcodes, the 64-byte
// SQE and 16-byte CQE, fabrics commands, controller registers, status codes
// and the Identify fields this project reads.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include <nvme/types.h>

namespace mpnvme::nvme {

// Opcodes, feature ids, log ids, CNS values and registers: libnvme's names,
// kept as typed constants because the wire code stores them in bytes.
// Admin opcodes.
constexpr uint8_t kAdminGetLogPage = nvme_admin_get_log_page;
constexpr uint8_t kAdminIdentify = nvme_admin_identify;
constexpr uint8_t kAdminAbort = nvme_admin_abort_cmd;
constexpr uint8_t kAdminSetFeatures = nvme_admin_set_features;
constexpr uint8_t kAdminGetFeatures = nvme_admin_get_features;
constexpr uint8_t kAdminAsyncEvent = nvme_admin_async_event;
constexpr uint8_t kAdminKeepAlive = nvme_admin_keep_alive;
// NVM opcodes.
constexpr uint8_t kCmdFlush = nvme_cmd_flush;
constexpr uint8_t kCmdWrite = nvme_cmd_write;
constexpr uint8_t kCmdRead = nvme_cmd_read;
constexpr uint8_t kCmdWriteZeroes = nvme_cmd_write_zeroes;
constexpr uint8_t kCmdDsm = nvme_cmd_dsm;
constexpr uint8_t kCmdResvRegister = nvme_cmd_resv_register;
constexpr uint8_t kCmdResvReport = nvme_cmd_resv_report;
constexpr uint8_t kCmdResvAcquire = nvme_cmd_resv_acquire;
constexpr uint8_t kCmdResvRelease = nvme_cmd_resv_release;
// Fabrics.
constexpr uint8_t kFabricsOpcode = nvme_admin_fabrics; // on every queue
constexpr uint8_t kFctPropertySet = nvme_fabrics_type_property_set;
constexpr uint8_t kFctConnect = nvme_fabrics_type_connect;
constexpr uint8_t kFctPropertyGet = nvme_fabrics_type_property_get;
constexpr uint8_t kFctDisconnect = nvme_fabrics_type_disconnect;
constexpr uint8_t kFctAuthSend = nvme_fabrics_type_auth_send;
constexpr uint8_t kFctAuthReceive = nvme_fabrics_type_auth_receive;

// Feature ids.
constexpr uint8_t kFeatArbitration = NVME_FEAT_FID_ARBITRATION;
constexpr uint8_t kFeatPowerMgmt = NVME_FEAT_FID_POWER_MGMT;
constexpr uint8_t kFeatTempThresh = NVME_FEAT_FID_TEMP_THRESH;
constexpr uint8_t kFeatErrRecovery = NVME_FEAT_FID_ERR_RECOVERY;
constexpr uint8_t kFeatVolatileWc = NVME_FEAT_FID_VOLATILE_WC;
constexpr uint8_t kFeatNumQueues = NVME_FEAT_FID_NUM_QUEUES;
constexpr uint8_t kFeatIrqCoalesce = NVME_FEAT_FID_IRQ_COALESCE;
constexpr uint8_t kFeatAsyncEvent = NVME_FEAT_FID_ASYNC_EVENT;
constexpr uint8_t kFeatKeepAlive = NVME_FEAT_FID_KATO;
constexpr uint8_t kFeatHostId = NVME_FEAT_FID_HOST_ID;
// Log pages.
constexpr uint8_t kLogError = NVME_LOG_LID_ERROR;
constexpr uint8_t kLogSmart = NVME_LOG_LID_SMART;
constexpr uint8_t kLogFwSlot = NVME_LOG_LID_FW_SLOT;
constexpr uint8_t kLogChangedNs = NVME_LOG_LID_CHANGED_NS;
constexpr uint8_t kLogCmdEffects = NVME_LOG_LID_CMD_EFFECTS;
constexpr uint8_t kLogAna = NVME_LOG_LID_ANA;
constexpr uint8_t kLogDiscovery = NVME_LOG_LID_DISCOVER;
// The discovery log's trtype of MPTCP in the NVMe-over-MPTCP series
// (NVMF_TRTYPE_MPTCP): reserved in the specification, used provisionally.
constexpr uint8_t kTrtypeMptcp = 4;
// Identify CNS values.
constexpr uint8_t kCnsNamespace = NVME_IDENTIFY_CNS_NS;
constexpr uint8_t kCnsController = NVME_IDENTIFY_CNS_CTRL;
constexpr uint8_t kCnsActiveNsList = NVME_IDENTIFY_CNS_NS_ACTIVE_LIST;
constexpr uint8_t kCnsNsDescList = NVME_IDENTIFY_CNS_NS_DESC_LIST;
constexpr uint8_t kCnsCsiNamespace = NVME_IDENTIFY_CNS_CSI_NS;
constexpr uint8_t kCnsCsiController = NVME_IDENTIFY_CNS_CSI_CTRL;
constexpr uint8_t kCsiNvm = NVME_CSI_NVM;

// Controller registers (property offsets).
constexpr uint32_t kRegCap = NVME_REG_CAP;
constexpr uint32_t kRegVs = NVME_REG_VS;
constexpr uint32_t kRegCc = NVME_REG_CC;
constexpr uint32_t kRegCsts = NVME_REG_CSTS;

// SGL descriptor types (byte 15 of the descriptor).
constexpr uint8_t kSglDataBlockOffset = 0x01;    // in-capsule data
constexpr uint8_t kSglTransportDataBlock = 0x5a; // data moved by C2HData/R2T
constexpr uint8_t kPsdtSgl = 0x40;               // SQE flags: PSDT = 01b

constexpr uint16_t kDynamicCntlid = 0xffff;
constexpr size_t kConnectDataLen = 1024;
constexpr size_t kIdentifyLen = 4096;
constexpr size_t kDsmRangeLen = 16;
// In-capsule data on the admin queue: 8 KiB, as the Linux host and target
// size it (NVME_TCP_ADMIN_CCSZ).
constexpr uint32_t kAdminInlineBytes = 8192;

// Submission queue entry, kept as raw bytes in wire order.
struct Sqe {
  std::array<uint8_t, 64> b{};
  uint8_t opcode() const { return b[0]; }
  uint16_t cid() const;
  void set_cid(uint16_t cid);
  uint32_t nsid() const;
  uint32_t cdw(int n) const; // n = 10..15
  void set_cdw(int n, uint32_t v);
  void set_sgl(uint64_t addr, uint32_t len, uint8_t type);
  uint32_t sgl_len() const;
  uint8_t sgl_type() const;
  uint64_t sgl_addr() const;
  uint8_t fctype() const { return b[4]; }
  // Read, Write, Write Zeroes: the starting LBA and the number of blocks
  // (NLB is 0's based on the wire).
  uint64_t slba() const { return static_cast<uint64_t>(cdw(11)) << 32 | cdw(10); }
  uint32_t nlb() const { return (cdw(12) & 0xffff) + 1u; }
};

Sqe make_cmd(uint8_t opcode, uint32_t nsid);
Sqe make_rw(uint8_t opcode, uint32_t nsid, uint64_t slba, uint32_t nlb);
Sqe make_identify(uint8_t cns, uint32_t nsid);
Sqe make_set_features(uint8_t fid, uint32_t cdw11);
// Get Log Page of `bytes` (a multiple of 4) from offset 0, all namespaces.
Sqe make_get_log_page(uint8_t lid, uint32_t bytes);
Sqe make_property_get(uint32_t offset, bool eight_bytes);
Sqe make_property_set(uint32_t offset, uint64_t value, bool eight_bytes);
Sqe make_connect(uint16_t qid, uint16_t sqsize_0based, uint8_t cattr, uint32_t kato_ms);
Sqe make_disconnect();
// Authentication Send (TL bytes to the controller) and Receive (up to AL
// bytes from it) for a security protocol (DH-HMAC-CHAP: 0xE9, 01h, 01h).
Sqe make_auth_send(uint8_t secp, uint8_t spsp0, uint8_t spsp1, uint32_t tl);
Sqe make_auth_receive(uint8_t secp, uint8_t spsp0, uint8_t spsp1, uint32_t al);
constexpr uint8_t kConnectDisableSqFlow = 0x04; // cattr bit 2

struct ConnectData {
  std::array<uint8_t, 16> hostid{};
  uint16_t cntlid = kDynamicCntlid;
  std::string subnqn;
  std::string hostnqn;
};
void encode_connect_data(uint8_t out[kConnectDataLen], const ConnectData &d);
ConnectData decode_connect_data(const uint8_t in[kConnectDataLen]);

// Completion queue entry.
struct Cqe {
  uint32_t dw0 = 0;
  uint32_t dw1 = 0;
  uint16_t sqhd = 0;
  uint16_t sqid = 0;
  uint16_t cid = 0;
  uint16_t status = 0; // phase bit stripped: bits 14:0 = DNR,M,CRD,SCT,SC
};
Cqe decode_cqe(const uint8_t *p);
void encode_cqe(uint8_t *p, const Cqe &c);

// Status helpers: status = (DNR<<14)|(M<<13)|(CRD<<11)|(SCT<<8)|SC.
inline uint8_t status_sc(uint16_t s) { return s & 0xff; }
inline uint8_t status_sct(uint16_t s) { return (s >> 8) & 0x7; }
inline bool status_dnr(uint16_t s) { return s & 0x4000; }
constexpr uint16_t make_status(uint8_t sct, uint8_t sc, bool dnr = false) {
  return static_cast<uint16_t>((dnr ? 0x4000 : 0) | (sct << 8) | sc);
}
// "Generic: Invalid Field in Command (sct 0x0 sc 0x02)"-style text.
std::string status_string(uint16_t status);

// Status codes used by host and target.
constexpr uint16_t kStatusInvalidOpcode = make_status(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE, true);
constexpr uint16_t kStatusInvalidField = make_status(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD, true);
constexpr uint16_t kStatusDataXferError = make_status(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR);
constexpr uint16_t kStatusInternal = make_status(NVME_SCT_GENERIC, NVME_SC_INTERNAL);
constexpr uint16_t kStatusInvalidNs = make_status(NVME_SCT_GENERIC, NVME_SC_INVALID_NS, true);
constexpr uint16_t kStatusSeqError = make_status(NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR);
constexpr uint16_t kStatusAbortedSqDeletion = make_status(NVME_SCT_GENERIC, NVME_SC_ABORT_QUEUE);
constexpr uint16_t kStatusSglLengthInvalid = make_status(NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA, true);
constexpr uint16_t kStatusSglTypeInvalid = make_status(NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_TYPE, true);
constexpr uint16_t kStatusTransientTransport = make_status(NVME_SCT_GENERIC, NVME_SC_TRAN_TPORT_ERROR);
constexpr uint16_t kStatusLbaOutOfRange = make_status(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE, true);
constexpr uint16_t kStatusCapacityExceeded = make_status(NVME_SCT_GENERIC, NVME_SC_CAP_EXCEEDED, true);
constexpr uint16_t kStatusReservationConflict = make_status(NVME_SCT_GENERIC, NVME_SC_RESERVATION_CONFLICT, true);
constexpr uint16_t kStatusHostIdFormat = make_status(NVME_SCT_GENERIC, NVME_SC_HOSTID_FORMAT, true);
constexpr uint16_t kStatusAerLimit = make_status(NVME_SCT_CMD_SPECIFIC, NVME_SC_ASYNC_LIMIT);
constexpr uint16_t kStatusConnectFormat = make_status(NVME_SCT_CMD_SPECIFIC, NVME_SC_CONNECT_FORMAT, true);
constexpr uint16_t kStatusConnectCtrlBusy = make_status(NVME_SCT_CMD_SPECIFIC, NVME_SC_CONNECT_CTRL_BUSY, true);
constexpr uint16_t kStatusConnectInvalidParam = make_status(NVME_SCT_CMD_SPECIFIC, NVME_SC_CONNECT_INVALID_PARAM, true);
constexpr uint16_t kStatusConnectInvalidHost = make_status(NVME_SCT_CMD_SPECIFIC, NVME_SC_CONNECT_INVALID_HOST, true);
constexpr uint16_t kStatusAuthRequired = make_status(NVME_SCT_CMD_SPECIFIC, NVME_SC_AUTH_REQUIRED, true);
constexpr uint16_t kStatusWriteFault = make_status(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT);
constexpr uint16_t kStatusAnaPersistentLoss = make_status(NVME_SCT_PATH, NVME_SC_ANA_PERSISTENT_LOSS);
constexpr uint16_t kStatusAnaInaccessible = make_status(NVME_SCT_PATH, NVME_SC_ANA_INACCESSIBLE);
constexpr uint16_t kStatusAnaTransition = make_status(NVME_SCT_PATH, NVME_SC_ANA_TRANSITION);

const char *opcode_name(uint8_t opcode, bool admin);
const char *fabrics_name(uint8_t fctype);

// Controller registers.
struct Cap {
  uint64_t raw;
  uint32_t mqes() const { return static_cast<uint32_t>(raw & 0xffff) + 1; } // entries
  uint32_t timeout_ms() const { return static_cast<uint32_t>((raw >> 24) & 0xff) * 500; }
  uint32_t mpsmin_bytes() const { return 1u << (12 + ((raw >> 48) & 0xf)); }
};
constexpr uint32_t kCcEnable = 1u;
constexpr uint32_t kCcShnNormal = 1u << 14;
constexpr uint32_t kCcShnMask = 3u << 14;
// CSS NVM, MPS 4 KiB, AMS round robin, IOSQES 6 (64 B), IOCQES 4 (16 B).
constexpr uint32_t kCcDefault = (6u << 16) | (4u << 20);
constexpr uint32_t kCstsRdy = 1u;
constexpr uint32_t kCstsCfs = 2u;
constexpr uint32_t kCstsShstMask = 3u << 2;
constexpr uint32_t kCstsShstComplete = 2u << 2;

} // namespace mpnvme::nvme
