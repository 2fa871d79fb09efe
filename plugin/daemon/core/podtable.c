// SPDX-License-Identifier: Apache-2.0
/* The pod table itself (podtable.h): its entries and their init container
 * units, creating and freeing it, the lookups (by UID, the init units a pod
 * holds), the write lock, and the copies readers take (snapshot, files). */
#include "podtable.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "podtable_internal.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/grow.h"

void pt_free_init(struct applied_pod *ap, int r) {
  for (size_t i = 0; i < ap->n_init[r]; i++)
    free(ap->init_ids[r][i]);
  free(ap->init_ids[r]);
  ap->init_ids[r] = NULL;
  ap->n_init[r] = 0;
}

void pt_free_all_init(struct applied_pod *ap) {
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    pt_free_init(ap, r);
    ap->init_guess[r] = false;
  }
}

void pt_free_files(struct applied_pod *ap) {
  free(ap->files);
  ap->files = NULL;
  ap->n_files = 0;
}

bool pt_has_init(const struct applied_pod *ap) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (ap->n_init[r])
      return true;
  return false;
}

/* known init units, or unknown ones that may be in place */
bool pt_holds_init(const struct applied_pod *ap) { return pt_has_init(ap) || ap->init_unknown; }

void pt_free_strs(char **s, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(s[i]);
  free(s);
}

struct podtable *podtable_new(const struct podtable_opts *o) {
  struct podtable *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->o = *o;
  const char *cgroot = o->kubelet_cgroup_root ? o->kubelet_cgroup_root : "/";
  const char *sysfs = o->sysfs_root ? o->sysfs_root : "/sys";
  const char *too_long = NULL;
  if (!ioq_copy(f->kubelet_cgroup_root, sizeof f->kubelet_cgroup_root, cgroot))
    too_long = "kubelet cgroup root";
  else if (!ioq_copy(f->sysfs_root, sizeof f->sysfs_root, sysfs))
    too_long = "sysfs root";
  else if (o->state_file && !ioq_copy(f->state_file, sizeof f->state_file, o->state_file))
    too_long = "state file";
  if (too_long) {
    ioq_error("pod table: %s path too long (limit %d bytes)", too_long, PATH_MAX - 1);
    free(f);
    return NULL;
  }
  f->o.kubelet_cgroup_root = f->kubelet_cgroup_root;
  f->o.sysfs_root = f->sysfs_root;
  if (o->state_file)
    f->o.state_file = f->state_file;
  pthread_mutex_init(&f->apply_lock, NULL);
  pthread_mutex_init(&f->lock, NULL);
  return f;
}

void podtable_free(struct podtable *f) {
  if (!f)
    return;
  for (size_t i = 0; i < f->n; i++) {
    pt_free_all_init(&f->pods[i]);
    pt_free_files(&f->pods[i]);
  }
  pthread_mutex_destroy(&f->lock);
  pthread_mutex_destroy(&f->apply_lock);
  free(f->pods);
  free(f->settled);
  listview_free(&f->list);
  free(f);
}

/* Pods are keyed by UID: a pod recreated under the same namespace/name (a
 * StatefulSet's) is another pod and must not inherit the old one's init
 * container units. */
struct applied_pod *pt_find_locked(struct podtable *f, const char *uid) {
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->pods[i].uid, uid) == 0)
      return &f->pods[i];
  return NULL;
}

/* The pod's entry (uid), appended empty when it has none; with `lock`
 * held. NULL + *e when out of memory. */
struct applied_pod *pt_slot_locked(struct podtable *f, const char *uid, ioq_err *e) {
  struct applied_pod *ap = pt_find_locked(f, uid);
  if (ap)
    return ap;
  struct applied_pod *np = ioq_grow(f->pods, &f->cap, f->n + 1, sizeof *np, 32);
  if (!np) {
    ioq_fail(e, ENOMEM, "out of memory (pod table of %zu entries)", f->cap * 2);
    return NULL;
  }
  f->pods = np;
  ap = &f->pods[f->n++];
  memset(ap, 0, sizeof *ap);
  return ap;
}

/* Moves entry i out of the table into *out (its init units and files go
 * with it); with `lock` held. */
void pt_take_locked(struct podtable *f, size_t i, struct applied_pod *out) {
  *out = f->pods[i];
  f->state_dirty |= pt_holds_init(out);
  f->pods[i] = f->pods[--f->n];
}

int podtable_init_held(struct podtable *f, const char *ns, const char *name, const char *uid,
                       int r, char *const *ids, size_t n) {
  pthread_mutex_lock(&f->lock);
  const struct applied_pod *ap = NULL;
  for (size_t i = 0; i < f->n && !ap; i++)
    if (uid ? strcmp(f->pods[i].uid, uid) == 0
            : strcmp(f->pods[i].name, name) == 0 && strcmp(f->pods[i].ns, ns) == 0)
      ap = &f->pods[i];
  int rc = -1;
  if (ap && r < 0) {
    rc = pt_holds_init(ap) ? 1 : -1;
  } else if (ap && ap->n_init[r] && ap->init_guess[r]) {
    rc = 2;
  } else if (ap && ap->n_init[r]) {
    rc = ap->n_init[r] == n;
    /* sorted copy + bsearch: O(n log n) for a pod holding many units */
    const char **sorted = rc == 1 ? malloc(n * sizeof *sorted) : NULL;
    if (rc == 1 && !sorted) {
      ioq_error("init units check failed reason=out-of-memory pod=%s/%s", ns, name);
      rc = 0; /* not known to be these units: the pod is not taken as the asker */
    } else if (rc == 1) {
      memcpy(sorted, ap->init_ids[r], n * sizeof *sorted);
      ioq_ids_sort(sorted, n);
      for (size_t i = 0; rc == 1 && i < n; i++)
        rc = ioq_ids_find(sorted, n, ids[i]) >= 0;
    }
    free(sorted);
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

void podtable_writes_lock(struct podtable *f) { pthread_mutex_lock(&f->apply_lock); }

void podtable_writes_unlock(struct podtable *f) { pthread_mutex_unlock(&f->apply_lock); }

size_t podtable_snapshot(struct podtable *f, struct applied_pod **out) {
  pthread_mutex_lock(&f->lock);
  size_t n = f->n;
  *out = malloc((n ? n : 1) * sizeof **out);
  if (*out) {
    if (n)
      memcpy(*out, f->pods, n * sizeof **out);
    for (size_t i = 0; i < n; i++) /* owned by the table */
      for (int r = 0; r < IOQ_RES_COUNT; r++) {
        (*out)[i].init_ids[r] = NULL;
        (*out)[i].n_init[r] = 0;
      }
    for (size_t i = 0; i < n; i++) {
      (*out)[i].files = NULL;
      (*out)[i].n_files = 0;
    }
  } else {
    n = 0;
  }
  pthread_mutex_unlock(&f->lock);
  return n;
}

int podtable_pod_files(struct podtable *f, const char *uid, struct podtable_file **out) {
  *out = NULL;
  pthread_mutex_lock(&f->lock);
  const struct applied_pod *ap = pt_find_locked(f, uid);
  int n = ap ? (int)ap->n_files : -1;
  if (n > 0 && (*out = malloc((size_t)n * sizeof **out)))
    memcpy(*out, ap->files, (size_t)n * sizeof **out);
  else if (n > 0)
    n = 0; /* out of memory: shown as none */
  pthread_mutex_unlock(&f->lock);
  return n;
}
