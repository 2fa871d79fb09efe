// SPDX-License-Identifier: Apache-2.0
/* The guard that keeps a pod that owes the kernel from being released again
 * (ioq_ug_owes in grant/ungranted.h; docs/ungranted.md "io.max after a
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
  double bytes = x.rb > x.wb ? x.rb : x.wb, ios = x.ri > x.wi ? x.ri : x.wi, dt = now - s->wr_t;
  bool owes = ioq_ug_owes(s->wr_lim[IOQ_RES_BANDWIDTH], s->wr_lim[IOQ_RES_IOPS], bytes, ios, dt, s->owes);
  s->owe_seen |= owes || s->owes;
  if (owes && !s->owes) {
    s->owes = true;
    s->owes_t = now;
    u->owe_holds++;
    ioq_warn("ungranted: pod owes the kernel, its io.max is left as it is cgroup=%s disk=%s bytes=%.0f "
             "ios=%.0f seconds=%.2f limit_bps=%llu limit_iops=%llu reason=\"it did more since our last "
             "write than the limits in place allow: blk-throttle let it through after a cut (a debt "
             "carried across the write as an unsigned number, Debian's 6.1 kernel); it is held until "
             "that is paid, and a write before would let it through again\"",
             pp->cg.dir, u->disks[d].name, bytes, ios, dt, (unsigned long long)s->wr_lim[IOQ_RES_BANDWIDTH],
             (unsigned long long)s->wr_lim[IOQ_RES_IOPS]);
  } else if (!owes && s->owes) {
    s->owes = false;
    ioq_info("ungranted: pod paid what it owed, its io.max is written again cgroup=%s disk=%s held_s=%.2f",
             pp->cg.dir, u->disks[d].name, now - s->owes_t);
  }
  return owes;
}

void ug_owe_wrote(struct ug_slot *s, double now, const struct ioq_iostat *before,
                  const uint64_t lim[IOQ_RES_COUNT]) {
  s->owes = false;
  s->have_wr = before && (lim[IOQ_RES_BANDWIDTH] || lim[IOQ_RES_IOPS]);
  if (!s->have_wr)
    return;
  s->wr_t = now;
  s->wr_stat = *before;
  memcpy(s->wr_lim, lim, sizeof s->wr_lim);
}
