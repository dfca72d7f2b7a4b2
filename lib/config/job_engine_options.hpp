// SPDX-License-Identifier: GPL-2.0-only
// The engine options of one fio job section, read with the engine's own
// parser: mpnvme-target --job and mpnvme-nvmet serve and connect exactly
// what the engine would use, and refuse a value the engine would refuse,
// with the engine's message.
#pragma once
#include <string>

#include "lib/config/engine_options.hpp"
#include "lib/config/jobfile.hpp"

namespace mpnvme {

// The job's keys that are engine options (fio's own are left out). Throws
// std::runtime_error "WHERE: MESSAGE", where names the file and the job.
EngineOptions job_engine_options(const JobSection &job, const std::string &where);

} // namespace mpnvme
