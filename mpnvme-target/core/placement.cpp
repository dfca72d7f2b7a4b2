// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/core/placement.hpp"

#include "mpnvme-target/core/submission_queue.hpp"

namespace mpnvme::target {

void Placement::grant(SubmissionQueue &q, Request &r, Namespace &ns, uint64_t epoch) {
  q_ = &q;
  r_ = &r;
  ns_ = &ns;
  ticket_ = epoch;
  revoked_ = 0;
}

// The fast way in: the namespace's rights are as they were when the gate
// last said yes. After a change, the gate is asked again with the epoch
// read before asking, so that a change during the check is not missed.
bool Placement::enter() {
  if (revoked_) return false;
  while (!ns_->fence->enter(ticket_)) {
    const uint64_t epoch = ns_->fence->epoch();
    if (Verdict v = q_->may_place(*r_, *ns_); !v) {
      revoked_ = v.status;
      return false;
    }
    ticket_ = epoch;
  }
  return true;
}

void Placement::leave() { ns_->fence->leave(); }

} // namespace mpnvme::target
