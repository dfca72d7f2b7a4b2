// SPDX-License-Identifier: GPL-2.0-only
// The control socket's commands as a table (SPDK registers its RPCs the
// same way): each verb with its arguments, its help line and its handler,
// so that dispatch, usage messages and `help` come from one place.
#pragma once
#include <string>
#include <vector>

#include "mpnvme-target/control/control.hpp"

namespace mpnvme::target {

// The words after a command's verb, and where the handler stands in them.
class Args {
public:
  Args(std::vector<std::string> words, size_t first) : w_(std::move(words)), at_(first) {}
  bool more() const { return at_ < w_.size(); }
  // The next word; empty when there is none (its place is still counted,
  // so that a refusal names where the missing word belongs).
  std::string next() { return ++at_ <= w_.size() ? w_[at_ - 1] : std::string(); }
  // 1-based place in the command line of the word last asked for ("argument N").
  size_t place() const { return at_; }

private:
  std::vector<std::string> w_;
  size_t at_;
};

struct ControlCommand {
  const char *verb;  // one or two words
  const char *usage; // its arguments
  const char *help;  // what it does, one line
  std::string (*run)(Registry &reg, const ControlLimits &limits, Args &args);
};

// The commands of each concern (config_commands.cpp, runtime_commands.cpp).
const std::vector<ControlCommand> &config_commands();
const std::vector<ControlCommand> &runtime_commands();

// "error: usage: VERB USAGE\n" of a command.
std::string usage_error(const ControlCommand &c);

} // namespace mpnvme::target
