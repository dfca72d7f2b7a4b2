// SPDX-License-Identifier: GPL-2.0-only
// Secrets given inline on the command line (--dhchap-key HOSTNQN=SECRET,
// --dhchap-ctrl-key, --tls-key): moved out of the process before the
// options are parsed, so that no copy of them is left on the heap.
#pragma once
#include <string>
#include <vector>

namespace mpnvme::target {

// Each inline secret goes into an anonymous memory file (memfd, mode 0600)
// and its argument is rewritten in place to HOSTNQN=@/proc/self/fd/N, the
// form the @FILE path already reads into key pages and wipes; the rest of
// the argument is zeroed, which also blanks it in /proc/PID/cmdline. A
// parser would otherwise keep copies (CLI11's results, the substrings it
// splits off) in heap memory that is freed without being wiped. A value
// too short to be rewritten is left as it is (no key is that short; its
// parse fails). Throws std::runtime_error, naming the option, when the
// memory file cannot be made: the secret would stay in argv.
struct MovedSecret {
  std::string option; // for the warning once logging is set up
  int fd;             // closed once the configuration has read it
};
std::vector<MovedSecret> move_inline_secrets(int argc, char **argv);
// The warning for each, once logging is set up: ps showed the secret until then.
void warn_inline_secrets(const std::vector<MovedSecret> &moved);
void close_inline_secrets(const std::vector<MovedSecret> &moved);

} // namespace mpnvme::target
