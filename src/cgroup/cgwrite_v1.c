// SPDX-License-Identifier: Apache-2.0
/* cgroup v1 blkio writers: blkio.throttle.*_device and the BFQ weight.
 * v1 throttling holds direct I/O only: buffered writeback is issued by the
 * flusher threads outside the pod's blkio cgroup. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgfile.h"
#include "cgweight.h"
#include "cgwrite_ops.h"
#include "base/log.h"

static const struct ioq_weight_file ioq_wf_v1_bfq = {
    .file = "blkio.bfq.weight_device",
    .dflt_file = "blkio.bfq.weight",
    .dflt_bare = true,
    .lo = IOQ_BFQ_WEIGHT_MIN,
    .hi = IOQ_BFQ_WEIGHT_MAX,
    .missing = "the kernel has no BFQ group scheduling (CONFIG_BFQ_GROUP_IOSCHED) or bfq is not "
               "loaded",
    .fallback_effect = "which applies to every BFQ disk of this cgroup",
};

static const char *const g_files[IOQ_LIMIT_KEYS] = {
    "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"};

static int read_one(const struct ioq_cg *cg, const char *file, struct ioq_devno dev, uint64_t *v,
                    char *line, size_t linesz, ioq_err *e) {
  char *c = NULL;
  if (ioq_cg_read(cg, file, &c, e) < 0)
    return -1;
  bool present;
  int rc = ioq_blkio_parse(c, dev, v, &present, e);
  if (line)
    ioq_dev_line(c, dev, line, linesz);
  free(c);
  if (rc < 0)
    ioq_err_prefix(e, "%s/%s", cg->dir, file);
  return rc;
}

static int check_files(const struct ioq_cg *cg, ioq_err *e) {
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++)
    if (!ioq_cg_has(cg, g_files[k]))
      return ioq_fail(e, IOQ_EUNSUPPORTED,
                      "%s has no %s: not a blkio cgroup, or the kernel has no blk-throttle "
                      "(CONFIG_BLK_DEV_THROTTLING)",
                      cg->dir, g_files[k]);
  return 0;
}

static int set_one(const struct ioq_cg *cg, enum ioq_limit_key k, struct ioq_devno dev,
                   uint64_t want, const struct ioq_apply_opts *o, struct ioq_apply_report *rep,
                   ioq_err *e) {
  const char *file = g_files[k];
  struct ioq_apply_step *st = ioq_step_new(rep, file);
  uint64_t cur;
  if (read_one(cg, file, dev, &cur, st->before, sizeof st->before, e) < 0)
    return -1;
  if (cur == want) {
    snprintf(st->readback, sizeof st->readback, "%s", st->before);
    return 0;
  }
  /* 0 removes the device's limit in v1. */
  snprintf(st->written, sizeof st->written, "%u:%u %" PRIu64, dev.major, dev.minor, want);
  st->changed = true;
  if (o->dry_run)
    return 0;
  if (ioq_cg_write(cg, file, st->written, e) < 0)
    return -1;
  uint64_t got;
  if (read_one(cg, file, dev, &got, st->readback, sizeof st->readback, e) < 0)
    return -1;
  if (got != want)
    return ioq_fail(e, IOQ_EMISMATCH, "%s/%s: wrote '%s', kernel reads back '%s'", cg->dir, file,
                    st->written, st->readback[0] ? st->readback : "(no line for the device)");
  ioq_info("cgroup blkio limit written cgroup=%s file=%s wrote='%s' readback='%s'", cg->dir, file,
           st->written, st->readback[0] ? st->readback : "(no limit)");
  return 0;
}

static int v1_apply(const struct ioq_cg *cg, const struct ioq_disk_setting *s,
                    const struct ioq_apply_opts *o, struct ioq_apply_report *rep, ioq_err *e) {
  if (check_files(cg, e) < 0)
    return -1;
  for (int k = 0; k < IOQ_LIMIT_KEYS && !s->weights_only; k++)
    if (set_one(cg, k, s->dev, ioq_limits_get(&s->max, k), o, rep, e) < 0)
      return -1;
  if (s->weight) {
    struct ioq_apply_step *st = ioq_step_new(rep, "io.weight");
    snprintf(st->note, sizeof st->note,
             "not applicable: cgroup v1 has no io.weight (iocost is cgroup v2 only); weight %u "
             "not written",
             s->weight);
  }
  if (s->bfq_weight && ioq_bfq_applicable(o->sysfs_root, ioq_wf_v1_bfq.file, s->dev, rep) &&
      ioq_weight_apply(cg, &ioq_wf_v1_bfq, s->dev, s->bfq_weight, o, rep, e) < 0)
    return -1;
  return 0;
}

static int v1_clear(const struct ioq_cg *cg, struct ioq_devno dev, const struct ioq_apply_opts *o,
                    struct ioq_apply_report *rep, ioq_err *e) {
  if (check_files(cg, e) < 0)
    return -1;
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++)
    if (set_one(cg, k, dev, 0, o, rep, e) < 0)
      return -1;
  return ioq_weight_clear(cg, &ioq_wf_v1_bfq, dev, o, rep, e);
}

static int v1_read(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_disk_state_cg *out,
                   ioq_err *e) {
  if (check_files(cg, e) < 0)
    return -1;
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++) {
    uint64_t v;
    if (read_one(cg, g_files[k], dev, &v, NULL, 0, e) < 0)
      return -1;
    ioq_limits_set(&out->max, k, v);
  }
  return ioq_weight_read(cg, &ioq_wf_v1_bfq, dev, &out->bfq_weight, &out->has_bfq_file, e);
}

const struct ioq_cgwrite_ops ioq_cgwrite_v1 = {
    .name = "cgroup v1 blkio",
    .apply = v1_apply,
    .clear = v1_clear,
    .read = v1_read,
};
