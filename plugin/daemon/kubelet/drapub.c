// SPDX-License-Identifier: Apache-2.0
#include "drapub.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/catalog.h"
#include "dra/draslice.h"
#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "kube/kube.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "support/metrics.h"
#include "plugin.h"

#define SLICES "/apis/resource.k8s.io/v1/resourceslices"

struct drapub {
  struct plugin *p;
  pthread_t th;
  bool started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_bool stop;
  atomic_bool published;
  char last_err[IOQ_ERR_MSG_MAX];
  char list_path[512];
};

static int node_uid(struct drapub *d, char *out, size_t outsz, ioq_err *e) {
  char path[300];
  snprintf(path, sizeof path, "/api/v1/nodes/%s", d->p->opts.node_name);
  json_object *node = NULL;
  if (ioq_kube_get_json_until(d->p->kube, path, &d->stop, &node, NULL, e) < 0) {
    ioq_err_prefix(e, "node %s (owner of the ResourceSlice)", d->p->opts.node_name);
    return -1;
  }
  const char *uid = ioq_json_str_at(node, "metadata", "uid");
  int rc =
      uid && ioq_copy(out, outsz, uid)
          ? 0
          : ioq_fail(e, IOQ_EINVAL_INPUT, "node %s: no usable metadata.uid", d->p->opts.node_name);
  json_object_put(node);
  return rc;
}

static bool owned_by(json_object *slice, const char *uid) {
  json_object *refs = ioq_json_field(ioq_json_field(slice, "metadata"), "ownerReferences");
  for (size_t i = 0;
       refs && json_object_is_type(refs, json_type_array) && i < json_object_array_length(refs);
       i++) {
    const char *u = ioq_json_str(json_object_array_get_idx(refs, i), "uid");
    if (u && strcmp(u, uid) == 0)
      return true;
  }
  return false;
}

static int64_t generation_of(json_object *slice) {
  json_object *g =
      ioq_json_field(ioq_json_field(ioq_json_field(slice, "spec"), "pool"), "generation");
  return g && json_object_is_type(g, json_type_int) && json_object_get_int64(g) >= 0
             ? json_object_get_int64(g)
             : 0;
}

static int list_slices(struct drapub *d, json_object **list, json_object **items, ioq_err *e) {
  if (ioq_kube_get_json_until(d->p->kube, d->list_path, &d->stop, list, NULL, e) < 0) {
    ioq_err_prefix(e, "list ResourceSlices of this node");
    return -1;
  }
  *items = ioq_json_field(*list, "items");
  if (*items && !json_object_is_type(*items, json_type_array))
    *items = NULL;
  return 0;
}

static int delete_slice(struct drapub *d, const char *name, const char *why, ioq_err *e) {
  char path[sizeof SLICES + 260];
  snprintf(path, sizeof path, SLICES "/%s", name);
  struct ioq_kube_resp r = {0};
  if (ioq_kube_do(d->p->kube, "DELETE", path, NULL, NULL, &r, e) < 0)
    return -1;
  long st = r.status;
  ioq_kube_resp_free(&r);
  if (st != 200 && st != 202 && st != 404)
    return ioq_fail(e, EIO, "DELETE %s answered HTTP %ld", path, st);
  metrics_inc(d->p->metrics, C_DRA_SLICE_WRITES);
  ioq_info("resourceslice deleted name=%s reason=\"%s\"", name, why);
  return 0;
}

static int publish_once(struct drapub *d, ioq_err *e) {
  struct plugin *p = d->p;
  char uid[130];
  struct ioq_disk *disks = NULL;
  json_object *list = NULL, *items = NULL, *want = NULL, *got = NULL;
  int rc = -1;
  if (node_uid(d, uid, sizeof uid, e) < 0 || list_slices(d, &list, &items, e) < 0)
    goto out;
  size_t n_items = items ? json_object_array_length(items) : 0;
  json_object *keep = n_items ? json_object_array_get_idx(items, 0) : NULL;
  /* healthy disks: the builder leaves out those that are not publishable */
  size_t n = catalog_healthy_disks(p->catalog, &disks), n_dev = 0;
  if (!disks) {
    ioq_fail(e, ENOMEM, "out of memory (disks of the slice)");
    goto out;
  }
  int64_t gen = keep ? generation_of(keep) : 0;
  struct ioq_dra_slice_in in = {.driver = IOQ_DRA_DRIVER,
                                .node_name = p->opts.node_name,
                                .node_uid = uid,
                                .generation = gen,
                                .units = &p->cfg.units,
                                .disks = disks,
                                .n_disks = n};
  if (ioq_dra_slice_build(&in, &want, &n_dev, e) < 0)
    goto out;
  const char *keep_name = keep ? ioq_json_str_at(keep, "metadata", "name") : NULL;
  if (keep && !keep_name) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "a ResourceSlice of this node has no metadata.name");
    goto out;
  }
  if (keep && ioq_dra_slice_same_content(keep, want) && owned_by(keep, uid)) {
    rc = 0; /* in place */
  } else if (keep) {
    json_object_put(want);
    want = NULL;
    in.generation = gen + 1;
    if (ioq_dra_slice_build(&in, &want, &n_dev, e) < 0)
      goto out;
    json_object *md = ioq_json_field(want, "metadata");
    const char *rv = ioq_json_str_at(keep, "metadata", "resourceVersion");
    json_object_object_add(md, "name", json_object_new_string(keep_name));
    if (rv)
      json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
    char path[sizeof SLICES + 260];
    snprintf(path, sizeof path, SLICES "/%s", keep_name);
    if (ioq_kube_send_json(p->kube, "PUT", path, "application/json", want, &got, NULL, e) < 0)
      goto out;
    metrics_inc(p->metrics, C_DRA_SLICE_WRITES);
    ioq_info("resourceslice updated name=%s pool=%s generation=%lld devices=%zu", keep_name,
             p->opts.node_name, (long long)in.generation, n_dev);
    rc = 0;
  } else {
    if (ioq_kube_send_json(p->kube, "POST", SLICES, "application/json", want, &got, NULL, e) < 0)
      goto out;
    metrics_inc(p->metrics, C_DRA_SLICE_WRITES);
    const char *name = ioq_json_str_at(got, "metadata", "name");
    ioq_info("resourceslice created name=%s pool=%s generation=%lld devices=%zu",
             name ? name : "(none returned)", p->opts.node_name, (long long)in.generation, n_dev);
    rc = 0;
  }
  /* one slice per node and driver: the others go */
  for (size_t i = 1; rc == 0 && i < n_items; i++) {
    const char *name = ioq_json_str_at(json_object_array_get_idx(items, i), "metadata", "name");
    if (name && delete_slice(d, name, "one ResourceSlice per node is kept", e) < 0)
      rc = -1;
  }
out:
  json_object_put(got);
  json_object_put(want);
  json_object_put(list);
  free(disks);
  return rc;
}

static uint64_t catalog_gen(struct plugin *p) {
  uint64_t g = 0;
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    g += catalog_generation(p->catalog, (enum ioq_resource)r);
  return g;
}

static void *pub_main(void *arg) {
  struct drapub *d = arg;
  uint64_t seen = UINT64_MAX;
  double next = 0;
  while (!atomic_load(&d->stop)) {
    uint64_t g = catalog_gen(d->p);
    double now = ioq_mono_s();
    if (g != seen || now >= next || !atomic_load(&d->published)) {
      ioq_err e;
      if (publish_once(d, &e) == 0) {
        pthread_mutex_lock(&d->mu);
        if (d->last_err[0])
          ioq_info("resourceslice publishing works again");
        d->last_err[0] = '\0';
        pthread_mutex_unlock(&d->mu);
        seen = g;
        next = now + DRAPUB_RESYNC_S;
        atomic_store(&d->published, true);
      } else if (!atomic_load(&d->stop)) {
        metrics_inc(d->p->metrics, C_DRA_SLICE_FAIL);
        pthread_mutex_lock(&d->mu);
        if (strcmp(d->last_err, e.msg) != 0)
          ioq_warn("resourceslice not published (retried every second) error=\"%s\"", e.msg);
        snprintf(d->last_err, sizeof d->last_err, "%s", e.msg);
        pthread_mutex_unlock(&d->mu);
        atomic_store(&d->published, false);
      }
    }
    pthread_mutex_lock(&d->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    if (!atomic_load(&d->stop))
      pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    pthread_mutex_unlock(&d->mu);
  }
  return NULL;
}

struct drapub *drapub_start(struct plugin *p, ioq_err *e) {
  struct drapub *d = calloc(1, sizeof *d);
  if (!d) {
    ioq_fail(e, ENOMEM, "out of memory (ResourceSlice publisher)");
    return NULL;
  }
  d->p = p;
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, NULL);
  char sel[300];
  snprintf(sel, sizeof sel, "spec.nodeName=%s,spec.driver=%s", p->opts.node_name, IOQ_DRA_DRIVER);
  char *esc = ioq_kube_escape(sel);
  if (!esc) {
    ioq_fail(e, ENOMEM, "out of memory (ResourceSlice publisher)");
    drapub_stop(d);
    return NULL;
  }
  snprintf(d->list_path, sizeof d->list_path, SLICES "?fieldSelector=%s", esc);
  free(esc);
  if (pthread_create(&d->th, NULL, pub_main, d) != 0) {
    ioq_fail_errno(e, "start the ResourceSlice publisher thread");
    drapub_stop(d);
    return NULL;
  }
  d->started = true;
  return d;
}

void drapub_stop(struct drapub *d) {
  if (!d)
    return;
  if (d->started) {
    pthread_mutex_lock(&d->mu);
    atomic_store(&d->stop, true);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->th, NULL);
    /* The slice stays: a stop is most often a restart or a rollout, and a
     * node without its slice takes no claim meanwhile. kubelet deletes a
     * driver's slices 30 s after it has no endpoint left (the driver was
     * removed), and the Node's deletion garbage-collects them (owner). */
    if (atomic_load(&d->published))
      ioq_info("resourceslice kept at shutdown node=%s driver=%s reason=\"a restart keeps the "
               "node open to claims; kubelet deletes it if no driver registers within 30 s\"",
               d->p->opts.node_name, IOQ_DRA_DRIVER);
  }
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->mu);
  free(d);
}

bool drapub_ready(struct drapub *d, char *why, size_t whysz) {
  if (!d)
    return snprintf(why, whysz, "ResourceSlice publisher not running"), false;
  if (atomic_load(&d->published)) {
    why[0] = '\0';
    return true;
  }
  pthread_mutex_lock(&d->mu);
  snprintf(why, whysz, "ResourceSlice not published yet%s%s", d->last_err[0] ? ": " : "",
           d->last_err);
  pthread_mutex_unlock(&d->mu);
  return false;
}
