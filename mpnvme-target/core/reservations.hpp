// SPDX-License-Identifier: GPL-2.0-only
// A namespace's reservations (NVMe base specification, "Reservations";
// as nvmet keeps them): registrants by host identifier with their keys,
// at most one reservation with its type and holder, the generation
// counter, and whether a host may read or write under the reservation.
// Registrations belong to hosts, not controllers: a host's controllers
// share them. They are keyed by the Connect host identifier, as nvmet keys
// them, and tied to the host NQN that registered: another NQN presenting
// the same host identifier is a different, unregistered host (nvmet trusts
// the identifier alone). Not kept through a power loss (no PTPL), no
// reservation notification log.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mpnvme::target {

using HostId = std::array<uint8_t, 16>;
// A host as its controllers present it: Connect's host identifier and NQN.
struct ResvHost {
  ResvHost(const HostId &i, std::string n = {}) : id(i), nqn(std::move(n)) {} // NOLINT: a bare id is a host without an NQN
  HostId id;
  std::string nqn;
};

class Reservations {
public:
  // The outcome of a reservation command: an NVMe status (0: success) and,
  // for a refusal, why (for the log).
  struct Outcome {
    uint16_t status = 0;
    std::string why;
  };
  // Reservation Register (CDW10 and the data's CRKEY, NRKEY), Acquire
  // (CRKEY, PRKEY) and Release (CRKEY) from host `h`.
  Outcome reg(const ResvHost &h, uint32_t cdw10, uint64_t crkey, uint64_t nrkey);
  Outcome acquire(const ResvHost &h, uint32_t cdw10, uint64_t crkey, uint64_t prkey);
  Outcome release(const ResvHost &h, uint32_t cdw10, uint64_t crkey);
  // The Reservation Status Extended Data Structure (Reservation Report
  // with EDS set: 128-bit host identifiers).
  std::vector<uint8_t> report() const;
  // Whether host `h` may run a command that reads or (write) modifies the
  // namespace; false is a Reservation Conflict. No lock while no
  // reservation is held.
  bool permits(const ResvHost &h, bool write) const;

private:
  struct Registrant {
    uint64_t key;
    std::string nqn; // the host NQN that registered
  };
  using Keys = std::map<HostId, Registrant>;
  std::optional<Outcome> refuse_key(const ResvHost &h, uint32_t cdw10, uint64_t crkey);
  bool all_registrants() const; // locked: type 5 or 6, every registrant holds it
  bool registered(const ResvHost &h) const;
  bool holds(const ResvHost &h) const;
  // Unregister every host but `keep` whose key is `key`; how many went.
  int unregister_key(uint64_t key, const HostId &keep);
  void unregister(const HostId &h);
  void reserve(const std::optional<HostId> &holder, uint8_t rtype);

  mutable std::mutex mu_;
  std::atomic<uint8_t> rtype_{0}; // 0: no reservation (read without the lock)
  uint32_t gen_ = 0;
  std::optional<HostId> holder_;
  Keys keys_; // the registrants
};

} // namespace mpnvme::target
