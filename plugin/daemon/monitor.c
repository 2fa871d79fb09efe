// SPDX-License-Identifier: Apache-2.0
/* The grant monitor thread (see monitor.h). First cut: the contract only;
 * the passes follow in the next commit. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "monitor.h"
#include "plugin.h"

struct monitor {
  struct plugin *p;
  pthread_mutex_t mu;
  monitor_hook_fn hook;
  void *hook_ud;
};

const char *monitor_verdict_name(enum monitor_verdict v) {
  switch (v) {
  case MON_IDLE: return "idle";
  case MON_WITHIN: return "within";
  case MON_AT_CAP: return "at-cap";
  case MON_STARVED: return "starved";
  default: return "unknown";
  }
}

void monitor_set_hook(struct monitor *m, monitor_hook_fn fn, void *ud) {
  pthread_mutex_lock(&m->mu);
  m->hook = fn;
  m->hook_ud = ud;
  pthread_mutex_unlock(&m->mu);
}

struct json_object *monitor_pod_json(struct monitor *m, const char *uid, ioq_err *e) {
  (void)m;
  return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s is not monitored", uid), NULL;
}

struct monitor *monitor_start(struct plugin *p, ioq_err *e) {
  struct monitor *m = calloc(1, sizeof *m);
  if (!m)
    return ioq_fail(e, ENOMEM, "monitor: out of memory"), NULL;
  m->p = p;
  pthread_mutex_init(&m->mu, NULL);
  return m;
}

void monitor_stop(struct monitor *m) { (void)m; }

void monitor_free(struct monitor *m) {
  if (!m)
    return;
  pthread_mutex_destroy(&m->mu);
  free(m);
}

void monitor_pass(struct monitor *m) { (void)m; }

void monitor_metrics(struct monitor *m, FILE *f) { (void)m; (void)f; }
