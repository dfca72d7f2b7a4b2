// SPDX-License-Identifier: GPL-2.0-only
// The target loop's spin-before-sleep rule as pure logic: spin for twice
// the recent gap between arrivals (at least 50 us) when that gap is short,
// sleep at once when arrivals are sparse.
#include "mpnvme-target/transport/idle_spin.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using mpnvme::target::IdleSpin;
using std::chrono::microseconds;

static void close_arrivals_spin(void **) {
  IdleSpin s;
  IdleSpin::Clock::time_point t{std::chrono::seconds(1)};
  assert_false(s.spinning(t)); // nothing arrived yet
  s.work(t);
  assert_true(s.spinning(t + microseconds(45))); // one arrival, no gap known yet: the 50 us floor
  assert_false(s.spinning(t + microseconds(55)));
  for (int i = 0; i < 20; i++)
    s.work(t += microseconds(40));
  assert_true(s.spinning(t + microseconds(70)));  // within twice the 40 us gap
  assert_false(s.spinning(t + microseconds(90))); // past it: sleep
  for (int i = 0; i < 20; i++)
    s.work(t += microseconds(10));
  assert_true(s.spinning(t + microseconds(45))); // the 50 us floor
  assert_false(s.spinning(t + microseconds(55)));
}

static void sparse_arrivals_sleep(void **) {
  IdleSpin s;
  IdleSpin::Clock::time_point t{std::chrono::seconds(1)};
  for (int i = 0; i < 20; i++)
    s.work(t += microseconds(150)); // twice the gap is above kMaxSpin
  assert_false(s.spinning(t + microseconds(1)));
  s.work(t += std::chrono::seconds(5)); // after an idle spell the gap stays long
  assert_false(s.spinning(t + microseconds(1)));
}

int main() {
  const CMUnitTest tests[] = {cmocka_unit_test(close_arrivals_spin), cmocka_unit_test(sparse_arrivals_sleep)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
