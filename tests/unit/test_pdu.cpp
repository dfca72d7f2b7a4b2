// SPDX-License-Identifier: GPL-2.0-only
// PDU encode/decode round trips and every header validation rule.
#include <cstring>

#include "lib/wire/crc32c.hpp"
#include "lib/wire/pdu.hpp"
#include "lib/wire/wire.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;
using namespace mpnvme::pdu;

static void crc32c_known_vectors(void **) {
  // RFC 3720 / iSCSI check value for "123456789".
  assert_int_equal(crc32c("123456789", 9), 0xE3069283u);
  uint8_t zeros[32] = {};
  assert_int_equal(crc32c(zeros, sizeof zeros), 0x8A9136AAu); // RFC 3720 B.4
  // Incremental equals one shot.
  uint32_t r = crc32c_update(kCrc32cSeed, "1234", 4);
  r = crc32c_update(r, "56789", 5);
  assert_int_equal(crc32c_final(r), 0xE3069283u);
}

static void icreq_round_trip(void **) {
  uint8_t b[kIcLen];
  IcReq in;
  in.hpda = 3;
  in.digests = {true, false};
  in.maxr2t = 7;
  encode_icreq(b, in);
  Common c = decode_common(b);
  assert_int_equal(c.type, 0);
  assert_int_equal(c.hlen, 128);
  assert_int_equal(c.plen, 128);
  IcReq out;
  assert_true(bool(decode_icreq(b, out)));
  assert_int_equal(out.hpda, 3);
  assert_true(out.digests.header);
  assert_false(out.digests.data);
  assert_int_equal(out.maxr2t, 7);
}

static void icresp_round_trip_and_limits(void **) {
  uint8_t b[kIcLen];
  IcResp in;
  in.cpda = 0;
  in.digests = {true, true};
  in.maxh2cdata = 4u << 20;
  encode_icresp(b, in);
  IcResp out;
  assert_true(bool(decode_icresp(b, out)));
  assert_int_equal(out.maxh2cdata, 4u << 20);
  assert_true(out.digests.data);

  in.maxh2cdata = 2048; // Linux hosts refuse < 4096
  encode_icresp(b, in);
  assert_false(bool(decode_icresp(b, out)));
  in.maxh2cdata = 4098; // not a dword multiple
  encode_icresp(b, in);
  assert_false(bool(decode_icresp(b, out)));
  in.maxh2cdata = 8192;
  encode_icresp(b, in);
  b[2] = 127; // bad hlen
  assert_int_equal(static_cast<int>(decode_icresp(b, out).fes), static_cast<int>(Fes::InvalidHeaderField));
  encode_icresp(b, in);
  wire::put16(b, 8, 1); // pfv 1 unsupported
  assert_int_equal(static_cast<int>(decode_icresp(b, out).fes), static_cast<int>(Fes::UnsupportedParameter));
  encode_icresp(b, in);
  b[0] = 0x05; // not an ICResp at all
  assert_int_equal(static_cast<int>(decode_icresp(b, out).fes), static_cast<int>(Fes::PduSequenceError));
  encode_icresp(b, in);
  b[10] = 32; // cpda above 31
  assert_false(bool(decode_icresp(b, out)));
  encode_icresp(b, in);
  b[11] = 4; // unknown digest bit
  assert_false(bool(decode_icresp(b, out)));
}

static Common hdr(Type t, uint8_t flags, uint8_t hlen, uint8_t pdo, uint32_t plen) {
  return {static_cast<uint8_t>(t), flags, hlen, pdo, plen};
}

static void validate_capsule_resp(void **) {
  Digests none, hd{true, false};
  assert_true(bool(validate(hdr(Type::CapsuleResp, 0, 24, 0, 24), Receiver::Host, none, 1 << 20)));
  assert_true(bool(validate(hdr(Type::CapsuleResp, kFlagHdgst, 24, 0, 28), Receiver::Host, hd, 1 << 20)));
  // Digest flag that was not negotiated, or missing when it was.
  assert_false(bool(validate(hdr(Type::CapsuleResp, kFlagHdgst, 24, 0, 28), Receiver::Host, none, 1 << 20)));
  assert_false(bool(validate(hdr(Type::CapsuleResp, 0, 24, 0, 24), Receiver::Host, hd, 1 << 20)));
  // Wrong hlen / plen / pdo / stray data digest flag.
  assert_false(bool(validate(hdr(Type::CapsuleResp, 0, 72, 0, 72), Receiver::Host, none, 1 << 20)));
  assert_false(bool(validate(hdr(Type::CapsuleResp, 0, 24, 0, 40), Receiver::Host, none, 1 << 20)));
  assert_false(bool(validate(hdr(Type::CapsuleResp, 0, 24, 24, 24), Receiver::Host, none, 1 << 20)));
  assert_false(bool(validate(hdr(Type::CapsuleResp, kFlagDdgst, 24, 0, 24), Receiver::Host, none, 1 << 20)));
  // A controller never receives a response.
  assert_false(bool(validate(hdr(Type::CapsuleResp, 0, 24, 0, 24), Receiver::Controller, none, 1 << 20)));
}

static void validate_c2h_data(void **) {
  Digests none, both{true, true};
  assert_true(bool(validate(hdr(Type::C2HData, kFlagLast, 24, 24, 24 + 4096), Receiver::Host, none, 1 << 20)));
  assert_true(bool(validate(hdr(Type::C2HData, kFlagLast | kFlagSuccess, 24, 24, 24 + 512), Receiver::Host, none, 1 << 20)));
  assert_true(bool(validate(hdr(Type::C2HData, kFlagHdgst | kFlagDdgst, 24, 28, 28 + 4096 + 4), Receiver::Host, both, 1 << 20)));
  // SUCCESS without LAST_PDU.
  assert_false(bool(validate(hdr(Type::C2HData, kFlagSuccess, 24, 24, 24 + 512), Receiver::Host, none, 1 << 20)));
  // No data at all.
  assert_false(bool(validate(hdr(Type::C2HData, 0, 24, 0, 24), Receiver::Host, none, 1 << 20)));
  // pdo inside the header (digest included).
  assert_false(bool(validate(hdr(Type::C2HData, kFlagHdgst | kFlagDdgst, 24, 24, 24 + 4096 + 4), Receiver::Host, both, 1 << 20)));
  // plen shorter than pdo.
  assert_false(bool(validate(hdr(Type::C2HData, 0, 24, 24, 20), Receiver::Host, none, 1 << 20)));
  // Data digest flag missing although negotiated.
  assert_false(bool(validate(hdr(Type::C2HData, kFlagHdgst, 24, 28, 28 + 4096 + 4), Receiver::Host, both, 1 << 20)));
  // Longer than the receiver allows.
  Verdict v = validate(hdr(Type::C2HData, 0, 24, 24, 24 + 8192), Receiver::Host, none, 4096);
  assert_int_equal(static_cast<int>(v.fes), static_cast<int>(Fes::DataOutOfRange));
  // Wrong direction.
  assert_false(bool(validate(hdr(Type::C2HData, 0, 24, 24, 24 + 512), Receiver::Controller, none, 1 << 20)));
  // Unknown flag bits.
  assert_false(bool(validate(hdr(Type::C2HData, 0x80, 24, 24, 24 + 512), Receiver::Host, none, 1 << 20)));
}

static void validate_r2t_term_and_sequence(void **) {
  Digests none;
  assert_true(bool(validate(hdr(Type::R2T, 0, 24, 0, 24), Receiver::Host, none, 0)));
  assert_false(bool(validate(hdr(Type::R2T, kFlagLast, 24, 0, 24), Receiver::Host, none, 0)));
  assert_true(bool(validate(hdr(Type::C2HTermReq, 0, 24, 0, 24), Receiver::Host, none, 0)));
  assert_true(bool(validate(hdr(Type::C2HTermReq, 0, 24, 24, 152), Receiver::Host, none, 0)));
  assert_false(bool(validate(hdr(Type::C2HTermReq, 0, 24, 24, 153), Receiver::Host, none, 0)));
  assert_false(bool(validate(hdr(Type::H2CTermReq, 0, 24, 0, 24), Receiver::Host, none, 0)));
  assert_true(bool(validate(hdr(Type::H2CTermReq, 0, 24, 0, 24), Receiver::Controller, none, 0)));
  // IC PDUs after setup are sequence errors.
  Verdict v = validate(hdr(Type::ICResp, 0, 128, 0, 128), Receiver::Host, none, 0);
  assert_int_equal(static_cast<int>(v.fes), static_cast<int>(Fes::PduSequenceError));
  // Unknown type.
  assert_false(bool(validate(hdr(static_cast<Type>(0x0b), 0, 24, 0, 24), Receiver::Host, none, 0)));
  // Host-to-controller PDUs as the controller receives them.
  assert_true(bool(validate(hdr(Type::CapsuleCmd, 0, 72, 0, 72), Receiver::Controller, none, 0)));
  assert_true(bool(validate(hdr(Type::CapsuleCmd, 0, 72, 72, 72 + 1024), Receiver::Controller, none, 8192)));
  assert_false(bool(validate(hdr(Type::CapsuleCmd, 0, 72, 72, 72 + 16384), Receiver::Controller, none, 8192)));
  assert_false(bool(validate(hdr(Type::H2CData, 0, 24, 0, 24), Receiver::Controller, none, 8192)));
  assert_false(bool(validate(hdr(Type::CapsuleCmd, 0, 72, 0, 72), Receiver::Host, none, 0)));
}

static void data_and_r2t_headers(void **) {
  uint8_t b[24];
  encode_data_hdr(b, Type::H2CData, kFlagLast, 24, 24 + 100, {0x1234, 0x55, 4096, 100});
  Common c = decode_common(b);
  assert_int_equal(c.type, 6);
  assert_int_equal(c.flags, kFlagLast);
  assert_int_equal(c.pdo, 24);
  assert_int_equal(c.plen, 124);
  DataHdr d = decode_data_hdr(b);
  assert_int_equal(d.cccid, 0x1234);
  assert_int_equal(d.ttag, 0x55);
  assert_int_equal(d.datao, 4096);
  assert_int_equal(d.datal, 100);
  encode_r2t(b, 0, 24, {7, 9, 8192, 65536});
  R2THdr r = decode_r2t(b);
  assert_int_equal(r.cccid, 7);
  assert_int_equal(r.ttag, 9);
  assert_int_equal(r.r2to, 8192);
  assert_int_equal(r.r2tl, 65536);
}

static void termreq_and_digest(void **) {
  uint8_t bad[200];
  memset(bad, 0xab, sizeof bad);
  uint8_t b[kTermMaxPlen];
  size_t n = encode_termreq(b, Type::H2CTermReq, {3, 0x10}, bad, sizeof bad);
  assert_int_equal(n, kTermMaxPlen); // offending header truncated to 128 bytes
  TermReq t = decode_termreq(b);
  assert_int_equal(t.fes, 3);
  assert_int_equal(t.fei, 0x10);
  assert_string_equal(fes_name(3), "header digest error");

  uint8_t h[28] = {};
  encode_r2t(h, kFlagHdgst, 28, {1, 2, 0, 512});
  put_header_digest(h, 24);
  assert_true(header_digest_ok(h, 24));
  h[9] ^= 1;
  assert_false(header_digest_ok(h, 24));
}

static void data_offset_alignment(void **) {
  assert_int_equal(data_offset(24, false, 0), 24);
  assert_int_equal(data_offset(24, true, 0), 28);
  assert_int_equal(data_offset(72, true, 0), 76);
  assert_int_equal(data_offset(24, true, 7), 32); // 32-byte alignment
  assert_int_equal(data_offset(72, false, 31), 128);
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(crc32c_known_vectors),
      cmocka_unit_test(icreq_round_trip),
      cmocka_unit_test(icresp_round_trip_and_limits),
      cmocka_unit_test(validate_capsule_resp),
      cmocka_unit_test(validate_c2h_data),
      cmocka_unit_test(validate_r2t_term_and_sequence),
      cmocka_unit_test(data_and_r2t_headers),
      cmocka_unit_test(termreq_and_digest),
      cmocka_unit_test(data_offset_alignment),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
