// SPDX-License-Identifier: GPL-2.0-only
// Text a peer chose (an NQN, a host ID, a PSK identity) as it may appear in
// a log line or a reply: printable ASCII as it is, every other byte as
// \xNN, and at most `max` bytes of it. A newline in a host NQN could
// otherwise forge a line of the target's log, and an escape sequence
// rewrite an operator's terminal.
#pragma once
#include <cstddef>
#include <cstdint>
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

// A name an operator gave (a subsystem NQN): well-formed UTF-8 (no overlong
// form, no surrogate, nothing above U+10FFFF) without a space or a control
// character, C0, DEL or C1, any of which would rewrite a terminal or a log;
// nor a bidirectional control (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069), which reorders what a terminal or an editor shows of the
// text around it ("Trojan Source", CVE-2021-42574), or U+2028/U+2029,
// which some viewers take for a line break.
inline bool clean_utf8_name(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c <= 0x20 || c == 0x7f) return false;
      i++;
      continue;
    }
    const size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (n == 0 || c > 0xf4 || i + n > s.size()) return false;
    uint32_t cp = c & (0x7f >> n);
    for (size_t k = 1; k < n; k++) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    const uint32_t lowest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < lowest[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f)) return false;
    if (cp == 0x61c || cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
      return false;
    i += n;
  }
  return true;
}

// Text that is a secret's representation (a DH-HMAC-CHAP secret, a TLS PSK
// in interchange form), given where a name belongs: never stored, listed or
// logged as one.
inline bool looks_like_secret(std::string_view s) { return s.rfind("DHHC-1:", 0) == 0 || s.rfind("NVMeTLSkey-1:", 0) == 0; }

} // namespace mpnvme
