// SPDX-License-Identifier: GPL-2.0-only
/*
 * fio-mpnvme: fio external ioengine, a user-space NVMe/TCP host over MPTCP.
 *
 * The only file that includes fio headers: fio's option table (built from
 * the engine's), the ioengine ops and the fio version check. Everything else lives in the C++ host core
 * behind mpnvme_engine.h.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"

#include "engine/mpnvme_engine.h"

#ifndef MPNVME_FIO_VERSION
#error "MPNVME_FIO_VERSION must name the fio version whose headers are used"
#endif

/* fio's option table, built from the engine's (engine_option_table.h)
 * when the engine is loaded. Every value is stored as the string given:
 * the C++ parser converts and checks it, so a bad value gets the same
 * message from fio, mpnvme-target --job and mpnvme-nvmet. */
static struct fio_option options[MPNVME_OPTION_SLOTS + 1];

/* fio's parse-time callback knows only the value, not the option: one
 * small function per table slot supplies the index. */
static int check_option(unsigned int i, const char *value) {
  char msg[512];

  if (!mpnvme_check_option(i, value, msg, sizeof(msg))) return 0;
  log_err("mpnvme: %s\n", msg);
  return 1;
}
#define SLOTS(X)                                                                                                                 \
  X(0)                                                                                                                           \
  X(1)                                                                                                                           \
  X(2)                                                                                                                           \
  X(3)                                                                                                                           \
  X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25)  \
      X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45)    \
          X(46) X(47)
#define CHECK_SLOT(n)                                                                                                            \
  static int check_slot_##n(void *data, const char *v) { return check_option(n, v); }
SLOTS(CHECK_SLOT)
#define CHECK_REF(n) check_slot_##n,
static fio_opt_str_fn *const slot_checks[] = {SLOTS(CHECK_REF)};
_Static_assert(sizeof(slot_checks) / sizeof(slot_checks[0]) == MPNVME_OPTION_SLOTS, "one check per option slot");

static void __attribute__((constructor)) build_fio_options(void) {
  const struct mpnvme_option_def *d;

  for (unsigned int i = 0; (d = mpnvme_option_at(i)); i++) {
    struct fio_option *o = &options[i];

    o->name = d->name;
    o->lname = d->lname;
    o->type = FIO_OPT_STR_STORE;
    o->off1 = offsetof(struct mpnvme_opts, value) + i * sizeof(char *);
    o->def = d->def;
    o->help = d->help;
    o->cb = slot_checks[i];
    for (int c = 0; c < PARSE_MAX_VP && c < MPNVME_OPTION_CHOICES && d->choices[c].value; c++) {
      o->posval[c].ival = d->choices[c].value;
      o->posval[c].help = d->choices[c].help;
    }
    o->category = FIO_OPT_C_ENGINE;
    o->group = FIO_OPT_G_INVALID;
  }
}

/* Per-job state kept on the fio side: the io_us queued and not yet sent,
 * stamped with their issue time when the batch goes out. */
struct glue {
  struct mpnvme_session *session;
  struct io_u **pending;
  unsigned int nr_pending;
  unsigned int depth;
  int defer_send;
};

/* Engine log lines through fio's own logging, so that a `fio --client`
 * sees them too, not only the server's stderr. All go to fio's error
 * stream, as they went to stderr before: the info stream is the job output
 * (stdout or --output), which must stay JSON when asked to be. */
static void write_fio_log(const char *line) { log_err("%s", line); }

static void describe_job(struct thread_data *td, struct mpnvme_job *j) {
  memset(j, 0, sizeof(*j));
  j->name = td->o.name;
  j->job_number = td->thread_number;
  j->iodepth = td->o.iodepth;
  for (int d = 0; d < 3; d++) {
    j->min_bs[d] = td->o.min_bs[d];
    j->max_bs[d] = td->o.max_bs[d];
  }
  j->uses_trim = td_trim(td) || td->o.trim_percentage || td->o.trim_backlog;
  if (!j->uses_trim) j->min_bs[DDIR_TRIM] = j->max_bs[DDIR_TRIM] = 0;
}

/* fio keeps every option as it was given, to print them among the "job
 * options" of its JSON output: a secret given inline is shown there as
 * "(not shown)". The parent's list is the one fio prints. */
static void hide_secrets(struct thread_data *td) {
  struct flist_head *e;

  flist_for_each(e, &td->opt_list) {
    struct print_option *p = flist_entry(e, struct print_option, list);
    char *blank;

    if (!p->value || !mpnvme_option_is_secret(p->name) || !(blank = strdup("(not shown)"))) continue;
    memset(p->value, 0, strlen(p->value));
    free(p->value);
    p->value = blank;
  }
}

/* fio setup: parent process, before jobs fork. Size the "file" from the
 * namespace so that size= may be omitted. */
static int mpnvme_fio_setup(struct thread_data *td) {
  struct mpnvme_job job;
  unsigned long long bytes = 0;

  mpnvme_set_log_writer(write_fio_log);
  hide_secrets(td);
  if (!td->files_index) {
    add_file(td, td->o.filename ? td->o.filename : "mpnvme", 0, 0);
    td->o.nr_files = td->o.nr_files ?: 1;
    td->o.open_files++;
  }
  describe_job(td, &job);
  if (mpnvme_probe(td->eo, &job, &bytes)) return 1;
  for (unsigned int i = 0; i < td->o.nr_files; i++)
    td->files[i]->real_file_size = bytes;
  return 0;
}

static int mpnvme_fio_init(struct thread_data *td) {
  struct mpnvme_job job;
  struct glue *g = calloc(1, sizeof(*g));

  if (!g) return 1;
  mpnvme_set_log_writer(write_fio_log);
  describe_job(td, &job);
  g->depth = td->o.iodepth ? td->o.iodepth : 1;
  g->pending = calloc(g->depth, sizeof(*g->pending));
  g->session = g->pending ? mpnvme_open(td->eo, &job) : NULL;
  mpnvme_forget_secrets(td->eo);
  if (!g->session) {
    free(g->pending);
    free(g);
    return 1;
  }
  g->defer_send = mpnvme_defers_send(g->session);
  td->io_ops_data = g;
  return 0;
}

static void mpnvme_fio_cleanup(struct thread_data *td) {
  struct glue *g = td->io_ops_data;

  if (!g) return;
  mpnvme_close(g->session);
  free(g->pending);
  free(g);
  td->io_ops_data = NULL;
}

static enum fio_q_status mpnvme_fio_queue(struct thread_data *td, struct io_u *io_u) {
  struct glue *g = td->io_ops_data;
  struct mpnvme_io io = {
      .cookie = io_u,
      .index = io_u->index,
      .buf = io_u->xfer_buf,
      .len = io_u->xfer_buflen,
      .offset = io_u->offset,
  };
  int error = 0, rc;

  fio_ro_check(td, io_u);
  switch (io_u->ddir) {
  case DDIR_READ: io.ddir = MPNVME_READ; break;
  case DDIR_WRITE: io.ddir = MPNVME_WRITE; break;
  case DDIR_TRIM: io.ddir = MPNVME_TRIM; break;
  case DDIR_SYNC:
  case DDIR_DATASYNC:
  case DDIR_SYNC_FILE_RANGE: io.ddir = MPNVME_SYNC; break;
  default: io_u->error = EINVAL; return FIO_Q_COMPLETED;
  }
  if (g->nr_pending == g->depth) return FIO_Q_BUSY;
  rc = mpnvme_queue(g->session, &io, &error);
  if (rc == MPNVME_BUSY) return FIO_Q_BUSY;
  if (rc == MPNVME_COMPLETED) {
    io_u->error = error;
    return FIO_Q_COMPLETED;
  }
  g->pending[g->nr_pending++] = io_u;
  return FIO_Q_QUEUED;
}

/* Send what was queued; stamp issue time at the real send so that slat and
 * clat mean what they say, and count the real batch in fio's submit
 * histogram. The stamp is taken before the send: the send itself may run
 * the network's receive processing (veth, loopback: other flows' packets
 * too), long enough for the answer to arrive before it returns, and a
 * stamp after it would report a 2 us round trip. */
static void send_pending(struct thread_data *td, struct glue *g) {
  struct timespec now;

  if (!g->nr_pending) return;
  if (fio_fill_issue_time(td)) fio_gettime(&now, NULL);
  mpnvme_commit(g->session);
  if (fio_fill_issue_time(td)) {
    for (unsigned int i = 0; i < g->nr_pending; i++) {
      memcpy(&g->pending[i]->issue_time, &now, sizeof(now));
      io_u_queued(td, g->pending[i]);
    }
  }
  io_u_mark_submit(td, g->nr_pending);
  g->nr_pending = 0;
}

/* With fio's defaults (iodepth_batch_submit=1, one event per getevents)
 * fio commits every command on its own: one send per command, and on
 * loopback the sender also pays the receiver's TCP processing. The
 * commands wait instead until fio has taken the completions already
 * received and must wait for more. fio always gets there before it sleeps
 * or stops (a full queue, rate and thinktime quiesce, the job's end), so
 * this only merges the sends of one refill. */
static int mpnvme_fio_commit(struct thread_data *td) {
  struct glue *g = td->io_ops_data;

  if (!g->defer_send) send_pending(td, g);
  return 0;
}

static int mpnvme_fio_getevents(struct thread_data *td, unsigned int min, unsigned int max, const struct timespec *t) {
  struct glue *g = td->io_ops_data;
  long long timeout_ns = t ? (long long)t->tv_sec * 1000000000LL + t->tv_nsec : -1;

  if (!min || mpnvme_ready(g->session) < min) send_pending(td, g);
  return mpnvme_getevents(g->session, min, max, timeout_ns);
}

static struct io_u *mpnvme_fio_event(struct thread_data *td, int event) {
  struct glue *g = td->io_ops_data;
  int error = 0;
  struct io_u *io_u = mpnvme_event(g->session, (unsigned int)event, &error);

  io_u->error = error;
  return io_u;
}

static int mpnvme_fio_open_file(struct thread_data *td, struct fio_file *f) { return 0; }

static int mpnvme_fio_close_file(struct thread_data *td, struct fio_file *f) { return 0; }

static int mpnvme_fio_invalidate(struct thread_data *td, struct fio_file *f) { return 0; }

__attribute__((visibility("default"))) struct ioengine_ops ioengine = {
    .name = "mpnvme",
    .version = FIO_IOOPS_VERSION,
    .flags = FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL | FIO_MEMALIGN | FIO_ASYNCIO_SETS_ISSUE_TIME,
    .setup = mpnvme_fio_setup,
    .init = mpnvme_fio_init,
    .cleanup = mpnvme_fio_cleanup,
    .queue = mpnvme_fio_queue,
    .commit = mpnvme_fio_commit,
    .getevents = mpnvme_fio_getevents,
    .event = mpnvme_fio_event,
    .open_file = mpnvme_fio_open_file,
    .close_file = mpnvme_fio_close_file,
    .invalidate = mpnvme_fio_invalidate,
    .options = options,
    .option_struct_size = sizeof(struct mpnvme_opts),
};

/*
 * Refuse a fio other than the one whose headers built this engine: every
 * struct layout the engine touches comes from those headers. Clearing the ops
 * version makes fio reject the engine ("bad ioops version") after the clear
 * message below instead of crashing on a mismatched layout.
 */
static void __attribute__((constructor)) mpnvme_check_fio_version(void) {
  const char *running = dlsym(RTLD_DEFAULT, "fio_version_string");

  if (!running) return; /* not loaded by fio (e.g. a test linking the engine) */
  if (strcmp(running, MPNVME_FIO_VERSION) != 0) {
    char msg[256];

    snprintf(msg, sizeof(msg),
             "this engine was built against %s but is loaded by %s; "
             "rebuild fio-mpnvme.so against the running fio's source",
             MPNVME_FIO_VERSION, running);
    mpnvme_log_error(msg);
    ioengine.version = 0;
  }
}
