// The host side of one fio job: its controller(s) and the translation of
// fio I/O units into NVMe commands and back.
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "controller.hpp"
#include "options.hpp"

namespace mpnvme::host {

class Session {
public:
  Session(EngineOptions opts, const mpnvme_job &job);
  ~Session();

  // Connect, check the job's block sizes against the namespace, start
  // keep-alive. Throws std::runtime_error / std::invalid_argument.
  void open();
  // Namespace size in bytes (after open or probe).
  uint64_t size_bytes() const;
  // Connect the admin queue only and read the namespace (fio setup).
  void probe();

  int queue(const mpnvme_io &io, int &error);
  void commit();
  int getevents(unsigned min, unsigned max, long long timeout_ns);
  void *event(unsigned i, int &error) const;

private:
  ControllerConfig controller_config(uint16_t qid) const;
  void check_geometry() const;
  void report_transport() const;

  EngineOptions o_;
  mpnvme_job job_;
  std::string job_name_;
  std::unique_ptr<Controller> ctrl_;
  uint32_t lba_shift_ = 9;
  std::vector<std::array<uint8_t, nvme::kDsmRangeLen>> dsm_; // one range per io_u
  std::vector<Completion> ready_;
  size_t handed_ = 0;   // completions returned by the last getevents
  bool opened_ = false; // an I/O session, not the size probe of fio setup
};

} // namespace mpnvme::host
