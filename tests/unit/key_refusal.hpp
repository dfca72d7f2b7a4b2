// SPDX-License-Identifier: GPL-2.0-only
// Shared by the key parsers' tests: a key text refused, with a message that
// names the option and the problem and never shows the key.
#pragma once
#include <stdexcept>
#include <string>

#include "tests/unit/cmocka_cxx.hpp"

// `parse(text, option)` must throw std::invalid_argument starting with
// "OPTION: " and containing `expect`, without the text's `key_at`.. key
// characters.
template <typename Parse>
bool key_refused(Parse parse, const std::string &text, const char *option, size_t key_at, const char *expect) {
  try {
    parse(text, option);
  } catch (const std::invalid_argument &e) {
    const std::string msg = e.what();
    if (text.size() > key_at + 12 && msg.find(text.substr(key_at, 12)) != std::string::npos)
      fail_msg("the message shows the key: %s", msg.c_str());
    if (msg.find(expect) == std::string::npos) fail_msg("'%s' lacks '%s'", msg.c_str(), expect);
    return msg.rfind(std::string(option) + ": ", 0) == 0;
  }
  return false;
}
