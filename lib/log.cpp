#include "log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

namespace mpnvme {

// Loggers are constructed once and never registered globally: a host
// program (fio) may load several copies of spdlog-using code.
static std::shared_ptr<spdlog::logger> stderr_logger(const char *name, const char *pattern, spdlog::level::level_enum level) {
  auto l = std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
  l->set_pattern(pattern);
  l->set_level(level);
  l->flush_on(spdlog::level::trace);
  return l;
}

spdlog::logger &log() {
  static std::shared_ptr<spdlog::logger> logger = stderr_logger("mpnvme", "mpnvme: %^%l%$: %v", spdlog::level::warn);
  return *logger;
}

static spdlog::logger &report_logger() {
  static std::shared_ptr<spdlog::logger> logger = stderr_logger("mpnvme-report", "mpnvme: %v", spdlog::level::info);
  return *logger;
}

void print_report(const std::string &line) { report_logger().info("{}", line); }

bool set_log_level(const std::string &level) {
  static const char *names[] = {"trace", "debug", "info", "warn", "error", "off"};
  static const spdlog::level::level_enum levels[] = {spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
                                                     spdlog::level::warn,  spdlog::level::err,   spdlog::level::off};
  for (size_t i = 0; i < std::size(names); i++) {
    if (level == names[i]) {
      log().set_level(levels[i]);
      report_logger().set_level(levels[i] == spdlog::level::off ? spdlog::level::off : spdlog::level::info);
      return true;
    }
  }
  return false;
}

} // namespace mpnvme
