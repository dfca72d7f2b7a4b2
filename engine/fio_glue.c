// SPDX-License-Identifier: GPL-2.0-only
/*
 * fio-mpnvme: fio external ioengine, a user-space NVMe/TCP host over MPTCP.
 *
 * The only file that includes fio headers: the options table, the ioengine
 * ops and the fio version check. Everything else lives in the C++ host core
 * behind mpnvme_engine.h.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"

#include "mpnvme_engine.h"

#ifndef MPNVME_FIO_VERSION
#error "MPNVME_FIO_VERSION must name the fio version whose headers are used"
#endif

#define OPT(field) offsetof(struct mpnvme_opts, field)

/* Options with a fixed set of values: fio stores the string and only
 * advises its posval list, so each checks its value against that list
 * here, at parse time, before any job starts. */
static int check_choice(const char *name, const char *value);
static int check_transport(void *data, const char *v) { return check_choice("transport", v); }
static int check_iopolicy(void *data, const char *v) { return check_choice("iopolicy", v); }
static int check_log_level(void *data, const char *v) { return check_choice("log_level", v); }
static int check_trim_mode(void *data, const char *v) { return check_choice("trim_mode", v); }
static int check_poll(void *data, const char *v) { return check_choice("poll", v); }

static struct fio_option options[] = {
    {.name = "traddr",
     .lname = "Target address(es)",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(traddr),
     .help = "Target address; comma-separated list of paths ADDR, ADDR:PORT or [IPV6]:PORT",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "trsvcid",
     .lname = "Target port",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(trsvcid),
     .def = "4420",
     .help = "Target TCP port for paths that do not name one",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "transport",
     .lname = "Transport",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(transport),
     .def = "mptcp",
     .help = "Socket protocol: mptcp (falls back to TCP against a plain TCP peer) or tcp",
     .cb = check_transport,
     .posval = {{.ival = "mptcp", .help = "Multipath TCP, TCP against a plain TCP peer"}, {.ival = "tcp", .help = "plain TCP"}},
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "subnqn",
     .lname = "Subsystem NQN",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(subnqn),
     .help = "NQN of the NVMe subsystem to connect to (required)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "hostnqn",
     .lname = "Host NQN",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(hostnqn),
     .help = "Host NQN (default: /etc/nvme/hostnqn, else a generated uuid NQN)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "hostid",
     .lname = "Host ID",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(hostid),
     .help = "Host ID UUID (default: /etc/nvme/hostid, else from the host NQN)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "nsid",
     .lname = "Namespace ID",
     .type = FIO_OPT_INT,
     .off1 = OPT(nsid),
     .def = "1",
     .help = "Namespace to run I/O against",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "host_traddr",
     .lname = "Host source address",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(host_traddr),
     .help = "Local address to bind the queue sockets to: one for all paths, or a comma-separated list aligned with traddr",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "host_iface",
     .lname = "Host interface",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(host_iface),
     .help = "Network interface to bind the queue sockets to (SO_BINDTODEVICE): one for all paths, or a list aligned with traddr",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "queue_size",
     .lname = "I/O queue size",
     .type = FIO_OPT_INT,
     .off1 = OPT(queue_size),
     .def = "0",
     .help = "Entries of the I/O queue (2..1024); 0 = iodepth, bounded by the controller's MQES",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "kato",
     .lname = "Keep alive timeout",
     .type = FIO_OPT_INT,
     .off1 = OPT(kato),
     .def = "5",
     .help = "Keep alive timeout in seconds (Keep Alive sent every kato/2; 0 disables)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "hdr_digest",
     .lname = "Header digest",
     .type = FIO_OPT_BOOL,
     .off1 = OPT(hdr_digest),
     .def = "0",
     .help = "Negotiate CRC32C header digests",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "data_digest",
     .lname = "Data digest",
     .type = FIO_OPT_BOOL,
     .off1 = OPT(data_digest),
     .def = "0",
     .help = "Negotiate CRC32C data digests",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "sk_priority",
     .lname = "Socket priority pairs",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(sk_priority),
     .help = "SO_PRIORITY: a number for all queues, or SELECTOR:VALUE pairs (admin, io, N, N-M)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "tos",
     .lname = "TOS pairs",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(tos),
     .help = "IP TOS / traffic class: a number for all queues, or SELECTOR:VALUE pairs (admin, io, N, N-M)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "iopolicy",
     .lname = "Multipath I/O policy",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(iopolicy),
     .def = "numa",
     .help = "Path selection across traddr paths: numa, round-robin, queue-depth, service-time",
     .cb = check_iopolicy,
     .posval = {{.ival = "numa", .help = "the nearest usable path"},
                {.ival = "round-robin", .help = "paths in turn"},
                {.ival = "queue-depth", .help = "fewest commands in flight"},
                {.ival = "service-time", .help = "least bytes in flight per measured rate"}},
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "log_level",
     .lname = "Log level",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(log_level),
     .def = "warn",
     .help = "Engine log level: trace, debug, info, warn, error, off",
     .cb = check_log_level,
     .posval = {{.ival = "trace", .help = ""},
                {.ival = "debug", .help = ""},
                {.ival = "info", .help = ""},
                {.ival = "warn", .help = ""},
                {.ival = "error", .help = ""},
                {.ival = "off", .help = ""}},
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "trim_mode",
     .lname = "Trim command",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(trim_mode),
     .def = "dsm",
     .help = "NVMe command for fio trims: dsm (Dataset Management deallocate) or write_zeroes",
     .cb = check_trim_mode,
     .posval = {{.ival = "dsm", .help = "Dataset Management, deallocate"}, {.ival = "write_zeroes", .help = "Write Zeroes"}},
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "disable_sqflow",
     .lname = "Disable SQ flow control",
     .type = FIO_OPT_BOOL,
     .off1 = OPT(disable_sqflow),
     .def = "1",
     .help = "Ask the controller to disable SQ flow control (enables C2HData SUCCESS, one PDU less per read)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "connect_timeout",
     .lname = "Connect timeout",
     .type = FIO_OPT_INT,
     .off1 = OPT(connect_timeout),
     .def = "10",
     .help = "Seconds allowed for TCP connect and each admin command (1..600)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "io_timeout",
     .lname = "I/O timeout",
     .type = FIO_OPT_INT,
     .off1 = OPT(io_timeout),
     .def = "30000",
     .help = "Milliseconds a command may take before its path is declared failed and the command moves to another path",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "reconnect_delay",
     .lname = "Reconnect delay",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(reconnect_delay),
     .def = "10",
     .help = "Seconds between reconnect attempts of a failed path (fractions allowed, e.g. 0.5)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "ctrl_loss_tmo",
     .lname = "Controller loss timeout",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(ctrl_loss_tmo),
     .def = "600",
     .help = "Seconds a failed path keeps reconnecting before it is given up; -1 reconnects forever",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "fast_io_fail_tmo",
     .lname = "Fast I/O fail timeout",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(fast_io_fail_tmo),
     .def = "off",
     .help =
         "Seconds after a path failed that I/O with no other usable path fails instead of waiting; off waits up to ctrl_loss_tmo",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "max_retries",
     .lname = "Command retries",
     .type = FIO_OPT_INT,
     .off1 = OPT(max_retries),
     .def = "5",
     .help = "Times a command that failed without DNR and without a path error is retried (nvme_core.max_retries)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "path_stats",
     .lname = "Per-path statistics file",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(path_stats),
     .help = "Append per-path statistics of each job as one JSON line to this file",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "fabrics_disconnect",
     .lname = "Fabrics Disconnect",
     .type = FIO_OPT_BOOL,
     .off1 = OPT(fabrics_disconnect),
     .def = "0",
     .help = "Send the Fabrics Disconnect command on each I/O queue at the end (the Linux host just closes it)",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "poll",
     .lname = "Completion polling",
     .type = FIO_OPT_STR_STORE,
     .off1 = OPT(poll),
     .def = "hybrid",
     .help = "How to wait for completions: block (sleep in epoll), busy (spin on the sockets, a core per job), hybrid (spin "
             "about twice the recent completion time, then sleep)",
     .cb = check_poll,
     .posval = {{.ival = "hybrid", .help = "spin about twice the recent completion time, then sleep"},
                {.ival = "block", .help = "sleep in epoll"},
                {.ival = "busy", .help = "spin on the sockets, a core per job"}},
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "defer_send",
     .lname = "Defer sends to getevents",
     .type = FIO_OPT_BOOL,
     .off1 = OPT(defer_send),
     .def = "1",
     .help = "Hold committed commands until fio next waits for completions and send them in one write, as polling hosts "
             "do (issue time is stamped at the send); 0 sends at every commit",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = "mptcp_join_wait",
     .lname = "Wait for MPTCP joins",
     .type = FIO_OPT_INT,
     .off1 = OPT(mptcp_join_wait),
     .def = "0",
     .help = "Milliseconds an I/O queue's MPTCP connection may wait, after connecting, for its subflows to settle (no "
             "change for 20 ms) before I/O starts; 0 does not wait",
     .category = FIO_OPT_C_ENGINE,
     .group = FIO_OPT_G_INVALID},
    {.name = NULL},
};

static int check_choice(const char *name, const char *value) {
  for (const struct fio_option *o = options; o->name; o++) {
    if (strcmp(o->name, name)) continue;
    for (int i = 0; i < PARSE_MAX_VP && o->posval[i].ival; i++)
      if (!strcmp(o->posval[i].ival, value)) return 0;
    log_err("mpnvme: %s=%s: not one of", name, value);
    for (int i = 0; i < PARSE_MAX_VP && o->posval[i].ival; i++)
      log_err(" %s", o->posval[i].ival);
    log_err("\n");
    return 1;
  }
  return 1;
}

/* Per-job state kept on the fio side: the io_us queued and not yet sent,
 * stamped with their issue time when the batch goes out. */
struct glue {
  struct mpnvme_session *session;
  struct io_u **pending;
  unsigned int nr_pending;
  unsigned int depth;
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

/* fio setup: parent process, before jobs fork. Size the "file" from the
 * namespace so that size= may be omitted. */
static int mpnvme_fio_setup(struct thread_data *td) {
  struct mpnvme_job job;
  unsigned long long bytes = 0;

  mpnvme_set_log_writer(write_fio_log);
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
  if (!g->session) {
    free(g->pending);
    free(g);
    return 1;
  }
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
  struct mpnvme_opts *o = td->eo;

  if (!o->defer_send) send_pending(td, td->io_ops_data);
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
