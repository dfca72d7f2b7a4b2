// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/job_engine_options.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace mpnvme {

EngineOptions job_engine_options(const JobSection &job, const std::string &where) {
  OptionValues given;
  for (const auto &[key, value] : job.options)
    if (find_engine_option(key)) given[key] = value;
  try {
    return parse_engine_options(given);
  } catch (const std::invalid_argument &e) {
    throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
  }
}

} // namespace mpnvme
