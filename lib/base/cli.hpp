// SPDX-License-Identifier: GPL-2.0-only
// The command-line convention of every mpnvme program: --help and
// --version exit 0, a usage error prints CLI11's message and exits 2 (the
// man pages' EXIT STATUS), whatever CLI11's own code for the error is.
#pragma once
#include <CLI/CLI.hpp>

namespace mpnvme {

// Parses; returns the exit code to leave with, or -1 to go on.
inline int parse_command_line(CLI::App &app, int argc, char **argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

} // namespace mpnvme
