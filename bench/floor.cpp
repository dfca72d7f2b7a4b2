// SPDX-License-Identifier: GPL-2.0-only
// mpnvme-floor: what the sockets alone can do on this machine, so that the
// engine's figures can be given as ratios to it (bench/run floor).
//
// clang-format off
//   mpnvme-floor rtt  [--transport tcp|mptcp] [--wait block|busy] [--request 72] [--response 4120]
//                     [--depth 1] [--count 20000 | --seconds S] [--server-cpu 0] [--client-cpu 1]
//   mpnvme-floor bulk [--transport tcp|mptcp] [--wait block|busy] [--seconds 3] [--chunk 131072] [--server-cpu 0] [--client-cpu 1]
//   mpnvme-floor sink --listen ADDR:PORT,... [--transport tcp|mptcp] [--chunk 131072]
//   mpnvme-floor stream --connect ADDR:PORT,... --direction read|write [--transport tcp|mptcp]
//                     [--ramp 1] [--seconds 3] [--chunk 131072]
// clang-format on
//
// Both ends run in this process on loopback, each thread pinned to its
// CPU: a request of the size of an NVMe/TCP command capsule answered with
// the size of a C2HData PDU (round trip; with --depth, that many requests
// outstanding, both sides sending in batches), or a stream in one
// direction (bulk). `block` waits in recv; `busy` spins on non-blocking recv, as a
// polling host and target do. One JSON object on standard output.
// sink and stream are the two ends of a bench cell's raw-transport control
// across the lab's namespaces (floor_stream.cpp).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <sched.h>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "bench/floor_stream.hpp"
#include "lib/base/cli.hpp"
#include "lib/net/sock.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using mpnvme::Fd;

void pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    throw std::runtime_error(fmt::format("cannot pin a thread to CPU {}", cpu));
}

Fd stream_socket(bool mptcp) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, mptcp ? 262 /* IPPROTO_MPTCP */ : IPPROTO_TCP));
  if (!fd) throw std::runtime_error(fmt::format("socket: {}", strerror(errno)));
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// A connected pair on loopback: {server side, client side}.
std::pair<Fd, Fd> connected_pair(bool mptcp) {
  Fd l = stream_socket(mptcp);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(l.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 || ::listen(l.get(), 1) < 0 ||
      getsockname(l.get(), reinterpret_cast<sockaddr *>(&a), &len) < 0)
    throw std::runtime_error(fmt::format("listen: {}", strerror(errno)));
  Fd c = stream_socket(mptcp);
  if (::connect(c.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) < 0)
    throw std::runtime_error(fmt::format("connect: {}", strerror(errno)));
  Fd s(::accept4(l.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!s) throw std::runtime_error(fmt::format("accept: {}", strerror(errno)));
  int one = 1;
  setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return {std::move(s), std::move(c)};
}

// Sends all of it (busy: without sleeping on a full socket buffer).
void send_exact(int fd, const uint8_t *p, size_t n, bool busy = false) {
  while (n) {
    const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL | (busy ? MSG_DONTWAIT : 0));
    if (r < 0 && errno != EINTR && errno != EAGAIN) throw std::runtime_error(fmt::format("send: {}", strerror(errno)));
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
    }
  }
}

double thread_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Receives what is there (busy: without sleeping), at least one byte.
// 0 at EOF.
size_t recv_some(int fd, uint8_t *p, size_t n, bool busy) {
  for (;;) {
    const ssize_t r = ::recv(fd, p, n, busy ? MSG_DONTWAIT : 0);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno != EAGAIN && errno != EINTR) throw std::runtime_error(fmt::format("recv: {}", strerror(errno)));
  }
}

// The answering side of rtt(): every whole request read is answered, all
// of one read's answers in one send. Returns its thread's CPU seconds.
double answer_requests(int fd, size_t request, size_t response, unsigned depth, bool busy, int cpu) {
  pin(cpu);
  const double t0 = thread_cpu_seconds();
  std::vector<uint8_t> in(request * depth), out(response * depth, 0x5a);
  size_t have = 0;
  for (size_t n; (n = recv_some(fd, in.data() + have, in.size() - have, busy)) > 0;) {
    have += n;
    const size_t k = have / request;
    have %= request;
    if (k) send_exact(fd, out.data(), k * response);
  }
  return thread_cpu_seconds() - t0;
}

// Round trips with `depth` requests outstanding. Both sides batch as the
// engine and the target do: every request that completes a batch of
// answers is sent again in one send, and the answering side answers all
// requests it has read in one send.
// seconds > 0: measure for that long instead of `count` round trips.
nlohmann::json rtt(bool mptcp, bool busy, size_t request, size_t response, unsigned depth, int count, double seconds,
                   int server_cpu, int client_cpu) {
  auto [s, c] = connected_pair(mptcp);
  double server_cpu_s = 0;
  std::thread server([&, fd = s.get()] { server_cpu_s = answer_requests(fd, request, response, depth, busy, server_cpu); });
  pin(client_cpu);
  std::vector<uint8_t> req(request * depth, 0xa5), resp(response * depth);
  std::vector<Clock::time_point> sent(depth); // ring: send time of each outstanding request
  size_t head = 0, tail = 0;                  // answers expected at head, requests sent at tail
  std::vector<double> us;
  us.reserve(seconds > 0 ? 1 << 20 : static_cast<size_t>(count));
  const int warmup = seconds > 0 ? 1000 : std::min(count / 10, 1000);
  auto deadline = Clock::time_point::max(); // set when the warm-up ends (seconds > 0)
  int answered = 0;
  const auto send_requests = [&](size_t k) {
    const auto now = Clock::now();
    for (size_t i = 0; i < k; i++)
      sent[tail++ % depth] = now;
    send_exact(c.get(), req.data(), k * request);
  };
  double client_cpu_s = thread_cpu_seconds();
  auto t_start = Clock::now();
  send_requests(depth);
  size_t have = 0;
  for (bool more = true; more;) {
    const size_t n = recv_some(c.get(), resp.data(), resp.size() - have, busy);
    if (!n) throw std::runtime_error("the answering side closed");
    have += n;
    const size_t k = have / response;
    have %= response;
    const auto now = Clock::now();
    for (size_t i = 0; i < k; i++, answered++) {
      if (answered == warmup) {
        t_start = now;
        client_cpu_s = thread_cpu_seconds();
        if (seconds > 0) deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
      }
      if (answered >= warmup) us.push_back(std::chrono::duration<double, std::micro>(now - sent[head % depth]).count());
      head++;
    }
    if (k) send_requests(k);
    more = seconds > 0 ? now < deadline : answered < count + warmup; // the clock read above: none more per answer
  }
  const double took = std::chrono::duration<double>(Clock::now() - t_start).count();
  client_cpu_s = thread_cpu_seconds() - client_cpu_s;
  const bool really_mptcp = mpnvme::query_mptcp(c.get()).mptcp;
  ::shutdown(c.get(), SHUT_WR);
  server.join();
  std::sort(us.begin(), us.end());
  auto q = [&](double f) { return us[static_cast<size_t>(f * static_cast<double>(us.size() - 1))]; };
  double sum = 0;
  for (double v : us)
    sum += v;
  const double per_second = static_cast<double>(us.size()) / took;
  return {{"test", "rtt"},
          {"transport", mptcp ? "mptcp" : "tcp"},
          {"mptcp_in_effect", really_mptcp},
          {"wait", busy ? "busy" : "block"},
          {"depth", depth},
          {"request_bytes", request},
          {"response_bytes", response},
          {"count", us.size()},
          {"p50_us", q(0.5)},
          {"p99_us", q(0.99)},
          {"p999_us", q(0.999)},
          {"mean_us", sum / static_cast<double>(us.size())},
          {"per_second", per_second},
          {"client_cpu_us_per_op", client_cpu_s * 1e6 / static_cast<double>(us.size())},
          {"server_cpu_us_per_op", server_cpu_s * 1e6 / static_cast<double>(answered + static_cast<int>(depth))},
          {"server_cpu", server_cpu},
          {"client_cpu", client_cpu}};
}

// One connection streaming from the client to the server. busy: neither
// side sleeps (non-blocking calls spun on), as a polling engine and target
// do; a sleeping receiver costs a wake-up per batch, an IPI on a VM, and
// is then no ceiling for them.
nlohmann::json bulk(bool mptcp, bool busy, double seconds, size_t chunk, int server_cpu, int client_cpu) {
  auto [s, c] = connected_pair(mptcp);
  std::atomic<uint64_t> received{0};
  std::thread server([&, fd = s.get()] {
    pin(server_cpu);
    std::vector<uint8_t> buf(1 << 20);
    for (size_t r; (r = recv_some(fd, buf.data(), buf.size(), busy)) > 0;)
      received.fetch_add(r, std::memory_order_relaxed);
  });
  pin(client_cpu);
  std::vector<uint8_t> buf(chunk, 0x77);
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end)
    send_exact(c.get(), buf.data(), buf.size(), busy);
  const bool really_mptcp = mpnvme::query_mptcp(c.get()).mptcp;
  ::shutdown(c.get(), SHUT_WR);
  server.join();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  return {{"test", "bulk"},
          {"transport", mptcp ? "mptcp" : "tcp"},
          {"mptcp_in_effect", really_mptcp},
          {"wait", busy ? "busy" : "block"},
          {"chunk_bytes", chunk},
          {"seconds", took},
          {"mib_s", static_cast<double>(received.load()) / took / 1048576},
          {"server_cpu", server_cpu},
          {"client_cpu", client_cpu}};
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"mpnvme-floor: raw socket round-trip and bulk-rate floors for the mpnvme bench"};
  std::string transport = "tcp", wait = "block";
  size_t request = 72, response = 4120, chunk = 128 * 1024;
  int count = 20000, server_cpu = 0, client_cpu = 1;
  unsigned depth = 1;
  double seconds = 3;
  auto *r = app.add_subcommand("rtt", "round trips: a capsule-sized request, a C2HData-sized answer");
  auto *b = app.add_subcommand("bulk", "one-way stream rate");
  for (auto *s : {r, b}) {
    s->add_option("--transport", transport, "tcp or mptcp")->check(CLI::IsMember({"tcp", "mptcp"}))->capture_default_str();
    s->add_option("--server-cpu", server_cpu, "CPU of the answering side (-1: not pinned)")->capture_default_str();
    s->add_option("--client-cpu", client_cpu, "CPU of the measuring side (-1: not pinned)")->capture_default_str();
    s->add_option("--wait", wait, "block (calls sleep) or busy (spin on non-blocking calls)")
        ->check(CLI::IsMember({"block", "busy"}))
        ->capture_default_str();
  }
  r->add_option("--request", request, "request bytes (72: a command capsule)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  r->add_option("--response", response, "answer bytes (4120: 4 KiB of C2HData with its header)")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  r->add_option("--depth", depth, "requests outstanding (1: one round trip at a time)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  auto *counted =
      r->add_option("--count", count, "round trips measured")->check(CLI::Range(100, 10000000))->capture_default_str();
  double rtt_seconds = 0;
  r->add_option("--seconds", rtt_seconds, "measure for this long instead (as long as the run it is set beside)")
      ->check(CLI::Range(0.1, 600.0))
      ->excludes(counted);
  b->add_option("--seconds", seconds, "duration")->check(CLI::Range(0.1, 600.0))->capture_default_str();
  b->add_option("--chunk", chunk, "bytes per send")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  std::string addrs, direction;
  double ramp = 1;
  auto *sk = app.add_subcommand("sink", "serve a stream control's connections on every address (the target side)");
  auto *st = app.add_subcommand("stream", "a bench cell's raw control: one connection per address, one direction");
  sk->add_option("--listen", addrs, "ADDR:PORT list, one per path")->required();
  st->add_option("--connect", addrs, "ADDR:PORT list: one connection each")->required();
  st->add_option("--direction", direction, "read (toward this side) or write")
      ->check(CLI::IsMember({"read", "write"}))
      ->required();
  st->add_option("--ramp", ramp, "seconds before measuring")->check(CLI::Range(0.0, 60.0))->capture_default_str();
  st->add_option("--seconds", seconds, "seconds measured")->check(CLI::Range(0.1, 600.0))->capture_default_str();
  unsigned interval_ms = 0;
  st->add_option("--interval", interval_ms, "also report the rate of every interval of this many ms (0: none)")
      ->check(CLI::Range(0u, 10000u))
      ->capture_default_str();
  for (auto *s : {sk, st}) {
    s->add_option("--transport", transport, "tcp or mptcp")->check(CLI::IsMember({"tcp", "mptcp"}))->capture_default_str();
    s->add_option("--chunk", chunk, "bytes per send/recv")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  }
  app.require_subcommand(1);
  if (const int rc = mpnvme::parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    const bool mptcp = transport == "mptcp";
    const auto tr = mptcp ? mpnvme::Transport::Mptcp : mpnvme::Transport::Tcp;
    if (*sk) mpnvme::floor::sink(mpnvme::parse_paths(addrs, mpnvme::kNvmeTcpPort, "--listen"), tr, chunk);
    if (*st) {
      fmt::print("{}\n", mpnvme::floor::stream(mpnvme::parse_paths(addrs, mpnvme::kNvmeTcpPort, "--connect"), tr,
                                               direction == "read", ramp, seconds, chunk, interval_ms)
                             .dump());
      return 0;
    }
    const nlohmann::json out =
        *r ? rtt(mptcp, wait == "busy", request, response, depth, count, rtt_seconds, server_cpu, client_cpu)
           : bulk(mptcp, wait == "busy", seconds, chunk, server_cpu, client_cpu);
    fmt::print("{}\n", out.dump());
  } catch (const std::exception &e) {
    fmt::print(stderr, "mpnvme-floor: {}\n", e.what());
    return 1;
  }
  return 0;
}
