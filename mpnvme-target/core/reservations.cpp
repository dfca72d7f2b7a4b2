// SPDX-License-Identifier: GPL-2.0-only
// Reservations: the register, acquire and release state machine and the
// access rule of each reservation type.
#include "mpnvme-target/core/reservations.hpp"

#include <fmt/format.h>

#include "lib/wire/nvme.hpp"
#include "lib/wire/wire.hpp"

namespace mpnvme::target {
using namespace nvme;

namespace {
// Reservation types (RTYPE).
constexpr uint8_t kWriteExclusive = 1, kExclusiveAccess = 2, kWriteExclusiveRegistrants = 3, kExclusiveAccessRegistrants = 4,
                  kWriteExclusiveAll = 5, kExclusiveAccessAll = 6;
constexpr size_t kHeaderLen = 64, kEntryLen = 64; // extended data structures

Reservations::Outcome conflict(std::string why) { return {kStatusReservationConflict, std::move(why)}; }
Reservations::Outcome invalid(std::string why) { return {kStatusInvalidField, std::move(why)}; }
bool valid_type(uint8_t t) { return t >= kWriteExclusive && t <= kExclusiveAccessAll; }
bool ignore_key(uint32_t cdw10) { return cdw10 & (1u << 3); } // IEKEY
} // namespace

// Register's unregister and replace, Acquire and Release act for a
// registered host whose CRKEY is its key (unless IEKEY): a conflict else.
std::optional<Reservations::Outcome> Reservations::refuse_key(const ResvHost &h, uint32_t cdw10, uint64_t crkey) {
  auto it = keys_.find(h.id);
  if (it == keys_.end()) return conflict("the host is not registered");
  if (it->second.nqn != h.nqn) return conflict("its host identifier is registered by another host NQN");
  if (!ignore_key(cdw10) && it->second.key != crkey) return conflict("CRKEY is not the host's key");
  return std::nullopt;
}

bool Reservations::registered(const ResvHost &h) const {
  auto it = keys_.find(h.id);
  return it != keys_.end() && it->second.nqn == h.nqn;
}

bool Reservations::all_registrants() const {
  const uint8_t t = rtype_.load(std::memory_order_relaxed);
  return t == kWriteExclusiveAll || t == kExclusiveAccessAll;
}

bool Reservations::holds(const ResvHost &h) const {
  if (!rtype_.load(std::memory_order_relaxed) || !registered(h)) return false;
  return all_registrants() || holder_ == h.id;
}

void Reservations::reserve(const std::optional<HostId> &holder, uint8_t rtype) {
  holder_ = holder;
  rtype_.store(holder ? rtype : 0, std::memory_order_release);
}

// A holder that unregisters releases the reservation, but one of the "all
// registrants" types stays while any registrant is left.
void Reservations::unregister(const HostId &h) {
  keys_.erase(h);
  if (holder_ != h) return;
  if (all_registrants() && !keys_.empty())
    holder_ = keys_.begin()->first;
  else
    reserve(std::nullopt, 0);
}

int Reservations::unregister_key(uint64_t key, const HostId &keep) {
  std::vector<HostId> gone;
  for (const auto &[h, r] : keys_)
    if (r.key == key && h != keep) gone.push_back(h);
  for (const auto &h : gone)
    unregister(h);
  return static_cast<int>(gone.size());
}

Reservations::Outcome Reservations::reg(const ResvHost &h, uint32_t cdw10, uint64_t crkey, uint64_t nrkey) {
  const uint32_t rrega = cdw10 & 7, cptpl = cdw10 >> 30;
  if (cptpl >= 2) return invalid("CPTPL: reservations do not persist through a power loss here");
  std::lock_guard lk(mu_);
  auto it = keys_.find(h.id);
  switch (rrega) {
  case 0: // register
    if (it != keys_.end()) {
      if (it->second.nqn != h.nqn) return conflict("its host identifier is registered by another host NQN");
      if (it->second.key == nrkey) return {}; // the same registration again
      return conflict("the host is registered with another key");
    }
    keys_[h.id] = {nrkey, h.nqn};
    break;
  case 1: // unregister
  case 2: // replace
    if (auto refused = refuse_key(h, cdw10, crkey)) return *refused;
    if (rrega == 1)
      unregister(h.id);
    else
      it->second.key = nrkey;
    break;
  default: return invalid(fmt::format("RREGA {} is reserved", rrega));
  }
  gen_++;
  return {};
}

Reservations::Outcome Reservations::acquire(const ResvHost &h, uint32_t cdw10, uint64_t crkey, uint64_t prkey) {
  const uint32_t racqa = cdw10 & 7;
  const uint8_t rtype = static_cast<uint8_t>(cdw10 >> 8);
  if (!valid_type(rtype)) return invalid(fmt::format("RTYPE {} is not a reservation type", rtype));
  if (racqa > 2) return invalid(fmt::format("RACQA {} is reserved", racqa));
  std::lock_guard lk(mu_);
  if (auto refused = refuse_key(h, cdw10, crkey)) return *refused;
  const uint8_t held = rtype_.load(std::memory_order_relaxed);
  if (racqa == 0) { // acquire
    if (!held) {
      reserve(h.id, rtype);
      return {};
    }
    if (holds(h) && held == rtype) return {};
    return conflict(fmt::format("the namespace holds a type {} reservation", held));
  }
  // Preempt (1), or preempt and abort (2): there is no command to abort
  // that has not completed, as every I/O command runs to its completion.
  if (!held) {
    if (unregister_key(prkey, h.id) == 0) return conflict("no other registrant has PRKEY");
  } else if (all_registrants()) {
    if (prkey == 0) {
      for (auto other = keys_.begin(); other != keys_.end();)
        other = other->first == h.id ? std::next(other) : keys_.erase(other);
      reserve(h.id, rtype);
    } else if (unregister_key(prkey, h.id) == 0) {
      return conflict("no other registrant has PRKEY");
    }
  } else if (prkey == keys_.at(*holder_).key) {
    unregister_key(prkey, h.id);
    reserve(h.id, rtype);
  } else {
    if (prkey == 0) return invalid("PRKEY 0 does not name a registrant");
    if (unregister_key(prkey, h.id) == 0) return conflict("no other registrant has PRKEY");
  }
  gen_++;
  return {};
}

Reservations::Outcome Reservations::release(const ResvHost &h, uint32_t cdw10, uint64_t crkey) {
  const uint32_t rrela = cdw10 & 7;
  const uint8_t rtype = static_cast<uint8_t>(cdw10 >> 8);
  if (rrela > 1) return invalid(fmt::format("RRELA {} is reserved", rrela));
  std::lock_guard lk(mu_);
  if (auto refused = refuse_key(h, cdw10, crkey)) return *refused;
  if (rrela == 1) { // clear: no reservation, no registrants
    keys_.clear();
    reserve(std::nullopt, 0);
    gen_++;
    return {};
  }
  if (!holds(h)) return {}; // nothing of this host's to release
  // A release of another type than the one held conflicts with it (as
  // nvmet answers it).
  if (rtype != rtype_.load(std::memory_order_relaxed))
    return conflict(fmt::format("RTYPE {} is not the type of the reservation held", rtype));
  reserve(std::nullopt, 0);
  return {};
}

std::vector<uint8_t> Reservations::report() const {
  std::lock_guard lk(mu_);
  std::vector<uint8_t> out(kHeaderLen + keys_.size() * kEntryLen, 0);
  wire::put32(out.data(), 0, gen_);
  out[4] = rtype_.load(std::memory_order_relaxed);
  wire::put16(out.data(), 5, static_cast<uint16_t>(keys_.size()));
  size_t off = kHeaderLen;
  for (const auto &[h, r] : keys_) {
    // Controller ID FFFFh: registrations are the host's (dynamic controllers).
    wire::put16(out.data(), off, 0xffff);
    out[off + 2] = holds({h, r.nqn}) ? 1 : 0;
    wire::put64(out.data(), off + 8, r.key);
    std::copy(h.begin(), h.end(), out.begin() + static_cast<std::ptrdiff_t>(off + 16));
    off += kEntryLen;
  }
  return out;
}

bool Reservations::permits(const ResvHost &h, bool write) const {
  if (!rtype_.load(std::memory_order_acquire)) return true;
  std::lock_guard lk(mu_);
  if (holds(h)) return true;
  const bool registered = this->registered(h);
  switch (rtype_.load(std::memory_order_relaxed)) {
  case kWriteExclusive: return !write;
  case kExclusiveAccess: return false;
  case kWriteExclusiveRegistrants:
  case kWriteExclusiveAll: return registered || !write;
  case kExclusiveAccessRegistrants:
  case kExclusiveAccessAll: return registered;
  default: return true;
  }
}

} // namespace mpnvme::target
