// SPDX-License-Identifier: Apache-2.0
#include "drastate.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "base/jsonparse.h"
#include "base/grow.h"

#define DRASTATE_VERSION 1

struct drastate {
  pthread_mutex_t lock;
  char *path;
  struct dra_rec *recs;
  size_t n, cap;
  /* the claims kubelet unprepared lately (a ring): drastate_adopt must not
   * bring back one kubelet is done with */
  char unprepared[DRASTATE_UNPREPARED_KEPT][IOQ_DRA_UID_MAX + 1];
  size_t n_unprepared;
};

struct drastate *drastate_new(const char *path) {
  struct drastate *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  if (path && !(s->path = strdup(path))) {
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->lock, NULL);
  return s;
}

void drastate_free(struct drastate *s) {
  if (!s)
    return;
  pthread_mutex_destroy(&s->lock);
  free(s->recs);
  free(s->path);
  free(s);
}

/* ---- the file ---- */

static json_object *rec_json(const struct dra_rec *r) {
  json_object *o = json_object_new_object(), *sh = json_object_new_array();
  if (!o || !sh) {
    json_object_put(o);
    json_object_put(sh);
    return NULL;
  }
  json_object_object_add(o, "uid", json_object_new_string(r->claim_uid));
  json_object_object_add(o, "namespace", json_object_new_string(r->ns));
  json_object_object_add(o, "name", json_object_new_string(r->name));
  json_object_object_add(o, "podUID", json_object_new_string(r->pod_uid));
  json_object_object_add(o, "podName", json_object_new_string(r->pod_name));
  for (size_t i = 0; i < r->n_shares; i++) {
    const struct dra_share_rec *x = &r->shares[i];
    json_object *j = json_object_new_object();
    if (!j)
      break;
    json_object_object_add(j, "disk", json_object_new_string(x->disk));
    json_object_object_add(j, "device", json_object_new_string(x->device));
    json_object_object_add(j, "request", json_object_new_string(x->request));
    json_object_object_add(j, "shareID", json_object_new_string(x->share_id));
    json_object_object_add(j, "bandwidth",
                           json_object_new_int64((int64_t)x->units[IOQ_RES_BANDWIDTH]));
    json_object_object_add(j, "iops", json_object_new_int64((int64_t)x->units[IOQ_RES_IOPS]));
    json_object_array_add(sh, j);
  }
  json_object_object_add(o, "shares", sh);
  return o;
}

/* Saves recs[0..n) (not necessarily s->recs: a put or take saves the table
 * it is about to have). Lock held. */
static int save_locked(struct drastate *s, const struct dra_rec *recs, size_t n, ioq_err *e) {
  if (!s->path)
    return 0;
  json_object *root = json_object_new_object(), *arr = json_object_new_array();
  if (!root || !arr) {
    json_object_put(root);
    json_object_put(arr);
    return ioq_fail(e, ENOMEM, "out of memory (DRA claim state)");
  }
  json_object_object_add(root, "version", json_object_new_int(DRASTATE_VERSION));
  for (size_t i = 0; i < n; i++) {
    json_object *j = rec_json(&recs[i]);
    if (!j) {
      json_object_put(root);
      json_object_put(arr);
      return ioq_fail(e, ENOMEM, "out of memory (DRA claim state)");
    }
    json_object_array_add(arr, j);
  }
  json_object_object_add(root, "claims", arr);
  const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
  int rc = text ? ioq_write_file_atomic(s->path, text, e)
                : ioq_fail(e, ENOMEM, "out of memory (DRA claim state)");
  json_object_put(root);
  if (rc < 0)
    ioq_err_prefix(e, "DRA claim state");
  return rc;
}

static int take_field(json_object *o, const char *key, char *out, size_t outsz, bool required,
                      const char *where, ioq_err *e) {
  json_object *v = ioq_json_field(o, key);
  if (!v) {
    if (!required) {
      out[0] = '\0';
      return 0;
    }
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: %s is missing", where, key);
  }
  if (!json_object_is_type(v, json_type_string))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: %s is not a string", where, key);
  if (!ioq_copy(out, outsz, json_object_get_string(v)))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: %s longer than %zu bytes", where, key, outsz - 1);
  return 0;
}

static int take_units(json_object *o, const char *key, uint64_t *out, const char *where,
                      ioq_err *e) {
  json_object *v = ioq_json_field(o, key);
  if (!v || !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: %s is not a whole number of units", where, key);
  *out = (uint64_t)json_object_get_int64(v);
  return 0;
}

static int rec_from_json(json_object *o, size_t idx, struct dra_rec *r, ioq_err *e) {
  char where[48];
  snprintf(where, sizeof where, "claims[%zu]", idx);
  memset(r, 0, sizeof *r);
  if (!json_object_is_type(o, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s is not an object", where);
  if (take_field(o, "uid", r->claim_uid, sizeof r->claim_uid, true, where, e) < 0 ||
      take_field(o, "namespace", r->ns, sizeof r->ns, true, where, e) < 0 ||
      take_field(o, "name", r->name, sizeof r->name, true, where, e) < 0 ||
      take_field(o, "podUID", r->pod_uid, sizeof r->pod_uid, true, where, e) < 0 ||
      take_field(o, "podName", r->pod_name, sizeof r->pod_name, true, where, e) < 0)
    return -1;
  if (ioq_pod_uid_check(r->pod_uid, e) < 0) {
    ioq_err_prefix(e, "%s.podUID", where);
    return -1;
  }
  json_object *sh = ioq_json_field(o, "shares");
  if (!sh || !json_object_is_type(sh, json_type_array) ||
      json_object_array_length(sh) > IOQ_DRA_MAX_RESULTS)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: shares is not an array of at most %d", where,
                    IOQ_DRA_MAX_RESULTS);
  for (size_t i = 0; i < json_object_array_length(sh); i++) {
    json_object *j = json_object_array_get_idx(sh, i);
    struct dra_share_rec *x = &r->shares[i];
    char w[80];
    snprintf(w, sizeof w, "%s.shares[%zu]", where, i);
    if (!json_object_is_type(j, json_type_object))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s is not an object", w);
    if (take_field(j, "disk", x->disk, sizeof x->disk, true, w, e) < 0 ||
        take_field(j, "device", x->device, sizeof x->device, true, w, e) < 0 ||
        take_field(j, "request", x->request, sizeof x->request, true, w, e) < 0 ||
        take_field(j, "shareID", x->share_id, sizeof x->share_id, false, w, e) < 0 ||
        take_units(j, "bandwidth", &x->units[IOQ_RES_BANDWIDTH], w, e) < 0 ||
        take_units(j, "iops", &x->units[IOQ_RES_IOPS], w, e) < 0)
      return -1;
    r->n_shares++;
  }
  return 0;
}

int drastate_load(struct drastate *s, ioq_err *e) {
  if (!s->path)
    return 0;
  char *text = NULL;
  size_t len = 0;
  if (!ioq_path_exists(s->path))
    return 0;
  if (ioq_read_file(s->path, &text, &len, DRASTATE_FILE_MAX, e) < 0)
    return -1;
  json_object *root = NULL;
  int rc = ioq_json_parse_strict(text, len, DRASTATE_FILE_MAX, s->path, &root, e);
  free(text);
  if (rc < 0)
    return -1;
  struct dra_rec *recs = NULL;
  size_t n = 0;
  json_object *ver = ioq_json_field(root, "version"), *arr = ioq_json_field(root, "claims");
  if (!ver || !json_object_is_type(ver, json_type_int) ||
      json_object_get_int(ver) != DRASTATE_VERSION) {
    rc = ioq_fail(e, IOQ_EINVAL_INPUT, "%s: version is not %d", s->path, DRASTATE_VERSION);
    goto out;
  }
  if (!arr || !json_object_is_type(arr, json_type_array) ||
      json_object_array_length(arr) > DRASTATE_MAX_CLAIMS) {
    rc = ioq_fail(e, IOQ_EINVAL_INPUT, "%s: claims is not an array of at most %d", s->path,
                  DRASTATE_MAX_CLAIMS);
    goto out;
  }
  size_t want = json_object_array_length(arr);
  if (want && !(recs = calloc(want, sizeof *recs))) {
    rc = ioq_fail(e, ENOMEM, "out of memory (DRA claim state)");
    goto out;
  }
  for (; n < want; n++)
    if (rec_from_json(json_object_array_get_idx(arr, n), n, &recs[n], e) < 0) {
      ioq_err_prefix(e, "%s", s->path);
      rc = -1;
      goto out;
    }
  pthread_mutex_lock(&s->lock);
  free(s->recs);
  s->recs = recs;
  s->n = s->cap = n;
  recs = NULL;
  pthread_mutex_unlock(&s->lock);
out:
  free(recs);
  json_object_put(root);
  return rc;
}

/* ---- changes ---- */

static ssize_t find_locked(struct drastate *s, const char *claim_uid) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->recs[i].claim_uid, claim_uid) == 0)
      return (ssize_t)i;
  return -1;
}

static int put_locked(struct drastate *s, const struct dra_rec *r, ioq_err *e) {
  ssize_t i = find_locked(s, r->claim_uid);
  if (i >= 0) {
    struct dra_rec old = s->recs[i];
    s->recs[i] = *r;
    if (save_locked(s, s->recs, s->n, e) < 0) {
      s->recs[i] = old;
      return -1;
    }
    return 0;
  }
  if (s->n >= DRASTATE_MAX_CLAIMS)
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "this node already holds %d prepared claims (the most kept)",
                    DRASTATE_MAX_CLAIMS);
  struct dra_rec *g = ioq_grow(s->recs, &s->cap, s->n + 1, sizeof *g, 16);
  if (!g)
    return ioq_fail(e, ENOMEM, "out of memory (DRA claim state)");
  s->recs = g;
  s->recs[s->n] = *r;
  if (save_locked(s, s->recs, s->n + 1, e) < 0)
    return -1;
  s->n++;
  return 0;
}

int drastate_put(struct drastate *s, const struct dra_rec *r, ioq_err *e) {
  pthread_mutex_lock(&s->lock);
  int rc = put_locked(s, r, e);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

static bool unprepared_locked(const struct drastate *s, const char *claim_uid) {
  size_t n = s->n_unprepared < DRASTATE_UNPREPARED_KEPT ? s->n_unprepared : DRASTATE_UNPREPARED_KEPT;
  for (size_t i = 0; i < n; i++)
    if (strcmp(s->unprepared[i], claim_uid) == 0)
      return true;
  return false;
}

int drastate_adopt(struct drastate *s, const struct dra_rec *r, ioq_err *e) {
  pthread_mutex_lock(&s->lock);
  int rc = 0;
  if (find_locked(s, r->claim_uid) < 0 && !unprepared_locked(s, r->claim_uid))
    rc = put_locked(s, r, e) < 0 ? -1 : 1;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int drastate_take(struct drastate *s, const char *claim_uid, struct dra_rec *out, ioq_err *e) {
  pthread_mutex_lock(&s->lock);
  int rc = 0;
  ioq_copy_trunc(s->unprepared[s->n_unprepared++ % DRASTATE_UNPREPARED_KEPT],
                 sizeof s->unprepared[0], claim_uid);
  ssize_t i = find_locked(s, claim_uid);
  if (i >= 0) {
    struct dra_rec taken = s->recs[i];
    s->recs[i] = s->recs[s->n - 1];
    if (save_locked(s, s->recs, s->n - 1, e) < 0) {
      s->recs[s->n - 1] = s->recs[i];
      s->recs[i] = taken;
      rc = -1;
    } else {
      s->n--;
      if (out)
        *out = taken;
      rc = 1;
    }
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int drastate_forget_pod(struct drastate *s, const char *pod_uid, ioq_err *e) {
  pthread_mutex_lock(&s->lock);
  size_t keep = 0;
  struct dra_rec *kept = malloc((s->n ? s->n : 1) * sizeof *kept);
  int rc = -1;
  if (!kept) {
    ioq_fail(e, ENOMEM, "out of memory (DRA claim state)");
    goto out;
  }
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->recs[i].pod_uid, pod_uid) != 0)
      kept[keep++] = s->recs[i];
  rc = (int)(s->n - keep);
  if (rc == 0)
    goto out;
  if (save_locked(s, kept, keep, e) < 0) {
    rc = -1;
    goto out;
  }
  memcpy(s->recs, kept, keep * sizeof *kept);
  s->n = keep;
out:
  free(kept);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

bool drastate_get(struct drastate *s, const char *claim_uid, struct dra_rec *out) {
  pthread_mutex_lock(&s->lock);
  ssize_t i = find_locked(s, claim_uid);
  if (i >= 0 && out)
    *out = s->recs[i];
  pthread_mutex_unlock(&s->lock);
  return i >= 0;
}

/* ---- reads ---- */

int drastate_pod_grant(struct drastate *s, const char *pod_uid, struct ioq_pod_grant *g,
                       ioq_err *e) {
  int rc = 0;
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < s->n && rc == 0; i++) {
    const struct dra_rec *r = &s->recs[i];
    if (strcmp(r->pod_uid, pod_uid) != 0)
      continue;
    for (size_t k = 0; k < r->n_shares; k++) {
      const struct dra_share_rec *x = &r->shares[k];
      struct ioq_disk_grant *dg = (struct ioq_disk_grant *)ioq_grant_find(g, x->disk);
      if (!dg) {
        if (g->n >= IOQ_POD_DISKS_MAX) {
          rc = ioq_fail(e, IOQ_EINVAL_INPUT, "claims of the pod name more than %d disks",
                        IOQ_POD_DISKS_MAX);
          break;
        }
        dg = &g->disks[g->n++];
        memset(dg, 0, sizeof *dg);
        ioq_copy_trunc(dg->disk, sizeof dg->disk, x->disk); /* same size */
      }
      for (int res = 0; res < IOQ_RES_COUNT; res++)
        dg->units[res] += x->units[res];
    }
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

bool drastate_pod_has(struct drastate *s, const char *ns, const char *name, const char *uid) {
  bool has = false;
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < s->n && !has; i++)
    has = uid ? strcmp(s->recs[i].pod_uid, uid) == 0
              : strcmp(s->recs[i].ns, ns) == 0 && strcmp(s->recs[i].pod_name, name) == 0;
  pthread_mutex_unlock(&s->lock);
  return has;
}

void drastate_disk_units(struct drastate *s, const char *disk, uint64_t out[IOQ_RES_COUNT]) {
  pthread_mutex_lock(&s->lock);
  for (size_t i = 0; i < s->n; i++)
    for (size_t k = 0; k < s->recs[i].n_shares; k++)
      if (strcmp(s->recs[i].shares[k].disk, disk) == 0)
        for (int r = 0; r < IOQ_RES_COUNT; r++)
          out[r] += s->recs[i].shares[k].units[r];
  pthread_mutex_unlock(&s->lock);
}

size_t drastate_pod_recs(struct drastate *s, const char *pod_uid, struct dra_rec **out) {
  *out = NULL;
  pthread_mutex_lock(&s->lock);
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++)
    n += strcmp(s->recs[i].pod_uid, pod_uid) == 0;
  if (n && (*out = malloc(n * sizeof **out))) {
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
      if (strcmp(s->recs[i].pod_uid, pod_uid) == 0)
        (*out)[k++] = s->recs[i];
  }
  pthread_mutex_unlock(&s->lock);
  return *out ? n : 0;
}

size_t drastate_count(struct drastate *s) {
  pthread_mutex_lock(&s->lock);
  size_t n = s->n;
  pthread_mutex_unlock(&s->lock);
  return n;
}
