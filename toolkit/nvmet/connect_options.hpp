// SPDX-License-Identifier: GPL-2.0-only
// What the kernel host is told from a job file, so that it runs what the
// engine runs: digests, keep-alive, queue size and count, the reconnect
// settings and the socket's TOS and priority. Only the knobs the kernel
// has: notes say what it cannot follow.
#pragma once
#include <string>
#include <vector>

#include "lib/config/engine_options.hpp"
#include "lib/config/jobfile.hpp"
#include "toolkit/nvmet/host.hpp"

namespace mpnvme::toolkit {

// Sets r's fabrics options from the job file's engine options `e` and
// fio's iodepth and numjobs of `jobs`; returns notes for the user: what the
// kernel does differently, and each engine option the job sets that the
// kernel host cannot be given, by name and why. Throws std::runtime_error
// naming the job file for a fio value that is not a number.
std::vector<std::string> connect_options_from_job(ConnectRequest &r, const EngineOptions &e, const std::vector<JobSection> &jobs,
                                                  const std::string &path);

// Why the kernel host cannot be given engine option `name`, or nullptr when
// connect --job carries it. Throws std::out_of_range for a name that has no
// entry: every option of the engine's table must have one.
const char *not_carried_because(const std::string &name);
// The options that table names (each must be an engine option).
std::vector<std::string> options_with_a_fate();

} // namespace mpnvme::toolkit
