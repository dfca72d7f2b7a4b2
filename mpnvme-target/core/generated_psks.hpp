// SPDX-License-Identifier: GPL-2.0-only
// The TLS PSKs secure channel concatenation generated: a host that passed
// DH-HMAC-CHAP with NEWTLSPSK or REPLACETLSPSK on an admin queue comes
// back over TLS with the identity "NVMe1G<hh> HOSTNQN SUBNQN DIGEST", and
// the TLS server looks its PSK up here (nvmet keeps them in the kernel's
// .nvme keyring). Each (host, subsystem) keeps its kPerPair newest keys,
// one per path or controller it is connected with, and a host's keys go
// when its DH-HMAC-CHAP key changes or goes: a PSK is worth the key it came
// from. The keys stay in SecretBytes (wiped, never dumped) and reach no
// log. Thread-safe; its lock is a leaf (registry.hpp's lock order).
#pragma once
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "lib/tls/tls_psk.hpp"
#include "lib/tls/tls_stream.hpp"

namespace mpnvme::target {

class GeneratedPsks {
public:
  static constexpr size_t kPerPair = 16;
  // A host's key epoch: forget_host moves it on. A transaction notes it
  // when it starts; insert refuses a PSK from a transaction that started
  // before the host's keys changed (false), so that a key rotated out
  // mid-transaction mints no PSK that outlives the rotation.
  uint64_t epoch(const std::string &hostnqn) const;
  bool insert(const tls::OfferedPsk &o, uint64_t epoch);
  std::optional<tls::ServerPsk> find(const std::string &identity) const;
  // REPLACETLSPSK: the PSK a queue ran on gives way to the new one.
  void erase(const std::string &identity);
  void forget_host(const std::string &hostnqn);
  size_t size() const;

private:
  uint64_t epoch_locked(const std::string &hostnqn) const;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> epochs_; // hosts whose keys changed at least once
  std::map<std::string, tls::ServerPsk> by_identity_;
  std::map<std::pair<std::string, std::string>, std::deque<std::string>> newest_; // (host, subsystem) -> identities, oldest first
};

} // namespace mpnvme::target
