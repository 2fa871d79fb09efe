// SPDX-License-Identifier: Apache-2.0
#include "podsync.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonfield.h"
#include "base/log.h"

/* A placement whose pod is still unbound this long after its bind started
 * was not bound: bind takes two API calls of --kube-timeout at most. */
#define UNBOUND_GRACE_MS (120u * 1000u)
/* pods per list page in the rebuild: a page of big pods stays well inside
 * the parse budget */
#define REBUILD_PAGE 100

struct ext_podsync {
  struct extender *x;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_bool stop;
  atomic_bool ready;
  unsigned interval_ms, min_age_ms;
};

/* GET path and parse it under the budget (named ext_kube_* so the RBAC check
 * in tests/manifests sees it as an API call); *held keeps the charge until
 * ext_body_free. Returns the HTTP status (0 on transport failure, -1 with
 * *e on a parse refusal). */
static long ext_kube_get_json(struct extender *x, const char *path, struct ext_body *held,
                              json_object **out, ioq_err *e) {
  *out = NULL;
  struct ioq_kube_resp r;
  if (ioq_kube_do(x->kube, "GET", path, NULL, NULL, &r, e) < 0)
    return 0;
  long st = r.status;
  if (st >= 200 && st <= 299) {
    int rc = ext_body_parse_text(held, r.body, r.len, x->budget);
    if (rc < 0 || held->err_status) {
      ioq_fail(e, rc < 0 ? ENOMEM : EAGAIN, "GET %s: %s", path,
               rc < 0 ? "out of memory parsing the reply" : held->err);
      st = -1;
    } else {
      *out = ext_body_take(held);
    }
  } else {
    ioq_fail(e, EIO, "GET %s: HTTP %ld: %.300s", path, st, r.len ? r.body : "(empty reply)");
  }
  ioq_kube_resp_free(&r);
  return st;
}

/* "" when absent: the callers compare and print it */
static const char *str_field(json_object *o, const char *a, const char *b) {
  const char *s = ioq_json_str_at(o, a, b);
  return s ? s : "";
}

static bool ended(json_object *pod) {
  const char *phase = str_field(pod, "status", "phase");
  return strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
}

/* Why the placement of r should go, NULL to keep it. */
static const char *check(struct extender *x, const struct ext_assumed_ref *r, char *why,
                         size_t whysz) {
  char ns[IOQ_POD_NAMESPACE_MAX + 1], name[IOQ_POD_NAME_MAX + 1];
  const char *slash = strchr(r->key, '/');
  if (!slash || (size_t)(slash - r->key) >= sizeof ns)
    return NULL;
  snprintf(ns, sizeof ns, "%.*s", (int)(slash - r->key), r->key);
  snprintf(name, sizeof name, "%s", slash + 1);
  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
  struct ext_body held = {0};
  json_object *pod;
  ioq_err e = {0};
  long st = ext_kube_get_json(x, path, &held, &pod, &e);
  const char *res = NULL;
  if (st == 404) {
    res = "pod deleted";
  } else if (st >= 200 && st <= 299) {
    const char *uid = str_field(pod, "metadata", "uid");
    const char *node = str_field(pod, "spec", "nodeName");
    /* placements of pods without a UID are keyed by namespace/name */
    if (strcmp(r->uid, r->key) != 0 && strcmp(uid, r->uid) != 0) {
      res = "pod deleted and recreated";
    } else if (ended(pod)) {
      snprintf(why, whysz, "pod %s", str_field(pod, "status", "phase"));
      res = why;
    } else if (*node && strcmp(node, r->node) != 0) {
      snprintf(why, whysz, "pod bound to node %.253s", node);
      res = why;
    } else if (!*node && r->age_ms >= UNBOUND_GRACE_MS) {
      res = "pod was never bound";
    }
  } else {
    ioq_debug("assumed placement check failed node=%s pod=%s error=\"%s\"", r->node, r->key, e.msg);
  }
  json_object_put(pod);
  ext_body_free(&held);
  return res;
}

void ext_podsync_sweep(struct extender *x, unsigned min_age_ms) {
  struct ext_assumed_ref *refs;
  ioq_err e = {0};
  size_t n = ext_assumed_older(x->assumed, min_age_ms, &refs, &e);
  if (n == (size_t)-1) {
    ioq_error("assumed placement sweep: %s", e.msg);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char why[300];
    const char *res = check(x, &refs[i], why, sizeof why);
    if (res && ext_assumed_remove(x->assumed, refs[i].node, refs[i].uid))
      ioq_info("assumed placement dropped node=%s pod=%s reason=\"%s\"", refs[i].node, refs[i].key,
               res);
  }
  free(refs);
}

/* One listed pod: assume it if it holds units its node does not count yet. */
static void consider(struct extender *x, json_object *pod, size_t *restored) {
  if (ended(pod))
    return;
  const char *node = str_field(pod, "spec", "nodeName");
  if (!*node)
    return;
  struct ioq_pod_need pn;
  ioq_err e = {0};
  if (ioq_pod_need_from_json(pod, &pn, &e) < 0 || !pn.disk[0] || !ioq_pod_need_any(&pn))
    return;
  char key[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 2];
  snprintf(key, sizeof key, "%s/%s", pn.ns, pn.name);
  const char *id = pn.uid[0] ? pn.uid : key;
  bool counted = true;
  const char *skip = NULL;
  ext_nodecache_rdlock(x->cache);
  const struct ext_nodeinfo *ni = ext_nodecache_find(x->cache, node);
  if (!ni || ni->status != EXT_NODE_OK)
    skip = "node has no usable annotation";
  else if (!ni->st.published_at)
    skip = "node's plugin does not list pods (annotation without publishedAt)";
  else {
    counted = false;
    for (size_t i = 0; i < ni->st.n_pods && !counted; i++)
      counted = strcmp(ni->st.pods[i], id) == 0;
  }
  ext_nodecache_unlock(x->cache);
  if (skip) {
    ioq_debug("assumed placement not rebuilt node=%s pod=%s reason=\"%s\"", node, key, skip);
    return;
  }
  if (counted)
    return;
  if (ext_assumed_restore(x->assumed, node, id, key, pn.disk, pn.units, &e) < 0) {
    ioq_error("assumed placement not rebuilt node=%s pod=%s error=\"%s\"", node, key, e.msg);
    return;
  }
  (*restored)++;
  ioq_info("assumed placement rebuilt node=%s pod=%s disk=%s bandwidth=%llu iops=%llu", node, key,
           pn.disk, (unsigned long long)pn.units[IOQ_RES_BANDWIDTH],
           (unsigned long long)pn.units[IOQ_RES_IOPS]);
}

int ext_podsync_rebuild(struct extender *x, atomic_bool *stop, ioq_err *e) {
  char *cont = NULL;
  size_t pods = 0, restored = 0;
  char *sel = ioq_kube_escape("spec.nodeName!=");
  if (!sel)
    return ioq_fail(e, ENOMEM, "out of memory building the field selector");
  int rc = 0;
  do {
    char *ce = cont ? ioq_kube_escape(cont) : NULL;
    char path[8192];
    int len = snprintf(path, sizeof path, "/api/v1/pods?fieldSelector=%s&limit=%d%s%s", sel,
                       REBUILD_PAGE, ce ? "&continue=" : "", ce ? ce : "");
    free(ce);
    free(cont);
    cont = NULL;
    if (len >= (int)sizeof path) {
      rc = ioq_fail(e, IOQ_EINVAL_INPUT, "pod list continue token too long");
      break;
    }
    struct ext_body held = {0};
    json_object *list;
    long st = ext_kube_get_json(x, path, &held, &list, e);
    if (st < 200 || st > 299) {
      ext_body_free(&held);
      rc = -1;
      break;
    }
    json_object *items = ioq_json_field(list, "items");
    size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
    for (size_t i = 0; i < n; i++)
      consider(x, json_object_array_get_idx(items, i), &restored);
    pods += n;
    const char *c = str_field(list, "metadata", "continue");
    if (*c && !(cont = strdup(c)))
      rc = ioq_fail(e, ENOMEM, "out of memory keeping the list's continue token");
    json_object_put(list);
    ext_body_free(&held);
  } while (cont && !(stop && atomic_load(stop)));
  free(cont);
  free(sel);
  if (rc == 0)
    ioq_info("assumed placements rebuilt from bound pods pods=%zu placements=%zu", pods, restored);
  return rc;
}

/* Waits ms or until stopped; false when stopped. */
static bool nap(struct ext_podsync *s, unsigned ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&s->mu);
  while (!atomic_load(&s->stop) && pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
    ;
  bool go = !atomic_load(&s->stop);
  pthread_mutex_unlock(&s->mu);
  return go;
}

static void *run(void *arg) {
  struct ext_podsync *s = arg;
  /* the rebuild compares with node annotations: after the first node list */
  while (!ext_nodecache_synced(s->x->cache))
    if (!nap(s, 100))
      return NULL;
  unsigned backoff = 500;
  for (;;) {
    ioq_err e = {0};
    if (ext_podsync_rebuild(s->x, &s->stop, &e) == 0)
      break;
    ioq_warn("rebuilding assumed placements failed, binds wait retry_in_ms=%u error=\"%s\"",
             backoff, e.msg);
    if (!nap(s, backoff))
      return NULL;
    backoff = backoff < 16000 ? backoff * 2 : 30000;
  }
  atomic_store(&s->ready, true);
  while (nap(s, s->interval_ms))
    ext_podsync_sweep(s->x, s->min_age_ms);
  return NULL;
}

struct ext_podsync *ext_podsync_start(struct extender *x, unsigned interval_ms,
                                      unsigned min_age_ms, ioq_err *e) {
  struct ext_podsync *s = calloc(1, sizeof *s);
  if (!s) {
    ioq_fail(e, ENOMEM, "out of memory building the pod sync");
    return NULL;
  }
  s->x = x;
  s->interval_ms = interval_ms;
  s->min_age_ms = min_age_ms;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  int err = pthread_create(&s->thread, NULL, run, s);
  if (err) {
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
    ioq_fail(e, err, "start the assumed placement sync thread: %s", strerror(err));
    return NULL;
  }
  return s;
}

bool ext_podsync_ready(struct ext_podsync *s) { return !s || atomic_load(&s->ready); }

void ext_podsync_stop(struct ext_podsync *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->stop, true);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
