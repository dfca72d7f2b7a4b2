// SPDX-License-Identifier: GPL-2.0-only
#include "mpnvme-target/inline_secrets.hpp"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <stdexcept>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/log.hpp"

namespace mpnvme::target {

namespace {

constexpr std::string_view kSecretOptions[] = {"--dhchap-key", "--dhchap-ctrl-key", "--tls-key"};

// The value of a secret option at argv[i] (`--opt VALUE` or `--opt=VALUE`),
// or null; `opt` is set to the option's name.
char *secret_value(int argc, char **argv, int i, std::string_view &opt) {
  const std::string_view arg = argv[i];
  for (const std::string_view o : kSecretOptions) {
    opt = o;
    if (arg == o && i + 1 < argc) return argv[i + 1];
    if (arg.size() > o.size() && arg.substr(0, o.size()) == o && arg[o.size()] == '=') return argv[i] + o.size() + 1;
  }
  return nullptr;
}

// The secret in a memory file of its own; its descriptor, or -1.
int secret_file(const char *secret, size_t len) {
  const int fd = memfd_create("mpnvme-inline-secret", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (fchmod(fd, 0600) != 0 || write(fd, secret, len) != static_cast<ssize_t>(len)) {
    close(fd);
    return -1;
  }
  return fd;
}

} // namespace

std::vector<MovedSecret> move_inline_secrets(int argc, char **argv) {
  std::vector<MovedSecret> moved;
  for (int i = 1; i < argc; i++) {
    std::string_view opt;
    char *value = secret_value(argc, argv, i, opt);
    if (!value) continue;
    char *eq = std::strchr(value, '='); // HOSTNQN=SECRET: the part after the host
    if (!eq || eq[1] == '@' || eq[1] == '\0') continue;
    char *secret = eq + 1;
    const size_t len = std::strlen(secret);
    if (len <= 24) continue; // no key is this short: its parse fails, naming the option
    const int fd = secret_file(secret, len);
    if (fd < 0) // refused rather than left in argv and the parser's copies
      throw std::runtime_error(
          fmt::format("{}: cannot hold the secret in a memory file ({}); give it as HOSTNQN=@FILE", opt, std::strerror(errno)));
    const std::string path = fmt::format("@/proc/self/fd/{}", fd);
    OPENSSL_cleanse(secret, len);
    std::memcpy(secret, path.c_str(), path.size() + 1); // 16 to 19 bytes: a key is longer
    moved.push_back({std::string(opt), fd});
    if (value == argv[i + 1]) i++;
  }
  return moved;
}

void warn_inline_secrets(const std::vector<MovedSecret> &moved) {
  for (const MovedSecret &m : moved)
    log().warn("{} gives a secret on the command line, where other users may read it (ps) until the target has "
               "started; HOSTNQN=@FILE keeps it in a file (the target moves it out of its command line and memory at start)",
               m.option);
}

void close_inline_secrets(const std::vector<MovedSecret> &moved) {
  for (const MovedSecret &m : moved)
    close(m.fd);
}

} // namespace mpnvme::target
