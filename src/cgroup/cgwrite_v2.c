// SPDX-License-Identifier: Apache-2.0
/* cgroup v2 writers: io.max, io.weight, io.bfq.weight. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgfile.h"
#include "cgweight.h"
#include "cgwrite_ops.h"
#include "base/log.h"

static const struct ioq_weight_file ioq_wf_v2_iocost = {
    .file = "io.weight",
    .dflt_file = "io.weight",
    .lo = IOQ_IO_WEIGHT_MIN,
    .hi = IOQ_IO_WEIGHT_MAX,
    .missing = "the kernel has no iocost (CONFIG_BLK_CGROUP_IOCOST) or the io controller is not "
               "enabled for this cgroup",
    .fallback_effect = "which applies to every disk of this cgroup and only where iocost is "
                       "enabled (io.cost.qos)",
};

static const struct ioq_weight_file ioq_wf_v2_bfq = {
    .file = "io.bfq.weight",
    .dflt_file = "io.bfq.weight",
    .lo = IOQ_BFQ_WEIGHT_MIN,
    .hi = IOQ_BFQ_WEIGHT_MAX,
    .missing = "the kernel has no BFQ group scheduling (CONFIG_BFQ_GROUP_IOSCHED) or bfq is not "
               "loaded",
    .fallback_effect = "which applies to every BFQ disk of this cgroup",
};

static int read_iomax(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_io_limits *cur,
                      char *line, size_t linesz, ioq_err *e) {
  char *c = NULL;
  if (ioq_cg_read(cg, "io.max", &c, e) < 0)
    return -1;
  bool present;
  int rc = ioq_iomax_parse(c, dev, cur, &present, e);
  ioq_dev_line(c, dev, line, linesz);
  free(c);
  if (rc < 0)
    ioq_err_prefix(e, "%s/io.max", cg->dir);
  return rc;
}

static int iomax_set(const struct ioq_cg *cg, struct ioq_devno dev,
                     const struct ioq_io_limits *want, const struct ioq_apply_opts *o,
                     struct ioq_apply_report *rep, ioq_err *e) {
  struct ioq_apply_step *st = ioq_step_new(rep, "io.max");
  if (!ioq_cg_has(cg, "io.max"))
    return ioq_fail(e, IOQ_EUNSUPPORTED,
                    "%s has no io.max: the io controller is not enabled for it (add +io to the "
                    "parent's cgroup.subtree_control) or the kernel has no blk-throttle "
                    "(CONFIG_BLK_DEV_THROTTLING)",
                    cg->dir);
  struct ioq_io_limits cur;
  if (read_iomax(cg, dev, &cur, st->before, sizeof st->before, e) < 0)
    return -1;
  if (ioq_limits_eq(&cur, want)) {
    snprintf(st->readback, sizeof st->readback, "%s", st->before);
    return 0;
  }
  if (ioq_iomax_format(st->written, sizeof st->written, dev, want, e) < 0)
    return -1;
  st->changed = true;
  if (o->dry_run)
    return 0;
  if (ioq_cg_write(cg, "io.max", st->written, e) < 0)
    return -1;
  struct ioq_io_limits got;
  if (read_iomax(cg, dev, &got, st->readback, sizeof st->readback, e) < 0)
    return -1;
  if (!ioq_limits_eq(&got, want))
    return ioq_fail(e, IOQ_EMISMATCH, "%s/io.max: wrote '%s', kernel reads back '%s'", cg->dir,
                    st->written, st->readback[0] ? st->readback : "(no line for the device)");
  ioq_info("cgroup io.max written cgroup=%s wrote='%s' readback='%s'", cg->dir, st->written,
           st->readback[0] ? st->readback : "(no limits)");
  return 0;
}

static int v2_apply(const struct ioq_cg *cg, const struct ioq_disk_setting *s,
                    const struct ioq_apply_opts *o, struct ioq_apply_report *rep, ioq_err *e) {
  if (!s->weights_only && iomax_set(cg, s->dev, &s->max, o, rep, e) < 0)
    return -1;
  if (s->weight && ioq_weight_apply(cg, &ioq_wf_v2_iocost, s->dev, s->weight, o, rep, e) < 0)
    return -1;
  if (s->bfq_weight && ioq_bfq_applicable(o->sysfs_root, ioq_wf_v2_bfq.file, s->dev, rep) &&
      ioq_weight_apply(cg, &ioq_wf_v2_bfq, s->dev, s->bfq_weight, o, rep, e) < 0)
    return -1;
  return 0;
}

static int v2_clear(const struct ioq_cg *cg, struct ioq_devno dev, const struct ioq_apply_opts *o,
                    struct ioq_apply_report *rep, ioq_err *e) {
  if (ioq_cg_has(cg, "io.max")) {
    const struct ioq_io_limits none = {0};
    if (iomax_set(cg, dev, &none, o, rep, e) < 0)
      return -1;
  } else {
    struct ioq_apply_step *st = ioq_step_new(rep, "io.max");
    snprintf(st->note, sizeof st->note, "no io.max in this cgroup: no limit can be in place");
  }
  if (ioq_weight_clear(cg, &ioq_wf_v2_iocost, dev, o, rep, e) < 0 ||
      ioq_weight_clear(cg, &ioq_wf_v2_bfq, dev, o, rep, e) < 0)
    return -1;
  return 0;
}

static int v2_read(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_disk_state_cg *out,
                   ioq_err *e) {
  char line[256];
  if (!ioq_cg_has(cg, "io.max"))
    return ioq_fail(e, IOQ_EUNSUPPORTED,
                    "%s has no io.max (io controller not enabled for it, or no blk-throttle)",
                    cg->dir);
  if (read_iomax(cg, dev, &out->max, line, sizeof line, e) < 0)
    return -1;
  if (ioq_weight_read(cg, &ioq_wf_v2_iocost, dev, &out->weight, &out->has_weight_file, e) < 0 ||
      ioq_weight_read(cg, &ioq_wf_v2_bfq, dev, &out->bfq_weight, &out->has_bfq_file, e) < 0)
    return -1;
  return 0;
}

const struct ioq_cgwrite_ops ioq_cgwrite_v2 = {
    .name = "cgroup v2",
    .apply = v2_apply,
    .clear = v2_clear,
    .read = v2_read,
};
