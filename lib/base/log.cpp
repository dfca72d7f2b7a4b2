// SPDX-License-Identifier: GPL-2.0-only
#include "lib/base/log.hpp"

#include <mutex>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace mpnvme {

namespace {
constexpr const char *kLogPattern = "mpnvme: %^%l%$: %v";
constexpr const char *kReportPattern = "mpnvme: %v";

// Formatted lines handed to the program that loaded us (fio's log_err,
// which reaches a `fio --client` too).
class WriterSink : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit WriterSink(LogWriter w) : write_(w) {}

protected:
  void sink_it_(const spdlog::details::log_msg &msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    line.push_back('\0');
    write_(line.data());
  }
  void flush_() override {}

private:
  LogWriter write_;
};
} // namespace

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
  static std::shared_ptr<spdlog::logger> logger = stderr_logger("mpnvme", kLogPattern, spdlog::level::warn);
  return *logger;
}

static spdlog::logger &report_logger() {
  static std::shared_ptr<spdlog::logger> logger = stderr_logger("mpnvme-report", kReportPattern, spdlog::level::info);
  return *logger;
}

void set_log_writer(LogWriter write) {
  // Once per process: jobs of one fio may call this while others log.
  static std::once_flag once;
  std::call_once(once, [write] {
    const std::pair<spdlog::logger *, const char *> loggers[] = {{&log(), kLogPattern}, {&report_logger(), kReportPattern}};
    for (auto [l, pattern] : loggers) {
      l->sinks().clear();
      l->sinks().push_back(std::make_shared<WriterSink>(write));
      l->set_pattern(pattern);
    }
  });
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
