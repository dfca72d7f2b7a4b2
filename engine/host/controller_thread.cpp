// SPDX-License-Identifier: GPL-2.0-only
// Controller: the admin thread. While live it keeps Keep Alive, one
// Asynchronous Event Request and ANA log reads going on the admin queue and
// runs the jobs' requests (identify, attach); on a failure it resets the
// association and reconnects every reconnect_delay until ctrl_loss_tmo.
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <nvme/types.h>
#include <poll.h>
#include <unistd.h>

#include "engine/host/controller.hpp"
#include "lib/base/log.hpp"

namespace mpnvme::host {

bool HostController::connect_first() {
  try {
    connect_association();
    rec_.connected();
    return true;
  } catch (const std::exception &e) {
    admin_.reset();
    rec_.first_connect_failed(Clock::now(), e.what());
    return false;
  }
}

void HostController::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
  thread_id_ = thread_.get_id();
}

void HostController::wake_self() const {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

void HostController::wake_jobs() const {
  std::lock_guard lk(mu_);
  for (const auto &a : attachments_)
    a->wake();
}

void HostController::report_failure(uint32_t generation, const std::string &why) {
  if (generation != this->generation()) return; // that association is already gone
  {
    std::lock_guard lk(mu_);
    if (failed_generation_ == generation) return;
    job_failure_ = why;
  }
  failed_generation_ = generation;
  wake_self();
}

void HostController::request_ana_read(std::atomic<uint64_t> *mark) {
  ana_reads_.request(mark);
  wake_self();
}

// Run `fn` on the admin thread (or here, before it runs), waiting for it;
// its exception comes back to the caller.
void HostController::call(const std::function<void()> &fn) {
  if (!thread_.joinable() || std::this_thread::get_id() == thread_id_) return fn();
  Task t{fn, nullptr, false};
  std::unique_lock lk(mu_);
  tasks_.push_back(&t);
  wake_self();
  task_done_.wait(lk, [&] { return t.done; });
  if (t.error) std::rethrow_exception(t.error);
}

void HostController::run_tasks() {
  for (;;) {
    Task *t;
    {
      std::lock_guard lk(mu_);
      if (tasks_.empty()) return;
      t = tasks_.front();
      tasks_.erase(tasks_.begin());
    }
    try {
      t->fn();
    } catch (...) {
      t->error = std::current_exception();
    }
    {
      std::lock_guard lk(mu_);
      t->done = true;
    }
    task_done_.notify_all();
  }
}

void HostController::wait_for_work(int timeout_ms) {
  pollfd p[2] = {{wake_.get(), POLLIN, 0}, {admin_ ? admin_->fd() : -1, POLLIN, 0}};
  if (admin_ && admin_->wants_write()) p[1].events |= POLLOUT;
  if (::poll(p, admin_ ? 2 : 1, timeout_ms) > 0 && (p[0].revents & POLLIN)) {
    uint64_t v;
    [[maybe_unused]] ssize_t n = ::read(wake_.get(), &v, sizeof v);
  }
}

void HostController::run() {
  while (!stop_) {
    switch (state()) {
    case CtrlState::Live: live_step(); break;
    case CtrlState::Resetting: resetting_step(); break;
    case CtrlState::Connecting: reconnect_step(); break;
    case CtrlState::Deleted:
      run_tasks();
      wait_for_work(1000);
      break;
    }
  }
  run_tasks(); // nobody waits forever on a task at exit
}

void HostController::submit_async(const nvme::Sqe &sqe, void *cookie, uint8_t *data, uint32_t len) {
  Command c;
  c.sqe = sqe;
  c.cookie = cookie;
  c.data = data;
  c.len = len;
  c.dir = data ? DataDir::FromController : DataDir::None;
  if (admin_->queue().submit(c)) admin_->send();
}

void HostController::live_step() {
  const auto now = Clock::now();
  const auto kato = std::chrono::milliseconds(cfg_.kato_ms);
  if (!aer_outstanding_) {
    aer_outstanding_ = true;
    submit_async(nvme::make_cmd(nvme_admin_async_event, 0), &aer_cookie_);
  }
  if (cfg_.kato_ms) {
    if (ka_outstanding_ && now - ka_sent_ > kato)
      return go_down(fmt::format("keep alive: no answer within kato ({} ms)", cfg_.kato_ms));
    if (!ka_outstanding_ && now >= next_ka_) {
      ka_outstanding_ = true;
      ka_sent_ = now;
      next_ka_ = now + std::max(kato / 2, std::chrono::milliseconds(100));
      submit_async(nvme::make_cmd(nvme_admin_keep_alive, 0), &ka_cookie_);
    }
  }
  if (ana_enabled_ && ana_reads_.start()) {
    submit_async(nvme::make_get_log_page(NVME_LOG_LID_ANA, static_cast<uint32_t>(ana_buf_.size())), &ana_cookie_, ana_buf_.data(),
                 static_cast<uint32_t>(ana_buf_.size()));
  }
  if (!io_retry_.empty() && now >= io_retry_at_) retry_io();
  int timeout_ms = 1000;
  if (cfg_.kato_ms) {
    const auto until = ka_outstanding_ ? ka_sent_ + kato : next_ka_;
    timeout_ms = ms_until(until, Clock::now(), 1000);
  }
  if (!io_retry_.empty()) timeout_ms = std::min(timeout_ms, ms_until(io_retry_at_, Clock::now(), 1000));
  wait_for_work(timeout_ms);
  admin_->receive();
  admin_->send();
  run_tasks();
  auto &done = admin_->queue().completions();
  for (const Completion &c : done) // the handlers never touch the admin queue
    on_admin_completion(c);
  done.clear();
  if (admin_->queue().failed()) return go_down(fmt::format("admin queue: {}", admin_->queue().failure()));
  if (failed_generation_ == generation()) {
    std::string why;
    {
      std::lock_guard lk(mu_);
      why = job_failure_;
    }
    return go_down(why);
  }
}

void HostController::on_admin_completion(const Completion &c) {
  if (c.cookie == &ka_cookie_) {
    ka_outstanding_ = false;
    if (c.status) log().warn("{}: Keep Alive: {}", label_, nvme::status_string(c.status));
  } else if (c.cookie == &aer_cookie_) {
    aer_outstanding_ = false;
    if (c.ok())
      on_async_event(c.dw0);
    else if (!c.aborted)
      log().debug("{}: Asynchronous Event Request: {}", label_, nvme::status_string(c.status));
  } else if (c.cookie == &ana_cookie_) {
    const uint64_t covered = ana_reads_.finish();
    if (!c.ok()) {
      log().warn("{}: Get Log Page (ANA): {}", label_, c.aborted ? "aborted" : nvme::status_string(c.status));
      return;
    }
    std::string why;
    if (auto page = parse_ana_log(ana_buf_.data(), ana_buf_.size(), why))
      apply_ana(*page, covered);
    else
      log().warn("{}: ANA log page: {}", label_, why);
  }
}

// Asynchronous event: dword 0 bits 2:0 type, 15:8 information, 23:16 log.
void HostController::on_async_event(uint32_t dw0) {
  const unsigned type = dw0 & 0x7, info = (dw0 >> 8) & 0xff;
  if (type == NVME_AER_NOTICE && info == NVME_AER_NOTICE_ANA) {
    log().info("{}: ANA change notice", label_);
    ana_reads_.request();
  } else {
    log().info("{}: asynchronous event type {} info {:#x} log {:#x}", label_, type, info, (dw0 >> 16) & 0xff);
  }
}

// Error recovery: the association is gone. RESETTING until the jobs have
// handed back its commands (they see the new generation and fail them
// over), then CONNECTING: a reconnect every reconnect_delay.
void HostController::go_down(const std::string &why) {
  rec_.reset(Clock::now(), why);
  admin_.reset();
  enabled_ = false;
  aer_outstanding_ = ka_outstanding_ = false;
  ana_reads_.reset();
  io_retry_.clear();
  log().info("{}: controller reset: {}; reconnecting every {} ms", label_, why, cfg_.recovery.reconnect_delay.count());
  wake_jobs();
}

// No job still holds a connection of an older generation.
bool HostController::handed_back() const {
  const uint32_t gen = generation();
  std::lock_guard lk(mu_);
  return std::all_of(attachments_.begin(), attachments_.end(), [gen](const auto &a) {
    const uint32_t held = a->held_generation.load(std::memory_order_acquire);
    return held == 0 || held == gen;
  });
}

void HostController::resetting_step() {
  run_tasks();
  const auto now = Clock::now();
  if (rec_.finish_reset(now, handed_back())) return;
  // Jobs hand back from their own threads: look again soon.
  wait_for_work(ms_until(rec_.wake_at(), now, 50));
}

void HostController::reconnect_step() {
  run_tasks();
  const auto now = Clock::now();
  switch (rec_.next(now)) {
  case ControllerRecovery::Next::Delete:
    rec_.remove();
    log().warn("{}: removed: {}", label_, reason());
    wake_jobs();
    return;
  case ControllerRecovery::Next::Wait: wait_for_work(ms_until(rec_.wake_at(), now, 1000)); return;
  case ControllerRecovery::Next::Attempt: break;
  }
  rec_.attempting();
  try {
    connect_association();
  } catch (const std::exception &e) {
    admin_.reset();
    enabled_ = false;
    log().debug("{}: reconnect attempt {} failed: {}", label_, rec_.attempts(), e.what());
    rec_.attempt_failed(Clock::now(), e.what());
    return;
  }
  std::vector<std::shared_ptr<IoAttachment>> atts;
  {
    std::lock_guard lk(mu_);
    atts = attachments_;
  }
  for (auto &a : atts)
    prepare_io_or_retry(a);
  const auto down_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - rec_.down_since()).count();
  next_ka_ = Clock::now();
  rec_.connected();
  log().info("{}: reconnected after {:.1f} s ({} attempt(s))", label_, down_ms / 1000.0, rec_.attempts());
  wake_jobs();
}

// One job's I/O queue on a fresh association. Its failure is that job's
// alone: the association stays up for the others, the job fails over (or
// fails, with the refusal as the reason), and the queue is tried again
// every reconnect_delay.
void HostController::prepare_io_or_retry(const std::shared_ptr<IoAttachment> &a) {
  try {
    connect_io(*a, prepare_io(*a));
  } catch (const std::exception &e) {
    log().warn("{}: I/O queue {} not connected: {}; trying again in {} ms", label_, a->qid, e.what(),
               cfg_.recovery.reconnect_delay.count());
    if (io_retry_.empty()) io_retry_at_ = Clock::now() + cfg_.recovery.reconnect_delay;
    io_retry_.push_back(a);
    a->wake();
  }
}

void HostController::retry_io() {
  std::vector<std::weak_ptr<IoAttachment>> again;
  again.swap(io_retry_);
  for (auto &w : again) {
    auto a = w.lock();
    bool attached;
    {
      std::lock_guard lk(mu_);
      attached = a && std::find(attachments_.begin(), attachments_.end(), a) != attachments_.end();
    }
    if (attached) prepare_io_or_retry(a); // sets the next retry time when it fails again
  }
}

} // namespace mpnvme::host
