// SPDX-License-Identifier: GPL-2.0-only
// A write's right to place its data in a namespace, held while the data
// is on its way: the transport brackets every receive and copy into the
// namespace with enter/leave (lib/wire's PlacementGuard), and each enter
// that finds the namespace's rights changed asks the admission gate again.
// Refused once, the request is revoked for good: the rest of its data is
// read and dropped, and it completes with the gate's status.
#pragma once
#include <cstdint>

#include "lib/wire/stream_codec.hpp"

namespace mpnvme::target {

struct Namespace;
struct Request;
class SubmissionQueue;

class Placement final : public PlacementGuard {
public:
  // Grant `r` of queue `q` the right to place in `ns`, as checked at `epoch`.
  void grant(SubmissionQueue &q, Request &r, Namespace &ns, uint64_t epoch);
  void clear() { ns_ = nullptr, revoked_ = 0; }
  bool granted() const { return ns_ != nullptr; }
  Namespace *ns() const { return ns_; }
  // Non-zero: the status of the refusal that revoked it.
  uint16_t revoked() const { return revoked_; }
  bool enter() override;
  void leave() override;

private:
  SubmissionQueue *q_ = nullptr;
  Request *r_ = nullptr;
  Namespace *ns_ = nullptr;
  uint64_t ticket_ = 0;
  uint16_t revoked_ = 0;
};

} // namespace mpnvme::target
