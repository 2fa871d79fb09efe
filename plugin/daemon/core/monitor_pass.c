// SPDX-License-Identifier: Apache-2.0
/* One pass of the grant monitor (monitor_internal.h), in its steps: the
 * pods' counters and rates (1), the disks' block stat and load (2), per pod
 * and disk the verdict, the window and the Event, per disk the Node Warning
 * (3), the pods gone forgotten (4); and the samples for the hook. */
#include <stdlib.h>
#include <string.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "monitor_internal.h"
#include "plugin.h"

/* What one pass works with besides the monitor's tables. */
struct pass {
  double window, recover; /* the starved window; no starved interval this long ends a stretch */
  double now, wall;       /* when the verdicts were taken: ioq_mono_s(), seconds since the epoch */
  /* per disk (index into m->disks), from the verdicts: */
  double wanting[MON_DISKS]; /* the grants (bytes/s) of its starved and at-cap pods */
  bool starved_on[MON_DISKS]; /* a granted pod starved on it */
  struct monitor_sample *samp; /* for the hook; NULL: no sample or out of memory */
  size_t nsamp;
};

/* the monitor section of the node pool in force, one for the whole pass */
static void take_config(struct monitor *m, struct pass *ps) {
  const struct ioq_config *c = plugin_cfg(m->p);
  m->interval_s = c->monitor.interval_s;
  m->window_s = c->monitor.starved_window_s;
  m->event_interval_s = c->monitor.event_interval_s;
  ps->window = (double)m->window_s;
  ps->recover = 3.0 * (double)m->interval_s;
}

/* ---- 1. the pods' counters: one io.stat + io.pressure each ---- */

/* the pod's counters could not be read: no rate, no verdict this interval */
static void pod_unread(struct monitor *m, struct mon_pod *pp, const ioq_err *e) {
  m->read_fail++;
  if (strcmp(pp->last_err, e->msg) != 0)
    ioq_info("grant monitor: pod %s/%s not measured: %s", pp->ns, pp->name, e->msg);
  ioq_copy_trunc(pp->last_err, sizeof pp->last_err, e->msg);
  for (size_t d = 0; d < pp->n; d++) {
    pp->s[d].have_prev = pp->s[d].have_rates = false;
    pp->s[d].verdict = MON_UNKNOWN;
  }
}

/* the rates since the last read, per disk; c[] the counters read at t */
static void pod_rates(struct mon_pod *pp, const struct ioq_gm_counters *c, double t) {
  pp->last_err[0] = '\0';
  for (size_t d = 0; d < pp->n; d++) {
    struct mon_slot *s = &pp->s[d];
    ioq_err e;
    s->have_rates = false;
    if (s->have_prev) {
      s->interval_s = t - s->prev_t;
      if (ioq_gm_rates(&s->prev, &c[d], s->interval_s, &s->rates, &e) == 0)
        s->have_rates = true;
      else
        ioq_debug("grant monitor: pod %s/%s disk %s: %s", pp->ns, pp->name, s->disk, e.msg);
    }
    s->prev = c[d];
    s->prev_t = t;
    s->have_prev = true;
  }
}

static void read_pod(struct monitor *m, const struct applied_pod *ap) {
  struct mon_pod *pp = mon_sync_pod(m, ap, &m->p->cfg.units);
  if (!pp) {
    ioq_warn("grant monitor: out of memory, pod %s/%s not measured", ap->ns, ap->name);
    return;
  }
  struct ioq_gm_counters c[IOQ_POD_DISKS_MAX];
  struct ioq_devno devs[IOQ_POD_DISKS_MAX];
  for (size_t d = 0; d < pp->n; d++)
    devs[d] = pp->s[d].dev;
  struct ioq_cg cg;
  ioq_err e;
  double t = ioq_mono_s();
  if (ioq_cg_open(pp->cgroup, pp->version, &cg, &e) < 0 ||
      ioq_gm_read_counters(&cg, devs, pp->n, c, &e) < 0) {
    pod_unread(m, pp, &e);
    return;
  }
  pod_rates(pp, c, t);
}

static void read_pods(struct monitor *m, const struct applied_pod *ap, size_t nap) {
  for (size_t i = 0; i < nap; i++)
    if (ap[i].grant.n != 0 && ap[i].uid[0])
      read_pod(m, &ap[i]);
}

/* ---- 2. the managed disks: one block stat each ---- */

/* what the disk delivered since the last read (cur.known when it is known) */
static void read_disk(struct monitor *m, struct mon_disk *d) {
  d->cur.known = false;
  d->cur.granted_bps = d->cur.granted_iops = d->cur.grants_bps = d->cur.grants_iops = 0;
  if (!d->seen) {
    d->have_prev = false;
    return;
  }
  struct ioq_gm_dstat ds;
  ioq_err e;
  double t = ioq_mono_s();
  if (ioq_gm_dstat_read(m->p->opts.sysfs_root, d->name, &ds, &e) < 0) {
    m->read_fail++;
    if (strcmp(d->last_err, e.msg) != 0)
      ioq_info("grant monitor: disk %s not measured: %s", d->name, e.msg);
    ioq_copy_trunc(d->last_err, sizeof d->last_err, e.msg);
    d->have_prev = false;
    return;
  }
  d->last_err[0] = '\0';
  if (d->have_prev && ioq_gm_disk_rates(&d->prev, &ds, t - d->prev_t, &d->cur.got, &e) == 0)
    d->cur.known = true;
  d->prev = ds;
  d->prev_t = t;
  d->have_prev = true;
}

/* bounded by the catalog; read for disks without grants too, so the
 * per-disk series match */
static void read_disks(struct monitor *m) {
  for (size_t i = 0; i < m->n_disks; i++)
    read_disk(m, &m->disks[i]);
}

/* per disk: the grants of the pods on it, and what they achieved together */
static void sum_grants(struct monitor *m) {
  for (size_t i = 0; i < m->n; i++) {
    struct mon_pod *pp = &m->pods[i];
    if (!pp->seen)
      continue;
    for (size_t k = 0; k < pp->n; k++) {
      struct mon_slot *s = &pp->s[k];
      struct mon_disk *d = mon_find_disk(m, s->disk);
      if (!d)
        continue;
      d->cur.grants_bps += (double)(s->grant.rbps > s->grant.wbps ? s->grant.rbps : s->grant.wbps);
      d->cur.grants_iops +=
          (double)(s->grant.riops > s->grant.wiops ? s->grant.riops : s->grant.wiops);
      if (s->have_rates) {
        d->cur.granted_bps += s->rates.rbps + s->rates.wbps;
        d->cur.granted_iops += s->rates.riops + s->rates.wiops;
      }
    }
  }
}

/* per disk: is it contended, and the likely cause */
static void disk_contention(struct monitor *m) {
  for (size_t i = 0; i < m->n_disks; i++) {
    struct mon_disk *d = &m->disks[i];
    d->cont = ioq_gm_disk_contended(&d->cur);
    d->cause = d->cont == IOQ_GM_ROOM ? IOQ_GM_CAUSE_NONE : ioq_gm_cause(&d->cur);
  }
}

/* ---- 3. verdicts, windows, Events ---- */

static void hist_push(struct mon_slot *s, double wall) {
  struct monitor_hist *h = &s->hist[s->hnext];
  h->wall = wall;
  h->verdict = s->verdict;
  h->rates = s->rates;
  s->hnext = (s->hnext + 1) % MONITOR_HISTORY;
  if (s->nhist < MONITOR_HISTORY)
    s->nhist++;
}

/* the pod's verdict on the disk (d NULL: a disk the monitor does not hold) */
static enum monitor_verdict classify(struct monitor *m, const struct mon_pod *pp,
                                     const struct mon_slot *s, const struct mon_disk *d) {
  enum ioq_gm_contention cont = d ? d->cont : IOQ_GM_ROOM;
  /* combined directions: "at its cap" is against the read/write split in place */
  struct ioq_io_limits lim = s->grant, full;
  if (m->p->cfg.enforcement.combined_directions)
    podtable_get_split(m->p->table, pp->uid, s->disk, &full, &lim);
  enum monitor_verdict v =
      (enum monitor_verdict)ioq_gm_classify(&lim, s->have_rates ? &s->rates : NULL, cont);
  return s->have_rates ? v : MON_UNKNOWN;
}

/* what the Node Warning weighs: the grants that want more of disk d */
static void tally_disk(struct monitor *m, struct pass *ps, const struct mon_slot *s,
                       const struct mon_disk *d) {
  size_t di = (size_t)(d - m->disks);
  if (s->verdict == MON_STARVED) {
    ps->starved_on[di] = true;
    ps->wanting[di] += (double)s->grant.rbps;
  } else if (s->verdict == MON_AT_CAP) {
    ps->wanting[di] += (double)s->grant.rbps;
  }
}

static void add_sample(struct pass *ps, const struct mon_pod *pp, const struct mon_slot *s) {
  struct monitor_sample *o = &ps->samp[ps->nsamp++];
  ioq_copy_trunc(o->ns, sizeof o->ns, pp->ns); /* same-size fields: fits */
  ioq_copy_trunc(o->name, sizeof o->name, pp->name); /* same-size fields: fits */
  ioq_copy_trunc(o->uid, sizeof o->uid, pp->uid); /* same-size fields: fits */
  ioq_copy_trunc(o->cgroup, sizeof o->cgroup, pp->cgroup); /* same-size fields: fits */
  o->version = pp->version;
  ioq_copy_trunc(o->disk, sizeof o->disk, s->disk); /* same-size fields: fits */
  o->dev = s->dev;
  o->grant = s->grant;
  o->interval_s = s->interval_s;
  o->rbps = s->rates.rbps;
  o->wbps = s->rates.wbps;
  o->riops = s->rates.riops;
  o->wiops = s->rates.wiops;
  o->stall = s->rates.stall;
  o->verdict = s->verdict;
}

/* one pod on one disk: the verdict, the window, the history, the Event */
static void judge_slot(struct monitor *m, struct pass *ps, struct mon_pod *pp, struct mon_slot *s) {
  struct mon_disk *d = mon_find_disk(m, s->disk);
  s->verdict = classify(m, pp, s, d);
  double since = s->track.starved_since;
  enum ioq_gm_action a = ioq_gm_track_step(&s->track, (enum ioq_gm_verdict)s->verdict, ps->now,
                                           s->have_rates ? s->interval_s : 0, ps->window,
                                           ps->recover);
  if (s->have_rates) {
    hist_push(s, ps->wall);
    if (d)
      d->verdict_s[s->verdict] += s->interval_s;
  }
  if (d)
    tally_disk(m, ps, s, d);
  if (a == IOQ_GM_NOT_MET && d)
    mon_not_met(m, pp, s, d);
  else if (a == IOQ_GM_MET)
    mon_met(m, pp, s, ps->now - since);
  if (ps->samp && s->have_rates)
    add_sample(ps, pp, s);
}

static void judge_pods(struct monitor *m, struct pass *ps) {
  size_t capsamp = 0;
  for (size_t i = 0; i < m->n; i++)
    if (m->pods[i].seen)
      capsamp += m->pods[i].n;
  ps->samp = capsamp ? calloc(capsamp, sizeof *ps->samp) : NULL;
  ps->now = ioq_mono_s();
  ps->wall = wall_now();
  for (size_t i = 0; i < m->n; i++) {
    struct mon_pod *pp = &m->pods[i];
    if (!pp->seen)
      continue;
    for (size_t k = 0; k < pp->n; k++)
      judge_slot(m, ps, pp, &pp->s[k]);
  }
}

/* the Node Warning: granted pods starve on a disk that is saturated below
 * the capacity it was sold for */
static void judge_disk(struct monitor *m, const struct pass *ps, size_t i) {
  struct mon_disk *d = &m->disks[i];
  if (!d->cur.known)
    return;
  bool under =
      ps->starved_on[i] && d->cause == IOQ_GM_CAUSE_CAPACITY && d->cur.got.bps < ps->wanting[i];
  double dt = (double)m->interval_s;
  enum ioq_gm_action a = ioq_gm_track_step(&d->track, under ? IOQ_GM_STARVED : IOQ_GM_WITHIN,
                                           ps->now, dt, ps->window, ps->recover);
  if (a == IOQ_GM_NOT_MET && d->rl.any && ps->now - d->rl.last < (double)m->event_interval_s)
    ioq_gm_track_declined(&d->track);
  if (a == IOQ_GM_NOT_MET)
    mon_disk_under(m, d, ps->wanting[i]);
  else if (a == IOQ_GM_MET)
    ioq_info("disk delivers again disk=%s disk_bps=%.0f", d->name, d->cur.got.bps);
}

static void judge_disks(struct monitor *m, const struct pass *ps) {
  for (size_t i = 0; i < m->n_disks; i++)
    judge_disk(m, ps, i);
}

/* ---- the pass ---- */

size_t mon_pass_locked(struct monitor *m, struct monitor_sample **out) {
  struct plugin *p = m->p;
  struct pass ps = {0};
  take_config(m, &ps);
  struct applied_pod *ap = NULL;
  size_t nap = podtable_snapshot(p->table, &ap);
  struct cat_disk *cd = NULL;
  size_t ncd = catalog_snapshot(p->catalog, &cd);
  mon_tables_start(m, cd, ncd);

  read_pods(m, ap, nap); /* 1 */
  read_disks(m);         /* 2 */
  sum_grants(m);
  disk_contention(m);
  judge_pods(m, &ps);    /* 3 */
  judge_disks(m, &ps);
  mon_tables_forget(m);  /* 4: pods without a grant now (their series go) */

  free(ap);
  free(cd);
  *out = ps.samp;
  return ps.nsamp;
}
