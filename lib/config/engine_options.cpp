// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/engine_options.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <set>
#include <stdexcept>

#include "lib/base/log.hpp"

namespace mpnvme {

namespace {

std::invalid_argument bad(const char *option, const std::string &value, const std::string &accepted) {
  return std::invalid_argument(fmt::format("{}={}: invalid value (accepted: {})", option, value, accepted));
}

// Options whose meaning depends on others (traddr needs trsvcid, the
// binding lists need the number of paths, the host ID the host NQN) are
// kept as text until every option is read.
struct Draft {
  EngineOptions e;
  std::string traddr, trsvcid, host_traddr, host_iface, hostnqn, hostid;
  // DH-HMAC-CHAP: a secret given inline and one read from a file are
  // exclusive; files are read once every option is known.
  std::optional<dhchap::Secret> secret, ctrl_secret;
  std::string secret_file, ctrl_secret_file;
  // TLS: the PSK inline or from a file, the same way.
  std::optional<tls::ConfiguredPsk> tls_key;
  std::string tls_key_file;
};

// `choice`: the value's index in the entry's choices (0 for free text).
using Apply = void (*)(Draft &, const char *name, const std::string &value, unsigned choice);

struct EngineOption {
  mpnvme_option_def def;
  Apply apply;
  // The value is a secret. fio echoes a value its parse-time check
  // refuses, so these are checked when the job starts instead, with
  // messages that never show the value.
  bool secret = false;
};

// A decimal number in min..max.
unsigned number(const char *option, const std::string &v, unsigned min, unsigned max, const std::string &accepted) {
  if (v.empty() || v.size() > 10 || v.find_first_not_of("0123456789") != std::string::npos) throw bad(option, v, accepted);
  const unsigned long long n = std::stoull(v);
  if (n < min || n > max) throw bad(option, v, accepted);
  return static_cast<unsigned>(n);
}

// tls_identity=: free text, but what claims to be an NVMe identity must be one.
std::string tls_identity(const char *option, const std::string &v) {
  if (v.rfind("NVMe", 0) == 0 && !tls::parse_identity(v))
    throw std::invalid_argument(fmt::format("{}={}: not an NVMe PSK identity (expected NVMe<0|1>R<01|02> HOSTNQN SUBNQN, "
                                            "and a digest for version 1)",
                                            option, v));
  return v;
}

// Seconds with an optional fraction ("0.5", "10"); `allow_off` also takes
// -1 and "off" (nullopt: forever / disabled).
std::optional<std::chrono::milliseconds> seconds(const char *option, const std::string &value, bool allow_off,
                                                 const char *accepted) {
  if (allow_off && (value == "-1" || value == "off")) return std::nullopt;
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(value, &used);
  } catch (...) {
  }
  if (used != value.size() || !(v >= 0) || v > 86400 * 365) throw bad(option, value, accepted);
  return std::chrono::milliseconds(static_cast<long>(v * 1000 + 0.5));
}

// A list aligned with the paths: empty, one entry for all, or one per path.
std::vector<std::string> per_path(const char *option, const std::string &value, size_t paths) {
  if (value.empty()) return std::vector<std::string>(paths);
  std::vector<std::string> v;
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    v.push_back(value.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (v.size() == 1) return std::vector<std::string>(paths, v[0]);
  if (v.size() != paths)
    throw std::invalid_argument(fmt::format("{}={}: {} entries for {} traddr paths (give one for all paths, or one per path)",
                                            option, value, v.size(), paths));
  return v;
}

// An entry's conversion; `name` is the entry's own, for its messages.
#define APPLY(body)                                                                                                              \
  +[](Draft &d, const char *name, const std::string &v, unsigned choice) {                                                       \
    (void)d, (void)name, (void)v, (void)choice;                                                                                  \
    body;                                                                                                                        \
  }
constexpr mpnvme_option_choice kNo{"0", "no"}, kYes{"1", "yes"};

// The options in fio's --enghelp order. Each default and each range is
// written here once; the help says the unit and the accepted forms.
constexpr EngineOption kOptions[] = {
    {{"traddr",
      "Target address(es)",
      nullptr,
      "Target address (required); comma-separated list of paths ADDR, ADDR:PORT or [IPV6]:PORT",
      {}},
     APPLY(d.traddr = v; parse_paths(v, kNvmeTcpPort, name))},
    {{"trsvcid", "Target port", kNvmeTcpPort, "Target TCP port for paths that do not name one", {}},
     APPLY(if (!valid_port(v)) throw bad(name, v, "a port number 1..65535"); d.trsvcid = v)},
    {{"transport",
      "Transport",
      "mptcp",
      "Socket protocol: mptcp (falls back to TCP against a plain TCP peer) or tcp",
      {{"mptcp", "Multipath TCP, TCP against a plain TCP peer"}, {"tcp", "plain TCP"}}},
     APPLY(d.e.transport = choice == 0 ? Transport::Mptcp : Transport::Tcp)},
    {{"subnqn", "Subsystem NQN", nullptr, "NQN of the NVMe subsystem to connect to (required, at most 223 bytes)", {}},
     APPLY(if (v.size() > 223) throw std::invalid_argument(fmt::format("{}: longer than 223 bytes", name)); d.e.subnqn = v)},
    {{"hostnqn", "Host NQN", nullptr, "Host NQN (default: /etc/nvme/hostnqn, else a generated uuid NQN)", {}},
     APPLY(d.hostnqn = v)},
    {{"hostid", "Host ID", nullptr, "Host ID UUID (default: /etc/nvme/hostid, else from the host NQN)", {}}, APPLY(d.hostid = v)},
    {{"nsid", "Namespace ID", "1", "Namespace to run I/O against (1..4294967294)", {}},
     APPLY(d.e.nsid = number(name, v, 1, 0xfffffffeu, "a namespace id 1..4294967294"))},
    {{"host_traddr",
      "Host source address",
      nullptr,
      "Local address to bind the queue sockets to: one for all paths, or a comma-separated list aligned with traddr",
      {}},
     APPLY(d.host_traddr = v)},
    {{"host_iface",
      "Host interface",
      nullptr,
      "Network interface to bind the queue sockets to (SO_BINDTODEVICE): one for all paths, or a list aligned with traddr",
      {}},
     APPLY(d.host_iface = v)},
    {{"queue_size",
      "I/O queue size",
      "0",
      "Entries of the I/O queue (2..1024); 0 = iodepth, bounded by the controller's MQES",
      {}},
     APPLY(const std::string accepted = fmt::format("0 (from iodepth) or 2..{}", kMaxQueueSize);
           d.e.queue_size = number(name, v, 0, kMaxQueueSize, accepted); if (d.e.queue_size == 1) throw bad(name, v, accepted))},
    {{"nr_io_queues",
      "I/O queues per path",
      "1",
      "I/O queues (connections) of this job on each path, 1..64, as nvme connect's nr_io_queues; commands spread over them",
      {}},
     APPLY(d.e.nr_io_queues = number(name, v, 1, kMaxIoQueuesPerPath, fmt::format("1..{}", kMaxIoQueuesPerPath)))},
    {{"kato", "Keep alive timeout", "5", "Keep alive timeout in seconds, 0..3600 (Keep Alive sent every kato/2; 0 disables)", {}},
     APPLY(d.e.kato_ms = 1000 * number(name, v, 0, 3600, "seconds 0..3600 (0 disables keep-alive)"))},
    {{"hdr_digest", "Header digest", "0", "Negotiate CRC32C header digests", {kNo, kYes}},
     APPLY(d.e.digests.header = choice == 1)},
    {{"data_digest", "Data digest", "0", "Negotiate CRC32C data digests", {kNo, kYes}}, APPLY(d.e.digests.data = choice == 1)},
    {{"sk_priority",
      "Socket priority pairs",
      nullptr,
      "SO_PRIORITY: a number for all queues, or SELECTOR:VALUE pairs (admin, io, N, N-M)",
      {}},
     APPLY(d.e.sk_priority = PriorityPairs::parse(v, name, 0x7fffffff))},
    {{"tos",
      "TOS pairs",
      nullptr,
      "IP TOS / traffic class: a number for all queues, or SELECTOR:VALUE pairs (admin, io, N, N-M)",
      {}},
     APPLY(d.e.tos = PriorityPairs::parse(v, name, 255))},
    {{"iopolicy",
      "Multipath I/O policy",
      "numa",
      "Path selection across traddr paths: numa, round-robin, queue-depth, service-time",
      {{"numa", "the nearest usable path"},
       {"round-robin", "paths in turn"},
       {"queue-depth", "fewest commands in flight"},
       {"service-time", "least bytes in flight per measured rate"}}},
     APPLY(d.e.iopolicy = static_cast<IoPolicy>(choice))},
    {{"log_level",
      "Log level",
      "warn",
      "Engine log level: trace, debug, info, warn, error, off",
      {{"trace", ""}, {"debug", ""}, {"info", ""}, {"warn", ""}, {"error", ""}, {"off", ""}}},
     APPLY(d.e.log_level = v)},
    {{"trim_mode",
      "Trim command",
      "dsm",
      "NVMe command for fio trims: dsm (Dataset Management deallocate) or write_zeroes",
      {{"dsm", "Dataset Management, deallocate"}, {"write_zeroes", "Write Zeroes"}}},
     APPLY(d.e.trim_mode = static_cast<TrimMode>(choice))},
    {{"disable_sqflow",
      "Disable SQ flow control",
      "1",
      "Ask the controller to disable SQ flow control (enables C2HData SUCCESS, one PDU less per read)",
      {kNo, kYes}},
     APPLY(d.e.disable_sqflow = choice == 1)},
    {{"connect_timeout", "Connect timeout", "10", "Seconds allowed for TCP connect and each admin command (1..600)", {}},
     APPLY(d.e.connect_timeout = std::chrono::seconds(number(name, v, 1, 600, "seconds 1..600")))},
    {{"io_timeout",
      "I/O timeout",
      "30000",
      "Milliseconds (100..3600000) a command may take before its path is declared failed and the command moves to "
      "another path",
      {}},
     APPLY(d.e.recovery.io_timeout = std::chrono::milliseconds(number(name, v, 100, 3600000, "milliseconds 100..3600000")))},
    {{"reconnect_delay",
      "Reconnect delay",
      "10",
      "Seconds between reconnect attempts of a failed path, at least 0.1 (fractions allowed, e.g. 0.5)",
      {}},
     APPLY(d.e.recovery.reconnect_delay = *seconds(name, v, false, "seconds, fractions allowed (e.g. 0.5)");
           if (d.e.recovery.reconnect_delay <
               std::chrono::milliseconds(100)) throw bad(name, v, "seconds, at least 0.1 (fractions allowed)"))},
    {{"ctrl_loss_tmo",
      "Controller loss timeout",
      "600",
      "Seconds a failed path keeps reconnecting before it is given up; -1 reconnects forever",
      {}},
     APPLY(d.e.recovery.ctrl_loss_tmo = seconds(name, v, true, "seconds, or -1 to reconnect forever"))},
    {{"fast_io_fail_tmo",
      "Fast I/O fail timeout",
      "off",
      "Seconds after a path failed that I/O with no other usable path fails instead of waiting; off waits up to "
      "ctrl_loss_tmo",
      {}},
     APPLY(d.e.recovery.fast_io_fail_tmo = seconds(name, v, true, "seconds, or off (-1)"))},
    {{"max_retries",
      "Command retries",
      "5",
      "Times (0..100) a command that failed without DNR and without a path error is retried (nvme_core.max_retries)",
      {}},
     APPLY(d.e.max_retries = number(name, v, 0, 100, "0..100"))},
    {{"path_stats",
      "Per-path statistics file",
      nullptr,
      "Append per-path statistics of each job as one JSON line to this file",
      {}},
     APPLY(d.e.path_stats = v)},
    {{"fabrics_disconnect",
      "Fabrics Disconnect",
      "0",
      "Send the Fabrics Disconnect command on each I/O queue at the end (the Linux host just closes it)",
      {kNo, kYes}},
     APPLY(d.e.fabrics_disconnect = choice == 1)},
    {{"poll",
      "Completion polling",
      "hybrid",
      "How to wait for completions: hybrid (spin about twice the recent completion time, then sleep), block (sleep in "
      "epoll), busy (spin on the sockets, a core per job)",
      {{"hybrid", "spin about twice the recent completion time, then sleep"},
       {"block", "sleep in epoll"},
       {"busy", "spin on the sockets, a core per job"}}},
     APPLY(d.e.poll = static_cast<PollMode>(choice))},
    {{"defer_send",
      "Defer sends to getevents",
      "1",
      "Hold committed commands until fio next waits for completions and send them in one write, as polling hosts do "
      "(issue time is stamped at the send); 0 sends at every commit",
      {kNo, kYes}},
     APPLY(d.e.defer_send = choice == 1)},
    {{"dhchap_secret",
      "DH-HMAC-CHAP host secret",
      nullptr,
      "The host's DH-HMAC-CHAP secret (DHHC-1:NN:BASE64: as nvme gen-dhchap-key prints it): authenticate every queue "
      "where the controller asks for it; never logged",
      {}},
     APPLY(d.secret = dhchap::parse_secret(v, name)),
     true},
    {{"dhchap_ctrl_secret",
      "DH-HMAC-CHAP controller secret",
      nullptr,
      "The controller's DH-HMAC-CHAP secret: bidirectional authentication on every queue, a controller that cannot prove it "
      "holds this secret is not used; needs dhchap_secret; never logged",
      {}},
     APPLY(d.ctrl_secret = dhchap::parse_secret(v, name)),
     true},
    {{"dhchap_secret_file",
      "DH-HMAC-CHAP host secret file",
      nullptr,
      "A file whose first line is the host's secret (instead of dhchap_secret=, keeps it out of ps and job files; "
      "refused when group or others may read it)",
      {}},
     APPLY(d.secret_file = v)},
    {{"dhchap_ctrl_secret_file",
      "DH-HMAC-CHAP controller secret file",
      nullptr,
      "A file whose first line is the controller's secret (instead of dhchap_ctrl_secret=)",
      {}},
     APPLY(d.ctrl_secret_file = v)},
    {{"dhchap_hash",
      "DH-HMAC-CHAP hash functions",
      "sha256,sha384,sha512",
      "The hash functions offered to the controller, comma-separated: sha256, sha384, sha512 (or hmac(sha256), ...)",
      {}},
     APPLY(d.e.auth.hashes = dhchap::parse_hash_list(v, name))},
    {{"dhchap_dhgroup",
      "DH-HMAC-CHAP DH groups",
      "null,ffdhe2048,ffdhe3072,ffdhe4096,ffdhe6144,ffdhe8192",
      "The Diffie-Hellman groups offered to the controller, comma-separated: null (no exchange), ffdhe2048, ffdhe3072, "
      "ffdhe4096, ffdhe6144, ffdhe8192",
      {}},
     APPLY(d.e.auth.groups = dhchap::parse_dhgroup_list(v, name))},
    {{"tls",
      "TLS 1.3 secure channel",
      "0",
      "1: every queue opens with a TLS 1.3 handshake (PSK, as the NVMe/TCP secure channel), needs tls_key or tls_key_file",
      {kNo, kYes}},
     APPLY(d.e.tls.enabled = choice == 1)},
    {{"tls_key",
      "TLS PSK",
      nullptr,
      "The configured PSK (NVMeTLSkey-1:NN:BASE64: as nvme gen-tls-key prints it), from which the retained and TLS PSKs "
      "are derived for each subsystem; never logged",
      {}},
     APPLY(d.tls_key = tls::parse_psk(v, name)),
     true},
    {{"tls_key_file",
      "TLS PSK file",
      nullptr,
      "A file whose first line is the configured PSK (instead of tls_key=; refused when group or others may read it)",
      {}},
     APPLY(d.tls_key_file = v)},
    {{"tls_identity",
      "TLS PSK identity",
      nullptr,
      "The PSK identity to offer instead of the derived version 1 one (NVMe1R<hh> HOSTNQN SUBNQN DIGEST): an NVMe identity "
      "(NVMe0R01 HOSTNQN SUBNQN for targets that know only version 0) gets its TLS PSK derived, any other text uses the "
      "retained PSK as is",
      {}},
     APPLY(d.e.tls.identity = tls_identity(name, v))},
    {{"tls_ciphers",
      "TLS cipher suites",
      "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384",
      "The TLS 1.3 cipher suites allowed, comma-separated; the PSK's hash picks one of them (SHA-256: "
      "TLS_AES_128_GCM_SHA256, SHA-384: TLS_AES_256_GCM_SHA384)",
      {}},
     APPLY(d.e.tls.suites = tls::parse_suite_list(v, name))},
    {{"tls_compat",
      "TLS PSK derivation of older libnvme",
      "0",
      "1: derive the retained and TLS PSKs as libnvme did before it followed RFC 8446's HkdfLabel (nvme-cli 2.13 of Debian "
      "13 inserts keys so; nvme-cli --compat), for targets whose keys came from it",
      {kNo, kYes}},
     APPLY(d.e.tls.compat = choice == 1)},
    {{"tls_mode",
      "TLS record layer",
      "auto",
      "Who encrypts the records once the handshake is done: auto (kernel TLS where the socket takes it, TCP with the tls "
      "module, else user space), ktls (kernel TLS or fail), user (user space, the only way over MPTCP)",
      {{"auto", "kernel TLS where the socket takes it, else user space"},
       {"ktls", "kernel TLS (TCP_ULP tls) or fail"},
       {"user", "the user-space record layer (OpenSSL)"}}},
     APPLY(d.e.tls.mode = static_cast<tls::Mode>(choice))},
    {{"concat",
      "Secure channel concatenation",
      "0",
      "1: the admin queue's DH-HMAC-CHAP generates the TLS PSK (as nvme connect --concat): the admin queue starts over on "
      "TLS with it and every I/O queue opens with it; needs dhchap_secret, no tls_key (the controller is not proven: it "
      "answers no challenge under concatenation)",
      {kNo, kYes}},
     APPLY(d.e.tls.concat = choice == 1)},
    {{"mptcp_join_wait",
      "Wait for MPTCP joins",
      "0",
      "Milliseconds (0..10000) an I/O queue's MPTCP connection may wait, after connecting, for its subflows to settle (no "
      "change for 20 ms) before I/O starts; 0 does not wait",
      {}},
     APPLY(d.e.mptcp_join_wait = std::chrono::milliseconds(number(name, v, 0, 10000, "milliseconds 0..10000")))},
};
#undef APPLY
static_assert(std::size(kOptions) <= MPNVME_OPTION_SLOTS, "raise MPNVME_OPTION_SLOTS");

const EngineOption *find(const std::string &name) {
  for (const EngineOption &o : kOptions)
    if (name == o.def.name) return &o;
  return nullptr;
}

const mpnvme_option_choice *choices_of(const char *name) { return find(name)->def.choices; }

// A job file that reads a value from an unset environment variable leaves
// "${VAR}" in it (fio keeps it literally): say which variable, instead of
// a parse error about the value.
void refuse_unset_variable(const char *option, const std::string &v) {
  const size_t at = v.find("${");
  if (at == std::string::npos) return;
  const size_t end = v.find('}', at);
  const std::string var = v.substr(at + 2, end == std::string::npos ? std::string::npos : end - at - 2);
  throw std::invalid_argument(
      fmt::format("{}={}: the environment variable {} is not set (the job file reads {} from it)", option, v, var, option));
}

// Check `v` against the entry's choices and convert it into `d`.
void apply_one(const EngineOption &o, Draft &d, const std::string &v) {
  refuse_unset_variable(o.def.name, v);
  unsigned choice = 0;
  if (o.def.choices[0].value) {
    std::string accepted;
    for (; choice < MPNVME_OPTION_CHOICES && o.def.choices[choice].value; choice++) {
      if (v == o.def.choices[choice].value) break;
      accepted += fmt::format("{}{}", accepted.empty() ? "" : ", ", o.def.choices[choice].value);
    }
    if (choice == MPNVME_OPTION_CHOICES || !o.def.choices[choice].value) throw bad(o.def.name, v, accepted);
  }
  o.apply(d, o.def.name, v, choice);
}

// A secret given inline sits in the job file or on fio's command line,
// where other users may read it (ps, /proc/PID/cmdline): said once per
// process, naming the option that keeps it out.
void warn_inline(const char *option, const char *file_option) {
  static std::set<std::string> said;
  static std::mutex mu;
  std::lock_guard lk(mu);
  if (said.insert(option).second)
    log().warn("{} is given inline, where other users may read it (the job file, fio's command line); {}=FILE keeps it "
               "in a file only its owner reads",
               option, file_option);
}

// One secret from its inline option or its file option, never both.
std::optional<dhchap::Secret> one_secret(std::optional<dhchap::Secret> &inline_secret, const std::string &file,
                                         const char *option, const char *file_option) {
  if (inline_secret && !file.empty())
    throw std::invalid_argument(fmt::format("{} and {}: give the secret once", option, file_option));
  if (!file.empty()) return dhchap::read_secret_file(file, file_option);
  if (inline_secret) warn_inline(option, file_option);
  return std::move(inline_secret);
}

void combine_auth(Draft &d) {
  d.e.auth.secret = one_secret(d.secret, d.secret_file, "dhchap_secret", "dhchap_secret_file");
  d.e.auth.ctrl_secret = one_secret(d.ctrl_secret, d.ctrl_secret_file, "dhchap_ctrl_secret", "dhchap_ctrl_secret_file");
  if (d.e.auth.ctrl_secret && !d.e.auth.secret)
    throw std::invalid_argument("dhchap_ctrl_secret: needs dhchap_secret (the controller is authenticated in the same "
                                "transaction as the host)");
}

// concat=1: what Linux refuses with --concat (tls, a TLS key, no
// DH-HMAC-CHAP secret), and what would leave the transaction nothing to
// generate a TLS PSK from.
// Kernel TLS over MPTCP: refused for configured and generated PSKs alike.
void check_tls_mode(const Draft &d) {
  if (d.e.tls.mode == tls::Mode::Kernel && d.e.transport == Transport::Mptcp)
    throw std::invalid_argument("tls_mode=ktls: MPTCP sockets do not take kernel TLS (tls_mode=user or auto, or transport=tcp)");
}

void check_concat(const Draft &d) {
  if (d.e.tls.enabled)
    throw std::invalid_argument("concat=1 and tls=1: concatenation generates the TLS PSK, tls=1 takes a configured one; "
                                "choose one");
  if (d.tls_key || !d.tls_key_file.empty() || !d.e.tls.identity.empty())
    throw std::invalid_argument(
        fmt::format("{}: concat=1 generates the TLS PSK and its identity; drop it", d.tls_key                 ? "tls_key"
                                                                                    : !d.tls_key_file.empty() ? "tls_key_file"
                                                                                                              : "tls_identity"));
  if (!d.e.auth.secret)
    throw std::invalid_argument("concat=1: needs dhchap_secret= (the TLS PSK comes from DH-HMAC-CHAP on the admin queue)");
  if (d.e.auth.ctrl_secret)
    throw std::invalid_argument("dhchap_ctrl_secret with concat=1: under concatenation the host sends S2 = 0 and the "
                                "controller answers no challenge (as between Linux hosts and nvmet), so the controller "
                                "secret would prove nothing; drop it");
  if (dhchap::concat_usable(d.e.auth.groups).empty())
    throw std::invalid_argument("dhchap_dhgroup: concat=1 needs a DH group other than null (its session key makes the PSK)");
  const std::vector<dhchap::Hash> hashes = dhchap::concat_usable(d.e.auth.hashes); // what concat=1 offers
  if (hashes.empty())
    throw std::invalid_argument("dhchap_hash: concat=1 needs sha256 or sha384 (TLS 1.3 has no suite for SHA-512)");
  for (dhchap::Hash h : hashes) {
    const auto suite = static_cast<tls::PskHash>(h);
    if (std::find(d.e.tls.suites.begin(), d.e.tls.suites.end(), suite) == d.e.tls.suites.end())
      throw std::invalid_argument(fmt::format("tls_ciphers: leaves out {}, which the PSK of a {} transaction needs (dhchap_hash= "
                                              "without it offers it not)",
                                              tls::cipher_suite(suite), dhchap::hash_name(h)));
  }
  check_tls_mode(d);
}

void combine_tls(Draft &d) {
  if (d.e.tls.concat) return check_concat(d);
  if (d.tls_key && !d.tls_key_file.empty()) throw std::invalid_argument("tls_key and tls_key_file: give the key once");
  if (!d.tls_key_file.empty())
    d.tls_key = tls::read_psk_file(d.tls_key_file, "tls_key_file");
  else if (d.tls_key)
    warn_inline("tls_key", "tls_key_file");
  d.e.tls.key = std::move(d.tls_key);
  if (!d.e.tls.enabled) {
    if (d.e.tls.key) throw std::invalid_argument("tls_key: needs tls=1 (a key alone does not turn TLS on)");
    return;
  }
  if (!d.e.tls.key)
    throw std::invalid_argument("tls=1: needs tls_key= or tls_key_file= (the configured PSK, NVMeTLSkey-1:NN:BASE64: as "
                                "nvme gen-tls-key prints it)");
  check_tls_mode(d);
  const auto id = tls::parse_identity(d.e.tls.identity);
  const tls::PskHash h = id ? id->hash : tls::psk_hash(*d.e.tls.key);
  if (std::find(d.e.tls.suites.begin(), d.e.tls.suites.end(), h) == d.e.tls.suites.end())
    throw std::invalid_argument(
        fmt::format("tls_ciphers: the PSK goes with {}, which the list leaves out", tls::cipher_suite(h)));
}

// The options that need others, once all are read.
void combine(Draft &d) {
  d.e.paths = parse_paths(d.traddr, d.trsvcid.empty() ? kNvmeTcpPort : d.trsvcid, "traddr");
  if (d.e.subnqn.empty()) throw std::invalid_argument("subnqn: required (the NVMe subsystem NQN to connect to)");
  d.e.host = resolve_host_identity(d.hostnqn, d.hostid);
  d.e.host_traddr = per_path("host_traddr", d.host_traddr, d.e.paths.size());
  d.e.host_iface = per_path("host_iface", d.host_iface, d.e.paths.size());
  combine_auth(d);
  combine_tls(d);
}

} // namespace

const char *iopolicy_name(IoPolicy p) { return choices_of("iopolicy")[static_cast<unsigned>(p)].value; }

bool kernel_has_iopolicy(IoPolicy p) { return p != IoPolicy::ServiceTime; }

std::vector<std::string> kernel_iopolicy_names() {
  std::vector<std::string> names;
  for (unsigned i = 0; choices_of("iopolicy")[i].value; i++)
    if (kernel_has_iopolicy(static_cast<IoPolicy>(i))) names.push_back(choices_of("iopolicy")[i].value);
  return names;
}

const mpnvme_option_def *find_engine_option(const std::string &name) {
  const EngineOption *o = find(name);
  return o ? &o->def : nullptr;
}

EngineOptions parse_engine_options(const OptionValues &given) {
  for (const auto &[name, value] : given)
    if (!find(name)) throw std::invalid_argument(fmt::format("{}={}: not an mpnvme engine option", name, value));
  Draft d;
  for (const EngineOption &o : kOptions) {
    const auto it = given.find(o.def.name);
    const std::string v = it != given.end() && !it->second.empty() ? it->second : o.def.def ? o.def.def : "";
    if (!v.empty()) apply_one(o, d, v);
  }
  combine(d);
  return d.e;
}

} // namespace mpnvme

extern "C" const mpnvme_option_def *mpnvme_option_at(unsigned int i) {
  return i < std::size(mpnvme::kOptions) ? &mpnvme::kOptions[i].def : nullptr;
}

extern "C" int mpnvme_check_option(unsigned int i, const char *value, char *msg, unsigned long msg_size) {
  if (i >= std::size(mpnvme::kOptions)) return -1;
  // A secret is checked when the job starts: fio echoes the value of an
  // option its parse-time check refuses.
  if (mpnvme::kOptions[i].secret) return 0;
  try {
    mpnvme::Draft scratch;
    mpnvme::apply_one(mpnvme::kOptions[i], scratch, value ? value : "");
    return 0;
  } catch (const std::exception &e) {
    snprintf(msg, msg_size, "%s", e.what());
    return -1;
  }
}

extern "C" int mpnvme_option_is_secret(const char *name) {
  const mpnvme::EngineOption *o = name ? mpnvme::find(name) : nullptr;
  return o && o->secret;
}
