// SPDX-License-Identifier: GPL-2.0-only
// Which backend serves which kind of namespace: one line per backend.
#include <fmt/format.h>
#include <stdexcept>

#include "mpnvme-target/backend/backend.hpp"

namespace mpnvme::target {

namespace {
struct Registered {
  Backing backing;
  std::unique_ptr<Backend> (*open)(const NamespaceConfig &);
};
constexpr Registered kBackends[] = {
    {Backing::Ram, open_ram_backend},
    {Backing::Null, open_null_backend},
    {Backing::File, open_file_backend},
};
} // namespace

std::unique_ptr<Backend> open_backend(const NamespaceConfig &cfg) {
  for (const auto &b : kBackends)
    if (b.backing == cfg.backing) return b.open(cfg);
  throw std::runtime_error(fmt::format("namespace {} ({}): no backend for it", cfg.nsid, cfg.spec()));
}

} // namespace mpnvme::target
