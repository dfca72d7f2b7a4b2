// SPDX-License-Identifier: GPL-2.0-only
// The kernel NVMe target as mpnvme-nvmet drives it: what a job file expects
// (subsystem, namespaces, one port per path) created through configfs,
// nvmetcli-compatible save/restore, and clearing.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/config/target_config.hpp"

namespace mpnvme::toolkit {

struct ApplyOptions {
  std::string trtype;                      // tcp or mptcp
  std::map<uint32_t, std::string> devices; // nsid -> device or file path (else a RAM file)
  std::string ram_dir = "/dev/shm/mpnvme-nvmet";
  std::optional<uint32_t> inline_data_size;
  std::vector<std::string> allowed_hosts; // empty: any host
  std::map<size_t, std::string> ana;      // path index (1-based) -> ANA state of group 1
  std::optional<unsigned> so_priority;    // nvmet_tcp so_priority
};

struct AppliedPort {
  std::string id;
  std::string address; // traddr:trsvcid
};

// Creates what `cfg` describes; returns the ports used. Idempotent: objects
// that already match are left alone. On failure everything this call
// created is removed again and the error names the configfs path.
std::vector<AppliedPort> apply(const target::TargetConfig &cfg, const ApplyOptions &o);
nlohmann::json save();
void restore(const nlohmann::json &j); // clears first, as nvmetcli does
// Removes every nvmet object; with a ram_dir, also the RAM files in it.
void clear(const std::string &ram_dir);
// Fail with a clear message when nvmet or configfs is missing.
void require_nvmet();

} // namespace mpnvme::toolkit
