// SPDX-License-Identifier: Apache-2.0
#include "podtable.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/drastate.h"
#include "support/filelog.h"
#include "podgrant.h"
#include "podtable_internal.h"
#include "state/listview.h"
#include "cgroup/cgwrite.h"
#include "grant/dirsplit.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"

void pt_free_init(struct applied_pod *ap, int r) {
  for (size_t i = 0; i < ap->n_init[r]; i++)
    free(ap->init_ids[r][i]);
  free(ap->init_ids[r]);
  ap->init_ids[r] = NULL;
  ap->n_init[r] = 0;
}

static void free_all_init(struct applied_pod *ap) {
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    pt_free_init(ap, r);
    ap->init_guess[r] = false;
  }
}

static void free_files(struct applied_pod *ap) {
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

/* a regular init container asking for units whose status does not say it
 * terminated */
static bool init_may_run(const struct pod_info *pi) {
  for (size_t k = 0; k < pi->n_ctrs; k++)
    if (pi->ctrs[k].kind == IOQ_CTR_INIT && pi->ctrs[k].state != PCS_TERMINATED)
      for (int r = 0; r < IOQ_RES_COUNT; r++)
        if (pi->ctrs[k].units[r])
          return true;
  return false;
}

/* a malloc'd copy of n strings (NULL on OOM) */
static char **copy_ids(char *const *ids, size_t n) {
  char **c = calloc(n ? n : 1, sizeof *c);
  for (size_t i = 0; c && i < n; i++)
    if (!(c[i] = strdup(ids[i]))) {
      while (i--)
        free(c[i]);
      free(c);
      return NULL;
    }
  return c;
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
    free_all_init(&f->pods[i]);
    free_files(&f->pods[i]);
  }
  pthread_mutex_destroy(&f->lock);
  pthread_mutex_destroy(&f->apply_lock);
  free(f->pods);
  free(f->settled);
  free(f->listed);
  free(f->alloc);
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

static enum fail_reason classify(const ioq_err *e) {
  switch (e->code) {
  case IOQ_EMISMATCH: return FAIL_VERIFY;
  case IOQ_EUNSUPPORTED: return FAIL_CONTROLLER;
  default: return FAIL_WRITE;
  }
}

/* Notes the files a write changed in res->changes (the drift report). */
static void note_changes(struct podtable_result *res, const char *disk, struct ioq_devno dev,
                         const struct ioq_apply_report *rep) {
  for (size_t i = 0; i < rep->n; i++) {
    const struct ioq_apply_step *st = &rep->steps[i];
    if (!st->changed)
      continue;
    res->writes++;
    if (res->n_changes == PODTABLE_CHANGES_MAX)
      continue;
    struct enforce_change *c = &res->changes[res->n_changes++];
    memset(c, 0, sizeof *c);
    ioq_copy_trunc(c->file, sizeof c->file, st->file);
    ioq_copy_trunc(c->disk, sizeof c->disk, disk); /* a record (the grant's disk) */
    ioq_devno_str(dev, c->dev, sizeof c->dev);
    ioq_copy_trunc(c->before, sizeof c->before, st->before);
    ioq_copy_trunc(c->written, sizeof c->written, st->written);
    if (strcmp(st->file, "io.max") == 0) {
      struct ioq_io_limits a, b;
      bool pa, pb;
      char la[200], lb[200];
      /* the steps hold the device's line, or "" for none (all max) */
      snprintf(la, sizeof la, "%s\n", st->before);
      snprintf(lb, sizeof lb, "%s\n", st->written);
      if (ioq_iomax_parse(la, dev, &a, &pa, NULL) < 0 || ioq_iomax_parse(lb, dev, &b, &pb, NULL) < 0) {
        c->limit[IOQ_RES_BANDWIDTH] = c->limit[IOQ_RES_IOPS] = true;
        continue;
      }
      c->limit[IOQ_RES_BANDWIDTH] = a.rbps != b.rbps || a.wbps != b.wbps;
      c->limit[IOQ_RES_IOPS] = a.riops != b.riops || a.wiops != b.wiops;
    } else if (strncmp(st->file, "blkio.throttle.", 15) == 0) {
      c->limit[strstr(st->file, "_iops_") ? IOQ_RES_IOPS : IOQ_RES_BANDWIDTH] = true;
    }
  }
}

/* Writes one disk's grant into the cgroup (its limits: the read/write split
 * when `split` is a valid one of the grant, else the full-grant split).
 * Stacked devices (dm, md) get the limit on the device itself and the
 * weights on their leaf disks, where the proportional schedulers work. */
static int apply_disk(struct podtable *f, const struct ioq_cg *cg, const struct ioq_disk_grant *dg,
                      const struct cat_disk *cd, const struct ioq_io_limits *split,
                      struct ioq_io_limits *full, struct podtable_result *res,
                      struct pt_file_log *log, ioq_err *e) {
  struct ioq_disk_setting s = {0};
  s.dev = cd->dev;
  /* the share of everything granted on the disk, NVMe-oF namespaces included */
  uint64_t granted[IOQ_RES_COUNT];
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    granted[r] = cd->units[r] + cd->disk.nvmet_units[r];
  if (ioq_grant_limits_on_disk(dg, &f->o.sizes, granted, &s.max, e) < 0)
    return -1;
  *full = s.max;
  if (split && ioq_dirsplit_valid(&s.max, split)) /* combined directions: the split kept */
    s.max = *split;
  unsigned w = 0, bw = 0;
  if (ioq_grant_weights(dg, granted, &w, &bw, e) < 0)
    return -1;
  char wfile[PATH_MAX];
  bool has_weight_file = cg->version == IOQ_CGV2 &&
                         ioq_path_join(wfile, sizeof wfile, NULL, cg->dir, "io.weight", NULL) == 0 &&
                         ioq_path_exists(wfile);
  unsigned weight = f->o.io_weight && has_weight_file ? w : 0;
  unsigned bfq = f->o.bfq_weight &&
                         (cd->disk.caps & (IOQ_CAP_IO_BFQ_WEIGHT | IOQ_CAP_BLKIO_BFQ_WEIGHT))
                     ? bw
                     : 0;
  bool stacked = cd->disk.n_leaves > 0 &&
                 !(cd->disk.n_leaves == 1 && cd->disk.leaves[0].major == cd->dev.major &&
                   cd->disk.leaves[0].minor == cd->dev.minor);
  struct ioq_apply_opts ao = {.sysfs_root = f->sysfs_root};
  struct ioq_apply_report rep;
  if (!stacked) {
    s.weight = weight;
    s.bfq_weight = bfq;
    if (ioq_cg_apply_disk(cg, &s, &ao, &rep, e) < 0)
      return -1;
    note_changes(res, dg->disk, s.dev, &rep);
    pt_log_steps(log, dg->disk, &rep);
    return 0;
  }
  if (ioq_cg_apply_disk(cg, &s, &ao, &rep, e) < 0)
    return -1;
  note_changes(res, dg->disk, s.dev, &rep);
  pt_log_steps(log, dg->disk, &rep);
  for (size_t i = 0; i < cd->disk.n_leaves && (weight || bfq); i++) {
    /* weights only: the leaf may be a managed disk of its own, whose
     * limits for this pod must stay as they are */
    struct ioq_disk_setting ls = {.dev = {cd->disk.leaves[i].major, cd->disk.leaves[i].minor},
                                  .weight = weight,
                                  .bfq_weight = bfq,
                                  .weights_only = true};
    if (ioq_cg_apply_disk(cg, &ls, &ao, &rep, e) < 0)
      return -1;
    note_changes(res, dg->disk, ls.dev, &rep);
    pt_log_steps(log, dg->disk, &rep);
  }
  return 0;
}

/* Clears one disk's limits and weights; the files it changed count in res
 * (writes and the drift report) when res is given. */
static int clear_disk(struct podtable *f, const struct ioq_cg *cg, const char *disk,
                      struct ioq_devno dev, struct podtable_result *res, ioq_err *e) {
  struct ioq_apply_opts ao = {.sysfs_root = f->sysfs_root};
  struct ioq_apply_report rep;
  if (ioq_cg_clear_disk(cg, dev, &ao, &rep, e) < 0)
    return -1;
  if (res)
    note_changes(res, disk, dev, &rep);
  return 0;
}

/* The init container units that count now: the ones given, plus those an
 * earlier PreStart left while the pod is still Pending (init containers only
 * run then). Returns copies (malloc'd array of malloc'd strings), so the
 * table lock is not held while computing the grant. */
static char **init_units(struct podtable *f, const struct pod_info *pi,
                         enum ioq_resource init_res, char *const *given, size_t n_given,
                         size_t *n_out) {
  *n_out = 0;
  bool pending = pi && strcmp(pi->phase, "Pending") == 0;
  pthread_mutex_lock(&f->lock);
  struct applied_pod *ap = pi ? pt_find_locked(f, pi->uid) : NULL;
  size_t n = n_given;
  for (int r = 0; ap && pending && r < IOQ_RES_COUNT; r++)
    if (!(given && r == (int)init_res))
      n += ap->n_init[r];
  char **all = n ? calloc(n, sizeof *all) : NULL;
  for (size_t i = 0; all && i < n_given; i++)
    all[(*n_out)++] = strdup(given[i]);
  for (int r = 0; all && ap && pending && r < IOQ_RES_COUNT; r++)
    if (!(given && r == (int)init_res))
      for (size_t i = 0; i < ap->n_init[r]; i++)
        all[(*n_out)++] = strdup(ap->init_ids[r][i]);
  pthread_mutex_unlock(&f->lock);
  for (size_t i = 0; all && i < *n_out; i++)
    if (!all[i]) { /* OOM: count without them (the grant errs small, never wrong-disk) */
      for (size_t k = 0; k < *n_out; k++)
        free(all[k]);
      free(all);
      *n_out = 0;
      return NULL;
    }
  return all;
}

void pt_free_strs(char **s, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(s[i]);
  free(s);
}

/* Clears the limits a remembered pod has in its cgroup; a cgroup that is
 * gone already has none. */
static void clear_pod(struct podtable *f, const struct applied_pod *ap, const char *why) {
  struct ioq_cg cg;
  ioq_err e;
  if (!ioq_is_dir(ap->cgroup)) {
    ioq_info("%s, its cgroup too pod=%s/%s uid=%s cgroup=%s", why, ap->ns, ap->name, ap->uid,
             ap->cgroup);
    return;
  }
  if (ioq_cg_open(ap->cgroup, ap->version, &cg, &e) < 0) {
    ioq_warn("%s, cgroup not usable pod=%s/%s cgroup=%s error=\"%s\"", why, ap->ns, ap->name,
             ap->cgroup, e.msg);
    return;
  }
  for (size_t d = 0; d < ap->grant.n; d++) {
    if (clear_disk(f, &cg, ap->grant.disks[d].disk, ap->devs[d], NULL, &e) < 0)
      ioq_warn("%s, clearing limits failed pod=%s/%s cgroup=%s disk=%s error=\"%s\"", why, ap->ns,
               ap->name, ap->cgroup, ap->grant.disks[d].disk, e.msg);
    else
      ioq_info("%s, limits cleared pod=%s/%s uid=%s cgroup=%s disk=%s", why, ap->ns, ap->name,
               ap->uid, ap->cgroup, ap->grant.disks[d].disk);
  }
}

/* Clears the limits of pods taken out of the table (`lock` not held: the
 * kernel writes never hold up readers of the table) and frees them. */
static void clear_taken(struct podtable *f, struct applied_pod *taken, size_t n, const char *why) {
  for (size_t i = 0; i < n; i++) {
    clear_pod(f, &taken[i], why);
    free_all_init(&taken[i]);
    free_files(&taken[i]);
  }
  free(taken);
}

/* Moves entry i out of the table into *out (its init units and files go
 * with it); with `lock` held. */
static void take_locked(struct podtable *f, size_t i, struct applied_pod *out) {
  *out = f->pods[i];
  f->state_dirty |= pt_holds_init(out);
  f->pods[i] = f->pods[--f->n];
}

/* Names are unique among live pods: a grant applied under this name for
 * another UID belonged to an earlier instance (a StatefulSet pod deleted and
 * recreated), which is gone. Called with apply_lock held. */
static void forget_earlier_instances(struct podtable *f, const char *ns, const char *name,
                                     const char *uid) {
  pthread_mutex_lock(&f->lock);
  size_t n_taken = 0;
  struct applied_pod *taken = NULL;
  for (size_t i = 0; i < f->n;) {
    struct applied_pod *ap = &f->pods[i];
    if (strcmp(ap->name, name) != 0 || strcmp(ap->ns, ns) != 0 || strcmp(ap->uid, uid) == 0) {
      i++;
      continue;
    }
    if (!taken && !(taken = malloc(f->n * sizeof *taken))) {
      ioq_error("forgetting an earlier instance of a pod skipped pod=%s/%s "
                "reason=out-of-memory (the list of instances to clear)",
                ns, name);
      break;
    }
    take_locked(f, i, &taken[n_taken++]);
  }
  pthread_mutex_unlock(&f->lock);
  clear_taken(f, taken, n_taken, "pod recreated under the same name, earlier instance gone");
}

/* Clears every managed disk but the grant's in the pod cgroup: what a
 * grant the plugin lost track of held. */
static void clear_other_disks(struct podtable *f, const struct ioq_cg *cg,
                              const struct ioq_pod_grant *g, const struct podres_pod *pr) {
  struct cat_disk *cds;
  size_t n = catalog_snapshot(f->o.catalog, &cds);
  for (size_t i = 0; i < n; i++) {
    if (ioq_grant_find(g, cds[i].disk.dev.name))
      continue;
    ioq_err ce;
    if (clear_disk(f, cg, cds[i].disk.dev.name, cds[i].dev, NULL, &ce) < 0)
      ioq_warn("clearing what a lost init container grant held failed pod=%s/%s disk=%s "
               "error=\"%s\"",
               pr->ns, pr->name, cds[i].disk.dev.name, ce.msg);
    else
      ioq_info("pod no longer unknown, limits of a disk it holds no units of cleared pod=%s/%s "
               "cgroup=%s disk=%s",
               pr->ns, pr->name, cg->dir, cds[i].disk.dev.name);
  }
  free(cds);
}

static int apply_locked(struct podtable *f, const struct podres_pod *pr, const struct pod_info *pi,
                        enum ioq_resource init_res, char *const *init_ids, size_t n_init_ids,
                        unsigned flags, struct podtable_result *res, ioq_err *e);

int podtable_apply(struct podtable *f, const struct podres_pod *pr, const struct pod_info *pi,
                   enum ioq_resource init_res, char *const *init_ids, size_t n_init_ids,
                   unsigned flags, struct podtable_result *res, ioq_err *e) {
  pthread_mutex_lock(&f->apply_lock);
  /* a guess adds to the pod's earlier guess on other disks */
  size_t n_merged = 0;
  char **merged = init_ids && (flags & PODTABLE_GUESS)
                      ? pt_merge_guess(f, pi->uid, init_res, init_ids, n_init_ids, &n_merged)
                      : NULL;
  int rc = merged ? apply_locked(f, pr, pi, init_res, merged, n_merged, flags, res, e)
                  : apply_locked(f, pr, pi, init_res, init_ids, n_init_ids, flags, res, e);
  pt_free_strs(merged, n_merged);
  pt_save_state(f); /* before PreStart answers */
  pthread_mutex_unlock(&f->apply_lock);
  return rc;
}

/* The pod's grant (its listed units plus the units of a regular init
 * container: this PreStart's, or the ones the table keeps while it is
 * Pending) and the catalog entries of its disks (*cds, malloc'd). */
static int grant_of(struct podtable *f, const struct podres_pod *pr, const struct pod_info *pi,
                    enum ioq_resource init_res, char *const *init_ids, size_t n_init_ids,
                    struct podtable_result *res, struct cat_disk **cds, ioq_err *e) {
  size_t n_init = 0;
  char **init = init_units(f, pi, init_res, init_ids, n_init_ids, &n_init);
  int grc = podgrant_compute(pr, pi, init, n_init, &res->grant, e);
  pt_free_strs(init, n_init);
  if (grc == 0 && f->o.dra)
    grc = drastate_pod_grant(f->o.dra, pi->uid, &res->grant, e);
  if (grc < 0) {
    res->fail = FAIL_GRANT;
    ioq_err_prefix(e, "pod %s/%s", pr->ns, pr->name);
    return -1;
  }
  *cds = calloc(res->grant.n ? res->grant.n : 1, sizeof **cds);
  if (!*cds)
    return ioq_fail(e, ENOMEM, "out of memory (disks of the grant of pod %s/%s)", pr->ns,
                    pr->name);
  for (size_t i = 0; i < res->grant.n; i++)
    if (!catalog_get(f->o.catalog, res->grant.disks[i].disk, &(*cds)[i])) {
      res->fail = FAIL_GRANT;
      free(*cds);
      *cds = NULL;
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "pod %s/%s holds units of disk %s, which is not managed here", pr->ns,
                      pr->name, res->grant.disks[i].disk);
    }
  return 0;
}

/* Finds and opens the pod's cgroup (res->cgroup), with the io controller
 * enabled for it (and memory, best effort) on cgroup v2. */
static int open_pod_cgroup(struct podtable *f, const struct podres_pod *pr,
                           const struct pod_info *pi, struct podtable_result *res,
                           struct ioq_cg *cg, ioq_err *e) {
  if (ioq_pod_uid_check(pi->uid, e) < 0) {
    res->fail = FAIL_UID;
    ioq_err_prefix(e, "pod %s/%s", pr->ns, pr->name);
    return -1;
  }
  /* Without a QoS class (an API object that lacks status.qosClass) the
   * resolver's search by UID finds the cgroup in whichever class it is. */
  enum ioq_qos_class qos = pi->has_qos ? pi->qos : IOQ_QOS_BURSTABLE;
  struct ioq_pod_cgroup pcg;
  if (ioq_pod_cgroup_resolve(&f->o.layout, f->o.driver, f->kubelet_cgroup_root, qos, pi->uid, &pcg,
                             e) < 0) {
    res->fail = FAIL_CGROUP;
    ioq_err_prefix(e, "pod %s/%s", pr->ns, pr->name);
    return -1;
  }
  if (!ioq_copy(res->cgroup, sizeof res->cgroup, pcg.dir)) {
    res->fail = FAIL_CGROUP;
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s/%s: cgroup path longer than %zu bytes", pr->ns,
                    pr->name, sizeof res->cgroup - 1);
  }
  if (ioq_cg_open(pcg.dir, f->o.layout.io_version, cg, e) < 0) {
    res->fail = FAIL_CGROUP;
    return -1;
  }
  if (cg->version == IOQ_CGV2) {
    char iomax[PATH_MAX];
    if (ioq_path_join(iomax, sizeof iomax, e, cg->dir, "io.max", NULL) < 0)
      return -1;
    unsigned enabled = 0;
    if (!ioq_path_exists(iomax) &&
        ioq_cg_ensure_controllers(f->o.layout.io_root, cg->dir, IOQ_CTRL_IO,
                                  f->o.enable_controllers, &enabled, e) < 0) {
      res->fail = FAIL_CONTROLLER;
      ioq_err_prefix(e, "pod %s/%s", pr->ns, pr->name);
      return -1;
    }
    if (enabled)
      ioq_info("io controller enabled for pod cgroup pod=%s/%s cgroup=%s writes=%u", pr->ns,
               pr->name, cg->dir, enabled);
    /* memory too, so buffered writeback is charged to the pod; without it
     * io.max still holds direct I/O, so this is not a failure */
    ioq_err me;
    unsigned m_enabled = 0;
    if (enabled && ioq_cg_ensure_controllers(f->o.layout.io_root, cg->dir, IOQ_CTRL_MEMORY,
                                             f->o.enable_controllers, &m_enabled, &me) < 0)
      ioq_warn("memory controller not enabled for pod cgroup, buffered writes are not limited "
               "pod=%s/%s error=\"%s\"",
               pr->ns, pr->name, me.msg);
  }
  return 0;
}

/* The pod's entry (uid), appended empty when it has none; with `lock`
 * held. NULL + *e when out of memory. */
static struct applied_pod *slot_locked(struct podtable *f, const char *uid, ioq_err *e) {
  struct applied_pod *ap = pt_find_locked(f, uid);
  if (ap)
    return ap;
  if (f->n == f->cap) {
    size_t nc = f->cap ? f->cap * 2 : 32;
    struct applied_pod *np = realloc(f->pods, nc * sizeof *np);
    if (!np) {
      ioq_fail(e, ENOMEM, "out of memory (pod table of %zu entries)", nc);
      return NULL;
    }
    f->pods = np;
    f->cap = nc;
  }
  ap = &f->pods[f->n++];
  memset(ap, 0, sizeof *ap);
  return ap;
}

/* Empties an entry for the grant just applied, keeping its init container
 * units and, when `log` is NULL (nothing written or read back now), its
 * file records; else the records become the log's. With `lock` held. */
static void reset_locked(struct applied_pod *ap, const struct pt_file_log *log) {
  char **keep_ids[IOQ_RES_COUNT];
  size_t keep_n[IOQ_RES_COUNT];
  bool keep_guess[IOQ_RES_COUNT];
  struct podtable_file *old_files = ap->files;
  size_t n_old_files = ap->n_files;
  memcpy(keep_ids, ap->init_ids, sizeof keep_ids);
  memcpy(keep_n, ap->n_init, sizeof keep_n);
  memcpy(keep_guess, ap->init_guess, sizeof keep_guess);
  memset(ap, 0, sizeof *ap);
  memcpy(ap->init_ids, keep_ids, sizeof keep_ids);
  memcpy(ap->n_init, keep_n, sizeof keep_n);
  memcpy(ap->init_guess, keep_guess, sizeof keep_guess);
  if (!log) {
    ap->files = old_files;
    ap->n_files = n_old_files;
  } else {
    ap->files = pt_merge_files(log, old_files, n_old_files);
    ap->n_files = ap->files ? log->n : 0;
    free(old_files);
  }
}

/* Clears the disks an earlier grant of the pod (`old`, throttled devices
 * `devs`) had and the new one `now` does not. */
static void clear_dropped_disks(struct podtable *f, const struct ioq_cg *cg,
                                const struct ioq_pod_grant *old, const struct ioq_devno *devs,
                                const struct ioq_pod_grant *now, const struct podres_pod *pr,
                                struct podtable_result *res) {
  for (size_t i = 0; i < old->n; i++) {
    if (ioq_grant_find(now, old->disks[i].disk))
      continue;
    ioq_err ce;
    if (clear_disk(f, cg, old->disks[i].disk, devs[i], res, &ce) < 0)
      ioq_warn("clearing a disk the pod no longer holds failed pod=%s/%s disk=%s error=\"%s\"",
               pr->ns, pr->name, old->disks[i].disk, ce.msg);
  }
}

/* Combined directions: each disk of `now` whose grant is the same as in
 * `before` (same cgroup) keeps the read/write split in place. */
static void carry_splits(const struct applied_pod *before, const struct ioq_pod_grant *now,
                         struct ioq_io_limits splits[IOQ_POD_DISKS_MAX],
                         bool has_split[IOQ_POD_DISKS_MAX]) {
  for (size_t i = 0; i < now->n; i++)
    for (size_t j = 0; j < before->grant.n; j++)
      if (before->has_split[j] && strcmp(before->grant.disks[j].disk, now->disks[i].disk) == 0 &&
          memcmp(before->grant.disks[j].units, now->disks[i].units,
                 sizeof before->grant.disks[j].units) == 0) {
        splits[i] = before->split[j];
        has_split[i] = true;
      }
}

static void log_in_place(const struct podres_pod *pr, const char *uid, const char *cgroup,
                         const struct podtable_result *res, const struct cat_disk *cds) {
  for (size_t i = 0; i < res->grant.n; i++) {
    const struct ioq_disk_grant *dg = &res->grant.disks[i];
    ioq_log(res->writes ? IOQ_LOG_INFO : IOQ_LOG_DEBUG,
            "pod grant in place pod=%s/%s uid=%s cgroup=%s disk=%s dev=%u:%u bandwidth_units=%llu "
            "iops_units=%llu writes=%u",
            pr->ns, pr->name, uid, cgroup, dg->disk, cds[i].dev.major, cds[i].dev.minor,
            (unsigned long long)dg->units[IOQ_RES_BANDWIDTH],
            (unsigned long long)dg->units[IOQ_RES_IOPS], res->writes);
  }
}

static int apply_locked(struct podtable *f, const struct podres_pod *pr, const struct pod_info *pi,
                        enum ioq_resource init_res, char *const *init_ids, size_t n_init_ids,
                        unsigned flags, struct podtable_result *res, ioq_err *e) {
  bool prestart = flags & PODTABLE_PRESTART;
  memset(res, 0, sizeof *res);
  if (strlen(pr->ns) > IOQ_POD_NAMESPACE_MAX || strlen(pr->name) > IOQ_POD_NAME_MAX) {
    res->fail = FAIL_GRANT;
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "pod %.63s.../%.63s...: namespace or name longer than Kubernetes allows",
                    pr->ns, pr->name);
  }
  struct cat_disk *cds = NULL;
  if (grant_of(f, pr, pi, init_res, init_ids, n_init_ids, res, &cds, e) < 0)
    return -1;
  struct pt_file_log *log = NULL;
  int rc = -1;
  struct ioq_cg cg;
  if (open_pod_cgroup(f, pr, pi, res, &cg, e) < 0)
    goto out;

  /* The kernel writes are made without the table lock: every change of the
   * table happens under apply_lock, held here, so the entry read here cannot
   * change meanwhile, and readers of the table (metrics, allocated units,
   * the pool of pods without a grant) do not wait on the kernel. */
  pthread_mutex_lock(&f->lock);
  struct applied_pod *ap = pt_find_locked(f, pi->uid), before;
  if (ap)
    before = *ap; /* a copy of the grant; its init_ids stay owned by the table */
  bool state_lost = f->state_lost;
  pthread_mutex_unlock(&f->lock);
  bool had_init = ap && pt_holds_init(&before);
  bool was_unknown =
      ap ? before.init_unknown : state_lost && pod_init_asks(pi) && !pt_is_settled(f, pi->uid);
  /* a reconcile pass leaves an unknown Pending pod as it is while one of
   * its init containers asking for units may run (its status does not say
   * it terminated): it may hold more than this grant. A PreStart knows: no
   * regular init container but the asking one runs then. */
  bool hold = was_unknown && !prestart && strcmp(pi->phase, "Pending") == 0 && init_may_run(pi);
  if (hold && !(ap && before.init_unknown))
    ioq_warn("init containers of the pod unknown (state file lost): its limits are left as they "
             "are while it is Pending pod=%s/%s uid=%s cgroup=%s",
             pr->ns, pr->name, pi->uid, cg.dir);
  /* combined directions: a disk whose grant is unchanged keeps its split */
  struct ioq_io_limits splits[IOQ_POD_DISKS_MAX] = {{0}};
  bool has_split[IOQ_POD_DISKS_MAX] = {false};
  if (ap && strcmp(before.cgroup, cg.dir) == 0)
    carry_splits(&before, &res->grant, splits, has_split);
  /* what each file holds now, for `ioqosctl explain` (NULL on OOM: not kept) */
  log = calloc(1, sizeof *log);
  if (log)
    log->now = pt_realtime_now();
  struct ioq_io_limits full[IOQ_POD_DISKS_MAX] = {{0}};
  for (size_t i = 0; i < res->grant.n && !hold; i++) {
    if (apply_disk(f, &cg, &res->grant.disks[i], &cds[i], has_split[i] ? &splits[i] : NULL,
                   &full[i], res, log, e) < 0) {
      res->fail = classify(e);
      ioq_err_prefix(e, "pod %s/%s", pr->ns, pr->name);
      goto out;
    }
  }
  if (was_unknown && !hold) { /* whatever the lost grant held goes */
    clear_other_disks(f, &cg, &res->grant, pr);
    pt_settle(f, pi->uid);
  }
  /* Clear disks an earlier grant of the same pod had. */
  res->known = ap && strcmp(before.cgroup, cg.dir) == 0;
  res->grant_changed = res->known && !podgrant_eq(&before.grant, &res->grant);
  if (res->known && !hold)
    clear_dropped_disks(f, &cg, &before.grant, before.devs, &res->grant, pr, res);
  forget_earlier_instances(f, pr->ns, pr->name, pi->uid);
  /* Remember it. */
  pthread_mutex_lock(&f->lock);
  ap = slot_locked(f, pi->uid, e);
  if (!ap) {
    pthread_mutex_unlock(&f->lock);
    ioq_err_prefix(e, "pod %s/%s", pr->ns, pr->name);
    goto out;
  }
  reset_locked(ap, hold ? NULL : log);
  if (init_ids && n_init_ids) {
    pt_free_init(ap, init_res);
    if ((ap->init_ids[init_res] = copy_ids(init_ids, n_init_ids)))
      ap->n_init[init_res] = n_init_ids;
    ap->init_guess[init_res] = flags & PODTABLE_GUESS;
  }
  if (strcmp(pi->phase, "Pending") != 0) /* init containers are done */
    free_all_init(ap);
  ap->init_unknown = hold;
  memcpy(ap->ns, pr->ns, strlen(pr->ns) + 1); /* lengths checked by apply_locked */
  memcpy(ap->name, pr->name, strlen(pr->name) + 1);
  PT_COPY_FIELD(ap->uid, pi->uid);
  PT_COPY_FIELD(ap->cgroup, cg.dir);
  ap->version = cg.version;
  ap->grant = res->grant;
  ap->applied_at = ioq_mono_s();
  for (size_t i = 0; i < res->grant.n; i++) {
    ap->devs[i] = cds[i].dev;
    ap->split[i] = splits[i];
    ap->has_split[i] = has_split[i] && !hold;
    ap->full[i] = full[i];
  }
  /* nothing granted and no init units to keep (an init-only pod whose init
   * containers are done): nothing to remember either */
  bool has_init_now = pt_holds_init(ap);
  if ((init_ids && n_init_ids) || had_init != has_init_now ||
      (has_init_now && (!res->known || res->grant_changed || before.init_unknown != hold)))
    f->state_dirty = true;
  if (!ap->grant.n && !has_init_now) {
    free_files(ap);
    f->pods[ap - f->pods] = f->pods[--f->n];
    ap = NULL;
  }
  pthread_mutex_unlock(&f->lock);

  log_in_place(pr, pi->uid, cg.dir, res, cds);
  rc = 0;
out:
  free(log);
  free(cds);
  return rc;
}

struct missing_pod {
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  bool cgroup_there, alive;
  bool replaced;     /* the API server shows the name under another UID */
  bool cache_synced; /* the pod cache has listed */
  char phase[16];
};

/* Whether kubelet's List shows the pod with its units: listed with some, or
 * listed without any while its regular init container's (never listed) are
 * what it holds. */
static bool listed_with_units(struct podtable *f, const struct podres_list *l,
                              const struct applied_pod *ap) {
  const struct podres_pod *pr = podres_find_pod(l, ap->ns, ap->name);
  return pr && (pr->n_ctrs || pt_holds_init(ap) ||
                (f->o.dra && drastate_pod_has(f->o.dra, NULL, NULL, ap->uid)));
}

/* The remembered pods applied before the List, with what the cgroup tree
 * and the pod cache say of them: the List names pods by namespace/name only,
 * so a listed name may be a new instance of a recreated pod. Gathered
 * without the pod table's locks held, since the pod cache calls into the
 * pod table with its own lock held. */
static size_t gather_missing(struct podtable *f, const struct podres_list *listed,
                             struct podcache *pc, struct missing_pod **out) {
  pthread_mutex_lock(&f->lock);
  size_t n = 0;
  struct missing_pod *m = calloc(f->n ? f->n : 1, sizeof *m);
  for (size_t i = 0; m && i < f->n; i++) {
    const struct applied_pod *ap = &f->pods[i];
    if (ap->applied_at >= listed->asked_at)
      continue;
    PT_COPY_FIELD(m[n].ns, ap->ns);
    PT_COPY_FIELD(m[n].name, ap->name);
    PT_COPY_FIELD(m[n].uid, ap->uid);
    PT_COPY_FIELD(m[n].cgroup, ap->cgroup);
    n++;
  }
  pthread_mutex_unlock(&f->lock);
  for (size_t i = 0; i < n; i++) {
    m[i].cgroup_there = ioq_is_dir(m[i].cgroup);
    struct pod_info pi;
    bool cached = pc && podcache_peek(pc, m[i].ns, m[i].name, &pi);
    m[i].cache_synced = pc && podcache_synced(pc);
    m[i].replaced = cached && pi.uid[0] && strcmp(pi.uid, m[i].uid) != 0;
    /* alive: the API server still shows it, same UID, not on its way out */
    m[i].alive = m[i].cgroup_there && cached && strcmp(pi.uid, m[i].uid) == 0 && !pi.terminating &&
                 strcmp(pi.phase, "Succeeded") != 0 && strcmp(pi.phase, "Failed") != 0;
    if (m[i].alive)
      ioq_copy_trunc(m[i].phase, sizeof m[i].phase, pi.phase[0] ? pi.phase : "alive");
  }
  *out = m;
  return n;
}

static const struct missing_pod *find_missing(const struct missing_pod *m, size_t n,
                                              const struct applied_pod *ap) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(m[i].ns, ap->ns) == 0 && strcmp(m[i].name, ap->name) == 0 &&
        strcmp(m[i].uid, ap->uid) == 0)
      return &m[i];
  return NULL;
}

static void forget_claims(struct drastate *dra, const struct applied_pod *ap) {
  ioq_err e;
  int n = drastate_forget_pod(dra, ap->uid, &e);
  if (n < 0)
    ioq_warn("claims of a gone pod not forgotten (kept until kubelet unprepares them) pod=%s/%s "
             "uid=%s error=\"%s\"",
             ap->ns, ap->name, ap->uid, e.msg);
  else if (n > 0)
    ioq_info("dra claims of a gone pod forgotten pod=%s/%s uid=%s claims=%d", ap->ns, ap->name,
             ap->uid, n);
}

size_t podtable_release_gone(struct podtable *f, const struct podres_list *listed,
                             struct podcache *pc) {
  struct missing_pod *miss;
  size_t n_miss = gather_missing(f, listed, pc, &miss);
  if (!miss) {
    ioq_error("releasing gone pods skipped reason=out-of-memory");
    return 0;
  }
  size_t released = 0;
  pthread_mutex_lock(&f->apply_lock);
  pthread_mutex_lock(&f->lock);
  struct applied_pod *taken = malloc((f->n ? f->n : 1) * sizeof *taken);
  if (!taken) {
    pthread_mutex_unlock(&f->lock);
    pthread_mutex_unlock(&f->apply_lock);
    free(miss);
    ioq_error("releasing gone pods skipped reason=out-of-memory (the list of pods to clear)");
    return 0;
  }
  for (size_t i = 0; i < f->n;) {
    struct applied_pod *ap = &f->pods[i];
    const struct missing_pod *mp = find_missing(miss, n_miss, ap);
    if (ap->applied_at >= listed->asked_at ||
        (listed_with_units(f, listed, ap) && !(mp && mp->replaced))) {
      ap->missing_since = 0;
      i++;
      continue;
    }
    if (!mp) { /* applied after the gathering: the next pass decides */
      i++;
      continue;
    }
    /* restored from the state file: only the API server can say it is gone
     * (a restarting kubelet may not list it yet) */
    if (ap->applied_at == 0 && !mp->alive && !mp->cache_synced && mp->cgroup_there) {
      i++;
      continue;
    }
    if (mp->alive) {
      if (!ap->missing_since) {
        ap->missing_since = listed->asked_at;
        ioq_warn("pod not in kubelet's pod resources List but %s per the API server, keeping its "
                 "limits for up to %.0f s (kubelet restarting?) pod=%s/%s uid=%s",
                 mp->phase, PODTABLE_MISSING_GRACE_S, ap->ns, ap->name, ap->uid);
      }
      if (listed->asked_at - ap->missing_since < PODTABLE_MISSING_GRACE_S) {
        i++;
        continue;
      }
      ioq_warn("pod still not in kubelet's pod resources List after %.0f s, releasing it pod=%s/%s "
               "uid=%s",
               PODTABLE_MISSING_GRACE_S, ap->ns, ap->name, ap->uid);
    }
    take_locked(f, i, &taken[released++]);
  }
  pthread_mutex_unlock(&f->lock);
  /* DRA mode: a gone pod's claims are done with; kubelet's unprepare, if
   * it still comes, finds nothing to do (a claim recovered from the API
   * server just after kubelet unprepared it ends here too) */
  for (size_t i = 0; f->o.dra && i < released; i++)
    forget_claims(f->o.dra, &taken[i]);
  clear_taken(f, taken, released, "pod gone");
  pt_save_state(f);
  pthread_mutex_unlock(&f->apply_lock);
  free(miss);
  return released;
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

/* the pod's grant disk `disk` and its full-grant split; with `lock` held */
static const struct applied_pod *split_find_locked(struct podtable *f, const char *uid,
                                                   const char *disk, size_t *d,
                                                   struct ioq_io_limits *grant) {
  const struct applied_pod *ap = pt_find_locked(f, uid);
  for (size_t i = 0; ap && !ap->init_unknown && i < ap->grant.n; i++)
    if (strcmp(ap->grant.disks[i].disk, disk) == 0 && ap->full[i].rbps + ap->full[i].riops) {
      *grant = ap->full[i];
      *d = i;
      return ap;
    }
  return NULL;
}

bool podtable_get_split(struct podtable *f, const char *uid, const char *disk,
                        struct ioq_io_limits *grant, struct ioq_io_limits *cur) {
  pthread_mutex_lock(&f->lock);
  size_t d = 0;
  const struct applied_pod *ap = split_find_locked(f, uid, disk, &d, grant);
  if (ap)
    *cur = ap->has_split[d] ? ap->split[d] : *grant;
  pthread_mutex_unlock(&f->lock);
  return ap != NULL;
}

int podtable_set_split(struct podtable *f, const char *uid, const char *disk,
                       const struct ioq_io_limits *grant, const struct ioq_io_limits *split,
                       ioq_err *e) {
  if (!ioq_dirsplit_valid(grant, split))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "disk %s: read/write split is not within the grant", disk);
  pthread_mutex_lock(&f->apply_lock);
  pthread_mutex_lock(&f->lock);
  size_t d = 0;
  struct ioq_io_limits g;
  const struct applied_pod *ap = split_find_locked(f, uid, disk, &d, &g);
  struct applied_pod copy;
  bool same = ap && ioq_limits_eq(&g, grant);
  if (same)
    copy = *ap; /* its init_ids stay owned by the table; not used here */
  pthread_mutex_unlock(&f->lock);
  int rc = 0;
  if (same) {
    /* the table changes only under apply_lock, held: the copy stays true */
    struct ioq_cg cg;
    struct ioq_disk_setting s = {.dev = copy.devs[d], .max = *split}; /* weights left as they are */
    struct ioq_apply_opts ao = {.sysfs_root = f->sysfs_root};
    struct ioq_apply_report rep;
    if (ioq_cg_open(copy.cgroup, copy.version, &cg, e) < 0 ||
        ioq_cg_apply_disk(&cg, &s, &ao, &rep, e) < 0) {
      ioq_err_prefix(e, "pod %s/%s disk %s", copy.ns, copy.name, disk);
      rc = -1;
    } else {
      pthread_mutex_lock(&f->lock);
      struct applied_pod *w = pt_find_locked(f, uid);
      if (w) {
        w->split[d] = *split;
        w->has_split[d] = true;
        /* what `ioqosctl explain` shows for the files: the split written */
        double now = pt_realtime_now();
        for (size_t i = 0; i < rep.n; i++)
          for (size_t k = 0; rep.steps[i].changed && k < w->n_files; k++)
            if (strcmp(w->files[k].file, rep.steps[i].file) == 0 &&
                strcmp(w->files[k].disk, disk) == 0) {
              struct podtable_file *wf = &w->files[k];
              ioq_copy_trunc(wf->written, sizeof wf->written, rep.steps[i].written);
              ioq_copy_trunc(wf->readback, sizeof wf->readback, rep.steps[i].readback);
              w->files[k].written_at = w->files[k].verified_at = now;
            }
      }
      pthread_mutex_unlock(&f->lock);
      rc = 1;
    }
  }
  pthread_mutex_unlock(&f->apply_lock);
  return rc;
}

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
