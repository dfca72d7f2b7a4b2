// SPDX-License-Identifier: GPL-2.0-only
// The multipath rules as pure functions: path choice of each I/O policy
// for given path states and depths (the Linux host's semantics), the
// completion disposition, identifier and ANA log parsing, and the latency
// histogram behind the per-path statistics.
#include <cstring>
#include <endian.h>
#include <nvme/types.h>
#include <vector>

#include "engine/host/disposition.hpp"
#include "engine/host/identify.hpp"
#include "engine/host/path_policy.hpp"
#include "engine/host/path_stats.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;
using namespace mpnvme::host;

namespace {

PathView opt(unsigned inflight = 0) { return {true, true, inflight, 0, 0, 10}; }
PathView nonopt(unsigned inflight = 0) { return {true, false, inflight, 0, 0, 10}; }
PathView down() { return {false, true, 0, 0, 0, 10}; }

std::vector<int> picks(PathSelector &s, const std::vector<PathView> &paths, int n, uint64_t bytes = 4096) {
  std::vector<int> out;
  for (int i = 0; i < n; i++)
    out.push_back(s.choose(paths, bytes));
  return out;
}

} // namespace

static void numa_sticks_to_first_usable_optimized(void **) {
  PathSelector s(IoPolicy::Numa);
  std::vector<PathView> p = {nonopt(), opt(), opt()};
  assert_true(picks(s, p, 3) == std::vector<int>({1, 1, 1}));
  p[1] = down(); // fails: the next optimized one, and it stays there
  assert_true(picks(s, p, 2) == std::vector<int>({2, 2}));
  p[1] = opt(); // comes back: no switch while the current one is fine
  assert_int_equal(s.choose(p, 4096), 2);
  p[1].numa_distance = 10;
  p[2] = nonopt(); // current turns non-optimized: re-evaluated
  assert_int_equal(s.choose(p, 4096), 1);
  p = {nonopt(), down(), nonopt()}; // only non-optimized: the first of them
  assert_int_equal(s.choose(p, 4096), 0);
  p = {down(), down()};
  assert_int_equal(s.choose(p, 4096), -1);
  // The nearest node wins among optimized paths.
  PathSelector near(IoPolicy::Numa);
  p = {opt(), opt()};
  p[0].numa_distance = 20;
  assert_int_equal(near.choose(p, 4096), 1);
}

static void round_robin_rotates_over_optimized(void **) {
  PathSelector s(IoPolicy::RoundRobin);
  std::vector<PathView> p = {opt(), opt(), nonopt(), opt()};
  // Starts at the nearest path, then skips the non-optimized one.
  assert_true(picks(s, p, 6) == std::vector<int>({0, 1, 3, 0, 1, 3}));
  p[1] = down();
  assert_true(picks(s, p, 4) == std::vector<int>({0, 3, 0, 3}));
  // The only optimized path stays (the 2020 fix), not the non-optimized one.
  p = {opt(), nonopt(), nonopt()};
  PathSelector only(IoPolicy::RoundRobin);
  assert_true(picks(only, p, 3) == std::vector<int>({0, 0, 0}));
  // No optimized path: rotate among non-optimized ones.
  p = {nonopt(), nonopt(), down()};
  PathSelector fallback(IoPolicy::RoundRobin);
  assert_true(picks(fallback, p, 4) == std::vector<int>({0, 1, 0, 1}));
  p = {down(), down(), down()};
  assert_int_equal(fallback.choose(p, 4096), -1);
}

static void queue_depth_takes_the_shortest_queue(void **) {
  PathSelector s(IoPolicy::QueueDepth);
  assert_int_equal(s.choose(std::vector<PathView>{opt(3), opt(1), opt(2)}, 4096), 1);
  assert_int_equal(s.choose(std::vector<PathView>{opt(3), opt(0), opt(0)}, 4096), 1); // first idle path
  // Non-optimized paths only without an optimized one, however short.
  assert_int_equal(s.choose(std::vector<PathView>{nonopt(0), opt(9)}, 4096), 1);
  assert_int_equal(s.choose(std::vector<PathView>{nonopt(4), nonopt(2), down()}, 4096), 1);
  assert_int_equal(s.choose(std::vector<PathView>{down(), down()}, 4096), -1);
}

static void service_time_weighs_bytes_by_rate(void **) {
  PathSelector s(IoPolicy::ServiceTime);
  std::vector<PathView> p = {opt(), opt()};
  // Rates unknown: fewest bytes in flight.
  p[0].inflight_bytes = 1 << 20;
  assert_int_equal(s.choose(p, 4096), 1);
  // A path four times as fast takes four times the bytes before the slow
  // one is chosen.
  p[0].bytes_per_sec = 400e6;
  p[1].bytes_per_sec = 100e6;
  p[0].inflight_bytes = 3 << 20;
  p[1].inflight_bytes = 1 << 20;
  assert_int_equal(s.choose(p, 128 << 10), 0);
  p[0].inflight_bytes = 5 << 20;
  assert_int_equal(s.choose(p, 128 << 10), 1);
  // One rate still unknown: bytes decide.
  p[1].bytes_per_sec = 0;
  p[0].inflight_bytes = 1 << 20;
  p[1].inflight_bytes = 2 << 20;
  assert_int_equal(s.choose(p, 4096), 0);
  // Optimized before non-optimized, down paths never.
  p = {nonopt(), opt(), down()};
  p[1].inflight_bytes = 100 << 20;
  assert_int_equal(s.choose(p, 4096), 1);
}

static Completion with_status(uint16_t status, bool aborted = false) {
  Completion c;
  c.status = status;
  c.aborted = aborted;
  return c;
}

static void disposition_rules(void **) {
  assert_true(decide_disposition(with_status(0), 0, 5) == Disposition::Complete);
  // Transport abort: another path, whatever the retry count.
  assert_true(decide_disposition(with_status(0, true), 9, 5) == Disposition::Failover);
  // Path related statuses (SCT 3h) fail over.
  for (uint8_t sc : {0x00, 0x01, 0x02, 0x03, 0x60, 0x70, 0x71})
    assert_true(decide_disposition(with_status(nvme::make_status(3, sc)), 0, 5) == Disposition::Failover);
  assert_true(is_ana_error(nvme::make_status(3, 0x02)));
  assert_false(is_ana_error(nvme::make_status(3, 0x70)));
  // DNR: final.
  assert_true(decide_disposition(with_status(nvme::kStatusLbaOutOfRange), 0, 5) == Disposition::Complete);
  assert_true(decide_disposition(with_status(nvme::make_status(3, 0x02, true)), 0, 5) == Disposition::Complete);
  // Anything else is retried, up to max_retries.
  assert_true(decide_disposition(with_status(nvme::kStatusDataXferError), 0, 5) == Disposition::Retry);
  assert_true(decide_disposition(with_status(nvme::kStatusDataXferError), 4, 5) == Disposition::Retry);
  assert_true(decide_disposition(with_status(nvme::kStatusDataXferError), 5, 5) == Disposition::Complete);
  assert_true(decide_disposition(with_status(nvme::kStatusTransientTransport), 0, 0) == Disposition::Complete);
}

static void namespace_identifiers(void **) {
  std::vector<uint8_t> list(4096, 0);
  size_t at = 0;
  auto add = [&](uint8_t type, uint8_t len, uint8_t fill) {
    list[at] = type;
    list[at + 1] = len;
    std::memset(&list[at + 4], fill, len);
    at += 4 + len;
  };
  add(NVME_NIDT_NGUID, 16, 0xab);
  add(NVME_NIDT_UUID, 16, 0xcd);
  add(NVME_NIDT_CSI, 1, 0);
  NsIds ids;
  std::string why;
  assert_true(parse_ns_descriptors(list.data(), list.size(), ids, why));
  assert_int_equal(ids.nguid[15], 0xab);
  assert_int_equal(ids.uuid[0], 0xcd);
  assert_true(ids.any());
  NsIds other = ids;
  other.uuid[3] ^= 1;
  assert_false(ids == other); // one differing identifier is another namespace
  assert_non_null(strstr(ids.describe().c_str(), "nguid abab"));
  // A descriptor with the wrong length for its type is refused.
  list[0] = NVME_NIDT_EUI64;
  assert_false(parse_ns_descriptors(list.data(), list.size(), ids, why));
  assert_non_null(strstr(why.c_str(), "length 16 (expected 8)"));
  // One running past the end of the list, too.
  std::vector<uint8_t> tail(8, 0);
  tail[0] = NVME_NIDT_NGUID;
  tail[1] = 16;
  assert_false(parse_ns_descriptors(tail.data(), tail.size(), ids, why));
}

static void ana_log_pages(void **) {
  // Two groups: 1 optimized with nsid 1, 2 inaccessible with nsids 2 and 3.
  std::vector<uint8_t> page(4096, 0);
  nvme_ana_log hdr{};
  hdr.chgcnt = htole64(7);
  hdr.ngrps = htole16(2);
  std::memcpy(page.data(), &hdr, sizeof hdr);
  size_t at = sizeof hdr;
  auto group = [&](uint32_t grp, AnaState st, std::vector<uint32_t> nsids) {
    nvme_ana_group_desc d{};
    d.grpid = htole32(grp);
    d.nnsids = htole32(static_cast<uint32_t>(nsids.size()));
    d.state = static_cast<uint8_t>(st);
    std::memcpy(&page[at], &d, sizeof d);
    at += sizeof d;
    for (uint32_t n : nsids) {
      const uint32_t le = htole32(n);
      std::memcpy(&page[at], &le, 4);
      at += 4;
    }
  };
  group(1, AnaState::Optimized, {1});
  group(2, AnaState::Inaccessible, {2, 3});
  std::string why;
  auto log = parse_ana_log(page.data(), at, why);
  assert_true(log.has_value());
  assert_int_equal(log->chgcnt, 7);
  assert_true(log->state_of(1, 1) == AnaState::Optimized);
  assert_true(log->state_of(3, 1) == AnaState::Inaccessible); // the listing wins over a stale group id
  assert_true(log->state_of(9, 2) == AnaState::Inaccessible); // not listed: by its group
  assert_false(log->state_of(9, 5).has_value());
  assert_false(ana_usable(AnaState::Inaccessible));
  assert_true(ana_usable(AnaState::NonOptimized));
  // Truncated: a namespace list past the end, and a group descriptor past it.
  assert_false(parse_ana_log(page.data(), at - 4, why).has_value());
  assert_non_null(strstr(why.c_str(), "past the page"));
  assert_false(parse_ana_log(page.data(), sizeof hdr + 8, why).has_value());
  // An invalid state.
  page[sizeof hdr + 16] = 0x7;
  assert_false(parse_ana_log(page.data(), at, why).has_value());
  assert_non_null(strstr(why.c_str(), "invalid state"));
}

static void latency_percentiles(void **) {
  LatencyHistogram h;
  assert_int_equal(h.quantile(0.5), 0);
  for (uint64_t i = 1; i <= 1000; i++)
    h.add(i * 1000); // 1 us .. 1 ms
  assert_int_equal(h.count(), 1000);
  auto near = [](uint64_t got, uint64_t want) { return got > want * 96 / 100 && got < want * 104 / 100; };
  assert_true(near(h.quantile(0.5), 500000));
  assert_true(near(h.quantile(0.99), 990000));
  assert_true(near(h.quantile(0.0), 1000));
  h.add(3); // tiny values keep their own buckets
  assert_int_equal(h.quantile(0.0), 3);
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(numa_sticks_to_first_usable_optimized),
      cmocka_unit_test(round_robin_rotates_over_optimized),
      cmocka_unit_test(queue_depth_takes_the_shortest_queue),
      cmocka_unit_test(service_time_weighs_bytes_by_rate),
      cmocka_unit_test(disposition_rules),
      cmocka_unit_test(namespace_identifiers),
      cmocka_unit_test(ana_log_pages),
      cmocka_unit_test(latency_percentiles),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
