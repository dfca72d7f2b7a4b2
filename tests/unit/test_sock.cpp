// SPDX-License-Identifier: GPL-2.0-only
// The socket layer on loopback: MPTCP really in effect against an MPTCP
// listener, fallback reported against a TCP listener, priority and TOS set
// per socket, and failures that name the address and the step.
#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/host/mptcp_advice.hpp"
#include "lib/net/netstat.hpp"
#include "lib/net/sock.hpp"
#include "tests/unit/cmocka_cxx.hpp"

using namespace mpnvme;

namespace {
constexpr int kIpprotoMptcp = 262;

// A listener on 127.0.0.1 with an ephemeral port.
struct Listener {
  int fd = -1;
  std::string port;
  explicit Listener(bool mptcp) {
    fd = ::socket(AF_INET, SOCK_STREAM, mptcp ? kIpprotoMptcp : IPPROTO_TCP);
    assert_true(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    assert_int_equal(::listen(fd, 4), 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    port = std::to_string(ntohs(a.sin_port));
  }
  ~Listener() { ::close(fd); }
  PathAddr addr() const { return {"127.0.0.1", port, false}; }
};

int get_int(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
  return v;
}

template <typename F> void expect_error(F &&f, const char *needle) {
  try {
    f();
  } catch (const std::runtime_error &e) {
    if (!strstr(e.what(), needle)) fail_msg("message '%s' lacks '%s'", e.what(), needle);
    return;
  }
  fail_msg("no error, expected '%s'", needle);
}

template <typename F> void expect_step(F &&f, const char *needle, SocketStep step) {
  try {
    f();
  } catch (const SocketError &e) {
    if (!strstr(e.what(), needle)) fail_msg("message '%s' lacks '%s'", e.what(), needle);
    if (e.step != step) fail_msg("'%s': step %d, expected %d", e.what(), static_cast<int>(e.step), static_cast<int>(step));
    if (strstr(e.what(), "host_") || strstr(e.what(), "sk_priority")) fail_msg("'%s' names an engine option", e.what());
    return;
  }
  fail_msg("no SocketError, expected '%s'", needle);
}
} // namespace

static void mptcp_to_mptcp_listener(void **) {
  Listener l(true);
  SocketSettings s;
  Fd fd = connect_stream(l.addr(), s);
  int peer = ::accept(l.fd, nullptr, nullptr);
  assert_true(peer >= 0);
  MptcpState st = query_mptcp(fd.get());
  assert_true(st.mptcp);
  assert_true(st.has_local_addr); // every kernel this runs on (5.19+) reports the endpoints
  assert_int_equal(get_int(fd.get(), SOL_SOCKET, SO_PROTOCOL), kIpprotoMptcp);
  ::close(peer);
}

// The one-subflow warning names the first setting in the path manager's
// chain that is zero, as the ip-mptcp(8) command that changes it.
static void one_subflow_advice_names_the_setting(void **) {
  MptcpState st;
  st.mptcp = true;
  st.has_local_addr = true;
  assert_non_null(strstr(host::one_subflow_advice(st).c_str(), "ip mptcp limits set subflows"));
  st.subflows_max = 2;
  std::string a = host::one_subflow_advice(st);
  assert_non_null(strstr(a.c_str(), "signal"));
  assert_non_null(strstr(a.c_str(), "limits set add_addr_accepted"));
  assert_non_null(strstr(a.c_str(), "subflow` for each other local address"));
  st.add_addr_accepted_max = 8;
  assert_null(strstr(host::one_subflow_advice(st).c_str(), "limits set add_addr_accepted"));
  st.local_addr_max = 1;
  assert_non_null(strstr(host::one_subflow_advice(st).c_str(), "MP_JOIN"));
  st.local_addr_max = 0;
  st.add_addr_accepted = 2;
  assert_non_null(strstr(host::one_subflow_advice(st).c_str(), "MP_JOIN"));
}

// The kernel's counters as nstat reads them: the named group's column,
// not the same name in another group, nothing for a missing counter; and
// the live file of this namespace holds TcpExt.
static void netstat_counter_reads_the_named_group(void **) {
  std::istringstream text("TcpExt: SyncookiesSent Blackhole\nTcpExt: 5 7\n"
                          "MPTcpExt: MPCapableSYNRX Blackhole\nMPTcpExt: 3 2\n");
  assert_int_equal(netstat_counter(text, "MPTcpExt", "Blackhole").value_or(99), 2);
  text.clear(), text.seekg(0);
  assert_int_equal(netstat_counter(text, "TcpExt", "Blackhole").value_or(99), 7);
  text.clear(), text.seekg(0);
  assert_false(netstat_counter(text, "MPTcpExt", "NoSuchCounter").has_value());
  assert_true(netstat_counter("TcpExt", "SyncookiesSent").has_value());
}

// A fallback after the kernel's blackhole detection says so, with the
// setting that ends it; without it, the peer is the suspect.
static void fallback_advice_names_the_blackhole_timeout(void **) {
  const std::string detected = host::fallback_advice(2);
  assert_non_null(strstr(detected.c_str(), "net.mptcp.blackhole_timeout"));
  assert_non_null(strstr(detected.c_str(), "2 time(s)"));
  for (const auto none : {std::optional<uint64_t>{}, std::optional<uint64_t>{0}})
    assert_non_null(strstr(host::fallback_advice(none).c_str(), "does not speak MPTCP"));
}

static void mptcp_falls_back_against_tcp_listener(void **) {
  Listener l(false);
  Fd fd = connect_stream(l.addr(), SocketSettings{});
  int peer = ::accept(l.fd, nullptr, nullptr);
  assert_true(peer >= 0);
  assert_false(query_mptcp(fd.get()).mptcp);
  ::close(peer);
}

static void tcp_transport_is_plain_tcp(void **) {
  Listener l(true);
  SocketSettings s;
  s.transport = Transport::Tcp;
  Fd fd = connect_stream(l.addr(), s);
  // The socket itself is TCP, not an MPTCP socket that fell back.
  assert_int_equal(get_int(fd.get(), SOL_SOCKET, SO_PROTOCOL), IPPROTO_TCP);
  assert_false(query_mptcp(fd.get()).mptcp);
}

static void priority_and_tos_applied(void **) {
  Listener l(false);
  SocketSettings s;
  s.transport = Transport::Tcp;
  s.priority = 5;
  s.tos = 0xb8;
  Fd fd = connect_stream(l.addr(), s);
  // TOS first, then priority: TCP's IP_TOS would otherwise rewrite priority.
  assert_int_equal(get_int(fd.get(), SOL_SOCKET, SO_PRIORITY), 5);
  assert_int_equal(get_int(fd.get(), IPPROTO_IP, IP_TOS), 0xb8);
  s.transport = Transport::Mptcp;
  s.tos.reset();
  Fd fd2 = connect_stream(l.addr(), s);
  assert_int_equal(get_int(fd2.get(), SOL_SOCKET, SO_PRIORITY), 5);
}

static void failures_name_address_and_step(void **) {
  Listener l(false);
  PathAddr closed = l.addr();
  ::close(l.fd);
  l.fd = ::socket(AF_INET, SOCK_STREAM, 0); // keep the destructor harmless
  expect_error([&] { connect_stream(closed, SocketSettings{}); }, "connect: Connection refused");
  expect_error([&] { connect_stream(closed, SocketSettings{}); }, closed.display().c_str());
  SocketSettings s;
  s.host_traddr = "192.0.2.1";
  // This layer says what failed; the engine and the target add their own
  // option names (SocketError::step tells them which).
  expect_step([&] { connect_stream(closed, s); }, "bind to source address 192.0.2.1", SocketStep::Source);
  s.host_traddr = "fe80::1";
  expect_step([&] { connect_stream(closed, s); }, "source address fe80::1 is not a numeric address", SocketStep::Source);
  s.host_traddr.clear();
  s.host_iface = "no-such-if0";
  expect_step([&] { connect_stream(closed, s); }, "bind to device no-such-if0", SocketStep::Device);
  expect_step([&] { connect_stream(closed, SocketSettings{}); }, "connect", SocketStep::Connect);
}

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(mptcp_to_mptcp_listener),
      cmocka_unit_test(mptcp_falls_back_against_tcp_listener),
      cmocka_unit_test(tcp_transport_is_plain_tcp),
      cmocka_unit_test(priority_and_tos_applied),
      cmocka_unit_test(failures_name_address_and_step),
      cmocka_unit_test(one_subflow_advice_names_the_setting),
      cmocka_unit_test(netstat_counter_reads_the_named_group),
      cmocka_unit_test(fallback_advice_names_the_blackhole_timeout),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
