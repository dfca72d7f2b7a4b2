// SPDX-License-Identifier: GPL-2.0-only
#include "lib/base/first_line.hpp"

#include <fstream>

namespace mpnvme {

std::string read_first_line(const std::string &path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n' || line.back() == '\r' || line.back() == '\t'))
    line.pop_back();
  return line;
}

} // namespace mpnvme
