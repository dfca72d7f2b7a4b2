// The project's spdlog logger: stderr, "mpnvme" prefixed, warnings and
// errors only unless raised (log_level= / --log-level).
#pragma once
#include <spdlog/spdlog.h>
#include <string>

namespace mpnvme {

spdlog::logger &log();
// Accepts trace, debug, info, warn, error, off. Returns false on other input.
bool set_log_level(const std::string &level);
// A line of a report the user asked for by running the job (the engine's
// per-path summary): shown at every log level but off.
void print_report(const std::string &line);

} // namespace mpnvme
