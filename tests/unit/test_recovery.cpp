// SPDX-License-Identifier: GPL-2.0-only
// Controller recovery as pure logic, with no sockets and no sleeps: the
// states a reset moves through (RESETTING until the jobs have handed back
// the old generation's commands), reconnect timing and removal after
// ctrl_loss_tmo, and the order of ANA log reads (a request is never lost,
// an older read never clears a newer mark), and the handover of a job's
// connection (an overtaken connect never displaces the reconnect's).
#include <atomic>
#include <cstring>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "engine/host/ana_reads.hpp"
#include "engine/host/controller.hpp"
#include "engine/host/recovery.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;
using namespace mpnvme::host;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {
const Clock::time_point t0{};
RecoveryOptions options(milliseconds delay, std::optional<milliseconds> loss) {
  RecoveryOptions o;
  o.reconnect_delay = delay;
  o.ctrl_loss_tmo = loss;
  o.io_timeout = seconds(30);
  return o;
}
} // namespace

static void reset_is_visible_until_jobs_hand_back(void **) {
  ControllerRecovery r(options(seconds(10), seconds(600)), t0);
  r.connected();
  assert_int_equal(r.generation(), 1);
  r.reset(t0 + seconds(1), "keep alive: no answer");
  // Jobs see RESETTING and the new generation together.
  assert_true(r.state() == CtrlState::Resetting);
  assert_int_equal(r.generation(), 2);
  assert_string_equal(r.reason().c_str(), "keep alive: no answer");
  // A job still holds generation 1: RESETTING stays.
  assert_false(r.finish_reset(t0 + seconds(2), false));
  assert_true(r.state() == CtrlState::Resetting);
  // Handed back: CONNECTING, waiting for reconnect_delay.
  assert_true(r.finish_reset(t0 + seconds(2), true));
  assert_true(r.state() == CtrlState::Connecting);
  assert_true(r.next(t0 + seconds(5)) == ControllerRecovery::Next::Wait);
  assert_true(r.wake_at() == t0 + seconds(11));
  assert_true(r.next(t0 + seconds(11)) == ControllerRecovery::Next::Attempt);
}

static void reset_does_not_wait_forever_for_a_job(void **) {
  ControllerRecovery r(options(seconds(2), seconds(600)), t0);
  r.connected();
  r.reset(t0, "admin queue failed");
  assert_false(r.finish_reset(t0 + seconds(1), false));
  // The first reconnect is due: a job that does not look does not hold it up.
  assert_true(r.finish_reset(t0 + seconds(2), false));
  assert_true(r.next(t0 + seconds(2)) == ControllerRecovery::Next::Attempt);
}

static void attempts_until_ctrl_loss_tmo(void **) {
  ControllerRecovery r(options(seconds(1), seconds(3)), t0);
  r.connected();
  r.reset(t0, "transport error");
  r.finish_reset(t0, true);
  for (int i = 1; i <= 2; i++) {
    assert_true(r.next(t0 + seconds(i)) == ControllerRecovery::Next::Attempt);
    r.attempting();
    r.attempt_failed(t0 + seconds(i), "connect: Connection refused");
  }
  assert_true(r.next(t0 + milliseconds(2500)) == ControllerRecovery::Next::Wait);
  assert_true(r.next(t0 + seconds(3)) == ControllerRecovery::Next::Delete);
  r.remove();
  assert_true(r.state() == CtrlState::Deleted);
  assert_non_null(strstr(r.reason().c_str(), "after 2 reconnect attempt(s); last: connect: Connection refused"));
}

static void reconnect_keeps_generation_and_clears_reason(void **) {
  ControllerRecovery r(options(seconds(1), std::nullopt), t0);
  r.first_connect_failed(t0, "connect: timed out");
  assert_true(r.state() == CtrlState::Connecting);
  assert_int_equal(r.generation(), 1);
  // ctrl_loss_tmo -1: never deleted.
  assert_true(r.next(t0 + seconds(86400)) == ControllerRecovery::Next::Attempt);
  r.connected();
  assert_true(r.state() == CtrlState::Live);
  assert_int_equal(r.generation(), 1);
  assert_string_equal(r.reason().c_str(), "");
}

static void fast_io_fail_counts_from_the_failure(void **) {
  RecoveryOptions o = options(seconds(10), seconds(600));
  o.fast_io_fail_tmo = seconds(5);
  ControllerRecovery r(o, t0);
  r.connected();
  assert_false(r.failfast_expired(t0 + seconds(100)));
  r.reset(t0 + seconds(100), "path cut");
  assert_false(r.failfast_expired(t0 + seconds(104)));
  assert_true(r.failfast_expired(t0 + seconds(105)));
}

static void ana_request_during_a_read_gets_one_more_read(void **) {
  AnaReads a;
  assert_false(a.start().has_value()); // nothing asked
  a.request();
  assert_int_equal(*a.start(), 1);
  a.request(); // while the first read is outstanding
  assert_false(a.start().has_value());
  assert_int_equal(a.finish(), 1);
  assert_int_equal(*a.start(), 2); // the request was not lost
  assert_int_equal(a.finish(), 2);
  assert_false(a.start().has_value());
}

static void older_ana_read_never_clears_a_newer_mark(void **) {
  AnaReads a;
  std::atomic<uint64_t> mark{0};
  a.request(); // an ANA change notice
  const auto first = a.start();
  a.request(&mark); // a job saw an ANA status after that read was sent
  assert_int_equal(mark.load(), 2);
  clear_ana_pending(mark, a.finish()); // the older read's answer
  assert_int_equal(mark.load(), 2);    // still pending
  assert_int_equal(*first, 1);
  assert_int_equal(*a.start(), 2);  // the read that covers the job's request
  assert_int_equal(mark.load(), 2); // sent, not answered yet
  clear_ana_pending(mark, a.finish());
  assert_int_equal(mark.load(), 0);
}

static void reconnect_read_covers_earlier_requests(void **) {
  AnaReads a;
  std::atomic<uint64_t> mark{0};
  a.request(&mark);
  assert_true(a.start().has_value());
  a.reset();                             // association lost with the read outstanding
  clear_ana_pending(mark, a.read_now()); // the reconnect reads the log itself
  assert_int_equal(mark.load(), 0);
  assert_false(a.start().has_value());
}

// A job connects its own queue at attach while the admin thread may reset
// and reconnect: the job's connection, made for the association that is
// gone, can arrive after the reconnect handed over the new one.
static void overtaken_connect_never_displaces_the_reconnects(void **) {
  Fd wake(eventfd(0, EFD_CLOEXEC));
  assert_true(static_cast<bool>(wake));
  IoAttachment a(1, 32, 1, NsIds{}, wake.get());
  auto channel = [] {
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ::close(sv[1]);
    QueueParams p;
    p.qid = 1;
    return std::make_unique<Channel>(Fd(sv[0]), p);
  };
  a.hand_over(channel(), 2); // the reconnect's
  a.hand_over(channel(), 1); // the job's, for generation 1
  uint32_t gen = 0;
  assert_true(a.has_connection());
  assert_non_null(a.take(gen).get());
  assert_int_equal(gen, 2);
  // Taken or not, an older one never comes after a newer one; the next
  // association's connection does.
  a.hand_over(channel(), 1);
  assert_false(a.has_connection());
  a.hand_over(channel(), 3);
  assert_non_null(a.take(gen).get());
  assert_int_equal(gen, 3);
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(reset_is_visible_until_jobs_hand_back),
      cmocka_unit_test(reset_does_not_wait_forever_for_a_job),
      cmocka_unit_test(attempts_until_ctrl_loss_tmo),
      cmocka_unit_test(reconnect_keeps_generation_and_clears_reason),
      cmocka_unit_test(fast_io_fail_counts_from_the_failure),
      cmocka_unit_test(ana_request_during_a_read_gets_one_more_read),
      cmocka_unit_test(older_ana_read_never_clears_a_newer_mark),
      cmocka_unit_test(reconnect_read_covers_earlier_requests),
      cmocka_unit_test(overtaken_connect_never_displaces_the_reconnects),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
