// SPDX-License-Identifier: GPL-2.0-only
/*
 * Load the engine the way fio does (dlopen, then the "ioengine" symbol) from
 * a program that claims to be fio version FAKE_FIO_VERSION, and check the
 * engine's load-time version check: a matching fio gets a usable ops table,
 * any other fio gets ops version 0 (fio then refuses the engine) and a clear
 * message on stderr (checked by ctest's PASS_REGULAR_EXPRESSION).
 *   test_fio_version ENGINE.so
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Exported (ENABLE_EXPORTS) so that the engine's dlsym finds it, as in fio. */
__attribute__((visibility("default"))) const char fio_version_string[] = FAKE_FIO_VERSION;

/* The head of fio's struct ioengine_ops: list links, name, version. */
struct ops_head {
  void *list[2];
  const char *name;
  int version;
};

int main(int argc, char **argv) {
  void *h;
  struct ops_head *ops;

  if (argc != 2) {
    fprintf(stderr, "usage: %s ENGINE.so\n", argv[0]);
    return 2;
  }
  h = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  ops = dlsym(h, "ioengine");
  if (!ops || strcmp(ops->name, "mpnvme") != 0) {
    fprintf(stderr, "no mpnvme ioengine symbol\n");
    return 1;
  }
  printf("loaded as %s: ops version %d\n", FAKE_FIO_VERSION, ops->version);
  return EXPECT_REFUSED ? (ops->version == 0 ? 0 : 1) : (ops->version > 0 ? 0 : 1);
}
