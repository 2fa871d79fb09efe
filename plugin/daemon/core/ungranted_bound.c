// SPDX-License-Identifier: Apache-2.0
/* Writing the bounds of pods without a grant (the pass that decides them is
 * ungranted.c): one pod's cgroup (its rate from io.stat, its grant's
 * io.max, the caps found in place at first sight, the caps written through
 * the one writer) and one disk (its bounds lifted, or its pool re-split
 * among the pods and written cuts first). Called under ungranted.mu. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "support/metrics.h"
#include "grant/nodeanno.h"
#include "plugin.h"
#include "podtable.h"
#include "ungranted_internal.h"

/* ---- one pod's cgroup ---- */

static int cg_of(struct ungranted *u, const struct ug_pod *pp, struct ioq_cg *cg, ioq_err *e) {
  return ioq_cg_open(pp->cg.dir, u->p->layout.io_version, cg, e);
}

struct ioq_iostat ug_iostat_of(const struct ioq_iostat *st, size_t n, struct ioq_devno dev) {
  struct ioq_iostat cur = {.dev = dev};
  for (size_t i = 0; i < n; i++)
    if (ioq_devno_eq(st[i].dev, dev))
      cur = st[i];
  return cur;
}

struct ug_delta ug_iostat_delta(const struct ioq_iostat *a, const struct ioq_iostat *b) {
  struct ug_delta x;
  x.rb = b->rbytes >= a->rbytes ? (double)(b->rbytes - a->rbytes) : 0;
  x.wb = b->wbytes >= a->wbytes ? (double)(b->wbytes - a->wbytes) : 0;
  x.ri = b->rios >= a->rios ? (double)(b->rios - a->rios) : 0;
  x.wi = b->wios >= a->wios ? (double)(b->wios - a->wios) : 0;
  return x;
}

/* Reads io.stat once per pass and turns it into rates per disk. */
void ug_measure(struct ungranted *u, struct ug_pod *pp, double now) {
  struct ioq_cg cg;
  struct ioq_iostat st[UG_DISKS_MAX * 4];
  size_t n = 0;
  ioq_err e;
  if (cg_of(u, pp, &cg, &e) < 0 || ioq_cg_read_iostat(&cg, st, sizeof st / sizeof st[0], &n, &e) < 0) {
    ioq_debug("ungranted: io.stat not read cgroup=%s error=\"%s\"", pp->cg.dir, e.msg);
    return;
  }
  for (size_t d = 0; d < u->n_disks; d++) {
    struct ug_slot *s = &pp->s[d];
    struct ioq_iostat cur = ug_iostat_of(st, n, u->disks[d].dev);
    if (s->have_sample && now > s->last_t) {
      double dt = now - s->last_t;
      struct ug_delta x = ug_iostat_delta(&s->last, &cur);
      s->rate[IOQ_RES_BANDWIDTH] = (x.rb > x.wb ? x.rb : x.wb) / dt;
      s->rate[IOQ_RES_IOPS] = (x.ri > x.wi ? x.ri : x.wi) / dt;
    }
    s->last = cur;
    s->last_t = now;
    s->have_sample = true;
    s->rate_void = s->owe_seen || s->owe.owes;
    s->owe_seen = false;
  }
}

/* A grant's io.max per resource (0: none in that resource, or no grant). */
void ug_grant_of(struct ungranted *u, const struct ioq_disk_grant *dg,
                 uint64_t out[IOQ_RES_COUNT]) {
  struct ioq_io_limits lim;
  ioq_err e;
  out[IOQ_RES_BANDWIDTH] = out[IOQ_RES_IOPS] = 0;
  if (!dg)
    return;
  if (ioq_grant_limits(dg, &u->p->cfg.units, &lim, &e) < 0) {
    ioq_debug("ungranted: the grant on disk %s is not lent: %s", dg->disk, e.msg);
    return;
  }
  out[IOQ_RES_BANDWIDTH] = lim.rbps;
  out[IOQ_RES_IOPS] = lim.riops;
}

/* The caps already in io.max of a pod seen for the first time. */
void ug_adopt(struct ungranted *u, struct ug_pod *pp) {
  struct ioq_cg cg;
  ioq_err e;
  pp->adopted = true;
  if (cg_of(u, pp, &cg, &e) < 0)
    return;
  for (size_t d = 0; d < u->n_disks; d++) {
    struct ioq_disk_state_cg st;
    if (pp->s[d].granted || ioq_cg_read_disk(&cg, u->disks[d].dev, &st, &e) < 0 ||
        ioq_limits_unlimited(&st.max))
      continue;
    struct ug_slot *s = &pp->s[d];
    s->bounded = true;
    s->cap[IOQ_RES_BANDWIDTH] = st.max.wbps > st.max.rbps ? st.max.wbps : st.max.rbps;
    s->cap[IOQ_RES_IOPS] = st.max.wiops > st.max.riops ? st.max.wiops : st.max.riops;
  }
}

static const char *num(uint64_t v, char *buf, size_t sz) {
  if (!v)
    return "max";
  snprintf(buf, sz, "%llu", (unsigned long long)v);
  return buf;
}

/* Puts caps (0 = none) in place (nothing is written when they are);
 * false if that failed (logged). *changed (may be NULL): a write happened. */
static bool write_caps(struct ungranted *u, struct ug_pod *pp, size_t d, const uint64_t cap[IOQ_RES_COUNT],
                       bool *changed) {
  struct ug_disk *dk = &u->disks[d];
  struct ug_slot *s = &pp->s[d];
  struct ioq_cg cg;
  ioq_err e;
  if (cg_of(u, pp, &cg, &e) < 0) {
    ioq_debug("ungranted: pod cgroup gone before its bound was written cgroup=%s", pp->cg.dir);
    return false;
  }
  bool first = !s->bounded && (cap[0] || cap[1]);
  struct ioq_iostat before = {0};
  bool have_before = false;
  double now = ioq_mono_s();
  if (first) {
    /* what the pod did before its bound: read just before the write */
    struct ioq_iostat st[UG_DISKS_MAX * 4];
    size_t n = 0;
    ioq_err se;
    if (ioq_cg_read_iostat(&cg, st, sizeof st / sizeof st[0], &n, &se) == 0) {
      before = ug_iostat_of(st, n, dk->dev);
      have_before = true;
    }
  } else if ((cap[0] || cap[1]) && s->bounded && memcmp(cap, s->cap, sizeof s->cap) != 0 &&
             ug_owe_hold(u, pp, d, &cg, now, &before, &have_before)) {
    if (changed)
      *changed = false;
    return false; /* held: it owes the kernel (logged when the hold began) */
  }
  struct ioq_disk_setting set = {.dev = dk->dev};
  set.max.rbps = set.max.wbps = cap[IOQ_RES_BANDWIDTH];
  set.max.riops = set.max.wiops = cap[IOQ_RES_IOPS];
  struct ioq_apply_opts o = {.sysfs_root = u->p->opts.sysfs_root};
  struct ioq_apply_report rep;
  if (changed)
    *changed = false;
  if (ioq_cg_apply_disk(&cg, &set, &o, &rep, &e) < 0) {
    if (!ioq_is_dir(pp->cg.dir)) {
      ioq_debug("ungranted: pod cgroup went away while its bound was written cgroup=%s", pp->cg.dir);
      return false;
    }
    ioq_err_prefix(&e, "disk %s", dk->name);
    ug_failed(u, &e);
    return false;
  }
  bool wrote = false;
  for (size_t k = 0; k < rep.n; k++)
    wrote |= rep.steps[k].changed;
  if (changed)
    *changed = wrote;
  if (wrote) {
    char b[24], i[24];
    static const uint64_t none[IOQ_RES_COUNT] = {0};
    ug_owe_wrote(s, now, have_before ? &before : NULL, cap, s->bounded ? s->cap : none);
    metrics_inc(u->p->metrics, C_UG_WRITES);
    ioq_debug("ungranted cap written cgroup=%s disk=%s bps=%s iops=%s", pp->cg.dir, dk->name,
              num(cap[0], b, sizeof b), num(cap[1], i, sizeof i));
  }
  if (first) {
    uint64_t bytes = before.rbytes + before.wbytes, ios = before.rios + before.wios;
    /* after a grant, io.stat holds what the pod did under it: not unbounded */
    if (!s->after_grant && bytes > u->max_bytes_before)
      u->max_bytes_before = bytes;
    char b[24], i[24];
    if (s->after_grant)
      ioq_info("ungranted bound placed cgroup=%s qos=%s disk=%s rbps=%s wbps=%s riops=%s wiops=%s "
               "reason=\"its grant on the disk ended\"",
               pp->cg.dir, ioq_qos_name(pp->cg.qos), dk->name, num(cap[0], b, sizeof b),
               num(cap[0], b, sizeof b), num(cap[1], i, sizeof i), num(cap[1], i, sizeof i));
    else
      ioq_info("ungranted bound placed cgroup=%s qos=%s disk=%s rbps=%s wbps=%s riops=%s wiops=%s "
               "bytes_before=%llu ios_before=%llu",
               pp->cg.dir, ioq_qos_name(pp->cg.qos), dk->name, num(cap[0], b, sizeof b),
               num(cap[0], b, sizeof b), num(cap[1], i, sizeof i), num(cap[1], i, sizeof i),
               (unsigned long long)bytes, (unsigned long long)ios);
  }
  s->bounded = cap[0] || cap[1];
  memcpy(s->cap, cap, sizeof s->cap);
  return true;
}

/* ---- one disk ---- */

void ug_lift_all(struct ungranted *u, size_t d, const char *why) {
  static const uint64_t none[IOQ_RES_COUNT] = {0};
  size_t lifted = 0;
  for (size_t i = 0; i < u->n; i++) {
    struct ug_slot *s = &u->pods[i].s[d];
    if (s->bounded && !s->granted && write_caps(u, &u->pods[i], d, none, NULL))
      lifted++;
    s->bounded = false;
  }
  if (lifted)
    ioq_info("ungranted bounds removed disk=%s pods=%zu reason=\"%s\"", u->disks[d].name, lifted, why);
}

/* ---- the opt-in burst of granted pods ---- */

/* Writes a granted slot's burst (extra above its grant per resource) through
 * the pod table; logs its start and end. */
static void write_burst(struct ungranted *u, struct ug_pod *pp, size_t d, const uint64_t extra[IOQ_RES_COUNT],
                        const char *why) {
  struct ug_slot *s = &pp->s[d];
  ioq_err e;
  struct ioq_cg cg;
  struct ioq_iostat before = {0};
  bool have_before = false;
  double now = ioq_mono_s();
  if (cg_of(u, pp, &cg, &e) == 0 && ug_owe_hold(u, pp, d, &cg, now, &before, &have_before))
    return; /* held: it owes the kernel (logged when the hold began) */
  int rc = podtable_set_burst(u->p->table, pp->cg.uid, u->disks[d].name, extra, &e);
  if (rc < 0) {
    if (ioq_is_dir(pp->cg.dir))
      ug_failed(u, &e);
    return;
  }
  bool was = s->burst[0] || s->burst[1], is = extra[0] || extra[1];
  /* in place now and before: the grant's limit and the extra on it */
  uint64_t lim[IOQ_RES_COUNT], prev[IOQ_RES_COUNT];
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    lim[r] = s->burst_base[r] ? s->burst_base[r] + extra[r] : 0;
    prev[r] = s->burst_base[r] ? s->burst_base[r] + s->burst[r] : 0;
  }
  memcpy(s->burst, extra, sizeof s->burst);
  if (!rc)
    return;
  ug_owe_wrote(s, now, have_before ? &before : NULL, lim, prev);
  metrics_inc(u->p->metrics, C_UG_WRITES);
  if (is && !was)
    ioq_info("granted pod bursting cgroup=%s disk=%s extra_bps=%llu extra_iops=%llu reason=\"%s\"",
             pp->cg.dir, u->disks[d].name, (unsigned long long)extra[0], (unsigned long long)extra[1], why);
  else if (!is && was)
    ioq_info("granted pod burst ended cgroup=%s disk=%s reason=\"%s\"", pp->cg.dir, u->disks[d].name, why);
  else
    ioq_debug("granted pod burst written cgroup=%s disk=%s extra_bps=%llu extra_iops=%llu", pp->cg.dir,
              u->disks[d].name, (unsigned long long)extra[0], (unsigned long long)extra[1]);
}

void ug_end_bursts(struct ungranted *u, size_t d, const char *why) {
  static const uint64_t none[IOQ_RES_COUNT] = {0};
  for (size_t i = 0; i < u->n; i++) {
    struct ug_slot *s = &u->pods[i].s[d];
    if (s->granted && (s->burst[0] || s->burst[1]))
      write_burst(u, &u->pods[i], d, none, why);
  }
}

/* whether a change of a cap or extra (0 = none) from cur to want is worth a
 * write: on and off, or more than UG_HYSTERESIS of base + cur */
static bool big_change(double cur, double want, double base) {
  if ((cur == 0) != (want == 0))
    return true;
  double band = UG_HYSTERESIS * (base + cur);
  return want > cur + band || want < cur - band;
}

void ug_balance_disk(struct ungranted *u, size_t d) {
  struct ug_disk *dk = &u->disks[d];
  size_t n = 0, nb = 0;
  for (size_t i = 0; i < u->n; i++) {
    const struct ug_slot *s = &u->pods[i].s[d];
    if (!s->granted)
      n++;
    else if (s->may_burst || s->burst[0] || s->burst[1]) /* may burst, or holds a burst to take back */
      nb++;
  }
  dk->bounded = 0;
  if (!n && !nb)
    return;
  size_t nn = n ? n : 1, nnb = nb ? nb : 1;
  struct ug_pod **pp = malloc(nn * sizeof *pp), **bp = malloc(nnb * sizeof *bp);
  struct ioq_ug_demand *in = malloc(nn * sizeof *in);
  struct ioq_ug_burster *bin = malloc(nnb * sizeof *bin);
  uint64_t *out[IOQ_RES_COUNT] = {calloc(nn, sizeof(uint64_t)), calloc(nn, sizeof(uint64_t))};
  uint64_t *bout[IOQ_RES_COUNT] = {calloc(nnb, sizeof(uint64_t)), calloc(nnb, sizeof(uint64_t))};
  bool *todo = calloc(nn, sizeof *todo), *btodo = calloc(nnb, sizeof *btodo);
  if (!pp || !bp || !in || !bin || !out[0] || !out[1] || !bout[0] || !bout[1] || !todo || !btodo) {
    ioq_err e;
    ioq_fail(&e, ENOMEM, "ungranted: out of memory splitting the pool of %s", dk->name);
    ug_failed(u, &e);
    goto done;
  }
  n = nb = 0;
  for (size_t i = 0; i < u->n; i++) {
    const struct ug_slot *s = &u->pods[i].s[d];
    if (!s->granted)
      pp[n++] = &u->pods[i];
    else if (s->may_burst || s->burst[0] || s->burst[1])
      bp[nb++] = &u->pods[i];
  }
  static const uint64_t floors[IOQ_RES_COUNT] = {IOQ_UG_FLOOR_BPS, IOQ_UG_FLOOR_IOPS};
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (!dk->pool[r])
      continue; /* not bounded in this resource: out stays 0 (max), nothing bursts */
    for (size_t i = 0; i < n; i++) {
      const struct ug_slot *s = &pp[i]->s[d];
      in[i].cap = s->bounded ? s->cap[r] : 0;
      /* unbounded, or held by the kernel while it owed: its rate says nothing of its demand */
      in[i].rate = s->bounded && !s->rate_void && !s->owe.owes ? s->rate[r] : -1;
    }
    for (size_t j = 0; j < nb; j++) {
      const struct ug_slot *s = &bp[j]->s[d];
      /* one not allowed any more has only its burst to give back */
      bin[j] = (struct ioq_ug_burster){s->may_burst ? s->burst_base[r] : 0, s->burst[r],
                                       s->rate_void || s->owe.owes ? -1 : s->rate[r]};
    }
    ioq_ug_split_burst(dk->pool[r], floors[r], in, n, bin, nb, out[r], bout[r]);
  }
  /* which to write: new bounds and big changes; small cuts too when the
   * caps and bursts would not fit the pool without them */
  uint64_t sum[IOQ_RES_COUNT] = {0}, floor_sum[IOQ_RES_COUNT] = {0};
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    bool big = !s->bounded;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      big |= big_change((double)s->cap[r], (double)out[r][i], 0);
    todo[i] = big;
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      sum[r] += big ? out[r][i] : s->cap[r];
      floor_sum[r] += floors[r];
    }
  }
  for (size_t j = 0; j < nb; j++) {
    const struct ug_slot *s = &bp[j]->s[d];
    bool big = false;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      big |= big_change((double)s->burst[r], (double)bout[r][j], (double)s->burst_base[r]);
    btodo[j] = big;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      sum[r] += big ? bout[r][j] : s->burst[r];
  }
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (dk->pool[r] && sum[r] > dk->pool[r] && sum[r] > floor_sum[r]) {
      for (size_t i = 0; i < n; i++)
        if (out[r][i] < pp[i]->s[d].cap[r])
          todo[i] = true;
      for (size_t j = 0; j < nb; j++)
        if (bout[r][j] < bp[j]->s[d].burst[r])
          btodo[j] = true;
    }
  /* the caps that stay: rewritten only if someone changed them (the writer
   * reads first and writes nothing when they are in place) */
  for (size_t i = 0; i < n; i++) {
    struct ug_slot *s = &pp[i]->s[d];
    if (todo[i] || !s->bounded)
      continue;
    uint64_t keep[IOQ_RES_COUNT] = {s->cap[0], s->cap[1]};
    bool changed = false;
    if (write_caps(u, pp[i], d, keep, &changed) && changed)
      ioq_warn("ungranted bound drift corrected cgroup=%s disk=%s", pp[i]->cg.dir, dk->name);
  }
  /* bursts cut before anything else: the extra above a grant is the last
   * in line, and a smaller pool (a lender woke) starts with it */
  for (size_t j = 0; j < nb; j++) {
    const struct ug_slot *s = &bp[j]->s[d];
    if (!btodo[j])
      continue;
    uint64_t lo[IOQ_RES_COUNT];
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      lo[r] = bout[r][j] < s->burst[r] ? bout[r][j] : s->burst[r];
    if (memcmp(lo, s->burst, sizeof lo) != 0)
      write_burst(u, bp[j], d, lo,
                  s->may_burst ? "pods without a grant or the lenders use the idle capacity"
                               : "bursting is not allowed for the pod any more (nodePolicy.ungranted.burst, "
                                 "annotation " IOQ_POD_BURST_ANNOTATION ")");
  }
  /* cuts before new bounds before raises, so that from the moment every
   * pod is bounded the caps together never exceed the pool: first every
   * bounded pod gets the lower of its old and new cap in each resource,
   * then new pods their bound (a cut from no limit: written after the
   * others' cuts, or a pod already at the whole pool would briefly hold it
   * beside the new pod's share), then the raises */
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    if (!todo[i] || !s->bounded)
      continue;
    uint64_t lo[IOQ_RES_COUNT];
    for (int r = 0; r < IOQ_RES_COUNT; r++) /* 0 = no limit, the highest */
      lo[r] = s->cap[r] && (!out[r][i] || s->cap[r] < out[r][i]) ? s->cap[r] : out[r][i];
    if (memcmp(lo, s->cap, sizeof lo) != 0)
      write_caps(u, pp[i], d, lo, NULL);
  }
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    if (todo[i] && !s->bounded) {
      uint64_t cap[IOQ_RES_COUNT] = {out[0][i], out[1][i]};
      write_caps(u, pp[i], d, cap, NULL); /* then bounded at cap: the raises skip it */
    }
  }
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    uint64_t cap[IOQ_RES_COUNT] = {out[0][i], out[1][i]};
    if (todo[i] && s->bounded && memcmp(cap, s->cap, sizeof cap) != 0)
      write_caps(u, pp[i], d, cap, NULL);
  }
  /* bursts raised last, into what the others left */
  for (size_t j = 0; j < nb; j++) {
    const struct ug_slot *s = &bp[j]->s[d];
    uint64_t extra[IOQ_RES_COUNT] = {bout[0][j], bout[1][j]};
    if (btodo[j] && memcmp(extra, s->burst, sizeof extra) != 0)
      write_burst(u, bp[j], d, extra, "it uses its grant and the pool has idle capacity");
  }
  for (size_t i = 0; i < n; i++)
    if (pp[i]->s[d].bounded)
      dk->bounded++;
done:
  free(pp);
  free(bp);
  free(in);
  free(bin);
  free(out[0]);
  free(out[1]);
  free(bout[0]);
  free(bout[1]);
  free(todo);
  free(btodo);
}
