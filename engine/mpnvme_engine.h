/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The C boundary between fio (fio_glue.c, the only file that includes fio
 * headers) and the C++ NVMe/TCP host core.
 */
#ifndef MPNVME_ENGINE_H
#define MPNVME_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/config/engine_option_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Engine options as fio stores them: the string given for each entry of
 * the option table, in its order (NULL: not given). The first member must
 * stay a pointer: fio overwrites it (no option may live at offset 0). */
struct mpnvme_opts {
  void *pad;
  char *value[MPNVME_OPTION_SLOTS];
};

/* What the core needs to know about the fio job. */
struct mpnvme_job {
  const char *name;
  unsigned int job_number; /* fio's thread_number, 1-based */
  unsigned int iodepth;
  unsigned long long min_bs[3]; /* read, write, trim */
  unsigned long long max_bs[3];
  int uses_trim;
};

enum mpnvme_ddir { MPNVME_READ = 0, MPNVME_WRITE = 1, MPNVME_TRIM = 2, MPNVME_SYNC = 3 };

struct mpnvme_io {
  void *cookie;       /* the fio io_u, handed back by mpnvme_event */
  unsigned int index; /* io_u->index: 0 .. iodepth-1 */
  enum mpnvme_ddir ddir;
  void *buf;
  unsigned long long len;
  unsigned long long offset;
};

enum mpnvme_queue_result { MPNVME_QUEUED = 0, MPNVME_BUSY = 1, MPNVME_COMPLETED = 2 };

struct mpnvme_session;

/* Route the engine's log lines (newline included) through the loading
 * program's logging. */
void mpnvme_set_log_writer(void (*write)(const char *line));

/* Validate options and read the namespace size (fio setup, parent process).
 * Returns 0 and fills *bytes, or -1 after logging a message naming the
 * offending option or the step that failed. */
int mpnvme_probe(const struct mpnvme_opts *o, const struct mpnvme_job *j, unsigned long long *bytes);

/* Connect a session for one fio job (fio init). NULL after logging. */
struct mpnvme_session *mpnvme_open(const struct mpnvme_opts *o, const struct mpnvme_job *j);
/* Once the job's session holds its own copy (after mpnvme_open): wipe the
 * secrets given inline from the job's option strings. */
void mpnvme_forget_secrets(struct mpnvme_opts *o);
/* Returns enum mpnvme_queue_result; on MPNVME_COMPLETED *error is the errno. */
int mpnvme_queue(struct mpnvme_session *s, const struct mpnvme_io *io, int *error);
/* Sends the batch queued since the last commit. */
void mpnvme_commit(struct mpnvme_session *s);
/* Waits for at least min completions (timeout_ns < 0: no limit), returns how
 * many are ready (at most max). */
int mpnvme_getevents(struct mpnvme_session *s, unsigned int min, unsigned int max, long long timeout_ns);
/* Completions received and not yet handed over by mpnvme_getevents. */
unsigned int mpnvme_ready(const struct mpnvme_session *s);
/* The i-th ready completion: its cookie, and its errno in *error. */
void *mpnvme_event(struct mpnvme_session *s, unsigned int i, int *error);
void mpnvme_close(struct mpnvme_session *s);
/* defer_send: hold commits until getevents (see fio-mpnvme(7)). */
int mpnvme_defers_send(const struct mpnvme_session *s);

/* An error line in the engine's log (for the glue's load-time checks). */
void mpnvme_log_error(const char *msg);

#ifdef __cplusplus
}
#endif
#endif
