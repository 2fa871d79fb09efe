// SPDX-License-Identifier: Apache-2.0
/* The guard that keeps a pod that owes the kernel from being released again
 * (ioq_ug_owe_judge in grant/ungranted.h; docs/ungranted.md "io.max after a
 * cut"): before a bound or a burst is written, what the pod did since our
 * last write is checked against the limits that write put in place. A pod
 * that got through more than they allow (blk-throttle let it through after
 * a cut on 6.1) is not written until it paid: each write while it owes
 * would let it through again. Called under ungranted.mu. */
#include <string.h>

#include "base/log.h"
#include "plugin.h"
#include "ungranted_internal.h"

bool ug_owe_hold(struct ungranted *u, struct ug_pod *pp, size_t d, const struct ioq_cg *cg, double now,
                 struct ioq_iostat *cur, bool *have_cur) {
  struct ug_slot *s = &pp->s[d];
  *have_cur = false;
  struct ioq_iostat st[UG_DISKS_MAX * 4];
  size_t n = 0;
  ioq_err e;
  if (ioq_cg_read_iostat(cg, st, sizeof st / sizeof st[0], &n, &e) < 0) {
    /* not judged: the write goes ahead, and the next one starts afresh */
    ioq_debug("ungranted: io.stat not read before a write cgroup=%s error=\"%s\"", pp->cg.dir, e.msg);
    return false;
  }
  *cur = ug_iostat_of(st, n, u->disks[d].dev);
  *have_cur = true;
  if (!s->have_wr)
    return false;
  struct ug_delta x = ug_iostat_delta(&s->wr_stat, cur);
  const struct ioq_ug_done done[IOQ_UG_DIRS] = {[IOQ_UG_READ] = {x.rb, x.ri}, [IOQ_UG_WRITE] = {x.wb, x.wi}};
  double dt = now - s->wr_t;
  struct ioq_ug_owe *o = &s->owe;
  enum ioq_ug_owe_step step = ioq_ug_owe_judge(o, s->wr_lim, s->wr_prev, done, dt, now);
  if (step == IOQ_UG_OWE_NONE)
    return false;
  s->owe_seen = true; /* owed within this interval: its rate is the kernel holding it */
  switch (step) {
  case IOQ_UG_OWE_NONE:
    return false;
  case IOQ_UG_OWE_BEGAN: {
    u->owe_holds++;
    const char *dir = o->dir[IOQ_UG_READ] && o->dir[IOQ_UG_WRITE] ? "read,write" : o->dir[IOQ_UG_READ] ? "read" : "write";
    ioq_warn("ungranted: pod owes the kernel, its io.max is left as it is cgroup=%s disk=%s direction=%s "
             "bytes=%.0f ios=%.0f seconds=%.2f limit_bps=%llu limit_iops=%llu held_for_at_most_s=%.2f "
             "reason=\"it did more since our last write than the limits in place allow: blk-throttle let it "
             "through after a cut (a debt carried across the write as an unsigned number, Debian's 6.1 "
             "kernel); it is held until that is paid, and a write before would let it through again\"",
             pp->cg.dir, u->disks[d].name, dir, o->dir[IOQ_UG_READ] ? x.rb : x.wb,
             o->dir[IOQ_UG_READ] ? x.ri : x.wi, dt, (unsigned long long)s->wr_lim[IOQ_RES_BANDWIDTH],
             (unsigned long long)s->wr_lim[IOQ_RES_IOPS], o->until - now);
    return true;
  }
  case IOQ_UG_OWE_AGAIN:
    ioq_warn("ungranted: pod got through again while it owes, held longer cgroup=%s disk=%s bytes=%.0f "
             "ios=%.0f seconds=%.2f held_for_at_most_s=%.2f",
             pp->cg.dir, u->disks[d].name, x.rb > x.wb ? x.rb : x.wb, x.ri > x.wi ? x.ri : x.wi, dt,
             o->until - now);
    return true;
  case IOQ_UG_OWE_HELD:
    return true;
  case IOQ_UG_OWE_PAID:
    ioq_info("ungranted: pod paid what it owed, its io.max is written again cgroup=%s disk=%s held_s=%.2f "
             "reason=\"%s\"",
             pp->cg.dir, u->disks[d].name, now - o->since,
             now >= o->until ? "the most it could owe is paid at its cap"
                             : "the kernel lets its I/O go again at no more than its cap");
    return false;
  }
  return false;
}

void ug_owe_wrote(struct ug_slot *s, double now, const struct ioq_iostat *before, const uint64_t lim[IOQ_RES_COUNT],
                  const uint64_t prev[IOQ_RES_COUNT]) {
  s->owe.owes = false;
  s->have_wr = before && (lim[IOQ_RES_BANDWIDTH] || lim[IOQ_RES_IOPS]);
  if (!s->have_wr)
    return;
  s->wr_t = now;
  s->wr_stat = *before;
  memcpy(s->wr_lim, lim, sizeof s->wr_lim);
  memcpy(s->wr_prev, prev, sizeof s->wr_prev);
}
