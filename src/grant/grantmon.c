// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's measurements and classifier (grant/grantmon.h): rates
 * from two counter samples, the disk's stat file, contention, cause and the
 * per-interval verdict. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "grant/grantmon.h"

static int delta(uint64_t a, uint64_t b, const char *what, double *out, ioq_err *e) {
  *out = 0; /* set on every path: -O2 cannot see that callers stop on failure */
  if (b < a)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s went backwards (%" PRIu64 " -> %" PRIu64
                    "): counters reset or the cgroup was re-created", what, a, b);
  *out = (double)(b - a);
  return 0;
}

int ioq_gm_rates(const struct ioq_gm_counters *prev, const struct ioq_gm_counters *cur, double dt,
                 struct ioq_gm_rates *out, ioq_err *e) {
  if (!(dt > 0))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "interval of %g s", dt);
  double d[4] = {0};
  if (delta(prev->rbytes, cur->rbytes, "rbytes", &d[0], e) < 0 ||
      delta(prev->wbytes, cur->wbytes, "wbytes", &d[1], e) < 0 ||
      delta(prev->rios, cur->rios, "rios", &d[2], e) < 0 ||
      delta(prev->wios, cur->wios, "wios", &d[3], e) < 0)
    return -1;
  out->rbps = d[0] / dt;
  out->wbps = d[1] / dt;
  out->riops = d[2] / dt;
  out->wiops = d[3] / dt;
  out->stall = -1;
  if (prev->have_stall && cur->have_stall) {
    double s = 0;
    if (delta(prev->stall_us, cur->stall_us, "io.pressure total", &s, e) < 0)
      return -1;
    s /= dt * 1e6;
    out->stall = s > 1 ? 1 : s;
  }
  return 0;
}

#define GM_IOSTAT_DEVS 128

int ioq_gm_read_counters(const struct ioq_cg *cg, const struct ioq_devno *dev, size_t n,
                         struct ioq_gm_counters *out, ioq_err *e) {
  struct ioq_iostat st[GM_IOSTAT_DEVS];
  size_t ns = 0;
  memset(out, 0, n * sizeof *out);
  if (ioq_cg_read_iostat(cg, st, GM_IOSTAT_DEVS, &ns, e) < 0)
    return -1;
  struct ioq_pressure p;
  ioq_err pe;
  bool stall = cg->version == IOQ_CGV2 && ioq_cg_read_pressure(cg, &p, &pe) == 0;
  for (size_t d = 0; d < n; d++) {
    for (size_t i = 0; i < ns; i++)
      if (ioq_devno_eq(st[i].dev, dev[d])) {
        out[d].rbytes = st[i].rbytes;
        out[d].wbytes = st[i].wbytes;
        out[d].rios = st[i].rios;
        out[d].wios = st[i].wios;
      }
    out[d].have_stall = stall;
    out[d].stall_us = stall ? p.some.total_us : 0;
  }
  return 0;
}

int ioq_gm_dstat_parse(const char *content, struct ioq_gm_dstat *out, ioq_err *e) {
  /* read: ios merges sectors ticks; write: the same; in_flight io_ticks
   * time_in_queue; then discard and flush fields (newer kernels) */
  uint64_t f[11];
  if (sscanf(content,
             "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
             " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
             &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10]) != 11)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "block stat: expected 11 numbers, got '%.80s'", content);
  out->rios = f[0];
  out->rsect = f[2];
  out->wios = f[4];
  out->wsect = f[6];
  out->io_ticks_ms = f[9];
  out->queue_ms = f[10];
  return 0;
}

int ioq_gm_dstat_read(const char *sysfs, const char *name, struct ioq_gm_dstat *out, ioq_err *e) {
  char path[4096];
  char buf[512];
  if (ioq_path_join(path, sizeof path, e, sysfs ? sysfs : "/sys", "class/block", name, "stat",
                    NULL) < 0 ||
      ioq_read_line(path, buf, sizeof buf, e) < 0)
    return -1;
  if (ioq_gm_dstat_parse(buf, out, e) < 0) {
    ioq_err_prefix(e, "%s", path);
    return -1;
  }
  return 0;
}

int ioq_gm_disk_rates(const struct ioq_gm_dstat *prev, const struct ioq_gm_dstat *cur, double dt,
                      struct ioq_gm_disk_rates *out, ioq_err *e) {
  if (!(dt > 0))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "interval of %g s", dt);
  double rs = 0, ws = 0, ri = 0, wi = 0, busy = 0, q = 0;
  if (delta(prev->rsect, cur->rsect, "read sectors", &rs, e) < 0 ||
      delta(prev->wsect, cur->wsect, "write sectors", &ws, e) < 0 ||
      delta(prev->rios, cur->rios, "reads", &ri, e) < 0 ||
      delta(prev->wios, cur->wios, "writes", &wi, e) < 0 ||
      delta(prev->io_ticks_ms, cur->io_ticks_ms, "io_ticks", &busy, e) < 0 ||
      delta(prev->queue_ms, cur->queue_ms, "time_in_queue", &q, e) < 0)
    return -1;
  out->bps = (rs + ws) * 512.0 / dt;
  out->iops = (ri + wi) / dt;
  busy /= dt * 1000.0;
  out->busy = busy > 1 ? 1 : busy;
  out->queue = q / (dt * 1000.0);
  return 0;
}

double ioq_gm_disk_load(const struct ioq_gm_disk *d) {
  if (!d->known)
    return 0;
  double l = 0;
  if (d->cap_bps > 0 && d->got.bps / d->cap_bps > l)
    l = d->got.bps / d->cap_bps;
  if (d->cap_iops > 0 && d->got.iops / d->cap_iops > l)
    l = d->got.iops / d->cap_iops;
  return l;
}

enum ioq_gm_contention ioq_gm_disk_contended(const struct ioq_gm_disk *d) {
  if (!d->known)
    return IOQ_GM_ROOM;
  if (ioq_gm_disk_load(d) >= IOQ_GM_DISK_FULL)
    return IOQ_GM_FULL;
  if (d->got.busy >= IOQ_GM_DISK_BUSY && d->got.queue >= IOQ_GM_DISK_QUEUE)
    return IOQ_GM_BACKLOG;
  return IOQ_GM_ROOM;
}

enum ioq_gm_cause ioq_gm_cause(const struct ioq_gm_disk *d) {
  if (!d->known)
    return IOQ_GM_CAUSE_NONE;
  double ob = d->got.bps - d->granted_bps, oi = d->got.iops - d->granted_iops;
  if ((d->cap_bps > 0 && ob >= IOQ_GM_OTHERS * d->cap_bps) ||
      (d->cap_iops > 0 && oi >= IOQ_GM_OTHERS * d->cap_iops))
    return IOQ_GM_CAUSE_UNGRANTED;
  if ((d->cap_bps > 0 && d->grants_bps > d->cap_bps) ||
      (d->cap_iops > 0 && d->grants_iops > d->cap_iops) ||
      (d->grants_bps > 0 && d->granted_bps > 1.05 * d->grants_bps) ||
      (d->grants_iops > 0 && d->granted_iops > 1.05 * d->grants_iops))
    return IOQ_GM_CAUSE_OVERSOLD;
  return IOQ_GM_CAUSE_CAPACITY;
}

const char *ioq_gm_cause_name(enum ioq_gm_cause c) {
  switch (c) {
  case IOQ_GM_CAUSE_UNGRANTED: return "ungranted";
  case IOQ_GM_CAUSE_OVERSOLD: return "oversold";
  case IOQ_GM_CAUSE_CAPACITY: return "capacity";
  default: return "none";
  }
}

const char *ioq_gm_cause_text(enum ioq_gm_cause c) {
  switch (c) {
  case IOQ_GM_CAUSE_UNGRANTED:
    return "ungranted I/O: cgroups without a grant on the disk take a large share of it "
           "(enable nodePolicy.ungranted, or look for I/O outside the pods)";
  case IOQ_GM_CAUSE_OVERSOLD:
    return "oversold disk: the grants (or the granted pods reading and writing at once) add up "
           "to more than the disk's capacity";
  case IOQ_GM_CAUSE_CAPACITY:
    return "capacity too high: the disk delivers less than the grants that want it";
  default:
    return "unknown";
  }
}

/* got >= frac x the limit in some direction and resource (0 = no limit) */
static bool uses(const struct ioq_io_limits *g, const struct ioq_gm_rates *r, double frac) {
  const double got[4] = {r->rbps, r->wbps, r->riops, r->wiops};
  const uint64_t lim[4] = {g->rbps, g->wbps, g->riops, g->wiops};
  for (int k = 0; k < 4; k++)
    if (lim[k] > 0 && got[k] >= frac * (double)lim[k])
      return true;
  return false;
}

enum ioq_gm_verdict ioq_gm_classify(const struct ioq_io_limits *g, const struct ioq_gm_rates *r,
                                    enum ioq_gm_contention disk) {
  if (!r)
    return IOQ_GM_UNKNOWN;
  if (uses(g, r, IOQ_GM_AT_CAP))
    return IOQ_GM_AT_CAP_V;
  bool stalled = r->stall >= IOQ_GM_STALL_MIN;
  bool quiet = r->rbps + r->wbps < IOQ_GM_IDLE_BPS && r->riops + r->wiops < IOQ_GM_IDLE_IOPS;
  if (quiet && !stalled)
    return IOQ_GM_IDLE;
  /* async I/O shows no stall: a pod using a good part of its grant wants
   * more too; v1: no stall figure, a pod doing I/O is taken as wanting */
  bool busy = uses(g, r, IOQ_GM_BUSY);
  if (disk != IOQ_GM_ROOM && (stalled || busy || r->stall < 0))
    return IOQ_GM_STARVED;
  return IOQ_GM_WITHIN;
}
