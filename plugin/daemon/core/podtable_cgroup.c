// SPDX-License-Identifier: Apache-2.0
/* The pod table's kernel writes: finding and opening a pod's cgroup, writing
 * one disk's grant (limits on the device, weights on a stacked device's
 * leaves) and noting what changed, clearing disks and whole pods. */
#include "podtable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/filelog.h"
#include "podtable_internal.h"
#include "cgroup/cgwrite.h"
#include "grant/dirsplit.h"
#include "base/fsutil.h"
#include "base/log.h"

enum fail_reason pt_classify(const ioq_err *e) {
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

static uint64_t plus(uint64_t v, uint64_t x) {
  if (!v)
    return 0; /* no limit: nothing to add to */
  return v > UINT64_MAX - x ? UINT64_MAX : v + x;
}

struct ioq_io_limits pt_with_burst(struct ioq_io_limits lim, const uint64_t *extra) {
  if (!extra)
    return lim;
  lim.rbps = plus(lim.rbps, extra[IOQ_RES_BANDWIDTH]);
  lim.wbps = plus(lim.wbps, extra[IOQ_RES_BANDWIDTH]);
  lim.riops = plus(lim.riops, extra[IOQ_RES_IOPS]);
  lim.wiops = plus(lim.wiops, extra[IOQ_RES_IOPS]);
  return lim;
}

void pt_note_written_locked(struct applied_pod *w, const char *disk, const struct ioq_apply_report *rep) {
  double now = pt_realtime_now();
  for (size_t i = 0; i < rep->n; i++)
    for (size_t k = 0; rep->steps[i].changed && k < w->n_files; k++)
      if (strcmp(w->files[k].file, rep->steps[i].file) == 0 && strcmp(w->files[k].disk, disk) == 0) {
        struct podtable_file *wf = &w->files[k];
        ioq_copy_trunc(wf->written, sizeof wf->written, rep->steps[i].written);
        ioq_copy_trunc(wf->readback, sizeof wf->readback, rep->steps[i].readback);
        wf->written_at = wf->verified_at = now;
      }
}

/* Writes one disk's grant into the cgroup (its limits: the read/write split
 * when `split` is a valid one of the grant, else the full-grant split).
 * Stacked devices (dm, md) get the limit on the device itself and the
 * weights on their leaf disks, where the proportional schedulers work. */
int pt_apply_disk(struct podtable *f, const struct ioq_cg *cg, const struct ioq_disk_grant *dg,
                  const struct cat_disk *cd, const struct ioq_io_limits *split,
                  const uint64_t *burst, struct ioq_io_limits *full, struct podtable_result *res,
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
  s.max = pt_with_burst(s.max, burst); /* the opt-in burst kept: not drift */
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
void pt_clear_taken(struct podtable *f, struct applied_pod *taken, size_t n, const char *why) {
  for (size_t i = 0; i < n; i++) {
    clear_pod(f, &taken[i], why);
    pt_free_all_init(&taken[i]);
    pt_free_files(&taken[i]);
  }
  free(taken);
}

/* Clears every managed disk but the grant's in the pod cgroup: what a
 * grant the plugin lost track of held. */
void pt_clear_other_disks(struct podtable *f, const struct ioq_cg *cg,
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

/* Finds and opens the pod's cgroup (res->cgroup), with the io controller
 * enabled for it (and memory, best effort) on cgroup v2. */
int pt_open_pod_cgroup(struct podtable *f, const struct podres_pod *pr, const struct pod_info *pi,
                       struct podtable_result *res, struct ioq_cg *cg, ioq_err *e) {
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

/* Clears the disks an earlier grant of the pod (`old`, throttled devices
 * `devs`) had and the new one `now` does not. */
void pt_clear_dropped_disks(struct podtable *f, const struct ioq_cg *cg,
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
