// SPDX-License-Identifier: GPL-2.0-only
// Text a peer chose (an NQN, a host ID, a PSK identity) as it may appear in
// a log line or a reply: printable ASCII as it is, every other byte as
// \xNN, and at most `max` bytes of it. A newline in a host NQN could
// otherwise forge a line of the target's log, and an escape sequence
// rewrite an operator's terminal.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace mpnvme {

inline std::string printable(std::string_view s, size_t max = 256) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::min(s.size(), max) + 8);
  for (size_t i = 0; i < s.size() && i < max; i++) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

} // namespace mpnvme
