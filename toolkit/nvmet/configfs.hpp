// SPDX-License-Identifier: GPL-2.0-only
// Kernel nvmet through configfs (/sys/kernel/config/nvmet): the few
// operations the tool needs, each failing with the path, the errno and what
// it means for nvmet, and a journal that undoes what one run created.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace mpnvme::toolkit {

extern std::string nvmet_root; // /sys/kernel/config/nvmet (tests may point elsewhere)

// Errors from configfs: "PATH: what failed: strerror (explanation)".
[[noreturn]] void configfs_error(const std::string &path, const std::string &what, int err);

bool exists(const std::string &path);
std::string read_attr(const std::string &path); // trimmed, "" if unreadable
// Throws with the path, errno and its nvmet meaning.
void write_attr(const std::string &path, const std::string &value, bool secret = false);
std::vector<std::string> list_dir(const std::string &path);

// Things created in this run, undone in reverse order on failure.
class Journal {
public:
  void mkdir(const std::string &path); // no-op (not journaled) if it exists
  // write_attr, old value restored on rollback; `secret`: never shown in errors
  void write(const std::string &path, const std::string &value, bool secret = false);
  void symlink(const std::string &target, const std::string &link);
  void on_undo(std::function<void()> f) { undo_.push_back(std::move(f)); }
  void rollback() noexcept;
  void commit() { undo_.clear(); }
  ~Journal() { rollback(); }

private:
  std::vector<std::function<void()>> undo_;
};

// Removal helpers (clear, rollback): best effort unless `strict`.
void remove_dir(const std::string &path, bool strict);
void remove_link(const std::string &path, bool strict);

} // namespace mpnvme::toolkit
