// SPDX-License-Identifier: GPL-2.0-only
// fio-mpnvme(7)'s ENGINE OPTIONS section against the option table: the same
// options, each documented default and each set of accepted values as the
// engine has them. The page is prose, so the table checks it rather than
// generating it.
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "lib/config/engine_options.hpp"
#include "tests/unit/cmocka_cxx.hpp"

namespace {

struct ManEntry {
  std::string arg;  // what follows "name=" on the .BI line
  std::string text; // the paragraph, roff markup removed
};

// A roff line as the reader sees it: font macros and escapes dropped.
std::string plain(std::string line) {
  if (!line.empty() && line[0] == '.') {
    const size_t sp = line.find(' ');
    line = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  std::string out;
  for (size_t i = 0; i < line.size(); i++) {
    if (line[i] == '"') continue;
    if (line[i] == '\\' && i + 1 < line.size()) {
      if (line[i + 1] == 'f' && i + 2 < line.size()) {
        i += 2; // \fB, \fI, \fR
        continue;
      }
      out += line[++i]; // \- and friends
      continue;
    }
    out += line[i];
  }
  return out;
}

std::map<std::string, ManEntry> engine_options_section(const char *path) {
  std::ifstream in(path);
  if (!in) fail_msg("cannot read %s", path);
  std::map<std::string, ManEntry> entries;
  std::string line, current;
  bool in_section = false, after_tp = false;
  while (std::getline(in, line)) {
    if (line.rfind(".SH", 0) == 0) {
      in_section = line == ".SH ENGINE OPTIONS";
      current.clear();
      continue;
    }
    if (!in_section) continue;
    if (line == ".TP") {
      after_tp = true;
      current.clear();
      continue;
    }
    if (after_tp && line.rfind(".BI ", 0) == 0) {
      const std::string head = plain(line);
      const size_t eq = head.find('=');
      current = head.substr(0, eq);
      entries[current].arg = eq == std::string::npos ? "" : head.substr(eq + 1);
      while (!entries[current].arg.empty() && entries[current].arg[0] == ' ')
        entries[current].arg.erase(0, 1);
    } else if (!current.empty()) {
      entries[current].text += plain(line) + " ";
    }
    after_tp = false;
  }
  return entries;
}

std::string escaped(const std::string &s) { return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"); }

std::set<std::string> split_bars(const std::string &s) {
  std::set<std::string> parts;
  std::stringstream in(s);
  for (std::string p; std::getline(in, p, '|');)
    parts.insert(p);
  return parts;
}

} // namespace

static void man_page_matches_table(void **) {
  const auto man = engine_options_section(MAN_PAGE);
  std::set<std::string> table;
  for (unsigned i = 0; const mpnvme_option_def *d = mpnvme_option_at(i); i++) {
    table.insert(d->name);
    const auto it = man.find(d->name);
    if (it == man.end()) fail_msg("%s: in the option table, not in the man page's ENGINE OPTIONS", d->name);
    const ManEntry &m = it->second;
    if (d->def) {
      const std::string v = escaped(d->def);
      const std::regex documented("[Dd]efault:?\\s+" + v + "\\b|\\b" + v + "\\s*\\((the )?default");
      if (!std::regex_search(m.text, documented))
        fail_msg("%s: the man page does not give the default %s: %s", d->name, d->def, m.text.c_str());
    }
    if (!d->choices[0].value) continue;
    std::set<std::string> choices;
    for (int c = 0; c < MPNVME_OPTION_CHOICES && d->choices[c].value; c++)
      choices.insert(d->choices[c].value);
    if (m.arg.find('|') != std::string::npos) {
      if (split_bars(m.arg) != choices) fail_msg("%s: the man page lists %s", d->name, m.arg.c_str());
      continue;
    }
    for (const std::string &c : choices)
      if (!std::regex_search(m.text, std::regex("\\b" + escaped(c) + "\\b")))
        fail_msg("%s: the man page does not name the value %s", d->name, c.c_str());
  }
  for (const auto &[name, entry] : man)
    if (!table.count(name)) fail_msg("%s: in the man page, not an engine option", name.c_str());
}

int main() {
  const CMUnitTest tests[] = {cmocka_unit_test(man_page_matches_table)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
