// SPDX-License-Identifier: GPL-2.0-only
// Reads the engine options of an fio job file, so that mpnvme-target and
// mpnvme-nvmet can serve exactly what a job expects. fio's format: INI-style
// sections ([global] then one per job), key=value or bare flags, ';' and '#'
// comments, ${VAR} taken from the environment. A job's options are the
// [global] ones overridden by its own section.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpnvme {

struct JobSection {
  std::string name;
  std::map<std::string, std::string> options; // global merged with own
  std::optional<std::string> get(const std::string &key) const;
};

// Throws std::runtime_error with FILE:LINE for unreadable files, undefined
// ${VAR}s and malformed lines.
std::vector<JobSection> read_jobfile(const std::string &path);

// fio size syntax: a number with an optional k/m/g/t/p suffix (powers of
// 1024, optional 'i' and 'b'), or a plain byte count. Throws
// std::invalid_argument naming `option`.
uint64_t parse_size(const std::string &text, const std::string &option);

// A count fio takes (numjobs, iodepth): digits only, 1..max; nullopt
// otherwise, for the caller to name the job and option.
std::optional<unsigned> parse_count(const std::string &text, unsigned max);

} // namespace mpnvme
