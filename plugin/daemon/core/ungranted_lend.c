// SPDX-License-Identifier: Apache-2.0
/* Lending the idle part of grants to pods without a grant
 * (nodePolicy.ungranted.lend; the rule is ioq_ug_lend_* in grant/ungranted.h).
 *
 * At each pass every granted slot on a disk where bounds apply is a lender
 * of its grant (bandwidth and IOPS apart), measured by reads + writes from
 * the pass's io.stat; what the lenders do not keep is added to the pool
 * before it is split. Between passes, while something is lent, the thread
 * reads the lenders' io.stat every lendSampleMs (only theirs: a few reads per
 * sample). A lender whose rate over the sample is above what it keeps takes
 * its whole grant back, and the disk's pool is re-split at once: the split
 * writes the cuts first (ug_balance_disk), and blk-throttle applies a new
 * io.max to the next bio (the cut restarts the cgroup's slice). The time from
 * the lender's last quiet sample to the cuts in place is the reclaim latency
 * (metric ioqos_ungranted_reclaim_seconds). */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/monoclock.h"
#include "support/metrics.h"
#include "plugin.h"
#include "podtable.h"
#include "ungranted.h"
#include "ungranted_internal.h"

const double ug_reclaim_bounds[UG_RECLAIM_BUCKETS] = {0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5};

const double *ungranted_reclaim_bounds(size_t *n) {
  *n = UG_RECLAIM_BUCKETS;
  return ug_reclaim_bounds;
}

static bool lending_slot(const struct ug_slot *s) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (s->lend[r].keep < s->lend[r].grant)
      return true;
  return false;
}

static void disk_lent(struct ungranted *u, size_t d) {
  struct ug_disk *dk = &u->disks[d];
  uint64_t lent[IOQ_RES_COUNT] = {0};
  for (size_t i = 0; i < u->n; i++) {
    const struct ug_slot *s = &u->pods[i].s[d];
    if (!s->granted)
      continue;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      if (dk->base_pool[r]) /* a resource without a pool is not bounded: nothing to lend into */
        lent[r] += s->lend[r].grant - s->lend[r].keep;
  }
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    dk->lent[r] = lent[r];
    dk->pool[r] = dk->base_pool[r] + lent[r];
  }
}

/* reads + writes since the last timed pass (< 0: none yet) */
static double lend_rate(const struct ug_slot *s, int r) {
  if (!s->have_lend_base || s->last_t <= s->lend_t)
    return -1;
  struct ug_delta x = ug_iostat_delta(&s->lend_base, &s->last);
  return (r == IOQ_RES_BANDWIDTH ? x.rb + x.wb : x.ri + x.wi) / (s->last_t - s->lend_t);
}

/* Writes queued in the pod's page cache (ioq_ug_backlogged). Without
 * memory.stat (v1, memory controller off): false. */
static bool backlogged(const struct ug_pod *pp, const struct ioq_cg *cg, uint64_t grant_bps) {
  uint64_t dirty = 0, wb = 0;
  ioq_err e;
  if (ioq_cg_read_dirty(cg, &dirty, &wb, &e) < 0) {
    if (e.code != IOQ_EUNSUPPORTED)
      ioq_debug("ungranted: a lender's memory.stat not read cgroup=%s error=\"%s\"", pp->cg.dir, e.msg);
    return false;
  }
  bool b = ioq_ug_backlogged(dirty + wb, grant_bps);
  if (b)
    ioq_debug("ungranted: lender busy by its page cache cgroup=%s file_dirty=%llu file_writeback=%llu", pp->cg.dir,
              (unsigned long long)dirty, (unsigned long long)wb);
  return b;
}

/* The pod's tasks waited on I/O for at least `fraction` of the time since
 * *base_us at *base_t (io.pressure "some"); the base moves to now unless
 * less than min_s passed (too short to judge). Without io.pressure (v1, no
 * PSI): false. */
static bool stalled(const struct ug_pod *pp, const struct ioq_cg *cg, uint64_t *base_us, double *base_t,
                    bool *have, double now, double min_s, double fraction) {
  struct ioq_pressure pr;
  ioq_err e;
  if (*have && now - *base_t < min_s)
    return false;
  if (ioq_cg_read_pressure(cg, &pr, &e) < 0) {
    if (e.code != IOQ_EUNSUPPORTED)
      ioq_debug("ungranted: a lender's io.pressure not read cgroup=%s error=\"%s\"", pp->cg.dir, e.msg);
    return false;
  }
  bool s = *have && pr.some.total_us >= *base_us &&
           ioq_ug_stalled(pr.some.total_us - *base_us, now - *base_t, fraction);
  if (s)
    ioq_debug("ungranted: lender busy waiting on I/O cgroup=%s stall_us=%llu over_ms=%.0f", pp->cg.dir,
              (unsigned long long)(pr.some.total_us - *base_us), (now - *base_t) * 1e3);
  *base_us = pr.some.total_us;
  *base_t = now;
  *have = true;
  return s;
}

static uint64_t lent_bw_grant(const struct ungranted *u, const struct ug_pod *pp) {
  uint64_t g = 0;
  for (size_t d = 0; d < u->n_disks; d++)
    if (pp->s[d].granted && pp->s[d].grant[IOQ_RES_BANDWIDTH] > g)
      g = pp->s[d].grant[IOQ_RES_BANDWIDTH];
  return g;
}

static bool has_grant(const struct ungranted *u, const struct ug_pod *pp) {
  for (size_t d = 0; d < u->n_disks; d++)
    if (pp->s[d].granted && (pp->s[d].grant[0] || pp->s[d].grant[1]))
      return true;
  return false;
}

void ug_lend_pods(struct ungranted *u, double now) {
  double interval = u->c->node_policy.ungranted_interval_ms / 1000.0;
  if (!u->c->node_policy.ungranted_lend)
    return;
  for (size_t i = 0; i < u->n; i++) {
    struct ug_pod *pp = &u->pods[i];
    if (!has_grant(u, pp)) {
      pp->have_press = pp->stalled = false;
      continue;
    }
    if (pp->have_press && now - pp->press_t < 0.9 * interval)
      continue; /* an early pass: judged over whole intervals */
    struct ioq_cg cg;
    ioq_err e;
    if (ioq_cg_open(pp->cg.dir, u->p->layout.io_version, &cg, &e) < 0) {
      pp->stalled = false;
      continue;
    }
    bool st = stalled(pp, &cg, &pp->press_us, &pp->press_t, &pp->have_press, now, 0, IOQ_UG_STALL_PASS);
    pp->stalled = backlogged(pp, &cg, lent_bw_grant(u, pp)) || st;
    /* the next sample measures from here, not from the last lending stretch */
    pp->fpress_us = pp->press_us;
    pp->fpress_t = pp->press_t;
    pp->have_fpress = pp->have_press;
  }
}

void ug_lend_pass(struct ungranted *u, size_t d) {
  bool on = u->c->node_policy.ungranted_lend;
  double reserve = u->c->node_policy.ungranted_lend_reserve;
  struct ug_disk *dk = &u->disks[d];
  uint64_t before[IOQ_RES_COUNT];
  memcpy(before, dk->lent, sizeof before);
  /* passes also run on demand (a pod cgroup came, a PreStart): a lender is
   * judged over whole intervals only, so that quiet passes mean quiet time */
  double interval = u->c->node_policy.ungranted_interval_ms / 1000.0;
  for (size_t i = 0; i < u->n; i++) {
    struct ug_slot *s = &u->pods[i].s[d];
    if (!s->granted)
      continue;
    bool timed = s->have_sample && (!s->have_lend_base || s->last_t - s->lend_t >= 0.9 * interval);
    uint64_t grant[IOQ_RES_COUNT], lent[IOQ_RES_COUNT];
    double rate[IOQ_RES_COUNT];
    bool changed = false;
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      grant[r] = on ? s->grant[r] : 0;
      changed |= grant[r] != s->lend[r].grant;
    }
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      rate[r] = changed ? -1                                   /* a new grant: kept whole */
                : u->pods[i].stalled ? (double)grant[r]        /* waiting on I/O, or writes queued */
                                     : lend_rate(s, r);
    if (changed || timed)
      ioq_ug_lend_pass_pod(s->lend, grant, rate, reserve, lent);
    if (timed) {
      s->lend_base = s->last;
      s->lend_t = s->last_t;
      s->have_lend_base = true;
    }
    /* the next sample measures from this pass's io.stat */
    s->fast_last = s->last;
    s->fast_t = s->last_t;
    s->have_fast = s->have_sample;
  }
  disk_lent(u, d);
  bool was = before[0] || before[1], is = dk->lent[0] || dk->lent[1];
  if (is && !was)
    ioq_info("ungranted lending disk=%s lent_bps=%llu lent_iops=%llu pool_bps=%llu pool_iops=%llu "
             "reason=\"granted pods use less than their grant\"",
             dk->name, (unsigned long long)dk->lent[0], (unsigned long long)dk->lent[1],
             (unsigned long long)dk->pool[0], (unsigned long long)dk->pool[1]);
  else if (!is && was)
    ioq_info("ungranted lending ended disk=%s pool_bps=%llu pool_iops=%llu reason=\"granted pods use their "
             "grant\"",
             dk->name, (unsigned long long)dk->pool[0], (unsigned long long)dk->pool[1]);
}

bool ug_lending(const struct ungranted *u) {
  for (size_t d = 0; d < u->n_disks; d++)
    if (u->disks[d].active && (u->disks[d].lent[0] || u->disks[d].lent[1]))
      return true;
  return false;
}

/* One lender's sample: true if it woke (took its grant back); *quiet_since
 * gets the time of its previous sample (it was quiet then). */
static bool sample_slot(struct ungranted *u, struct ug_pod *pp, size_t d, const struct ioq_iostat *cur,
                        bool backlog, double now, double min_dt, double *quiet_since) {
  struct ug_slot *s = &pp->s[d];
  if (!backlog && (!s->have_fast || now - s->fast_t < min_dt)) {
    if (!s->have_fast) {
      s->fast_last = *cur;
      s->fast_t = now;
      s->have_fast = true;
    }
    return false;
  }
  double dt = s->have_fast && now > s->fast_t ? now - s->fast_t : min_dt;
  struct ug_delta x = ug_iostat_delta(&s->fast_last, cur);
  /* backlog: busy before io.stat shows it (the caller samples lending slots only) */
  bool woke = backlog;
  woke |= ioq_ug_lend_woke(&s->lend[IOQ_RES_BANDWIDTH], (x.rb + x.wb) / dt);
  woke |= ioq_ug_lend_woke(&s->lend[IOQ_RES_IOPS], (x.ri + x.wi) / dt);
  if (woke) {
    /* awake in one resource, awake in both */
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      ioq_ug_lend_reclaim(&s->lend[r]);
    *quiet_since = s->have_fast ? s->fast_t : now;
    ioq_info("ungranted lent capacity taken back cgroup=%s disk=%s read_bps=%.0f write_bps=%.0f "
             "read_iops=%.0f write_iops=%.0f over_ms=%.0f reason=\"%s\"",
             pp->cg.dir, u->disks[d].name, x.rb / dt, x.wb / dt, x.ri / dt, x.wi / dt, dt * 1e3,
             backlog ? "the granted pod waits on I/O or has writes queued in its page cache"
                     : "the granted pod woke up");
  }
  s->fast_last = *cur;
  s->fast_t = now;
  s->have_fast = true;
  return woke;
}

void ug_lend_sample(struct ungranted *u) {
  u->c = plugin_cfg(u->p);
  double min_dt = u->c->node_policy.ungranted_lend_sample_ms / 2000.0;
  bool woke[UG_DISKS_MAX] = {false};
  double since[UG_DISKS_MAX];
  uint64_t lent_before[UG_DISKS_MAX][IOQ_RES_COUNT];
  for (size_t d = 0; d < u->n_disks; d++)
    memcpy(lent_before[d], u->disks[d].lent, sizeof lent_before[d]);
  for (size_t i = 0; i < u->n; i++) {
    struct ug_pod *pp = &u->pods[i];
    bool any = false;
    for (size_t d = 0; d < u->n_disks && !any; d++)
      any = pp->s[d].granted && u->disks[d].active && lending_slot(&pp->s[d]);
    if (!any)
      continue;
    struct ioq_cg cg;
    struct ioq_iostat st[UG_DISKS_MAX * 4];
    size_t n = 0;
    ioq_err e;
    if (ioq_cg_open(pp->cg.dir, u->p->layout.io_version, &cg, &e) < 0 ||
        ioq_cg_read_iostat(&cg, st, sizeof st / sizeof st[0], &n, &e) < 0) {
      ioq_debug("ungranted: a lender's io.stat not read cgroup=%s error=\"%s\"", pp->cg.dir, e.msg);
      continue; /* a pod going away; the next pass forgets it */
    }
    double now = ioq_mono_s();
    /* busy before io.stat shows it: waiting on I/O, or writing into its page cache */
    bool backlog = stalled(pp, &cg, &pp->fpress_us, &pp->fpress_t, &pp->have_fpress, now, min_dt,
                           IOQ_UG_STALL_SAMPLE);
    backlog |= backlogged(pp, &cg, lent_bw_grant(u, pp));
    for (size_t d = 0; d < u->n_disks; d++) {
      struct ug_slot *s = &pp->s[d];
      if (!s->granted || !u->disks[d].active || !lending_slot(s))
        continue;
      struct ioq_iostat cur = ug_iostat_of(st, n, u->disks[d].dev);
      double q = 0;
      if (sample_slot(u, pp, d, &cur, backlog, now, min_dt, &q)) {
        since[d] = woke[d] && since[d] < q ? since[d] : q;
        woke[d] = true;
      }
    }
  }
  bool any = false;
  for (size_t d = 0; d < u->n_disks; d++)
    any |= woke[d];
  if (!any)
    return;
  podtable_writes_lock(u->p->table);
  for (size_t d = 0; d < u->n_disks; d++) {
    if (!woke[d])
      continue;
    disk_lent(u, d);
    ug_balance_disk(u, d); /* a smaller pool: cuts first */
    double took = ioq_mono_s() - since[d];
    u->reclaims++;
    ioq_histogram_observe(&u->reclaim_s, ug_reclaim_bounds, UG_RECLAIM_BUCKETS, took);
    ioq_info("ungranted pool cut disk=%s lent_bps=%llu->%llu lent_iops=%llu->%llu pool_bps=%llu "
             "pool_iops=%llu reclaim_ms=%.0f",
             u->disks[d].name, (unsigned long long)lent_before[d][0], (unsigned long long)u->disks[d].lent[0],
             (unsigned long long)lent_before[d][1], (unsigned long long)u->disks[d].lent[1],
             (unsigned long long)u->disks[d].pool[0], (unsigned long long)u->disks[d].pool[1], took * 1e3);
  }
  podtable_writes_unlock(u->p->table);
}
