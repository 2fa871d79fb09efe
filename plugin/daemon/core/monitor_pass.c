// SPDX-License-Identifier: Apache-2.0
/* One pass of the grant monitor (monitor_internal.h): the pods' and disks'
 * counters read, the rates, the verdicts, the windows, the Events, the
 * samples for the hook. */
#include <stdlib.h>
#include <string.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "monitor_internal.h"
#include "plugin.h"

static void hist_push(struct mon_slot *s, double wall) {
  struct mon_hist *h = &s->hist[s->hnext];
  h->wall = wall;
  h->verdict = s->verdict;
  h->rbps = s->rates.rbps;
  h->wbps = s->rates.wbps;
  h->riops = s->rates.riops;
  h->wiops = s->rates.wiops;
  h->stall = s->rates.stall;
  s->hnext = (s->hnext + 1) % MON_HISTORY;
  if (s->nhist < MON_HISTORY)
    s->nhist++;
}

/* Reads and classifies; fills *out (malloc'd) with this interval's samples. */
size_t mon_pass_locked(struct monitor *m, struct monitor_sample **out) {
  struct plugin *p = m->p;
  *out = NULL;
  const struct ioq_config *c = plugin_cfg(p);
  m->interval_s = c->monitor.interval_s;
  m->window_s = c->monitor.starved_window_s;
  m->event_interval_s = c->monitor.event_interval_s;
  double window = (double)m->window_s;
  double recover = 3.0 * (double)m->interval_s;
  struct applied_pod *ap = NULL;
  size_t nap = podtable_snapshot(p->table, &ap);
  struct cat_disk *cd = NULL;
  size_t ncd = catalog_snapshot(p->catalog, &cd);

  for (size_t i = 0; i < m->n; i++)
    m->pods[i].seen = false;
  for (size_t i = 0; i < m->n_disks; i++)
    m->disks[i].seen = false;
  for (size_t i = 0; i < ncd; i++)
    mon_use_disk(m, &cd[i]);

  /* 1. the pods' counters: one io.stat + io.pressure each */
  for (size_t i = 0; i < nap; i++) {
    if (ap[i].grant.n == 0 || !ap[i].uid[0])
      continue;
    struct mon_pod *pp = mon_sync_pod(m, &ap[i], &p->cfg.units);
    if (!pp) {
      ioq_warn("grant monitor: out of memory, pod %s/%s not measured", ap[i].ns, ap[i].name);
      continue;
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
      m->read_fail++;
      if (strcmp(pp->last_err, e.msg) != 0)
        ioq_info("grant monitor: pod %s/%s not measured: %s", pp->ns, pp->name, e.msg);
      ioq_copy_trunc(pp->last_err, sizeof pp->last_err, e.msg);
      for (size_t d = 0; d < pp->n; d++) {
        pp->s[d].have_prev = pp->s[d].have_rates = false;
        pp->s[d].verdict = MON_UNKNOWN;
      }
      continue;
    }
    pp->last_err[0] = '\0';
    for (size_t d = 0; d < pp->n; d++) {
      struct mon_slot *s = &pp->s[d];
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

  /* 2. the managed disks: one block stat each (bounded by the catalog;
   * read for disks without grants too, so the per-disk series match) */
  for (size_t i = 0; i < m->n_disks; i++) {
    struct mon_disk *d = &m->disks[i];
    d->cur.known = false;
    d->cur.granted_bps = d->cur.granted_iops = d->cur.grants_bps = d->cur.grants_iops = 0;
    if (!d->seen) {
      d->have_prev = false;
      continue;
    }
    struct ioq_gm_dstat ds;
    ioq_err e;
    double t = ioq_mono_s();
    if (ioq_gm_dstat_read(p->opts.sysfs_root, d->name, &ds, &e) < 0) {
      m->read_fail++;
      if (strcmp(d->last_err, e.msg) != 0)
        ioq_info("grant monitor: disk %s not measured: %s", d->name, e.msg);
      ioq_copy_trunc(d->last_err, sizeof d->last_err, e.msg);
      d->have_prev = false;
      continue;
    }
    d->last_err[0] = '\0';
    if (d->have_prev && ioq_gm_disk_rates(&d->prev, &ds, t - d->prev_t, &d->cur.got, &e) == 0)
      d->cur.known = true;
    d->prev = ds;
    d->prev_t = t;
    d->have_prev = true;
  }
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
      d->cur.grants_iops += (double)(s->grant.riops > s->grant.wiops ? s->grant.riops : s->grant.wiops);
      if (s->have_rates) {
        d->cur.granted_bps += s->rates.rbps + s->rates.wbps;
        d->cur.granted_iops += s->rates.riops + s->rates.wiops;
      }
    }
  }
  for (size_t i = 0; i < m->n_disks; i++) {
    struct mon_disk *d = &m->disks[i];
    d->cont = ioq_gm_disk_contended(&d->cur);
    d->cause = d->cont == IOQ_GM_ROOM ? IOQ_GM_CAUSE_NONE : ioq_gm_cause(&d->cur);
  }

  /* 3. verdicts, windows, Events */
  size_t nsamp = 0, capsamp = 0;
  for (size_t i = 0; i < m->n; i++)
    if (m->pods[i].seen)
      capsamp += m->pods[i].n;
  struct monitor_sample *samp = capsamp ? calloc(capsamp, sizeof *samp) : NULL;
  double now = ioq_mono_s(), wall = wall_now();
  double wanting[MON_DISKS] = {0};
  bool starved_on[MON_DISKS] = {0};
  for (size_t i = 0; i < m->n; i++) {
    struct mon_pod *pp = &m->pods[i];
    if (!pp->seen)
      continue;
    for (size_t k = 0; k < pp->n; k++) {
      struct mon_slot *s = &pp->s[k];
      struct mon_disk *d = mon_find_disk(m, s->disk);
      enum ioq_gm_contention cont = d ? d->cont : IOQ_GM_ROOM;
      /* combined directions: "at its cap" is against the read/write split in place */
      struct ioq_io_limits lim = s->grant, full;
      if (m->p->cfg.enforcement.combined_directions)
        podtable_get_split(m->p->table, pp->uid, s->disk, &full, &lim);
      s->verdict = (enum monitor_verdict)ioq_gm_classify(&lim, s->have_rates ? &s->rates : NULL, cont);
      if (!s->have_rates)
        s->verdict = MON_UNKNOWN;
      double since = s->track.starved_since;
      enum ioq_gm_action a = ioq_gm_track_step(&s->track, (enum ioq_gm_verdict)s->verdict, now,
                                               s->have_rates ? s->interval_s : 0, window, recover);
      if (s->have_rates) {
        hist_push(s, wall);
        if (d)
          d->verdict_s[s->verdict] += s->interval_s;
      }
      if (d) {
        size_t di = (size_t)(d - m->disks);
        if (s->verdict == MON_STARVED) {
          starved_on[di] = true;
          wanting[di] += (double)s->grant.rbps;
        } else if (s->verdict == MON_AT_CAP) {
          wanting[di] += (double)s->grant.rbps;
        }
      }
      if (a == IOQ_GM_NOT_MET && d)
        mon_not_met(m, pp, s, d);
      else if (a == IOQ_GM_MET)
        mon_met(m, pp, s, now - since);
      if (samp && s->have_rates) {
        struct monitor_sample *o = &samp[nsamp++];
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
    }
  }
  /* the Node Warning: granted pods starve on a disk that is saturated below
   * the capacity it was sold for */
  for (size_t i = 0; i < m->n_disks; i++) {
    struct mon_disk *d = &m->disks[i];
    if (!d->cur.known)
      continue;
    bool under = starved_on[i] && d->cause == IOQ_GM_CAUSE_CAPACITY && d->cur.got.bps < wanting[i];
    double dt = (double)m->interval_s;
    enum ioq_gm_action a = ioq_gm_track_step(&d->track, under ? IOQ_GM_STARVED : IOQ_GM_WITHIN,
                                             now, dt, window, recover);
    if (a == IOQ_GM_NOT_MET && d->rl.any && now - d->rl.last < (double)m->event_interval_s)
      ioq_gm_track_declined(&d->track);
    if (a == IOQ_GM_NOT_MET)
      mon_disk_under(m, d, wanting[i]);
    else if (a == IOQ_GM_MET)
      ioq_info("disk delivers again disk=%s disk_bps=%.0f", d->name, d->cur.got.bps);
  }

  /* 4. forget pods without a grant now (their series go) */
  size_t w = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (m->pods[i].seen)
      m->pods[w++] = m->pods[i];
    else
      free(m->pods[i].s);
  }
  m->n = w;
  free(ap);
  free(cd);
  *out = samp;
  return nsamp;
}
