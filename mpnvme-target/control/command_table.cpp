// SPDX-License-Identifier: GPL-2.0-only
// Dispatch over the command table, `help` from it, and the rule that no
// reply repeats a word it was given, or a part of one: whatever a
// handler's message says, the reply names each given word by its place
// instead (a key pasted in the wrong place cannot come back in an error, a
// log of replies cannot leak one).
#include <algorithm>
#include <array>
#include <cctype>
#include <fmt/format.h>
#include <map>
#include <sstream>
#include <stdexcept>

#include "lib/base/log.hpp"
#include "mpnvme-target/control/command_table.hpp"

namespace mpnvme::target {

namespace {

// In table order, which is the order a line's verb is matched in.
const std::vector<const ControlCommand *> &all_commands() {
  static const std::vector<const ControlCommand *> table = [] {
    std::vector<const ControlCommand *> out;
    for (const auto *set : {&runtime_commands(), &config_commands()})
      for (const ControlCommand &c : *set)
        out.push_back(&c);
    return out;
  }();
  return table;
}

// Built once: the table is fixed at compile time, and an empty line (a
// client's bare Enter) asks for it too, so a burst of them must stay cheap.
const std::string &help() {
  static const std::string text = [] {
    std::string out = "ok\n";
    for (const ControlCommand *c : all_commands())
      out += fmt::format("{}{}{}\n    {}\n", c->verb, *c->usage ? " " : "", c->usage, c->help);
    out += "help\n    this list\n";
    return out;
  }();
  return text;
}

// A piece that reads as a name ("ram", "uuid", "dhchap_key",
// "max-controllers"): lower case, short. The body of a key is neither,
// though base64 ends it in '='.
bool looks_like_name(const std::string &w, size_t start, size_t end) {
  if (end == start || end - start > 32 || !std::islower(static_cast<unsigned char>(w[start]))) return false;
  return std::all_of(w.begin() + static_cast<std::ptrdiff_t>(start), w.begin() + static_cast<std::ptrdiff_t>(end), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// The parts of a given word a handler's message may quote: the word, what
// follows its first ':' or '=' (the size of "ram:SIZE", the value of
// NAME=VALUE), and each piece between ':', '=' and ',' (an attribute of
// "ram:1g,uuid=U") but the names ("ram", "uuid") before a '=' or a first
// ':', which the refusal must still be able to say. Linear in the word, so
// a long line stays cheap.
std::vector<std::string> quotable_parts(const std::string &w) {
  std::vector<std::string> out{w};
  const size_t first = w.find_first_of(":=");
  if (first != std::string::npos) out.push_back(w.substr(first + 1));
  // @FILE: a refusal names the file without its '@'.
  if (first != std::string::npos && w.compare(first + 1, 1, "@") == 0) out.push_back(w.substr(first + 2));
  for (size_t start = 0; start < w.size();) {
    const size_t end = std::min(w.find_first_of(":=,", start), w.size());
    const bool name = end < w.size() && (w[end] == '=' || (start == 0 && w[end] == ':')) && looks_like_name(w, start, end);
    if (!name && (start > 0 || end < w.size())) out.push_back(w.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Every quotable part (quotable_parts) of 3 bytes or more replaced by its
// word's place in `reply`; shorter ones (a port number, a group) are no
// secret and too common to take out, nor is the number of a word that is
// NAME=NUMBER (a limit a refusal must be able to state: max-controllers=5),
// a number shorter than a key. A part shorter than a key (16 bytes)
// is taken out only where it stands as a word of its own, so that "opt"
// given does not mangle "optimized" in the refusal; a longer one wherever
// it is. One pass, longest match first at each position: a placeholder is
// never searched again.
std::string redact(const std::string &reply, const std::vector<std::string> &words, size_t first) {
  std::map<std::string, std::string> parts; // text -> placeholder, each text once
  for (size_t i = first; i < words.size(); i++) {
    const std::string &w = words[i];
    const size_t eq = w.find('=');
    const bool number = eq != std::string::npos && looks_like_name(w, 0, eq) && w.size() - eq - 1 < 16 && w.size() > eq + 1 &&
                        w.find_first_not_of("0123456789", eq + 1) == std::string::npos;
    for (std::string &v : quotable_parts(w))
      if (v.size() >= 3 && !(number && v == w.substr(eq + 1))) parts.emplace(std::move(v), fmt::format("<argument {}>", i + 1));
  }
  std::vector<std::pair<std::string, std::string>> values(parts.begin(), parts.end());
  std::sort(values.begin(), values.end(), [](const auto &a, const auto &b) { return a.first.size() > b.first.size(); });
  // The parts by their first byte, longest first as above: a position of
  // the reply is tried against the parts that can start there, so a long
  // reply to many words costs its length, not its length times the parts.
  std::array<std::vector<const std::pair<std::string, std::string> *>, 256> by_first;
  for (const auto &v : values)
    by_first[static_cast<unsigned char>(v.first[0])].push_back(&v);
  // The status word stays as it is: a given word ("or:") must not turn
  // "error:" into something a client cannot read as a refusal.
  const size_t status = reply.rfind("error:", 0) == 0 ? 6 : reply.rfind("ok", 0) == 0 ? 2 : 0;
  std::string out = reply.substr(0, status);
  for (size_t at = status; at < reply.size();) {
    const auto alnum = [&](size_t i) { return i < reply.size() && std::isalnum(static_cast<unsigned char>(reply[i])); };
    const auto &candidates = by_first[static_cast<unsigned char>(reply[at])];
    const auto hit = std::find_if(candidates.begin(), candidates.end(), [&](const auto *v) {
      if (reply.compare(at, v->first.size(), v->first) != 0) return false;
      return v->first.size() >= 16 || (!(at > status && alnum(at - 1)) && !alnum(at + v->first.size()));
    });
    if (hit == candidates.end()) {
      out += reply[at++];
    } else {
      out += (*hit)->second;
      at += (*hit)->first.size();
    }
  }
  return out;
}

// The reply as a terminal may show it: a control byte a command carried
// into a refusal (ESC c resets the terminal of `mpnvme-target ctl`) goes
// back as \xNN, as in the log; line breaks stay. Not printable(): a reply
// keeps its UTF-8 and its backslashes (an NQN printable() already escaped
// must not be escaped twice), and is not cut short.
std::string escape_controls(const std::string &reply) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(reply.size());
  for (const char ch : reply) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n') || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

} // namespace

std::string usage_error(const ControlCommand &c) { return fmt::format("error: usage: {} {}\n", c.verb, c.usage); }

std::string control_command(Registry &reg, const ControlLimits &limits, const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  if (words.empty() || words[0] == "help") return help();
  const ControlCommand *match = nullptr;
  size_t verb_words = 0;
  for (const ControlCommand *c : all_commands()) {
    const std::string verb = c->verb;
    const size_t sp = verb.find(' ');
    const size_t n = sp == std::string::npos ? 1 : 2;
    if (words[0] != verb.substr(0, sp)) continue;
    if (n == 2 && (words.size() < 2 || words[1] != verb.substr(sp + 1))) continue;
    match = c;
    verb_words = n;
    break;
  }
  if (!match) {
    for (const ControlCommand *c : all_commands())
      if (std::string(c->verb).rfind(words[0] + " ", 0) == 0) // a known first word with another second
        return fmt::format("error: {}: argument 2 is not one of its commands (try help)\n", words[0]);
    return "error: argument 1 is not a command (try help)\n";
  }
  Args args(words, verb_words);
  std::string reply;
  try {
    reply = match->run(reg, limits, args);
  } catch (const std::exception &e) { // refusals name the option or field, never a secret
    reply = fmt::format("error: {}: {}\n", match->verb, e.what());
  }
  return escape_controls(redact(std::move(reply), words, verb_words));
}

} // namespace mpnvme::target
