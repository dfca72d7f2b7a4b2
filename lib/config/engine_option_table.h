/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's options as plain C data: the one definition of each option's
 * name, default, accepted values and help. fio_glue.c builds fio's option
 * table (and so --enghelp) from it; the C++ parser (engine_options.hpp)
 * gives each entry its meaning; mpnvme-target --job and mpnvme-nvmet read
 * job files through the same parser; a unit test holds the man page to it.
 */
#ifndef MPNVME_ENGINE_OPTION_TABLE_H
#define MPNVME_ENGINE_OPTION_TABLE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Room in fio's option table and in struct mpnvme_opts; the C++ table is
 * checked against it at compile time. */
#define MPNVME_OPTION_SLOTS 48
#define MPNVME_OPTION_CHOICES 8

struct mpnvme_option_choice {
  const char *value; /* NULL ends the list */
  const char *help;
};

struct mpnvme_option_def {
  const char *name;
  const char *lname;
  const char *def; /* NULL: no default (required, or unset) */
  const char *help;
  /* Non-empty: the value must be one of these. */
  struct mpnvme_option_choice choices[MPNVME_OPTION_CHOICES];
};

/* The i-th option, or NULL past the last. */
const struct mpnvme_option_def *mpnvme_option_at(unsigned int i);

/* Check one option's value on its own (fio's parse time): 0, or -1 with the
 * reason, which names the option, in msg. */
int mpnvme_check_option(unsigned int i, const char *value, char *msg, unsigned long msg_size);

/* Non-zero when the option's value is a secret (DH-HMAC-CHAP keys): fio
 * must not show it (the glue blanks it in fio's "job options"). */
int mpnvme_option_is_secret(const char *name);

#ifdef __cplusplus
}
#endif
#endif
