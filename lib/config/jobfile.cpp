// SPDX-License-Identifier: GPL-2.0-only
#include "lib/config/jobfile.hpp"

#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>

#include "lib/base/printable.hpp"

namespace mpnvme {

std::optional<std::string> JobSection::get(const std::string &key) const {
  auto it = options.find(key);
  if (it == options.end()) return std::nullopt;
  return it->second;
}

static std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    b++;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    e--;
  return s.substr(b, e - b);
}

static std::string expand_env(const std::string &s, const std::string &where) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      const size_t close = s.find('}', i + 2);
      if (close == std::string::npos) throw std::runtime_error(fmt::format("{}: unterminated ${{", where));
      const std::string var = s.substr(i + 2, close - i - 2);
      const char *v = std::getenv(var.c_str());
      if (!v) throw std::runtime_error(fmt::format("{}: environment variable {} is not set", where, var));
      out += v;
      i = close;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<JobSection> read_jobfile(const std::string &path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read job file", path));
  std::map<std::string, std::string> global;
  std::vector<JobSection> jobs;
  std::map<std::string, std::string> *cur = nullptr;
  std::vector<std::map<std::string, std::string>> own;
  std::string line;
  for (int n = 1; std::getline(in, line); n++) {
    const std::string where = fmt::format("{}:{}", path, n);
    line = trim(line);
    if (line.empty() || line[0] == ';' || line[0] == '#') continue;
    if (line.front() == '[') {
      if (line.back() != ']') throw std::runtime_error(fmt::format("{}: section header without ']'", where));
      const std::string name = trim(line.substr(1, line.size() - 2));
      if (name == "global") {
        cur = &global;
      } else {
        jobs.push_back({name, {}});
        own.emplace_back();
        cur = &own.back();
      }
      continue;
    }
    if (!cur) throw std::runtime_error(fmt::format("{}: option outside a section", where));
    const auto eq = line.find('=');
    const std::string key = trim(line.substr(0, eq));
    const std::string value = eq == std::string::npos ? "1" : expand_env(trim(line.substr(eq + 1)), where);
    (*cur)[key] = value;
  }
  // Merge after reading: [global] may come after a job only in theory; fio
  // applies the global section read so far, and so do we for the common case.
  for (size_t i = 0; i < jobs.size(); i++) {
    jobs[i].options = global;
    for (auto &[k, v] : own[i])
      jobs[i].options[k] = v;
  }
  if (jobs.empty()) { // a job file with only [global] describes one job
    jobs.push_back({"global", global});
  }
  return jobs;
}

std::optional<unsigned> parse_count(const std::string &text, unsigned max) {
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const unsigned long long n = std::stoull(text);
  if (n == 0 || n > max) return std::nullopt;
  return static_cast<unsigned>(n);
}

uint64_t parse_size(const std::string &text, const std::string &option) {
  auto fail = [&] {
    return std::invalid_argument(
        fmt::format("{}={}: not a size (accepted: bytes, or a number with k, m, g, t, p, e.g. 1g)", option, printable(text)));
  };
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const auto digit = static_cast<uint64_t>(text[i++] - '0');
    if (v > (UINT64_MAX - digit) / 10) throw fail();
    v = v * 10 + digit;
  }
  if (i == 0) throw fail();
  std::string suf;
  for (; i < text.size(); i++)
    suf += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  int shift = 0;
  if (!suf.empty()) {
    const std::string units = "kmgtp";
    const auto pos = units.find(suf[0]);
    if (pos == std::string::npos) throw fail();
    shift = 10 * static_cast<int>(pos + 1);
    const std::string rest = suf.substr(1);
    if (!rest.empty() && rest != "b" && rest != "ib" && rest != "i") throw fail();
  }
  if (shift && v > (UINT64_MAX >> shift)) throw fail();
  return v << shift;
}

} // namespace mpnvme
