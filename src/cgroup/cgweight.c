// SPDX-License-Identifier: Apache-2.0
/* Bottom layer of the cgroup writer: weight files and the BFQ check
 * (contract in cgweight.h). */
#include "cgweight.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk/blockdev.h"
#include "base/log.h"

/* ---- BFQ --------------------------------------------------------------- */

bool ioq_bfq_applicable(const char *sysfs_root, const char *file, struct ioq_devno dev,
                        struct ioq_apply_report *rep) {
  char sched[64];
  ioq_err se = {0};
  if (ioq_blockdev_scheduler(sysfs_root, dev, sched, sizeof sched, &se) < 0)
    snprintf(sched, sizeof sched, "unknown (%s)", se.msg);
  if (strcmp(sched, "bfq") == 0)
    return true;
  struct ioq_apply_step *st = ioq_step_new(rep, file);
  snprintf(st->note, sizeof st->note,
           "skipped: the disk's I/O scheduler is %s, not bfq, so a BFQ weight has no effect",
           sched);
  return false;
}

/* ---- weight files ------------------------------------------------------- */

static void fmt_weight(char *out, size_t sz, const char *dv, unsigned w) {
  if (w)
    snprintf(out, sz, "%s %u", dv, w);
  else
    out[0] = '\0';
}

static void fmt_default(char *out, size_t sz, const struct ioq_weight_file *wf, unsigned w) {
  if (wf->dflt_bare)
    snprintf(out, sz, "%u", w);
  else
    snprintf(out, sz, "default %u", w);
}

int ioq_weight_read(const struct ioq_cg *cg, const struct ioq_weight_file *wf, struct ioq_devno dev,
                    struct ioq_weights *out, bool *has, ioq_err *e) {
  memset(out, 0, sizeof *out);
  *has = ioq_cg_has(cg, wf->file);
  char *c = NULL;
  int rc;
  if (*has) {
    if (ioq_cg_read(cg, wf->file, &c, e) < 0)
      return -1;
    rc = ioq_weights_parse(c, dev, out, e);
    free(c);
    if (rc < 0) {
      ioq_err_prefix(e, "%s/%s", cg->dir, wf->file);
      return -1;
    }
  }
  if (wf->dflt_file != wf->file && strcmp(wf->dflt_file, wf->file) != 0 &&
      ioq_cg_has(cg, wf->dflt_file)) {
    struct ioq_weights d;
    if (ioq_cg_read(cg, wf->dflt_file, &c, e) < 0)
      return -1;
    rc = ioq_weights_parse(c, dev, &d, e);
    free(c);
    if (rc < 0) {
      ioq_err_prefix(e, "%s/%s", cg->dir, wf->dflt_file);
      return -1;
    }
    out->dflt = d.dflt;
  }
  return 0;
}

static bool rejected_form(int code) { return code == EOPNOTSUPP || code == EINVAL; }

/* Sets the cgroup-wide default weight. With raise_only (the fallback for a
 * refused per-device form) a higher default is left alone: a pod with grants
 * on several such disks then keeps the largest weight it needs, and repeated
 * applies of its disks do not undo each other. */
static int write_default(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                         struct ioq_devno dev, unsigned w, bool raise_only,
                         const struct ioq_apply_opts *o, struct ioq_apply_step *st, ioq_err *e) {
  struct ioq_weights cur;
  bool has;
  if (ioq_weight_read(cg, wf, dev, &cur, &has, e) < 0)
    return -1;
  snprintf(st->file, sizeof st->file, "%s", wf->dflt_file);
  snprintf(st->before, sizeof st->before, "default %u", cur.dflt);
  if (cur.dflt == w || (raise_only && cur.dflt > w)) {
    snprintf(st->readback, sizeof st->readback, "default %u", cur.dflt);
    return 0;
  }
  fmt_default(st->written, sizeof st->written, wf, w);
  st->changed = true;
  if (o->dry_run)
    return 0;
  if (ioq_cg_write(cg, wf->dflt_file, st->written, e) < 0)
    return -1;
  if (ioq_weight_read(cg, wf, dev, &cur, &has, e) < 0)
    return -1;
  snprintf(st->readback, sizeof st->readback, "default %u", cur.dflt);
  if (cur.dflt != w)
    return ioq_fail(e, IOQ_EMISMATCH, "%s/%s: wrote '%s', kernel reads back default %u", cg->dir,
                    wf->dflt_file, st->written, cur.dflt);
  ioq_info("cgroup weight written cgroup=%s file=%s wrote='%s' readback='%s'", cg->dir,
           wf->dflt_file, st->written, st->readback);
  return 0;
}

int ioq_weight_apply(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                     struct ioq_devno dev, unsigned w, const struct ioq_apply_opts *o,
                     struct ioq_apply_report *rep, ioq_err *e) {
  char dv[IOQ_DEVNO_STR_MAX];
  ioq_devno_str(dev, dv, sizeof dv);
  struct ioq_apply_step *st = ioq_step_new(rep, wf->file);
  if (w < wf->lo || w > wf->hi)
    return ioq_fail(e, ERANGE, "%s: weight %u out of range (%u..%u)", wf->file, w, wf->lo, wf->hi);
  struct ioq_weights cur;
  bool has;
  if (ioq_weight_read(cg, wf, dev, &cur, &has, e) < 0)
    return -1;
  if (!has && strcmp(wf->dflt_file, wf->file) != 0 && ioq_cg_has(cg, wf->dflt_file)) {
    /* v1 BFQ before Linux 5.4 has blkio.bfq.weight but no per-device file */
    snprintf(st->note, sizeof st->note,
             "%s missing (a kernel before 5.4 has no per-device BFQ weight); using the "
             "cgroup-wide %s instead (raised to %u if lower), %s",
             wf->file, wf->dflt_file, w, wf->fallback_effect);
    return write_default(cg, wf, dev, w, true, o, st, e);
  }
  if (!has)
    return ioq_fail(e, IOQ_EUNSUPPORTED, "%s has no %s: %s", cg->dir, wf->file, wf->missing);
  fmt_weight(st->before, sizeof st->before, dv, cur.device);
  if (cur.device == w) {
    snprintf(st->readback, sizeof st->readback, "%s", st->before);
    return 0;
  }
  snprintf(st->written, sizeof st->written, "%s %u", dv, w);
  st->changed = true;
  if (o->dry_run)
    return 0;
  ioq_err we = {0};
  if (ioq_cg_write(cg, wf->file, st->written, &we) < 0) {
    if (!rejected_form(we.code)) {
      *e = we;
      return -1;
    }
    /* The per-device form needs the policy active on the disk (iocost
     * enabled, BFQ running); the cgroup-wide default is always accepted. */
    ioq_debug("per-device weight rejected, using the cgroup-wide default cgroup=%s file=%s "
              "tried='%s' error='%s'",
              cg->dir, wf->file, st->written, strerror(we.code));
    snprintf(st->note, sizeof st->note,
             "per-device form '%s' rejected by the kernel (%s); using the cgroup-wide default "
             "instead (raised to %u if lower), %s",
             st->written, strerror(we.code), w, wf->fallback_effect);
    st->written[0] = '\0';
    st->changed = false;
    return write_default(cg, wf, dev, w, true, o, st, e);
  }
  if (ioq_weight_read(cg, wf, dev, &cur, &has, e) < 0)
    return -1;
  fmt_weight(st->readback, sizeof st->readback, dv, cur.device);
  if (cur.device != w)
    return ioq_fail(e, IOQ_EMISMATCH, "%s/%s: wrote '%s', kernel reads back '%s'", cg->dir,
                    wf->file, st->written,
                    st->readback[0] ? st->readback : "(no line for the device)");
  ioq_info("cgroup weight written cgroup=%s file=%s wrote='%s' readback='%s'", cg->dir, wf->file,
           st->written, st->readback);
  return 0;
}

int ioq_weight_clear(const struct ioq_cg *cg, const struct ioq_weight_file *wf,
                     struct ioq_devno dev, const struct ioq_apply_opts *o,
                     struct ioq_apply_report *rep, ioq_err *e) {
  struct ioq_weights cur;
  bool has;
  if (ioq_weight_read(cg, wf, dev, &cur, &has, e) < 0)
    return -1;
  if (!has)
    return 0; /* no such file: no weight can be in place */
  char dv[IOQ_DEVNO_STR_MAX];
  ioq_devno_str(dev, dv, sizeof dv);
  if (cur.device) {
    struct ioq_apply_step *st = ioq_step_new(rep, wf->file);
    fmt_weight(st->before, sizeof st->before, dv, cur.device);
    snprintf(st->written, sizeof st->written, "%s default", dv);
    st->changed = true;
    if (!o->dry_run) {
      if (ioq_cg_write(cg, wf->file, st->written, e) < 0 ||
          ioq_weight_read(cg, wf, dev, &cur, &has, e) < 0)
        return -1;
      fmt_weight(st->readback, sizeof st->readback, dv, cur.device);
      if (cur.device)
        return ioq_fail(e, IOQ_EMISMATCH, "%s/%s: wrote '%s', kernel reads back '%s'", cg->dir,
                        wf->file, st->written, st->readback);
      ioq_info("cgroup weight cleared cgroup=%s file=%s wrote='%s'", cg->dir, wf->file,
               st->written);
    }
  }
  if (o->reset_default_weight && cur.dflt && cur.dflt != IOQ_WEIGHT_DEFAULT) {
    struct ioq_apply_step *st = ioq_step_new(rep, wf->dflt_file);
    if (write_default(cg, wf, dev, IOQ_WEIGHT_DEFAULT, false, o, st, e) < 0)
      return -1;
  }
  return 0;
}
