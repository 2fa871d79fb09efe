// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's part of the explain document (explain.c), written from
 * monitor_snapshot: per disk the last sample, the verdict and since when, the
 * disk's load now and the recent history; the pod's Events. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/monitor.h"
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

/* the first disk of that name, as the monitor finds it */
static const struct monitor_snap_disk *find_disk(const struct monitor_snap *sn, const char *name) {
  for (size_t i = 0; i < sn->n_disks; i++)
    if (strcmp(sn->disks[i].name, name) == 0)
      return &sn->disks[i];
  return NULL;
}

/* the disk's load in the last interval */
static json_object *disk_now(const struct monitor_snap_disk *md) {
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
  return x;
}

/* one pod on one disk */
static json_object *slot_json(const struct monitor_snap *sn, const struct monitor_snap_slot *s) {
  double now = sn->mono, wall = sn->wall;
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
  if (s->verdict_since > 0)
    json_object_object_add(d, "verdictSince", jtime(wall - (now - s->verdict_since)));
  if (s->starved_since > 0)
    json_object_object_add(d, "starvedSince", jtime(wall - (now - s->starved_since)));
  if (s->have_rates) {
    json_object *l = jrates(&s->rates);
    json_object_object_add(l, "intervalSeconds", jnum(s->interval_s));
    json_object_object_add(d, "last", l);
  }
  const struct monitor_snap_disk *md = find_disk(sn, s->disk);
  if (md && md->cur.known)
    json_object_object_add(d, "diskNow", disk_now(md));
  json_object *h = json_object_new_array();
  for (size_t j = 0; j < s->nhist; j++) { /* oldest first */
    const struct monitor_hist *e2 = &s->hist[j];
    json_object *x = jrates(&e2->rates);
    json_object_object_add(x, "time", jtime(e2->wall));
    json_object_object_add(x, "verdict", json_object_new_string(monitor_verdict_name(e2->verdict)));
    json_object_array_add(h, x);
  }
  json_object_object_add(d, "history", h);
  return d;
}

static json_object *events_json(const struct monitor_snap_pod *pp) {
  json_object *evs = json_object_new_array();
  for (size_t j = 0; j < pp->nevents; j++) { /* oldest first */
    const struct monitor_event *ev = &pp->events[j];
    json_object *x = json_object_new_object();
    json_object_object_add(x, "time", jtime(ev->wall));
    json_object_object_add(x, "type", json_object_new_string(ev->type));
    json_object_object_add(x, "reason", json_object_new_string(ev->reason));
    json_object_object_add(x, "message", json_object_new_string(ev->message));
    json_object_array_add(evs, x);
  }
  return evs;
}

struct json_object *explain_monitor_pod(struct plugin *p, const char *uid, ioq_err *e) {
  struct monitor_snap *sn = monitor_snapshot(p->mon, uid, e);
  if (!sn)
    return NULL;
  if (sn->n_pods == 0) {
    monitor_snapshot_free(sn);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s is not monitored (no grant in place on this node)",
                    uid), NULL;
  }
  const struct monitor_snap_pod *pp = &sn->pods[0];
  json_object *o = json_object_new_object();
  json_object_object_add(o, "uid", json_object_new_string(pp->uid));
  json_object_object_add(o, "namespace", json_object_new_string(pp->ns));
  json_object_object_add(o, "name", json_object_new_string(pp->name));
  json_object_object_add(o, "cgroup", json_object_new_string(pp->cgroup));
  const struct ioq_config *c = plugin_cfg(p);
  json_object_object_add(o, "intervalSeconds", json_object_new_int((int)c->monitor.interval_s));
  json_object_object_add(o, "starvedWindowSeconds",
                         json_object_new_int((int)c->monitor.starved_window_s));
  json_object *disks = json_object_new_array();
  for (size_t k = 0; k < pp->n; k++)
    json_object_array_add(disks, slot_json(sn, &pp->slots[k]));
  json_object_object_add(o, "disks", disks);
  json_object_object_add(o, "events", events_json(pp));
  json_object_object_add(o, "eventsSuppressed", json_object_new_uint64(pp->events_suppressed));
  monitor_snapshot_free(sn);
  return o;
}
