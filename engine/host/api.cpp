// SPDX-License-Identifier: GPL-2.0-only
// C entry points for fio_glue.c. Exceptions end here: each is logged once
// with its message (which names the option or the failing step).
#include <cstring>
#include <exception>
#include <openssl/crypto.h>

#include "engine/host/session.hpp"
#include "engine/mpnvme_engine.h"
#include "lib/base/log.hpp"

using mpnvme::log;
using mpnvme::host::Session;

namespace {

// The strings fio stored, by option name, then converted; the log level
// takes effect here, before the session logs anything.
// The copies of secret values are wiped however parsing ends.
struct OptionCopies {
  mpnvme::OptionValues given;
  ~OptionCopies() {
    for (auto &[name, v] : given)
      if (mpnvme_option_is_secret(name.c_str())) OPENSSL_cleanse(v.data(), v.size());
  }
};

mpnvme::EngineOptions engine_options(const mpnvme_opts &o) {
  OptionCopies copies;
  for (unsigned i = 0; const mpnvme_option_def *d = mpnvme_option_at(i); i++)
    if (o.value[i]) copies.given[d->name] = o.value[i];
  mpnvme::EngineOptions e = mpnvme::parse_engine_options(copies.given);
  mpnvme::set_log_level(e.log_level);
  return e;
}

} // namespace

struct mpnvme_session {
  Session s;
};

extern "C" {

void mpnvme_forget_secrets(mpnvme_opts *o) {
  for (unsigned i = 0; const mpnvme_option_def *d = mpnvme_option_at(i); i++)
    if (o->value[i] && mpnvme_option_is_secret(d->name)) OPENSSL_cleanse(o->value[i], strlen(o->value[i]));
}

int mpnvme_probe(const mpnvme_opts *o, const mpnvme_job *j, unsigned long long *bytes) {
  try {
    Session s(engine_options(*o), *j);
    s.probe();
    *bytes = s.size_bytes();
    return 0;
  } catch (const std::exception &e) {
    log().error("job {}: {}", j->name ? j->name : "", e.what());
    return -1;
  }
}

mpnvme_session *mpnvme_open(const mpnvme_opts *o, const mpnvme_job *j) {
  try {
    auto *s = new mpnvme_session{Session(engine_options(*o), *j)};
    try {
      s->s.open();
    } catch (...) {
      delete s;
      throw;
    }
    return s;
  } catch (const std::exception &e) {
    log().error("job {}: {}", j->name ? j->name : "", e.what());
    return nullptr;
  }
}

int mpnvme_queue(mpnvme_session *s, const mpnvme_io *io, int *error) { return s->s.queue(*io, *error); }
void mpnvme_commit(mpnvme_session *s) { s->s.commit(); }
int mpnvme_getevents(mpnvme_session *s, unsigned min, unsigned max, long long timeout_ns) {
  return s->s.getevents(min, max, timeout_ns);
}
unsigned int mpnvme_ready(const mpnvme_session *s) { return s->s.ready(); }
int mpnvme_defers_send(const mpnvme_session *s) { return s->s.options().defer_send; }
void *mpnvme_event(mpnvme_session *s, unsigned i, int *error) { return s->s.event(i, *error); }

void mpnvme_close(mpnvme_session *s) {
  try {
    delete s;
  } catch (const std::exception &e) {
    log().warn("close: {}", e.what());
  }
}

void mpnvme_log_error(const char *msg) { log().error("{}", msg); }
void mpnvme_set_log_writer(void (*write)(const char *)) { mpnvme::set_log_writer(write); }

} // extern "C"
