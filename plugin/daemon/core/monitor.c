// SPDX-License-Identifier: Apache-2.0
/* The grant monitor thread (monitor.h; the rule is in grant/grantmon.h).
 *
 * One pass per monitor.intervalSeconds: the applied pods from the pod table,
 * one io.stat + io.pressure read per granted pod, one block stat read per
 * granted disk, then per pod and disk the rates, the verdict, the window
 * state machine and, when it says so, an Event (rate-limited per pod, and
 * per disk for the Node Warning) and one log line. State is kept only for
 * pods the pod table holds a grant for: a pod that goes is forgotten (its
 * series disappear). Everything is bounded: pods by the node's granted pods,
 * disks per pod by IOQ_POD_DISKS_MAX, history and Events per pod by the
 * rings of monitor_internal.h.
 *
 * This file: the thread, its lifecycle, the hook and monitor_pass; the
 * tables are monitor_state.c's, the Events monitor_events.c's and the pass
 * itself monitor_pass.c's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/monoclock.h"
#include "monitor_internal.h"
#include "plugin.h"

_Static_assert((int)MON_STARVED == (int)IOQ_GM_STARVED && (int)MON_AT_CAP == (int)IOQ_GM_AT_CAP_V &&
                   (int)MON_IDLE == (int)IOQ_GM_IDLE && (int)MON_WITHIN == (int)IOQ_GM_WITHIN &&
                   (int)MON_UNKNOWN == (int)IOQ_GM_UNKNOWN,
               "monitor_verdict and ioq_gm_verdict share their order");

const char *monitor_verdict_name(enum monitor_verdict v) {
  switch (v) {
  case MON_IDLE: return "idle";
  case MON_WITHIN: return "within";
  case MON_AT_CAP: return "at-cap";
  case MON_STARVED: return "starved";
  default: return "unknown";
  }
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void monitor_set_hook(struct monitor *m, monitor_hook_fn fn, void *ud) {
  if (!m)
    return;
  pthread_mutex_lock(&m->hook_mu);
  m->hook = fn;
  m->hook_ud = ud;
  pthread_mutex_unlock(&m->hook_mu);
}

void monitor_pass(struct monitor *m) {
  if (!m)
    return;
  double c0 = thread_cpu(), t0 = ioq_mono_s();
  struct monitor_sample *s = NULL;
  pthread_mutex_lock(&m->mu);
  size_t n = mon_pass_locked(m, &s);
  pthread_mutex_unlock(&m->mu);
  pthread_mutex_lock(&m->hook_mu);
  if (m->hook && n)
    m->hook(m->hook_ud, s, n);
  pthread_mutex_unlock(&m->hook_mu);
  free(s);
  pthread_mutex_lock(&m->mu);
  m->passes++;
  m->last_pass_s = ioq_mono_s() - t0;
  m->cpu_s += thread_cpu() - c0;
  pthread_mutex_unlock(&m->mu);
}

/* ---- thread ---- */

static void *mon_main(void *arg) {
  struct monitor *m = arg;
  double next = ioq_mono_s();
  for (;;) {
    /* the node pool in force sets it: taken again for every wait */
    double interval = (double)plugin_cfg(m->p)->monitor.interval_s;
    double now = ioq_mono_s();
    if (now >= next) {
      monitor_pass(m);
      next += interval;
      if (next < ioq_mono_s()) /* a pass longer than the interval: do not catch up */
        next = ioq_mono_s() + interval;
      continue;
    }
    struct pollfd fd = {.fd = m->wake[0], .events = POLLIN};
    int r = poll(&fd, 1, (int)((next - now) * 1000) + 1);
    if (r < 0 && errno != EINTR) {
      ioq_error("grant monitor: poll failed: %s", strerror(errno));
      break;
    }
    if (r > 0)
      break; /* monitor_stop */
  }
  return NULL;
}

static struct monitor *monitor_new(struct plugin *p, ioq_err *e) {
  struct monitor *m = calloc(1, sizeof *m);
  if (!m)
    return ioq_fail(e, ENOMEM, "grant monitor: out of memory allocating the monitor"), NULL;
  m->p = p;
  m->wake[0] = m->wake[1] = -1;
  pthread_mutex_init(&m->mu, NULL);
  pthread_mutex_init(&m->hook_mu, NULL);
  return m;
}

struct monitor *monitor_start(struct plugin *p, ioq_err *e) {
  struct monitor *m = monitor_new(p, e);
  if (!m)
    return NULL;
  if (pipe2(m->wake, O_CLOEXEC) < 0) {
    ioq_fail_errno(e, "grant monitor: pipe");
    monitor_free(m);
    return NULL;
  }
  int r = pthread_create(&m->thread, NULL, mon_main, m);
  if (r != 0) {
    errno = r;
    ioq_fail_errno(e, "grant monitor: thread");
    monitor_free(m);
    return NULL;
  }
  m->running = true;
  ioq_info("grant monitor running interval=%us starved_window=%us event_interval=%us",
           p->cfg.monitor.interval_s, p->cfg.monitor.starved_window_s,
           p->cfg.monitor.event_interval_s);
  return m;
}

void monitor_stop(struct monitor *m) {
  if (!m || !m->running)
    return;
  if (write(m->wake[1], "q", 1) < 0)
    ioq_warn("grant monitor: stop not delivered: %s", strerror(errno));
  pthread_join(m->thread, NULL);
  m->running = false;
}

void monitor_free(struct monitor *m) {
  if (!m)
    return;
  monitor_stop(m);
  if (m->wake[0] >= 0)
    close(m->wake[0]);
  if (m->wake[1] >= 0)
    close(m->wake[1]);
  for (size_t i = 0; i < m->n; i++)
    free(m->pods[i].s);
  free(m->pods);
  pthread_mutex_destroy(&m->hook_mu);
  pthread_mutex_destroy(&m->mu);
  free(m);
}
