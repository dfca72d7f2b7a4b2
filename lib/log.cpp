#include "log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

namespace mpnvme {

spdlog::logger &log() {
  // Constructed once, never registered globally: a host program (fio) may
  // load several copies of spdlog-using code.
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("mpnvme", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("mpnvme: %^%l%$: %v");
    l->set_level(spdlog::level::warn);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return *logger;
}

static spdlog::logger &report_logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("mpnvme-report", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("mpnvme: %v");
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::info);
    return l;
  }();
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
