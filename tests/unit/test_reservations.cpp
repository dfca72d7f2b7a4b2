// SPDX-License-Identifier: GPL-2.0-only
// A namespace's reservations as a state machine: blktests' nvme/054
// sequence gives the generation, type and holder nvmet reports after each
// step (tests/nvme/054.out); a second host meets the access rule of each
// reservation type and the conflicts a wrong key or a foreign reservation
// make.
#include "lib/wire/nvme.hpp"
#include "lib/wire/wire.hpp"
#include "mpnvme-target/core/reservations.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using mpnvme::target::HostId;
using mpnvme::target::Reservations;
namespace nvme = mpnvme::nvme;
namespace wire = mpnvme::wire;

namespace {
const HostId kA{1, 2, 3}, kB{9, 8, 7};
// CDW10 of Register (RREGA), Acquire (RACQA, RTYPE) and Release (RRELA, RTYPE).
uint32_t cdw10(uint32_t action, uint8_t rtype = 0) { return action | static_cast<uint32_t>(rtype) << 8; }

struct Status {
  uint32_t gen;
  uint8_t rtype;
  uint16_t regctl;
};
Status status(const Reservations &r) {
  const auto rep = r.report();
  return {wire::get32(rep.data(), 0), rep[4], wire::get16(rep.data(), 5)};
}
void expect(const Reservations &r, uint32_t gen, uint8_t rtype, uint16_t regctl) {
  const Status s = status(r);
  assert_int_equal(s.gen, gen);
  assert_int_equal(s.rtype, rtype);
  assert_int_equal(s.regctl, regctl);
}
// The first registrant's entry: controller ID, whether it holds, its key, its host.
void expect_entry(const Reservations &r, size_t i, uint8_t rcsts, uint64_t key, const HostId &h) {
  const auto rep = r.report();
  const size_t off = 64 + 64 * i;
  assert_true(rep.size() >= off + 64);
  assert_int_equal(wire::get16(rep.data(), off), 0xffff);
  assert_int_equal(rep[off + 2], rcsts);
  assert_int_equal(wire::get64(rep.data(), off + 8), key);
  assert_memory_equal(rep.data() + off + 16, h.data(), 16);
}
} // namespace

static void blktests_054_sequence(void **) {
  Reservations r;
  expect(r, 0, 0, 0);
  assert_int_equal(r.reg(kA, cdw10(0), 0, 4).status, 0); // Register
  expect(r, 1, 0, 1);
  expect_entry(r, 0, 0, 4, kA);
  assert_int_equal(r.reg(kA, cdw10(2), 4, 5).status, 0); // Replace
  expect(r, 2, 0, 1);
  expect_entry(r, 0, 0, 5, kA);
  assert_int_equal(r.reg(kA, cdw10(1), 5, 0).status, 0); // Unregister
  expect(r, 3, 0, 0);
  assert_int_equal(r.reg(kA, cdw10(0), 0, 4).status, 0); // Acquire
  assert_int_equal(r.acquire(kA, cdw10(0, 1), 4, 0).status, 0);
  expect(r, 4, 1, 1);
  expect_entry(r, 0, 1, 4, kA);
  assert_int_equal(r.acquire(kA, cdw10(1, 2), 4, 4).status, 0); // Preempt
  expect(r, 5, 2, 1);
  expect_entry(r, 0, 1, 4, kA);
  assert_int_equal(r.release(kA, cdw10(0, 2), 4).status, 0); // Release
  expect(r, 5, 0, 1);
  expect_entry(r, 0, 0, 4, kA);
  assert_int_equal(r.acquire(kA, cdw10(0, 1), 4, 0).status, 0); // Clear
  expect(r, 5, 1, 1);
  assert_int_equal(r.release(kA, cdw10(1), 4).status, 0);
  expect(r, 6, 0, 0);
}

static void wrong_keys_and_foreign_reservations_conflict(void **) {
  Reservations r;
  assert_int_equal(r.reg(kA, cdw10(1), 0, 0).status, nvme::kStatusReservationConflict); // not registered
  // IEKEY ignores the key, not whether the host is registered.
  const uint32_t iekey = 1u << 3;
  assert_int_equal(r.reg(kA, cdw10(1) | iekey, 0, 0).status, nvme::kStatusReservationConflict);
  assert_int_equal(r.acquire(kA, cdw10(0, 1) | iekey, 0, 0).status, nvme::kStatusReservationConflict);
  assert_int_equal(r.release(kA, cdw10(0, 1) | iekey, 0).status, nvme::kStatusReservationConflict);
  assert_int_equal(r.reg(kA, cdw10(0), 0, 4).status, 0);
  assert_int_equal(r.reg(kA, cdw10(0), 0, 4).status, 0); // the same registration again
  expect(r, 1, 0, 1);
  assert_int_equal(r.reg(kA, cdw10(0), 0, 7).status, nvme::kStatusReservationConflict); // another key
  assert_int_equal(r.reg(kA, cdw10(2), 9, 5).status, nvme::kStatusReservationConflict); // wrong CRKEY
  assert_int_equal(r.reg(kA, cdw10(2) | 1u << 3, 9, 5).status, 0);                      // IEKEY: replaced
  assert_int_equal(r.reg(kB, cdw10(0), 0, 8).status, 0);
  assert_int_equal(r.acquire(kA, cdw10(0, 2), 5, 0).status, 0);
  assert_int_equal(r.acquire(kB, cdw10(0, 2), 8, 0).status, nvme::kStatusReservationConflict); // held by A
  assert_int_equal(r.acquire(kA, cdw10(0, 1), 5, 0).status, nvme::kStatusReservationConflict); // another type
  assert_int_equal(r.release(kA, cdw10(0, 1), 5).status, nvme::kStatusReservationConflict);    // not its type
  assert_int_equal(r.release(kB, cdw10(0, 2), 8).status, 0);                                   // B holds nothing: no change
  expect(r, 3, 2, 2);
  // B preempts A by A's key: A is unregistered, B holds.
  assert_int_equal(r.acquire(kB, cdw10(1, 1), 8, 5).status, 0);
  expect(r, 4, 1, 1);
  expect_entry(r, 0, 1, 8, kB);
  assert_int_equal(r.acquire(kB, cdw10(3, 1), 8, 0).status, nvme::kStatusInvalidField);     // RACQA 3
  assert_int_equal(r.acquire(kB, cdw10(0, 7), 8, 0).status, nvme::kStatusInvalidField);     // RTYPE 7
  assert_int_equal(r.reg(kB, cdw10(0) | 3u << 30, 0, 8).status, nvme::kStatusInvalidField); // CPTPL: no PTPL
}

static void access_by_reservation_type(void **) {
  // For each type: may the holder, another registrant and a host that is
  // not registered read, and write?
  struct Row {
    uint8_t rtype;
    bool registrant_reads, registrant_writes, stranger_reads, stranger_writes;
  } rows[] = {{1, true, false, true, false}, {2, false, false, false, false}, {3, true, true, true, false},
              {4, true, true, false, false}, {5, true, true, true, false},    {6, true, true, false, false}};
  const HostId kC{5, 5, 5};
  for (const Row &row : rows) {
    Reservations r;
    assert_true(r.permits(kC, true)); // no reservation: everyone
    assert_int_equal(r.reg(kA, cdw10(0), 0, 1).status, 0);
    assert_int_equal(r.reg(kB, cdw10(0), 0, 2).status, 0);
    assert_int_equal(r.acquire(kA, cdw10(0, row.rtype), 1, 0).status, 0);
    assert_true(r.permits(kA, false) && r.permits(kA, true));
    assert_int_equal(r.permits(kB, false), row.registrant_reads);
    assert_int_equal(r.permits(kB, true), row.registrant_writes);
    assert_int_equal(r.permits(kC, false), row.stranger_reads);
    assert_int_equal(r.permits(kC, true), row.stranger_writes);
  }
}

static void all_registrants_reservation_outlives_its_acquirer(void **) {
  Reservations r;
  assert_int_equal(r.reg(kA, cdw10(0), 0, 1).status, 0);
  assert_int_equal(r.reg(kB, cdw10(0), 0, 2).status, 0);
  assert_int_equal(r.acquire(kA, cdw10(0, 5), 1, 0).status, 0);
  assert_int_equal(r.acquire(kB, cdw10(0, 5), 2, 0).status, 0); // every registrant holds it
  assert_int_equal(r.reg(kA, cdw10(1), 1, 0).status, 0);        // A leaves: B still holds
  expect(r, 3, 5, 1);
  expect_entry(r, 0, 1, 2, kB);
  // A write-exclusive holder that unregisters ends its reservation.
  assert_int_equal(r.acquire(kB, cdw10(1, 1), 2, 0).status, 0); // PRKEY 0: B's alone now, type 1
  assert_int_equal(r.reg(kB, cdw10(1), 2, 0).status, 0);
  expect(r, 5, 0, 0);
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(blktests_054_sequence), cmocka_unit_test(wrong_keys_and_foreign_reservations_conflict),
      cmocka_unit_test(access_by_reservation_type), cmocka_unit_test(all_registrants_reservation_outlives_its_acquirer)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
