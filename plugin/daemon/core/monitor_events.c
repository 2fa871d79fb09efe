// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's Events (monitor_internal.h): IoqosGrantNotMet and
 * IoqosGrantMet on a pod, IoqosDiskUnderDelivers on the Node, each with its
 * log line, rate-limited per pod and per disk, and kept per pod for explain. */
#include <stdio.h>

#include "support/events.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "monitor_internal.h"
#include "plugin.h"

static const char *const g_ev_reason[MONITOR_EV_KINDS] = {"IoqosGrantNotMet", "IoqosGrantMet",
                                                          "IoqosDiskUnderDelivers"};

const char *monitor_event_reason(enum monitor_event_kind k) {
  return (unsigned)k < MONITOR_EV_KINDS ? g_ev_reason[k] : "unknown";
}

static void remember_event(struct mon_pod *pp, const char *type, const char *reason, const char *msg) {
  struct monitor_event *ev = &pp->ev[pp->evnext];
  ev->wall = wall_now();
  ioq_copy_trunc(ev->type, sizeof ev->type, type); /* shown: the callers' fixed event words */
  ioq_copy_trunc(ev->reason, sizeof ev->reason, reason); /* shown: the callers' fixed event words */
  ioq_copy_trunc(ev->message, sizeof ev->message, msg);
  pp->evnext = (pp->evnext + 1) % MONITOR_EVENTS;
  if (pp->nev < MONITOR_EVENTS)
    pp->nev++;
}

static const char *stall_text(double s, char *buf, size_t n) {
  if (s < 0)
    snprintf(buf, n, "unknown (cgroup v1 or no PSI)");
  else
    snprintf(buf, n, "%.0f%% of the time", s * 100.0);
  return buf;
}

void mon_not_met(struct monitor *m, struct mon_pod *pp, struct mon_slot *s, struct mon_disk *d) {
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
    m->suppressed[MONITOR_EV_NOT_MET]++;
    return;
  }
  m->events[MONITOR_EV_NOT_MET]++;
  remember_event(pp, "Warning", g_ev_reason[MONITOR_EV_NOT_MET], msg);
  events_post(p->events, pp->ns, pp->name, pp->uid, "Warning", g_ev_reason[MONITOR_EV_NOT_MET],
              "%s", msg);
}

void mon_met(struct monitor *m, struct mon_pod *pp, struct mon_slot *s, double starved_s) {
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
  m->events[MONITOR_EV_MET]++;
  remember_event(pp, "Normal", g_ev_reason[MONITOR_EV_MET], msg);
  events_post(p->events, pp->ns, pp->name, pp->uid, "Normal", g_ev_reason[MONITOR_EV_MET],
              "%s", msg);
}

void mon_disk_under(struct monitor *m, struct mon_disk *d, double grants_wanting) {
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
    m->suppressed[MONITOR_EV_DISK]++;
    return;
  }
  m->events[MONITOR_EV_DISK]++;
  events_post(p->events, NULL, NULL, NULL, "Warning", g_ev_reason[MONITOR_EV_DISK],
              "disk %s delivers less than the grants that want it for %us: %.1f MiB/s %.0f IOPS "
              "with the device busy %.0f%% of the time and %.1f requests in flight, while granted "
              "pods starve below grants summing to %.1f MiB/s (capacity %.1f MiB/s %.0f IOPS): the "
              "capacity is probably too high; measure it with `ioqosctl calibrate --disk %s` and "
              "set it (devices[].capacity or calibrationFile)",
              d->name, m->window_s, d->cur.got.bps / MiBf, d->cur.got.iops,
              d->cur.got.busy * 100.0, d->cur.got.queue, grants_wanting / MiBf,
              d->cur.cap_bps / MiBf, d->cur.cap_iops, d->name);
}
