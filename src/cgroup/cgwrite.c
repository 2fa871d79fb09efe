// SPDX-License-Identifier: Apache-2.0
/* Entry layer of the cgroup writer (contract in cgroup/cgwrite.h): opens a
 * cgroup, checks a setting (ranges, whole disk) and dispatches to the table
 * of operations of the cgroup's version (cgwrite_ops.h). Writes nothing
 * itself. */
#include "cgroup/cgwrite.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgfile.h"
#include "cgwrite_ops.h"
#include "base/fsutil.h"

/* ---- opening a cgroup --------------------------------------------------- */

int ioq_cg_open(const char *dir, enum ioq_cg_version version, struct ioq_cg *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!dir || !*dir)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup directory missing");
  if (snprintf(out->dir, sizeof out->dir, "%s", dir) >= (int)sizeof out->dir)
    return ioq_fail(e, ENAMETOOLONG, "cgroup directory %.200s...: path too long", dir);
  if (!ioq_is_dir(dir))
    return ioq_fail(e, ENOENT, "cgroup %s does not exist (or is not a directory)", dir);
  if (version == IOQ_CGV1 || version == IOQ_CGV2) {
    out->version = version;
    return 0;
  }
  if (version != IOQ_CGV_NONE)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup version must be 1 or 2");
  if (ioq_cg_has(out, "io.max") || ioq_cg_has(out, "cgroup.controllers"))
    out->version = IOQ_CGV2;
  else if (ioq_cg_has(out, "blkio.throttle.read_bps_device"))
    out->version = IOQ_CGV1;
  else
    return ioq_fail(e, IOQ_EUNSUPPORTED,
                    "%s is not a cgroup with I/O control: it has neither io.max / "
                    "cgroup.controllers (cgroup v2) nor blkio.throttle.read_bps_device (cgroup v1 "
                    "blkio)",
                    dir);
  return 0;
}

/* ---- dispatch ----------------------------------------------------------- */

/* The backend for cg's version, NULL (with the error set) when not set. */
static const struct ioq_cgwrite_ops *backend(const struct ioq_cg *cg, ioq_err *e) {
  switch (cg->version) {
  case IOQ_CGV2: return &ioq_cgwrite_v2;
  case IOQ_CGV1: return &ioq_cgwrite_v1;
  default: ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup version not set"); return NULL;
  }
}

static const struct ioq_apply_opts g_default_opts;

int ioq_cg_apply_disk(const struct ioq_cg *cg, const struct ioq_disk_setting *s,
                      const struct ioq_apply_opts *o, struct ioq_apply_report *rep, ioq_err *e) {
  if (!o)
    o = &g_default_opts;
  if (rep)
    memset(rep, 0, sizeof *rep);
  char d[IOQ_DEVNO_STR_MAX], name[64];
  ioq_devno_str(s->dev, d, sizeof d);
  if (ioq_limits_check(&s->max, e) < 0) {
    ioq_err_prefix(e, "%s: device %s", cg->dir, d);
    return -1;
  }
  if (s->weight && (s->weight < IOQ_IO_WEIGHT_MIN || s->weight > IOQ_IO_WEIGHT_MAX))
    return ioq_fail(e, ERANGE, "%s: device %s: io.weight %u out of range (%u..%u)", cg->dir, d,
                    s->weight, IOQ_IO_WEIGHT_MIN, IOQ_IO_WEIGHT_MAX);
  if (s->bfq_weight && (s->bfq_weight < IOQ_BFQ_WEIGHT_MIN || s->bfq_weight > IOQ_BFQ_WEIGHT_MAX))
    return ioq_fail(e, ERANGE, "%s: device %s: BFQ weight %u out of range (%u..%u)", cg->dir, d,
                    s->bfq_weight, IOQ_BFQ_WEIGHT_MIN, IOQ_BFQ_WEIGHT_MAX);
  if (ioq_blockdev_whole(o->sysfs_root, s->dev, name, sizeof name, e) < 0)
    return -1;
  if (rep)
    snprintf(rep->disk, sizeof rep->disk, "%s", name);
  const struct ioq_cgwrite_ops *ops = backend(cg, e);
  if (!ops || ops->apply(cg, s, o, rep, e) < 0) {
    ioq_err_prefix(e, "apply %s (%s) to %s", d, name, cg->dir);
    return -1;
  }
  return 0;
}

int ioq_cg_clear_disk(const struct ioq_cg *cg, struct ioq_devno dev, const struct ioq_apply_opts *o,
                      struct ioq_apply_report *rep, ioq_err *e) {
  if (!o)
    o = &g_default_opts;
  if (rep)
    memset(rep, 0, sizeof *rep);
  char d[IOQ_DEVNO_STR_MAX];
  ioq_devno_str(dev, d, sizeof d);
  if (!ioq_is_dir(cg->dir))
    return ioq_fail(e, ENOENT, "clear %s in %s: the cgroup does not exist", d, cg->dir);
  const struct ioq_cgwrite_ops *ops = backend(cg, e);
  if (!ops || ops->clear(cg, dev, o, rep, e) < 0) {
    ioq_err_prefix(e, "clear %s in %s", d, cg->dir);
    return -1;
  }
  return 0;
}

int ioq_cg_read_disk(const struct ioq_cg *cg, struct ioq_devno dev, struct ioq_disk_state_cg *out,
                     ioq_err *e) {
  memset(out, 0, sizeof *out);
  const struct ioq_cgwrite_ops *ops = backend(cg, e);
  return ops ? ops->read(cg, dev, out, e) : -1;
}
