// SPDX-License-Identifier: Apache-2.0
/* Kubernetes Events, posted by a worker thread so that an RPC never waits on
 * the API server for them. The queue is bounded; the same event (object,
 * reason, message) is not repeated within a minute, since kubelet retries a
 * failed PreStart with backoff and would otherwise flood the API.
 *
 * The last HISTORY_MAX pod events (queued, plus how often the same one was
 * raised again) are kept for `ioqosctl explain` (events_recent_json). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "grant/podneed.h"
#include "kube/kube.h"
#include "metrics.h"
#include "base/monoclock.h"
#include "plugin.h"

#define QUEUE_MAX 128
#define RECENT_MAX 64
#define REPEAT_AFTER_S 60.0
#define HISTORY_MAX 256
#define HISTORY_MSG_MAX 512

struct ev_item {
  bool on_node;
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  char type[16];
  char reason[64];
  char message[1024];
};

struct hist { /* one pod event as raised */
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char type[16];
  char reason[64];
  char message[HISTORY_MSG_MAX];
  double first, last; /* CLOCK_REALTIME seconds */
  unsigned long count;
  bool queued; /* false: the queue was full, dropped */
};

struct recent {
  unsigned long hash;
  double when;
};

struct events {
  struct plugin *p;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;
  struct ev_item q[QUEUE_MAX];
  size_t head, len;
  struct recent recent[RECENT_MAX];
  size_t recent_next;
  struct hist hist[HISTORY_MAX]; /* ring, guarded by mu */
  size_t hist_next, hist_len;
};

/* Records a pod event in the history (mu held): a repeat of the newest
 * record with the same pod, reason and message counts there. */
static void remember_locked(struct events *ev, const struct ev_item *it, bool queued) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  for (size_t k = 0; k < ev->hist_len; k++) {
    struct hist *h = &ev->hist[(ev->hist_next + HISTORY_MAX - 1 - k) % HISTORY_MAX];
    if (strcmp(h->name, it->name) == 0 && strcmp(h->ns, it->ns) == 0 &&
        strcmp(h->reason, it->reason) == 0 && strncmp(h->message, it->message, sizeof h->message - 1) == 0) {
      h->count++;
      h->last = now;
      h->queued |= queued;
      return;
    }
  }
  struct hist *h = &ev->hist[ev->hist_next];
  memset(h, 0, sizeof *h);
  ioq_copy_trunc(h->ns, sizeof h->ns, it->ns); /* same-size fields: fits */
  ioq_copy_trunc(h->name, sizeof h->name, it->name); /* same-size fields: fits */
  ioq_copy_trunc(h->type, sizeof h->type, it->type); /* same-size fields: fits */
  ioq_copy_trunc(h->reason, sizeof h->reason, it->reason); /* same-size fields: fits */
  ioq_copy_trunc(h->message, sizeof h->message, it->message);
  h->first = h->last = now;
  h->count = 1;
  h->queued = queued;
  ev->hist_next = (ev->hist_next + 1) % HISTORY_MAX;
  if (ev->hist_len < HISTORY_MAX)
    ev->hist_len++;
}

json_object *events_recent_json(struct events *ev, const char *ns, const char *name, size_t max) {
  json_object *arr = json_object_new_array();
  if (!ev || !arr)
    return arr;
  pthread_mutex_lock(&ev->mu);
  for (size_t k = 0; k < ev->hist_len && json_object_array_length(arr) < max; k++) {
    const struct hist *h = &ev->hist[(ev->hist_next + HISTORY_MAX - 1 - k) % HISTORY_MAX];
    if (strcmp(h->name, name) != 0 || strcmp(h->ns, ns) != 0)
      continue;
    json_object *o = json_object_new_object();
    if (!o)
      break;
    json_object_object_add(o, "type", json_object_new_string(h->type));
    json_object_object_add(o, "reason", json_object_new_string(h->reason));
    json_object_object_add(o, "message", json_object_new_string(h->message));
    json_object_object_add(o, "count", json_object_new_int64((int64_t)h->count));
    json_object_object_add(o, "first", json_object_new_double(h->first));
    json_object_object_add(o, "last", json_object_new_double(h->last));
    json_object_object_add(o, "dropped", json_object_new_boolean(!h->queued));
    json_object_array_add(arr, o);
  }
  pthread_mutex_unlock(&ev->mu);
  return arr;
}

static unsigned long hash_item(const struct ev_item *it) {
  unsigned long h = 5381;
  const char *parts[] = {it->ns, it->name, it->reason, it->message};
  for (size_t i = 0; i < 4; i++)
    for (const char *c = parts[i]; *c; c++)
      h = h * 33 + (unsigned char)*c;
  return h;
}

static void *events_main(void *arg) {
  struct events *ev = arg;
  struct plugin *p = ev->p;
  for (;;) {
    pthread_mutex_lock(&ev->mu);
    while (!ev->stop && ev->len == 0)
      pthread_cond_wait(&ev->cv, &ev->mu);
    if (ev->len == 0) { /* stopping, nothing left */
      pthread_mutex_unlock(&ev->mu);
      break;
    }
    struct ev_item it = ev->q[ev->head];
    ev->head = (ev->head + 1) % QUEUE_MAX;
    ev->len--;
    bool stop = ev->stop;
    pthread_mutex_unlock(&ev->mu);
    if (stop) { /* shutting down: do not hold the exit up on the API server */
      metrics_inc(p->metrics, C_EVENTS_DROPPED);
      continue;
    }
    struct ioq_kube_event ke = {
        .ns = it.on_node ? "default" : it.ns,
        .kind = it.on_node ? "Node" : "Pod",
        .name = it.on_node ? p->opts.node_name : it.name,
        .uid = it.uid[0] ? it.uid : NULL,
        .type = it.type,
        .reason = it.reason,
        .message = it.message,
        .component = "ioqos-plugin",
        .host = p->opts.node_name,
    };
    ioq_err e;
    if (ioq_kube_post_event(p->kube, &ke, &e) == 0) {
      metrics_inc(p->metrics, C_EVENTS_OK);
      ioq_info("event posted kind=%s object=%s%s%s reason=%s", ke.kind, it.on_node ? "" : ke.ns,
               it.on_node ? "" : "/", ke.name, ke.reason);
    } else {
      metrics_inc(p->metrics, C_EVENTS_FAIL);
      ioq_warn("event post failed kind=%s object=%s reason=%s error=\"%s\"", ke.kind, ke.name,
               ke.reason, e.msg);
    }
  }
  return NULL;
}

struct events *events_start(struct plugin *p) {
  if (!p->kube)
    return NULL;
  struct events *ev = calloc(1, sizeof *ev);
  if (!ev)
    return NULL;
  ev->p = p;
  pthread_mutex_init(&ev->mu, NULL);
  pthread_cond_init(&ev->cv, NULL);
  if (pthread_create(&ev->thread, NULL, events_main, ev) != 0) {
    pthread_cond_destroy(&ev->cv);
    pthread_mutex_destroy(&ev->mu);
    free(ev);
    return NULL;
  }
  return ev;
}

void events_stop(struct events *ev) {
  if (!ev)
    return;
  pthread_mutex_lock(&ev->mu);
  ev->stop = true;
  pthread_cond_signal(&ev->cv);
  pthread_mutex_unlock(&ev->mu);
  pthread_join(ev->thread, NULL);
  pthread_cond_destroy(&ev->cv);
  pthread_mutex_destroy(&ev->mu);
  free(ev);
}

void events_post(struct events *ev, const char *ns, const char *name, const char *uid,
                 const char *type, const char *reason, const char *fmt, ...) {
  if (!ev)
    return;
  struct ev_item it = {0};
  it.on_node = ns == NULL;
  if (!ioq_copy(it.ns, sizeof it.ns, ns ? ns : "") ||
      !ioq_copy(it.name, sizeof it.name, name ? name : "") ||
      !ioq_copy(it.uid, sizeof it.uid, uid ? uid : "")) {
    /* a cut name would name another object: the event is not posted */
    ioq_warn("event not posted: pod identity too long ns=%.80s name=%.80s uid=%.80s reason=%s",
             ns ? ns : "", name ? name : "", uid ? uid : "", reason);
    return;
  }
  /* type and reason are the callers' fixed words (Normal/Warning, a CamelCase reason) */
  ioq_copy_trunc(it.type, sizeof it.type, type);
  ioq_copy_trunc(it.reason, sizeof it.reason, reason);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(it.message, sizeof it.message, fmt, ap);
  va_end(ap);
  unsigned long h = hash_item(&it);
  double now = ioq_mono_s();

  pthread_mutex_lock(&ev->mu);
  bool repeat = false;
  for (size_t i = 0; i < RECENT_MAX && !repeat; i++)
    repeat = ev->recent[i].when > 0 && ev->recent[i].hash == h &&
             now - ev->recent[i].when < REPEAT_AFTER_S;
  bool full = ev->len == QUEUE_MAX;
  if (!repeat && !full) {
    ev->q[(ev->head + ev->len) % QUEUE_MAX] = it;
    ev->len++;
    ev->recent[ev->recent_next] = (struct recent){h, now};
    ev->recent_next = (ev->recent_next + 1) % RECENT_MAX;
    pthread_cond_signal(&ev->cv);
  }
  if (!it.on_node)
    remember_locked(ev, &it, !full);
  pthread_mutex_unlock(&ev->mu);
  if (full)
    metrics_inc(ev->p->metrics, C_EVENTS_DROPPED);
  if (repeat)
    ioq_debug("event not repeated object=%s/%s reason=%s", it.ns, it.name, it.reason);
}
