// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's part of the explain document (explain.c): per disk the
 * last sample, the verdict and since when, the recent history, and the pod's
 * Events. */
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "base/monoclock.h"
#include "core/monitor_internal.h"
#include "explain_monitor.h"
#include "plugin.h"

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
  struct mon_pod *pp = mon_find_pod(m, uid);
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
    struct mon_disk *md = mon_find_disk(m, s->disk);
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
