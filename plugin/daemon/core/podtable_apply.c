// SPDX-License-Identifier: Apache-2.0
/* Applying a pod's grant (podtable_apply): the grant from its listed units
 * and its regular init container's, an unknown pod held while it is Pending,
 * the kernel writes (podtable_cgroup.c), earlier instances of the pod (same
 * name, another UID) forgotten, and the entry remembered. */
#include "podtable.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "state/drastate.h"
#include "support/filelog.h"
#include "podgrant.h"
#include "base/fsutil.h"
#include "podtable_internal.h"
#include "cgroup/cgwrite.h"
#include "base/log.h"
#include "base/monoclock.h"

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
    pt_take_locked(f, i, &taken[n_taken++]);
  }
  pthread_mutex_unlock(&f->lock);
  pt_clear_taken(f, taken, n_taken, "pod recreated under the same name, earlier instance gone");
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

/* Each disk of `now` whose grant is the same as in `before` (same cgroup)
 * keeps what is in place beside the grant: the read/write split (combined
 * directions) and the burst. */
static void carry_kept(const struct applied_pod *before, const struct ioq_pod_grant *now,
                       struct ioq_io_limits splits[IOQ_POD_DISKS_MAX],
                       bool has_split[IOQ_POD_DISKS_MAX],
                       uint64_t burst[IOQ_POD_DISKS_MAX][IOQ_RES_COUNT]) {
  for (size_t i = 0; i < now->n; i++)
    for (size_t j = 0; j < before->grant.n; j++)
      if (strcmp(before->grant.disks[j].disk, now->disks[i].disk) == 0 &&
          memcmp(before->grant.disks[j].units, now->disks[i].units,
                 sizeof before->grant.disks[j].units) == 0) {
        if (before->has_split[j]) {
          splits[i] = before->split[j];
          has_split[i] = true;
        }
        memcpy(burst[i], before->burst[j], sizeof burst[i]);
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
  if (pt_open_pod_cgroup(f, pr, pi, res, &cg, e) < 0)
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
  /* a disk whose grant is unchanged keeps its split and its burst */
  struct ioq_io_limits splits[IOQ_POD_DISKS_MAX] = {{0}};
  bool has_split[IOQ_POD_DISKS_MAX] = {false};
  uint64_t burst[IOQ_POD_DISKS_MAX][IOQ_RES_COUNT] = {{0}};
  if (ap && strcmp(before.cgroup, cg.dir) == 0)
    carry_kept(&before, &res->grant, splits, has_split, burst);
  /* what each file holds now, for `ioqosctl explain` (NULL on OOM: not kept) */
  log = calloc(1, sizeof *log);
  if (log)
    log->now = pt_realtime_now();
  struct ioq_io_limits full[IOQ_POD_DISKS_MAX] = {{0}};
  for (size_t i = 0; i < res->grant.n && !hold; i++) {
    if (pt_apply_disk(f, &cg, &res->grant.disks[i], &cds[i], has_split[i] ? &splits[i] : NULL,
                      burst[i], &full[i], res, log, e) < 0) {
      res->fail = pt_classify(e);
      ioq_err_prefix(e, "pod %s/%s", pr->ns, pr->name);
      goto out;
    }
  }
  if (was_unknown && !hold) { /* whatever the lost grant held goes */
    pt_clear_other_disks(f, &cg, &res->grant, pr);
    pt_settle(f, pi->uid);
  }
  /* Clear disks an earlier grant of the same pod had. */
  res->known = ap && strcmp(before.cgroup, cg.dir) == 0;
  res->grant_changed = res->known && !podgrant_eq(&before.grant, &res->grant);
  if (res->known && !hold)
    pt_clear_dropped_disks(f, &cg, &before.grant, before.devs, &res->grant, pr, res);
  forget_earlier_instances(f, pr->ns, pr->name, pi->uid);
  /* Remember it. */
  pthread_mutex_lock(&f->lock);
  ap = pt_slot_locked(f, pi->uid, e);
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
    pt_free_all_init(ap);
  ap->init_unknown = hold;
  memcpy(ap->ns, pr->ns, strlen(pr->ns) + 1); /* lengths checked by apply_locked */
  memcpy(ap->name, pr->name, strlen(pr->name) + 1);
  IOQ_COPY_FIELD(ap->uid, pi->uid);
  IOQ_COPY_FIELD(ap->cgroup, cg.dir);
  ap->version = cg.version;
  ap->grant = res->grant;
  ap->applied_at = ioq_mono_s();
  for (size_t i = 0; i < res->grant.n; i++) {
    ap->devs[i] = cds[i].dev;
    ap->split[i] = splits[i];
    ap->has_split[i] = has_split[i] && !hold;
    ap->full[i] = full[i];
    if (!hold)
      memcpy(ap->burst[i], burst[i], sizeof ap->burst[i]);
  }
  ap->burst_asked = pi->need.burst;
  ap->burst_invalid = pi->need.burst_invalid;
  /* nothing granted and no init units to keep (an init-only pod whose init
   * containers are done): nothing to remember either */
  bool has_init_now = pt_holds_init(ap);
  if ((init_ids && n_init_ids) || had_init != has_init_now ||
      (has_init_now && (!res->known || res->grant_changed || before.init_unknown != hold)))
    f->state_dirty = true;
  if (!ap->grant.n && !has_init_now) {
    pt_free_files(ap);
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
