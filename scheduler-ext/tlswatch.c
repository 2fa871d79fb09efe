// SPDX-License-Identifier: Apache-2.0
#include "tlswatch.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"

#define PEM_MAX (1u << 20)

enum { F_CERT, F_KEY, F_CA, F_COUNT };

struct ext_tlswatch {
  struct ext_httpd *h;
  const char *path[F_COUNT];
  char *serving[F_COUNT]; /* what h serves */
  char *refused[F_COUNT]; /* the last set that failed to load, not retried */
  unsigned interval_ms;
  char last_error[256]; /* logged once until it changes */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;
};

static bool same(char *const a[F_COUNT], char *const b[F_COUNT]) {
  for (int i = 0; i < F_COUNT; i++) {
    if ((a[i] == NULL) != (b[i] == NULL))
      return false;
    if (a[i] && strcmp(a[i], b[i]) != 0)
      return false;
  }
  return true;
}

static void put(char *v[F_COUNT]) {
  for (int i = 0; i < F_COUNT; i++) {
    free(v[i]);
    v[i] = NULL;
  }
}

/* Reads all files; the contents are compared, not mtimes, so a rewrite
 * within one timestamp tick or a symlink swap is seen all the same. */
static void check(struct ext_tlswatch *w) {
  char *now[F_COUNT] = {0};
  ioq_err e = {0};
  for (int i = 0; i < F_COUNT; i++) {
    if (!w->path[i])
      continue;
    if (ioq_read_file(w->path[i], &now[i], NULL, PEM_MAX, &e) < 0) {
      /* mid-rotation a file can be missing for a moment: keep serving;
       * one that stays unreadable is reported once */
      if (strcmp(e.msg, w->last_error) != 0)
        ioq_warn("TLS files not readable, serving the ones loaded before error=\"%s\"", e.msg);
      snprintf(w->last_error, sizeof w->last_error, "%s", e.msg);
      put(now);
      return;
    }
  }
  w->last_error[0] = '\0';
  if (same(now, w->serving) || same(now, w->refused)) {
    put(now);
    return;
  }
  for (int i = 0; i < F_COUNT; i++)
    if (w->path[i] && strcmp(now[i], w->serving[i]) != 0)
      ioq_debug("TLS file changed path=%s", w->path[i]);
  if (ext_httpd_reload_tls(w->h, now[F_CERT], now[F_KEY], now[F_CA], &e) < 0) {
    /* a half-written rotation (new cert, old key) lands here; the next
     * change of any file is tried again */
    ioq_warn("TLS files changed but were not loaded error=\"%s\"", e.msg);
    put(w->refused);
    memcpy(w->refused, now, sizeof now);
    return;
  }
  ioq_info("TLS certificate reloaded cert=%s", w->path[F_CERT]);
  put(w->serving);
  put(w->refused);
  memcpy(w->serving, now, sizeof now);
}

static void *run(void *arg) {
  struct ext_tlswatch *w = arg;
  pthread_mutex_lock(&w->mu);
  while (!w->stop) {
    struct timespec ts = ioq_mono_deadline((double)w->interval_ms / 1000.0);
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    if (w->stop)
      break;
    pthread_mutex_unlock(&w->mu);
    check(w);
    ext_httpd_reap(w->h);
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

struct ext_tlswatch *ext_tlswatch_start(struct ext_httpd *h, const char *cert_path,
                                        const char *key_path, const char *ca_path,
                                        const char *cert, const char *key, const char *ca,
                                        unsigned interval_ms, ioq_err *e) {
  struct ext_tlswatch *w = calloc(1, sizeof *w);
  if (!w) {
    ioq_fail(e, ENOMEM, "out of memory building the TLS file watch");
    return NULL;
  }
  w->h = h;
  w->path[F_CERT] = cert_path;
  w->path[F_KEY] = key_path;
  w->path[F_CA] = ca_path;
  w->interval_ms = interval_ms ? interval_ms : 1000;
  const char *cur[F_COUNT] = {cert, key, ca};
  for (int i = 0; i < F_COUNT; i++)
    if (cur[i] && !(w->serving[i] = strdup(cur[i]))) {
      put(w->serving);
      free(w);
      ioq_fail(e, ENOMEM, "out of memory keeping the TLS files being served");
      return NULL;
    }
  pthread_condattr_t ca_attr;
  pthread_condattr_init(&ca_attr);
  pthread_condattr_setclock(&ca_attr, CLOCK_MONOTONIC);
  pthread_cond_init(&w->cv, &ca_attr);
  pthread_condattr_destroy(&ca_attr);
  pthread_mutex_init(&w->mu, NULL);
  int rc = pthread_create(&w->thread, NULL, run, w);
  if (rc != 0) {
    ioq_fail(e, rc, "start the TLS file watcher: %s", strerror(rc));
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    put(w->serving);
    free(w);
    return NULL;
  }
  return w;
}

void ext_tlswatch_stop(struct ext_tlswatch *w) {
  if (!w)
    return;
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  put(w->serving);
  put(w->refused);
  free(w);
}
