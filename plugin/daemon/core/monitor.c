// SPDX-License-Identifier: Apache-2.0
/* The grant monitor thread (monitor.h; the rule is in grant/grantmon.h).
 *
 * One pass per monitor.intervalSeconds: the applied pods from the pod table,
 * one io.stat + io.pressure read per granted pod, one block stat read per
 * granted disk, then per pod and disk the rates, the verdict, the window
 * state machine and, when it says so, an Event (rate-limited per pod, and
 * per disk for the Node Warning) and one log line. State is kept only for
 * pods the pod table holds a grant for: a pod that goes is forgotten (its
 * series disappear). Everything is bounded: pods by the node's granted pods,
 * disks per pod by IOQ_POD_DISKS_MAX, history and Events per pod by the
 * rings below. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "state/catalog.h"
#include "podtable.h"
#include "support/events.h"
#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "grant/grantmon.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "support/metrics.h"
#include "monitor.h"
#include "plugin.h"

_Static_assert((int)MON_STARVED == (int)IOQ_GM_STARVED && (int)MON_AT_CAP == (int)IOQ_GM_AT_CAP_V &&
                   (int)MON_IDLE == (int)IOQ_GM_IDLE && (int)MON_WITHIN == (int)IOQ_GM_WITHIN &&
                   (int)MON_UNKNOWN == (int)IOQ_GM_UNKNOWN,
               "monitor_verdict and ioq_gm_verdict share their order");

#define MON_HISTORY 16 /* intervals kept per pod and disk for explain */
#define MON_EVENTS 8   /* Events kept per pod for explain */
#define MON_DISKS 256 /* config devices[] holds at most 256 */

struct mon_hist {
  double wall; /* end of the interval, seconds since the epoch */
  enum monitor_verdict verdict;
  double rbps, wbps, riops, wiops, stall;
};

struct mon_slot { /* one pod on one disk */
  char disk[IOQ_DISK_NAME_MAX + 1];
  struct ioq_devno dev;
  struct ioq_io_limits grant;
  bool have_prev;
  struct ioq_gm_counters prev;
  double prev_t;
  bool have_rates;
  struct ioq_gm_rates rates;
  double interval_s;
  enum monitor_verdict verdict;
  struct ioq_gm_track track;
  struct mon_hist hist[MON_HISTORY];
  size_t nhist, hnext;
};

struct mon_event {
  double wall;
  char type[16], reason[32], message[768];
};

struct mon_pod {
  char ns[IOQ_POD_NAMESPACE_MAX + 1], name[IOQ_POD_NAME_MAX + 1], uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  enum ioq_cg_version version;
  struct mon_slot *s;
  size_t n;
  struct ioq_gm_ratelimit rl;
  struct mon_event ev[MON_EVENTS];
  size_t nev, evnext;
  bool seen;
  char last_err[IOQ_ERR_MSG_MAX];
};

struct mon_disk {
  char name[IOQ_DISK_NAME_MAX + 1];
  char class_name[64];
  struct ioq_devno dev;
  bool have_prev;
  struct ioq_gm_dstat prev;
  double prev_t;
  struct ioq_gm_disk cur;
  enum ioq_gm_contention cont;
  enum ioq_gm_cause cause;
  struct ioq_gm_track track; /* "starved" here = under-delivers */
  struct ioq_gm_ratelimit rl;
  double verdict_s[MON_VERDICTS]; /* pod-seconds per verdict */
  bool seen;
  char last_err[IOQ_ERR_MSG_MAX];
};

struct monitor {
  struct plugin *p;
  pthread_mutex_t mu; /* one pass at a time; guards the state below */
  struct mon_pod *pods;
  size_t n, cap;
  struct mon_disk disks[MON_DISKS];
  size_t n_disks;
  /* the monitor section of the pass in progress: the node pool's in force
   * when it began (plugin_cfg), one for the whole pass */
  unsigned interval_s, window_s, event_interval_s;
  /* cost */
  uint64_t passes, read_fail;
  double last_pass_s, cpu_s;
  uint64_t events[3], suppressed[3]; /* NotMet, Met, DiskUnderDelivers */
  /* hook (its own lock: it is called outside mu) */
  pthread_mutex_t hook_mu;
  monitor_hook_fn hook;
  void *hook_ud;
  /* thread */
  pthread_t thread;
  bool running;
  int wake[2];
};

enum { EV_NOT_MET = 0, EV_MET, EV_DISK };
static const char *const g_ev_reason[3] = {"IoqosGrantNotMet", "IoqosGrantMet", "IoqosDiskUnderDelivers"};

const char *monitor_verdict_name(enum monitor_verdict v) {
  switch (v) {
  case MON_IDLE: return "idle";
  case MON_WITHIN: return "within";
  case MON_AT_CAP: return "at-cap";
  case MON_STARVED: return "starved";
  default: return "unknown";
  }
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void monitor_set_hook(struct monitor *m, monitor_hook_fn fn, void *ud) {
  if (!m)
    return;
  pthread_mutex_lock(&m->hook_mu);
  m->hook = fn;
  m->hook_ud = ud;
  pthread_mutex_unlock(&m->hook_mu);
}

/* ---- state tables ---- */

static struct mon_pod *find_pod(struct monitor *m, const char *uid) {
  for (size_t i = 0; i < m->n; i++)
    if (strcmp(m->pods[i].uid, uid) == 0)
      return &m->pods[i];
  return NULL;
}

static struct mon_disk *find_disk(struct monitor *m, const char *name) {
  for (size_t i = 0; i < m->n_disks; i++)
    if (strcmp(m->disks[i].name, name) == 0)
      return &m->disks[i];
  return NULL;
}

/* the pod's entry, made to match the applied pod (NULL: out of memory) */
static struct mon_pod *sync_pod(struct monitor *m, const struct applied_pod *ap,
                                const struct ioq_unit_sizes *u) {
  struct mon_pod *pp = find_pod(m, ap->uid);
  if (pp && (strcmp(pp->cgroup, ap->cgroup) != 0 || pp->version != ap->version)) {
    free(pp->s); /* another cgroup: its counters are another series */
    pp->s = NULL;
    pp->n = 0;
  }
  if (!pp) {
    if (m->n == m->cap) {
      size_t nc = m->cap ? m->cap * 2 : 16;
      struct mon_pod *g = realloc(m->pods, nc * sizeof *g);
      if (!g)
        return NULL;
      m->pods = g;
      m->cap = nc;
    }
    pp = &m->pods[m->n++];
    memset(pp, 0, sizeof *pp);
    ioq_copy_trunc(pp->uid, sizeof pp->uid, ap->uid); /* same-size fields: fits */
  }
  ioq_copy_trunc(pp->ns, sizeof pp->ns, ap->ns); /* same-size fields: fits */
  ioq_copy_trunc(pp->name, sizeof pp->name, ap->name); /* same-size fields: fits */
  ioq_copy_trunc(pp->cgroup, sizeof pp->cgroup, ap->cgroup); /* same-size fields: fits */
  pp->version = ap->version;
  /* slots: one per grant disk, state kept for disks that stay */
  struct mon_slot *ns = calloc(ap->grant.n ? ap->grant.n : 1, sizeof *ns);
  if (!ns)
    return NULL;
  for (size_t d = 0; d < ap->grant.n; d++) {
    const struct ioq_disk_grant *g = &ap->grant.disks[d];
    for (size_t k = 0; k < pp->n; k++)
      if (strcmp(pp->s[k].disk, g->disk) == 0 && ioq_devno_eq(pp->s[k].dev, ap->devs[d]))
        ns[d] = pp->s[k];
    ioq_copy_trunc(ns[d].disk, sizeof ns[d].disk, g->disk); /* same-size fields: fits */
    ns[d].dev = ap->devs[d];
    ioq_err e;
    if (ioq_grant_limits(g, u, &ns[d].grant, &e) < 0)
      memset(&ns[d].grant, 0, sizeof ns[d].grant); /* not enforceable either: no verdict */
  }
  free(pp->s);
  pp->s = ns;
  pp->n = ap->grant.n;
  pp->seen = true;
  return pp;
}

static struct mon_disk *use_disk(struct monitor *m, const struct cat_disk *cd) {
  struct mon_disk *d = find_disk(m, cd->disk.dev.name);
  if (d && !ioq_devno_eq(d->dev, cd->dev))
    d->have_prev = false;
  if (!d) {
    if (m->n_disks == MON_DISKS)
      return NULL;
    d = &m->disks[m->n_disks++];
    memset(d, 0, sizeof *d);
    ioq_copy_trunc(d->name, sizeof d->name, cd->disk.dev.name); /* same-size fields: fits */
  }
  d->dev = cd->dev;
  /* same-size fields: fits */
  ioq_copy_trunc(d->class_name, sizeof d->class_name, cd->disk.class_name);
  d->cur.cap_bps = (double)cd->disk.capacity_bw_bytes;
  d->cur.cap_iops = (double)cd->disk.capacity_iops;
  d->seen = true;
  return d;
}

/* ---- Events ---- */

static void remember_event(struct mon_pod *pp, const char *type, const char *reason, const char *msg) {
  struct mon_event *ev = &pp->ev[pp->evnext];
  ev->wall = wall_now();
  ioq_copy_trunc(ev->type, sizeof ev->type, type); /* shown: the callers' fixed event words */
  ioq_copy_trunc(ev->reason, sizeof ev->reason, reason); /* shown: the callers' fixed event words */
  ioq_copy_trunc(ev->message, sizeof ev->message, msg);
  pp->evnext = (pp->evnext + 1) % MON_EVENTS;
  if (pp->nev < MON_EVENTS)
    pp->nev++;
}

static const char *stall_text(double s, char *buf, size_t n) {
  if (s < 0)
    snprintf(buf, n, "unknown (cgroup v1 or no PSI)");
  else
    snprintf(buf, n, "%.0f%% of the time", s * 100.0);
  return buf;
}

static void not_met(struct monitor *m, struct mon_pod *pp, struct mon_slot *s, struct mon_disk *d) {
  struct plugin *p = m->p;
  const double MiBf = 1048576.0;
  char st[64], gi[48], msg[768];
  const struct ioq_gm_rates *r = &s->rates;
  if (s->grant.riops)
    snprintf(gi, sizeof gi, "%llu IOPS", (unsigned long long)s->grant.riops);
  else
    snprintf(gi, sizeof gi, "no IOPS grant");
  snprintf(msg, sizeof msg,
           "grant not met on disk %s for %us: achieved read %.1f MiB/s %.0f IOPS, write %.1f MiB/s "
           "%.0f IOPS vs grant %.1f MiB/s, %s per direction; I/O stall %s; the disk "
           "delivered %.1f MiB/s %.0f IOPS of capacity %.1f MiB/s %.0f IOPS; most likely cause: %s",
           s->disk, m->window_s, r->rbps / MiBf, r->riops, r->wbps / MiBf,
           r->wiops, (double)s->grant.rbps / MiBf, gi, stall_text(r->stall, st, sizeof st),
           d->cur.got.bps / MiBf, d->cur.got.iops, d->cur.cap_bps / MiBf, d->cur.cap_iops,
           ioq_gm_cause_text(d->cause));
  bool allow =
      ioq_gm_ratelimit_allow(&pp->rl, ioq_mono_s(), (double)m->event_interval_s);
  ioq_warn("grant not met pod=%s/%s disk=%s verdict=starved window=%us rbps=%.0f wbps=%.0f "
           "riops=%.0f wiops=%.0f stall=%.2f disk_bps=%.0f disk_iops=%.0f cause=%s event=%s",
           pp->ns, pp->name, s->disk, m->window_s, r->rbps, r->wbps, r->riops,
           r->wiops, r->stall, d->cur.got.bps, d->cur.got.iops, ioq_gm_cause_name(d->cause),
           allow ? "posted" : "rate-limited");
  if (!allow) {
    ioq_gm_track_declined(&s->track);
    m->suppressed[EV_NOT_MET]++;
    return;
  }
  m->events[EV_NOT_MET]++;
  remember_event(pp, "Warning", g_ev_reason[EV_NOT_MET], msg);
  events_post(p->events, pp->ns, pp->name, pp->uid, "Warning", g_ev_reason[EV_NOT_MET], "%s", msg);
}

static void met(struct monitor *m, struct mon_pod *pp, struct mon_slot *s, double starved_s) {
  struct plugin *p = m->p;
  const double MiBf = 1048576.0;
  char msg[768];
  snprintf(msg, sizeof msg,
           "grant met again on disk %s after %.0fs starved: now %s, read %.1f MiB/s write "
           "%.1f MiB/s vs grant %.1f MiB/s per direction",
           s->disk, starved_s, monitor_verdict_name(s->verdict), s->rates.rbps / MiBf,
           s->rates.wbps / MiBf, (double)s->grant.rbps / MiBf);
  ioq_info("grant recovered pod=%s/%s disk=%s verdict=%s starved_s=%.0f", pp->ns, pp->name,
           s->disk, monitor_verdict_name(s->verdict), starved_s);
  m->events[EV_MET]++;
  remember_event(pp, "Normal", g_ev_reason[EV_MET], msg);
  events_post(p->events, pp->ns, pp->name, pp->uid, "Normal", g_ev_reason[EV_MET], "%s", msg);
}

static void disk_under(struct monitor *m, struct mon_disk *d, double grants_wanting) {
  struct plugin *p = m->p;
  const double MiBf = 1048576.0;
  bool allow =
      ioq_gm_ratelimit_allow(&d->rl, ioq_mono_s(), (double)m->event_interval_s);
  ioq_warn("disk under-delivers disk=%s window=%us disk_bps=%.0f disk_iops=%.0f busy=%.2f "
           "inflight=%.1f cap_bps=%.0f grants_wanting_bps=%.0f event=%s",
           d->name, m->window_s, d->cur.got.bps, d->cur.got.iops,
           d->cur.got.busy, d->cur.got.queue, d->cur.cap_bps, grants_wanting,
           allow ? "posted" : "rate-limited");
  if (!allow) {
    m->suppressed[EV_DISK]++;
    return;
  }
  m->events[EV_DISK]++;
  events_post(p->events, NULL, NULL, NULL, "Warning", g_ev_reason[EV_DISK],
              "disk %s delivers less than the grants that want it for %us: %.1f MiB/s %.0f IOPS "
              "with the device busy %.0f%% of the time and %.1f requests in flight, while granted "
              "pods starve below grants summing to %.1f MiB/s (capacity %.1f MiB/s %.0f IOPS): the "
              "capacity is probably too high; measure it with `ioqosctl calibrate --disk %s` and "
              "set it (devices[].capacity or calibrationFile)",
              d->name, m->window_s, d->cur.got.bps / MiBf, d->cur.got.iops,
              d->cur.got.busy * 100.0, d->cur.got.queue, grants_wanting / MiBf,
              d->cur.cap_bps / MiBf, d->cur.cap_iops, d->name);
}

/* ---- one pass ---- */

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
static size_t pass_locked(struct monitor *m, struct monitor_sample **out) {
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
    use_disk(m, &cd[i]);

  /* 1. the pods' counters: one io.stat + io.pressure each */
  for (size_t i = 0; i < nap; i++) {
    if (ap[i].grant.n == 0 || !ap[i].uid[0])
      continue;
    struct mon_pod *pp = sync_pod(m, &ap[i], &p->cfg.units);
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
      struct mon_disk *d = find_disk(m, s->disk);
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
      struct mon_disk *d = find_disk(m, s->disk);
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
        not_met(m, pp, s, d);
      else if (a == IOQ_GM_MET)
        met(m, pp, s, now - since);
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
      disk_under(m, d, wanting[i]);
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

void monitor_pass(struct monitor *m) {
  if (!m)
    return;
  double c0 = thread_cpu(), t0 = ioq_mono_s();
  struct monitor_sample *s = NULL;
  pthread_mutex_lock(&m->mu);
  size_t n = pass_locked(m, &s);
  pthread_mutex_unlock(&m->mu);
  pthread_mutex_lock(&m->hook_mu);
  if (m->hook && n)
    m->hook(m->hook_ud, s, n);
  pthread_mutex_unlock(&m->hook_mu);
  free(s);
  pthread_mutex_lock(&m->mu);
  m->passes++;
  m->last_pass_s = ioq_mono_s() - t0;
  m->cpu_s += thread_cpu() - c0;
  pthread_mutex_unlock(&m->mu);
}

/* ---- explain ---- */

static json_object *jnum(double v) { return json_object_new_double(v); }

static json_object *jtime(double wall) {
  char buf[40];
  time_t t = (time_t)wall;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return json_object_new_string(buf);
}

static json_object *jrates(const struct ioq_gm_rates *r) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "rbps", jnum(r->rbps));
  json_object_object_add(o, "wbps", jnum(r->wbps));
  json_object_object_add(o, "riops", jnum(r->riops));
  json_object_object_add(o, "wiops", jnum(r->wiops));
  json_object_object_add(o, "stall", r->stall < 0 ? NULL : jnum(r->stall));
  return o;
}

struct json_object *monitor_pod_json(struct monitor *m, const char *uid, ioq_err *e) {
  if (!m)
    return ioq_fail(e, IOQ_EUNSUPPORTED, "the grant monitor is off (monitor.enable: false)"), NULL;
  pthread_mutex_lock(&m->mu);
  struct mon_pod *pp = find_pod(m, uid);
  if (!pp) {
    pthread_mutex_unlock(&m->mu);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s is not monitored (no grant in place on this node)",
                    uid), NULL;
  }
  double now = ioq_mono_s(), wall = wall_now();
  json_object *o = json_object_new_object();
  json_object_object_add(o, "uid", json_object_new_string(pp->uid));
  json_object_object_add(o, "namespace", json_object_new_string(pp->ns));
  json_object_object_add(o, "name", json_object_new_string(pp->name));
  json_object_object_add(o, "cgroup", json_object_new_string(pp->cgroup));
  const struct ioq_config *c = plugin_cfg(m->p);
  json_object_object_add(o, "intervalSeconds", json_object_new_int((int)c->monitor.interval_s));
  json_object_object_add(o, "starvedWindowSeconds",
                         json_object_new_int((int)c->monitor.starved_window_s));
  json_object *disks = json_object_new_array();
  for (size_t k = 0; k < pp->n; k++) {
    struct mon_slot *s = &pp->s[k];
    json_object *d = json_object_new_object();
    char dev[32];
    snprintf(dev, sizeof dev, "%u:%u", s->dev.major, s->dev.minor);
    json_object_object_add(d, "disk", json_object_new_string(s->disk));
    json_object_object_add(d, "dev", json_object_new_string(dev));
    json_object *g = json_object_new_object();
    json_object_object_add(g, "rbps", json_object_new_uint64(s->grant.rbps));
    json_object_object_add(g, "wbps", json_object_new_uint64(s->grant.wbps));
    json_object_object_add(g, "riops", json_object_new_uint64(s->grant.riops));
    json_object_object_add(g, "wiops", json_object_new_uint64(s->grant.wiops));
    json_object_object_add(d, "grant", g);
    json_object_object_add(d, "verdict", json_object_new_string(monitor_verdict_name(s->verdict)));
    if (s->track.verdict_since > 0)
      json_object_object_add(d, "verdictSince", jtime(wall - (now - s->track.verdict_since)));
    if (s->track.starved_since > 0)
      json_object_object_add(d, "starvedSince", jtime(wall - (now - s->track.starved_since)));
    if (s->have_rates) {
      json_object *l = jrates(&s->rates);
      json_object_object_add(l, "intervalSeconds", jnum(s->interval_s));
      json_object_object_add(d, "last", l);
    }
    struct mon_disk *md = find_disk(m, s->disk);
    if (md && md->cur.known) {
      json_object *x = json_object_new_object();
      json_object_object_add(x, "bps", jnum(md->cur.got.bps));
      json_object_object_add(x, "iops", jnum(md->cur.got.iops));
      json_object_object_add(x, "busy", jnum(md->cur.got.busy));
      json_object_object_add(x, "inflight", jnum(md->cur.got.queue));
      json_object_object_add(x, "capacityBps", jnum(md->cur.cap_bps));
      json_object_object_add(x, "capacityIops", jnum(md->cur.cap_iops));
      json_object_object_add(x, "grantedBps", jnum(md->cur.granted_bps));
      json_object_object_add(x, "grantsBps", jnum(md->cur.grants_bps));
      json_object_object_add(x, "contended", json_object_new_string(
          md->cont == IOQ_GM_FULL ? "full" : md->cont == IOQ_GM_BACKLOG ? "backlog" : "no"));
      json_object_object_add(x, "cause", json_object_new_string(ioq_gm_cause_name(md->cause)));
      json_object_object_add(d, "diskNow", x);
    }
    json_object *h = json_object_new_array();
    for (size_t j = 0; j < s->nhist; j++) { /* oldest first */
      const struct mon_hist *e2 = &s->hist[(s->hnext + MON_HISTORY - s->nhist + j) % MON_HISTORY];
      struct ioq_gm_rates r = {e2->rbps, e2->wbps, e2->riops, e2->wiops, e2->stall};
      json_object *x = jrates(&r);
      json_object_object_add(x, "time", jtime(e2->wall));
      json_object_object_add(x, "verdict", json_object_new_string(monitor_verdict_name(e2->verdict)));
      json_object_array_add(h, x);
    }
    json_object_object_add(d, "history", h);
    json_object_array_add(disks, d);
  }
  json_object_object_add(o, "disks", disks);
  json_object *evs = json_object_new_array();
  for (size_t j = 0; j < pp->nev; j++) {
    const struct mon_event *ev = &pp->ev[(pp->evnext + MON_EVENTS - pp->nev + j) % MON_EVENTS];
    json_object *x = json_object_new_object();
    json_object_object_add(x, "time", jtime(ev->wall));
    json_object_object_add(x, "type", json_object_new_string(ev->type));
    json_object_object_add(x, "reason", json_object_new_string(ev->reason));
    json_object_object_add(x, "message", json_object_new_string(ev->message));
    json_object_array_add(evs, x);
  }
  json_object_object_add(o, "events", evs);
  json_object_object_add(o, "eventsSuppressed", json_object_new_uint64(pp->rl.suppressed));
  pthread_mutex_unlock(&m->mu);
  return o;
}

/* ---- thread ---- */

static void *mon_main(void *arg) {
  struct monitor *m = arg;
  double next = ioq_mono_s();
  for (;;) {
    /* the node pool in force sets it: taken again for every wait */
    double interval = (double)plugin_cfg(m->p)->monitor.interval_s;
    double now = ioq_mono_s();
    if (now >= next) {
      monitor_pass(m);
      next += interval;
      if (next < ioq_mono_s()) /* a pass longer than the interval: do not catch up */
        next = ioq_mono_s() + interval;
      continue;
    }
    struct pollfd fd = {.fd = m->wake[0], .events = POLLIN};
    int r = poll(&fd, 1, (int)((next - now) * 1000) + 1);
    if (r < 0 && errno != EINTR) {
      ioq_error("grant monitor: poll failed: %s", strerror(errno));
      break;
    }
    if (r > 0)
      break; /* monitor_stop */
  }
  return NULL;
}

static struct monitor *monitor_new(struct plugin *p, ioq_err *e) {
  struct monitor *m = calloc(1, sizeof *m);
  if (!m)
    return ioq_fail(e, ENOMEM, "grant monitor: out of memory allocating the monitor"), NULL;
  m->p = p;
  m->wake[0] = m->wake[1] = -1;
  pthread_mutex_init(&m->mu, NULL);
  pthread_mutex_init(&m->hook_mu, NULL);
  return m;
}

struct monitor *monitor_start(struct plugin *p, ioq_err *e) {
  struct monitor *m = monitor_new(p, e);
  if (!m)
    return NULL;
  if (pipe2(m->wake, O_CLOEXEC) < 0) {
    ioq_fail_errno(e, "grant monitor: pipe");
    monitor_free(m);
    return NULL;
  }
  int r = pthread_create(&m->thread, NULL, mon_main, m);
  if (r != 0) {
    errno = r;
    ioq_fail_errno(e, "grant monitor: thread");
    monitor_free(m);
    return NULL;
  }
  m->running = true;
  ioq_info("grant monitor running interval=%us starved_window=%us event_interval=%us",
           p->cfg.monitor.interval_s, p->cfg.monitor.starved_window_s,
           p->cfg.monitor.event_interval_s);
  return m;
}

void monitor_stop(struct monitor *m) {
  if (!m || !m->running)
    return;
  if (write(m->wake[1], "q", 1) < 0)
    ioq_warn("grant monitor: stop not delivered: %s", strerror(errno));
  pthread_join(m->thread, NULL);
  m->running = false;
}

void monitor_free(struct monitor *m) {
  if (!m)
    return;
  monitor_stop(m);
  if (m->wake[0] >= 0)
    close(m->wake[0]);
  if (m->wake[1] >= 0)
    close(m->wake[1]);
  for (size_t i = 0; i < m->n; i++)
    free(m->pods[i].s);
  free(m->pods);
  pthread_mutex_destroy(&m->hook_mu);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

/* ---- /metrics ---- */


static void open_pod(FILE *f, const char *name, const struct plugin *p, const struct mon_pod *pp,
                     const struct mon_slot *s) {
  fprintf(f, "%s{node=\"", name);
  metrics_lv(f, p->opts.node_name);
  fputs("\",namespace=\"", f);
  metrics_lv(f, pp->ns);
  fputs("\",pod=\"", f);
  metrics_lv(f, pp->name);
  fputs("\",disk=\"", f);
  metrics_lv(f, s->disk);
  fputc('"', f);
}

static void open_mdisk(FILE *f, const char *name, const struct plugin *p, const struct mon_disk *d) {
  fprintf(f, "%s{node=\"", name);
  metrics_lv(f, p->opts.node_name);
  fputs("\",disk=\"", f);
  metrics_lv(f, d->name);
  fputs("\",class=\"", f);
  metrics_lv(f, d->class_name);
  fputc('"', f);
}

static void open_node(FILE *f, const char *name, const struct plugin *p) {
  fprintf(f, "%s{node=\"", name);
  metrics_lv(f, p->opts.node_name);
  fputc('"', f);
}

void monitor_metrics(struct monitor *m, FILE *f) {
  if (!m)
    return;
  struct plugin *p = m->p;
  pthread_mutex_lock(&m->mu);
  static const struct {
    const char *name, *help;
    bool iops;
  } rate_fam[] = {
      {"ioqos_pod_achieved_bytes_per_second",
       "Bytes per second a granted pod read/wrote on a disk over the monitor's last interval "
       "(compare with ioqos_pod_grant_bytes_per_second, which holds per direction).", false},
      {"ioqos_pod_achieved_iops",
       "I/O operations per second of a granted pod on a disk over the monitor's last interval.", true},
  };
  for (size_t k = 0; k < 2; k++) {
    metrics_head(f, rate_fam[k].name, "gauge", rate_fam[k].help);
    for (size_t i = 0; i < m->n; i++)
      for (size_t d = 0; d < m->pods[i].n; d++) {
        const struct mon_slot *s = &m->pods[i].s[d];
        if (!s->have_rates)
          continue;
        for (int dir = 0; dir < 2; dir++) {
          open_pod(f, rate_fam[k].name, p, &m->pods[i], s);
          fprintf(f, ",direction=\"%s\"} %.6g\n", dir ? "write" : "read",
                  rate_fam[k].iops ? (dir ? s->rates.wiops : s->rates.riops)
                                   : (dir ? s->rates.wbps : s->rates.rbps));
        }
      }
  }
  metrics_head(f, "ioqos_pod_io_stall_ratio", "gauge",
       "Share of the monitor's last interval in which some task of a granted pod waited for I/O "
       "(io.pressure some; no series where unknown: cgroup v1, no PSI).");
  for (size_t i = 0; i < m->n; i++)
    for (size_t d = 0; d < m->pods[i].n; d++) {
      const struct mon_slot *s = &m->pods[i].s[d];
      if (!s->have_rates || s->rates.stall < 0)
        continue;
      open_pod(f, "ioqos_pod_io_stall_ratio", p, &m->pods[i], s);
      fprintf(f, "} %.6g\n", s->rates.stall);
    }
  metrics_head(f, "ioqos_pod_grant_verdict", "gauge",
       "1 for the grant monitor's verdict on a granted pod and disk for the last interval "
       "(idle, within, at-cap, starved, unknown), 0 for the others.");
  for (size_t i = 0; i < m->n; i++)
    for (size_t d = 0; d < m->pods[i].n; d++) {
      const struct mon_slot *s = &m->pods[i].s[d];
      for (int v = 0; v < MON_VERDICTS; v++) {
        open_pod(f, "ioqos_pod_grant_verdict", p, &m->pods[i], s);
        fprintf(f, ",verdict=\"%s\"} %d\n", monitor_verdict_name((enum monitor_verdict)v),
                s->verdict == (enum monitor_verdict)v);
      }
    }
  static const struct {
    const char *name, *help;
  } disk_fam[] = {
      {"ioqos_disk_io_bytes_per_second",
       "Bytes per second a disk with grants delivered to everyone (read + write, block stat) over "
       "the monitor's last interval."},
      {"ioqos_disk_io_iops", "I/O operations per second a disk with grants completed for everyone."},
      {"ioqos_disk_granted_io_bytes_per_second",
       "Bytes per second the granted pods together achieved on a disk (read + write)."},
      {"ioqos_disk_granted_io_iops", "I/O operations per second the granted pods together achieved on a disk."},
  };
  for (size_t k = 0; k < 4; k++) {
    metrics_head(f, disk_fam[k].name, "gauge", disk_fam[k].help);
    for (size_t i = 0; i < m->n_disks; i++) {
      const struct mon_disk *d = &m->disks[i];
      if (!d->seen || !d->cur.known)
        continue;
      double v = k == 0 ? d->cur.got.bps : k == 1 ? d->cur.got.iops
                 : k == 2 ? d->cur.granted_bps : d->cur.granted_iops;
      open_mdisk(f, disk_fam[k].name, p, d);
      fprintf(f, "} %.6g\n", v);
    }
  }
  static const struct {
    const char *name, *help;
  } busy_fam[] = {
      {"ioqos_disk_busy_ratio", "Share of the monitor's last interval the disk had I/O in flight (block stat io_ticks)."},
      {"ioqos_disk_inflight_requests", "Average requests in flight on the disk over the monitor's last interval (block stat time_in_queue)."},
  };
  for (size_t k = 0; k < 2; k++) {
    metrics_head(f, busy_fam[k].name, "gauge", busy_fam[k].help);
    for (size_t i = 0; i < m->n_disks; i++) {
      const struct mon_disk *d = &m->disks[i];
      if (!d->seen || !d->cur.known)
        continue;
      open_mdisk(f, busy_fam[k].name, p, d);
      fprintf(f, "} %.6g\n", k == 0 ? d->cur.got.busy : d->cur.got.queue);
    }
  }
  metrics_head(f, "ioqos_disk_grant_verdict_seconds_total", "counter",
       "Pod-seconds the grant monitor classified granted pods on a disk in each verdict.");
  for (size_t i = 0; i < m->n_disks; i++) {
    const struct mon_disk *d = &m->disks[i];
    if (!d->seen)
      continue;
    for (int v = 0; v < MON_VERDICTS; v++) {
      open_mdisk(f, "ioqos_disk_grant_verdict_seconds_total", p, d);
      fprintf(f, ",verdict=\"%s\"} %.6g\n", monitor_verdict_name((enum monitor_verdict)v),
              d->verdict_s[v]);
    }
  }
  metrics_head(f, "ioqos_monitor_passes_total", "counter", "Passes of the grant monitor.");
  open_node(f, "ioqos_monitor_passes_total", p);
  fprintf(f, "} %llu\n", (unsigned long long)m->passes);
  metrics_head(f, "ioqos_monitor_pass_duration_seconds", "gauge", "Wall time of the grant monitor's last pass.");
  open_node(f, "ioqos_monitor_pass_duration_seconds", p);
  fprintf(f, "} %.6g\n", m->last_pass_s);
  metrics_head(f, "ioqos_monitor_cpu_seconds_total", "counter", "CPU time the grant monitor's passes used.");
  open_node(f, "ioqos_monitor_cpu_seconds_total", p);
  fprintf(f, "} %.6g\n", m->cpu_s);
  metrics_head(f, "ioqos_monitor_pods", "gauge", "Granted pods the grant monitor measures.");
  open_node(f, "ioqos_monitor_pods", p);
  fprintf(f, "} %zu\n", m->n);
  metrics_head(f, "ioqos_monitor_read_failures_total", "counter",
       "io.stat / block stat reads of the grant monitor that failed (pod cgroup gone, ...).");
  open_node(f, "ioqos_monitor_read_failures_total", p);
  fprintf(f, "} %llu\n", (unsigned long long)m->read_fail);
  metrics_head(f, "ioqos_monitor_events_total", "counter",
       "Events the grant monitor posted, by reason.");
  for (int k = 0; k < 3; k++) {
    open_node(f, "ioqos_monitor_events_total", p);
    fprintf(f, ",reason=\"%s\"} %llu\n", g_ev_reason[k], (unsigned long long)m->events[k]);
  }
  metrics_head(f, "ioqos_monitor_events_suppressed_total", "counter",
       "Warnings the grant monitor did not post because of monitor.eventIntervalSeconds, by reason.");
  for (int k = 0; k < 3; k += 2) {
    open_node(f, "ioqos_monitor_events_suppressed_total", p);
    fprintf(f, ",reason=\"%s\"} %llu\n", g_ev_reason[k], (unsigned long long)m->suppressed[k]);
  }
  pthread_mutex_unlock(&m->mu);
}
