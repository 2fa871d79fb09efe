// SPDX-License-Identifier: Apache-2.0
/* Regular init container grants beyond one apply: saved to the state file
 * and restored at start (initstate.h), guesses written by an ambiguous
 * init-only PreStart and their settling, and the pods left unknown by a lost
 * state file (podtable.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "podtable_internal.h"
#include "state/initstate.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/grow.h"

bool pod_init_asks(const struct pod_info *pi) {
  for (size_t k = 0; k < pi->n_ctrs; k++)
    if (pi->ctrs[k].kind == IOQ_CTR_INIT)
      for (int r = 0; r < IOQ_RES_COUNT; r++)
        if (pi->ctrs[k].units[r])
          return true;
  return false;
}

static bool disk_of(const char *id, char *disk, size_t sz) {
  struct ioq_unit_id u;
  return ioq_unit_id_parse(id, &u, NULL) == 0 && ioq_copy(disk, sz, u.disk);
}

/* The guessed units `ids` of r plus the pod's earlier guess on disks `ids`
 * has none of (malloc'd copies), or NULL when there is nothing to add. */
char **pt_merge_guess(struct podtable *f, const char *uid, enum ioq_resource r,
                          char *const *ids, size_t n, size_t *n_out) {
  *n_out = 0;
  char disks[IOQ_POD_DISKS_MAX][IOQ_DISK_NAME_MAX + 1];
  size_t nd = 0;
  for (size_t i = 0; i < n; i++) {
    char d[IOQ_DISK_NAME_MAX + 1];
    if (!disk_of(ids[i], d, sizeof d))
      continue;
    size_t k = 0;
    while (k < nd && strcmp(disks[k], d) != 0)
      k++;
    if (k == nd && nd < IOQ_POD_DISKS_MAX)
      ioq_copy_trunc(disks[nd++], sizeof disks[0], d); /* same-size fields: fits */
  }
  pthread_mutex_lock(&f->lock);
  const struct applied_pod *ap = pt_find_locked(f, uid);
  char **out = NULL;
  if (ap && ap->init_guess[r] && ap->n_init[r] && (out = calloc(n + ap->n_init[r], sizeof *out))) {
    for (size_t i = 0; i < n; i++)
      out[(*n_out)++] = strdup(ids[i]);
    for (size_t i = 0; i < ap->n_init[r]; i++) {
      char d[IOQ_DISK_NAME_MAX + 1];
      bool same = !disk_of(ap->init_ids[r][i], d, sizeof d);
      for (size_t k = 0; k < nd && !same; k++)
        same = strcmp(disks[k], d) == 0;
      if (!same)
        out[(*n_out)++] = strdup(ap->init_ids[r][i]);
    }
  }
  pthread_mutex_unlock(&f->lock);
  for (size_t i = 0; out && i < *n_out; i++)
    if (!out[i]) { /* OOM: the new guess alone */
      pt_free_strs(out, *n_out);
      *n_out = 0;
      return NULL;
    }
  if (out && *n_out == n) { /* nothing added */
    pt_free_strs(out, *n_out);
    *n_out = 0;
    return NULL;
  }
  return out;
}

size_t podtable_guesses(struct podtable *f, struct init_guess **out) {
  pthread_mutex_lock(&f->lock);
  size_t n = 0;
  *out = calloc(f->n * IOQ_RES_COUNT + 1, sizeof **out);
  for (size_t i = 0; *out && i < f->n; i++)
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      const struct applied_pod *ap = &f->pods[i];
      if (!ap->init_guess[r] || !ap->n_init[r])
        continue;
      struct init_guess *g = &(*out)[n++];
      IOQ_COPY_FIELD(g->ns, ap->ns);
      IOQ_COPY_FIELD(g->name, ap->name);
      IOQ_COPY_FIELD(g->uid, ap->uid);
      g->r = (enum ioq_resource)r;
      if (!ioq_copy(g->first, sizeof g->first, ap->init_ids[r][0])) {
        /* a cut ID would be another unit: this guess is not listed */
        ioq_warn("init guess skipped: unit ID too long id=%.80s", ap->init_ids[r][0]);
        memset(g, 0, sizeof *g);
        n--;
      }
    }
  pthread_mutex_unlock(&f->lock);
  return n;
}

void podtable_settle_guess(struct podtable *f, const char *uid, enum ioq_resource r, bool keep) {
  pthread_mutex_lock(&f->apply_lock);
  pthread_mutex_lock(&f->lock);
  struct applied_pod *ap = pt_find_locked(f, uid);
  if (ap && ap->init_guess[r]) {
    if (!keep)
      pt_free_init(ap, r);
    ap->init_guess[r] = false;
    f->state_dirty = true;
  }
  pthread_mutex_unlock(&f->lock);
  pt_save_state(f);
  pthread_mutex_unlock(&f->apply_lock);
}

bool pt_is_settled(struct podtable *f, const char *uid) {
  for (size_t i = 0; i < f->n_settled; i++)
    if (strcmp(f->settled[i], uid) == 0)
      return true;
  return false;
}

void pt_settle(struct podtable *f, const char *uid) {
  if (pt_is_settled(f, uid))
    return;
  char(*ns)[IOQ_POD_UID_MAX + 1] = ioq_grow(f->settled, &f->cap_settled, f->n_settled + 1, sizeof *ns, 16);
  if (!ns) { /* the pod is found unknown again: its limits are cleared once more */
    ioq_error("remembering a settled pod failed uid=%s error=\"out of memory\"", uid);
    return;
  }
  f->settled = ns;
  if (ioq_copy(f->settled[f->n_settled], sizeof f->settled[0], uid))
    f->n_settled++;
  else /* a cut UID would be another pod's */
    ioq_warn("remembering a settled pod failed: uid too long uid=%.80s", uid);
}

bool podtable_unknown(struct podtable *f, const struct pod_info *pi) {
  pthread_mutex_lock(&f->apply_lock);
  pthread_mutex_lock(&f->lock);
  const struct applied_pod *ap = pt_find_locked(f, pi->uid);
  bool u = ap ? ap->init_unknown
              : f->state_lost && pod_init_asks(pi) && !pt_is_settled(f, pi->uid);
  pthread_mutex_unlock(&f->lock);
  pthread_mutex_unlock(&f->apply_lock);
  return u;
}

/* Writes the init container grants to the state file if they changed since
 * the last save; with apply_lock held, so saves are in order. A failed save
 * is retried on the next change or pass. */
void pt_save_state(struct podtable *f) {
  if (!f->o.state_file || !f->state_dirty)
    return;
  pthread_mutex_lock(&f->lock);
  struct init_record *r = calloc(f->n ? f->n : 1, sizeof *r);
  size_t n = 0;
  for (size_t i = 0; r && i < f->n; i++) {
    const struct applied_pod *ap = &f->pods[i];
    if (!pt_holds_init(ap))
      continue;
    struct init_record *o = &r[n++];
    IOQ_COPY_FIELD(o->ns, ap->ns);
    IOQ_COPY_FIELD(o->name, ap->name);
    IOQ_COPY_FIELD(o->uid, ap->uid);
    IOQ_COPY_FIELD(o->cgroup, ap->cgroup);
    o->version = ap->version;
    o->grant = ap->grant;
    memcpy(o->devs, ap->devs, sizeof o->devs);
    o->init_unknown = ap->init_unknown;
    for (int k = 0; k < IOQ_RES_COUNT; k++) { /* borrowed from the table */
      o->ids[k] = ap->init_ids[k];
      o->n_ids[k] = ap->n_init[k];
      o->guess[k] = ap->init_guess[k];
    }
  }
  char *text = r ? initstate_format(r, n) : NULL;
  pthread_mutex_unlock(&f->lock);
  free(r);
  ioq_err e;
  if (!text) {
    ioq_error("saving init container grants failed path=%s error=\"out of memory\"",
              f->o.state_file);
    return;
  }
  if (ioq_write_file_atomic(f->o.state_file, text, &e) < 0) {
    ioq_error("saving init container grants failed, a plugin restart would forget them "
              "path=%s error=\"%s\"",
              f->o.state_file, e.msg);
  } else {
    f->state_dirty = false;
    ioq_debug("init container grants saved path=%s pods=%zu", f->o.state_file, n);
  }
  free(text);
}

void podtable_restore(struct podtable *f) {
  if (!f->o.state_file)
    return;
  struct init_record *r;
  size_t n;
  ioq_err e;
  if (initstate_load(f->o.state_file, &r, &n, &e) < 0) {
    if (e.code == ENOENT) {
      ioq_info("no saved init container grants (first start) path=%s", f->o.state_file);
      return;
    }
    ioq_error("saved init container grants unusable, rebuilding from the pods: Pending pods with "
              "an init container asking for units keep their limits until they run path=%s "
              "error=\"%s\"",
              f->o.state_file, e.msg);
    pthread_mutex_lock(&f->lock);
    f->state_lost = true;
    pthread_mutex_unlock(&f->lock);
    return;
  }
  pthread_mutex_lock(&f->apply_lock);
  pthread_mutex_lock(&f->lock);
  size_t restored = 0;
  for (size_t i = 0; i < n; i++) {
    if (pt_find_locked(f, r[i].uid))
      continue;
    struct applied_pod *np = ioq_grow(f->pods, &f->cap, f->n + 1, sizeof *np, 32);
    if (!np) {
      ioq_error("restoring init container grants: out of memory, %zu of %zu restored", restored,
                n);
      break;
    }
    f->pods = np;
    struct applied_pod *ap = &f->pods[f->n++];
    memset(ap, 0, sizeof *ap); /* applied_at 0: before any List */
    IOQ_COPY_FIELD(ap->ns, r[i].ns);
    IOQ_COPY_FIELD(ap->name, r[i].name);
    IOQ_COPY_FIELD(ap->uid, r[i].uid);
    IOQ_COPY_FIELD(ap->cgroup, r[i].cgroup);
    ap->version = r[i].version;
    ap->grant = r[i].grant;
    memcpy(ap->devs, r[i].devs, sizeof ap->devs);
    ap->init_unknown = r[i].init_unknown;
    for (int k = 0; k < IOQ_RES_COUNT; k++) { /* moved into the table */
      ap->init_ids[k] = r[i].ids[k];
      ap->n_init[k] = r[i].n_ids[k];
      ap->init_guess[k] = r[i].guess[k] && r[i].n_ids[k];
      r[i].ids[k] = NULL;
      r[i].n_ids[k] = 0;
    }
    ioq_info("init container grant restored pod=%s/%s uid=%s cgroup=%s bandwidth_units=%zu "
             "iops_units=%zu%s",
             ap->ns, ap->name, ap->uid, ap->cgroup, ap->n_init[IOQ_RES_BANDWIDTH],
             ap->n_init[IOQ_RES_IOPS], ap->init_unknown ? " (unknown)" : "");
    restored++;
  }
  pthread_mutex_unlock(&f->lock);
  pthread_mutex_unlock(&f->apply_lock);
  initstate_free(r, n);
}

bool podtable_state_lost(struct podtable *f) {
  pthread_mutex_lock(&f->lock);
  bool lost = f->state_lost;
  pthread_mutex_unlock(&f->lock);
  return lost;
}
