// SPDX-License-Identifier: GPL-2.0-only
// The project's spdlog logger: stderr, "mpnvme" prefixed, warnings and
// errors only unless raised (log_level= / --log-level).
#pragma once
#include <spdlog/spdlog.h>
#include <string>

namespace mpnvme {

spdlog::logger &log();
// Accepts trace, debug, info, warn, error, off. Returns false on other input.
bool set_log_level(const std::string &level);
// Send every line (newline included) to `write` instead of stderr, for
// programs with logging of their own (fio's log_err reaches `fio --client`).
// The first call in a process wins.
using LogWriter = void (*)(const char *line);
void set_log_writer(LogWriter write);
// A line of a report the user asked for by running the job (the engine's
// per-path summary): shown at every log level but off.
void print_report(const std::string &line);

} // namespace mpnvme
