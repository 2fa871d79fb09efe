// SPDX-License-Identifier: Apache-2.0
/* The explain document (explain.h). Read-only: lookups in the pod cache, the
 * pod table, the ungranted bounds, the events history and one pod resources
 * List; the cgroup resolver is run again (it only looks). */
#include "state/drastate.h"
#include "state/catalog.h"
#include "core/podtable.h"
#include "support/events.h"
#include "support/filelog.h" /* pt_realtime_now */
#include "explain.h"
#include "explain_ungranted.h"
#include "base/fsutil.h"
#include "base/k8sname.h"
#include "base/log.h"
#include "cgroup/podcg.h"
#include "explain_monitor.h"
#include "plugin.h"
#include "state/podcache.h"
#include "state/podres.h"
#include "state/choices.h"
#include "core/ungranted.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* The pod resources List of one explain request: kubelet answers in
 * milliseconds; the request has --http-request-timeout in all. */
#define EXPLAIN_LIST_TIMEOUT_MS 2000

/* ---- json helpers ---- */

static void add(json_object *o, const char *k, json_object *v) {
  if (o)
    json_object_object_add(o, k, v);
  else
    json_object_put(v);
}
static void push(json_object *a, json_object *v) {
  if (a)
    json_object_array_add(a, v);
  else
    json_object_put(v);
}

/* The helpers skip a NULL object (out of memory: the field is missing, the
 * document still goes out). */
static void put_str(json_object *o, const char *k, const char *v) {
  if (o)
    add(o, k, json_object_new_string(v ? v : ""));
}
static void put_u64(json_object *o, const char *k, uint64_t v) {
  if (o)
    add(o, k, json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v));
}
static void put_bool(json_object *o, const char *k, bool v) {
  if (o)
    add(o, k, json_object_new_boolean(v));
}
static void put_time(json_object *o, const char *k, double t) {
  if (o && t > 0)
    add(o, k, json_object_new_double(t));
}

unsigned explain_error_body(unsigned status, char **body, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_object *o = json_object_new_object();
  *body = NULL;
  if (o) {
    put_str(o, "error", msg);
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    *body = s ? strdup(s) : NULL;
    json_object_put(o);
  }
  return status;
}

/* ---- finding the pod ---- */

static bool find_by_uid(struct plugin *p, const char *uid, struct pod_info *out) {
  struct pod_info *all = NULL;
  size_t n = p->pods ? podcache_snapshot(p->pods, &all) : 0;
  bool found = false;
  for (size_t i = 0; i < n && !found; i++)
    if (strcmp(all[i].uid, uid) == 0) {
      *out = all[i];
      found = true;
    }
  free(all);
  return found;
}

/* ---- sections ---- */

static json_object *pod_section(const struct pod_info *pi) {
  json_object *o = json_object_new_object();
  put_str(o, "namespace", pi->ns);
  put_str(o, "name", pi->name);
  put_str(o, "uid", pi->uid);
  put_str(o, "phase", pi->phase);
  put_str(o, "qosClass", pi->has_qos ? ioq_qos_name(pi->qos) : "");
  put_str(o, "class", pi->need_ok ? pi->need.class_name : "");
  put_str(o, "diskAnnotation", pi->need_ok ? pi->need.disk : "");
  put_bool(o, "terminating", pi->terminating);
  if (pi->oversized)
    put_str(o, "specError", "the pod object is too large for the plugin to read its spec");
  if (!pi->need_ok && !pi->oversized)
    put_str(o, "specError", "the pod's ioqos resources are invalid (see the plugin log)");
  json_object *need = json_object_new_object();
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    put_u64(need, ioq_resource_name((enum ioq_resource)r), pi->need_ok ? pi->need.units[r] : 0);
  add(o, "requested", need);
  return o;
}

/* Units per container, resource and disk from kubelet's List. */
static json_object *containers_section(struct plugin *p, const struct pod_info *pi,
                                       json_object *root) {
  struct podres_list l;
  ioq_err e;
  if (podres_list(p->opts.pod_resources_socket, EXPLAIN_LIST_TIMEOUT_MS, &l, &e) < 0) {
    put_str(root, "containersError", e.msg);
    return NULL;
  }
  json_object *arr = json_object_new_array();
  const struct podres_pod *pr = podres_find_pod(&l, pi->ns, pi->name);
  for (size_t c = 0; arr && pr && c < pr->n_ctrs; c++) {
    const struct podres_ctr *ct = &pr->ctrs[c];
    /* tally (resource, disk) of the container's IDs */
    struct {
      enum ioq_resource r;
      char disk[IOQ_DISK_NAME_MAX + 1];
      uint64_t n;
    } t[2 * IOQ_POD_DISKS_MAX];
    size_t nt = 0;
    for (size_t i = 0; i < ct->n_ids; i++) {
      struct ioq_unit_id u;
      if (ioq_unit_id_parse(ct->ids[i], &u, NULL) < 0)
        continue;
      size_t k = 0;
      while (k < nt && !(t[k].r == u.res && strcmp(t[k].disk, u.disk) == 0))
        k++;
      if (k == nt) {
        if (nt == sizeof t / sizeof t[0])
          continue;
        t[nt].r = u.res;
        ioq_copy_trunc(t[nt].disk, sizeof t[nt].disk, u.disk); /* same-size fields: fits */
        t[nt++].n = 0;
      }
      t[k].n++;
    }
    const char *kind = "app";
    for (size_t k = 0; k < pi->n_ctrs; k++)
      if (strcmp(pi->ctrs[k].name, ct->name) == 0)
        kind = pi->ctrs[k].kind == IOQ_CTR_APP ? "app"
               : pi->ctrs[k].kind == IOQ_CTR_SIDECAR ? "sidecar" : "init";
    for (size_t k = 0; k < nt; k++) {
      json_object *o = json_object_new_object();
      put_str(o, "container", ct->name);
      put_str(o, "kind", kind);
      put_str(o, "resource", ioq_resource_name(t[k].r));
      put_u64(o, "units", t[k].n);
      put_str(o, "disk", t[k].disk);
      push(arr, o);
    }
  }
  put_bool(root, "listedByKubelet", pr != NULL);
  podres_list_free(&l);
  return arr;
}

static const char *how_text(const char *how) {
  if (strcmp(how, "must-include") == 0)
    return "kubelet required units of this disk (must-include)";
  if (strcmp(how, "annotation") == 0)
    return "the pod's ioqos.io/disk annotation names it";
  if (strcmp(how, "placement") == 0)
    return "the placement policy chose it among the disks of the pod's class";
  if (strcmp(how, "largest-free") == 0)
    return "no disk of the pod's class fit; the disk with the most free units";
  if (strcmp(how, "spread") == 0)
    return "no single disk had enough free units; kubelet spread the units";
  return how;
}

/* DRA mode: kube-scheduler chose the disk when it allocated the pod's
 * claims; the reason is the claims' allocation results on it. */
static json_object *dra_reason_of(struct plugin *p, const struct pod_info *pi, const char *disk,
                                  json_object *o) {
  struct dra_rec *recs;
  size_t n = drastate_pod_recs(p->dra, pi->uid, &recs);
  json_object *arr = json_object_new_array();
  char names[400] = "";
  size_t used = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < recs[i].n_shares; k++) {
      const struct dra_share_rec *x = &recs[i].shares[k];
      if (strcmp(x->disk, disk) != 0)
        continue;
      json_object *c = json_object_new_object();
      char who[IOQ_DRA_NS_MAX + IOQ_DRA_OBJ_NAME_MAX + 2];
      snprintf(who, sizeof who, "%s/%s", recs[i].ns, recs[i].name);
      put_str(c, "claim", who);
      put_str(c, "uid", recs[i].claim_uid);
      put_str(c, "request", x->request);
      put_str(c, "device", x->device);
      put_str(c, "shareID", x->share_id);
      put_u64(c, "bandwidthUnits", x->units[IOQ_RES_BANDWIDTH]);
      put_u64(c, "iopsUnits", x->units[IOQ_RES_IOPS]);
      push(arr, c);
      if (used < sizeof names) {
        int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", who);
        used += w > 0 ? (size_t)w : 0;
      }
    }
  free(recs);
  char summary[512];
  snprintf(summary, sizeof summary, "kube-scheduler allocated it to the pod's DRA claim%s %s",
           json_object_array_length(arr) == 1 ? "" : "s", names[0] ? names : "(none recorded)");
  put_str(o, "summary", summary);
  add(o, "claims", arr);
  return o;
}

static json_object *reason_of(struct plugin *p, const struct pod_info *pi, const char *disk,
                              const struct cat_disk *cd) {
  json_object *o = json_object_new_object();
  if (p->dra)
    return dra_reason_of(p, pi, disk, o);
  const char *cls = pi->need_ok ? pi->need.class_name : "default";
  put_str(o, "podClass", cls);
  put_str(o, "diskClass", cd ? cd->disk.class_name : "");
  put_str(o, "annotation", pi->need_ok ? pi->need.disk : "");
  put_str(o, "policy", ioq_policy_name(p->cfg.policy));
  char summary[512];
  if (pi->need_ok && pi->need.disk[0] && strcmp(pi->need.disk, disk) == 0)
    snprintf(summary, sizeof summary,
             "ioqos.io/disk=%s (set by the scheduler extender's bind, or by hand); class %s",
             disk, cls);
  else
    snprintf(summary, sizeof summary, "placement policy %s among the disks of class %s",
             ioq_policy_name(p->cfg.policy), cls);
  json_object *decisions = json_object_new_array();
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    struct choice c;
    if (!choices_find(p->choices, pi->ns, pi->name, (enum ioq_resource)r, disk, &c))
      continue;
    json_object *d = json_object_new_object();
    put_str(d, "resource", ioq_resource_name(c.r));
    put_str(d, "how", c.how);
    put_str(d, "text", how_text(c.how));
    if (c.note[0])
      put_str(d, "note", c.note);
    put_time(d, "at", c.at);
    push(decisions, d);
    if (r == IOQ_RES_BANDWIDTH || json_object_array_length(decisions) == 1)
      snprintf(summary, sizeof summary, "%s (class %s, policy %s)", how_text(c.how), cls,
               ioq_policy_name(p->cfg.policy));
  }
  put_str(o, "summary", summary);
  add(o, "preferredAllocation", decisions);
  return o;
}

static json_object *grants_section(struct plugin *p, const struct pod_info *pi,
                                   const struct applied_pod *ap) {
  json_object *arr = json_object_new_array();
  for (size_t d = 0; ap && d < ap->grant.n; d++) {
    const struct ioq_disk_grant *dg = &ap->grant.disks[d];
    struct cat_disk cd;
    bool known = catalog_get(p->catalog, dg->disk, &cd);
    json_object *o = json_object_new_object();
    put_str(o, "disk", dg->disk);
    char dev[32];
    snprintf(dev, sizeof dev, "%u:%u", ap->devs[d].major, ap->devs[d].minor);
    put_str(o, "device", dev);
    json_object *units = json_object_new_object();
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      put_u64(units, ioq_resource_name((enum ioq_resource)r), dg->units[r]);
    add(o, "units", units);
    /* what the grant was written as (an IOPS-only grant's bandwidth cap
     * included), else what its units alone say */
    struct ioq_io_limits lim = ap->full[d];
    ioq_err e;
    bool have = lim.rbps || lim.riops || ioq_grant_limits(dg, &p->cfg.units, &lim, &e) == 0;
    if (!dg->units[IOQ_RES_BANDWIDTH] && lim.rbps)
      put_bool(o, "bandwidthCapFromIops", true);
    if (have) {
      json_object *l = json_object_new_object();
      for (int k = 0; k < IOQ_LIMIT_KEYS; k++)
        put_u64(l, ioq_limit_key_name((enum ioq_limit_key)k),
                ioq_limits_get(&lim, (enum ioq_limit_key)k));
      add(o, "limits", l);
    }
    if (known) {
      put_u64(o, "diskBandwidthUnits", cd.units[IOQ_RES_BANDWIDTH]);
      put_u64(o, "diskIopsUnits", cd.units[IOQ_RES_IOPS]);
      put_bool(o, "diskHealthy", cd.healthy);
      if (!cd.healthy)
        put_str(o, "diskUnhealthyReason", cd.why);
    }
    add(o, "reason", reason_of(p, pi, dg->disk, known ? &cd : NULL));
    push(arr, o);
  }
  return arr;
}

static json_object *cgroup_section(struct plugin *p, const struct pod_info *pi,
                                   const struct applied_pod *ap) {
  json_object *o = json_object_new_object();
  enum ioq_qos_class qos = pi->has_qos ? pi->qos : IOQ_QOS_BURSTABLE;
  put_str(o, "qosClass", pi->has_qos ? ioq_qos_name(qos) : "");
  put_str(o, "driverFlag", ioq_cg_driver_name(p->opts.cgroup_driver));
  put_str(o, "kubeletCgroupRoot", p->opts.kubelet_cgroup_root);
  put_str(o, "ioHierarchy", p->layout.io_root);
  struct ioq_pod_cgroup pcg;
  ioq_err e;
  if (ioq_pod_cgroup_resolve(&p->layout, p->opts.cgroup_driver, p->opts.kubelet_cgroup_root, qos,
                             pi->uid, &pcg, &e) < 0) {
    put_str(o, "error", e.msg);
  } else {
    put_str(o, "path", pcg.dir);
    put_str(o, "driver", ioq_cg_driver_name(pcg.driver));
    char how[512];
    if (pcg.by_search)
      snprintf(how, sizeof how,
               "not at the path the %s driver derives from QoS class %s and the UID: found by "
               "searching the kubepods subtree for the UID",
               ioq_cg_driver_name(pcg.driver), pi->has_qos ? ioq_qos_name(qos) : "(none)");
    else
      snprintf(how, sizeof how, "derived from QoS class %s and the UID (%s driver%s)",
               pi->has_qos ? ioq_qos_name(qos) : "(none: searched by UID)",
               ioq_cg_driver_name(pcg.driver),
               p->opts.cgroup_driver == IOQ_CG_DRIVER_AUTO ? ", detected" : ", configured");
    put_str(o, "how", how);
  }
  if (ap) {
    put_str(o, "enforcedPath", ap->cgroup);
    put_u64(o, "version", ap->version == IOQ_CGV1 ? 1 : 2);
  }
  return o;
}

static json_object *files_section(struct plugin *p, const struct applied_pod *ap) {
  json_object *arr = json_object_new_array();
  if (!ap)
    return arr;
  struct podtable_file *fs = NULL;
  int n = podtable_pod_files(p->table, ap->uid, &fs);
  for (int i = 0; i < n; i++) {
    json_object *o = json_object_new_object();
    char path[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/%s", ap->cgroup, fs[i].file);
    put_str(o, "path", path);
    put_str(o, "file", fs[i].file);
    put_str(o, "disk", fs[i].disk);
    put_str(o, "written", fs[i].written);
    put_time(o, "writtenAt", fs[i].written_at);
    put_str(o, "readBack", fs[i].readback);
    put_time(o, "verifiedAt", fs[i].verified_at);
    if (fs[i].note[0])
      put_str(o, "note", fs[i].note);
    push(arr, o);
  }
  free(fs);
  return arr;
}

/* The grant monitor's view of the pod (monitor.h), or why there is none. */
static json_object *explain_monitor_json(struct plugin *p, const char *uid) {
  json_object *o = NULL;
  if (p->mon) {
    ioq_err e;
    o = explain_monitor_pod(p, uid, &e);
    if (o) {
      put_bool(o, "enabled", true);
      put_bool(o, "monitored", true);
      return o;
    }
    o = json_object_new_object();
    put_bool(o, "enabled", true);
    put_bool(o, "monitored", false);
    put_str(o, "reason", e.msg);
    return o;
  }
  o = json_object_new_object();
  put_bool(o, "enabled", false);
  put_str(o, "reason", "the grant monitor is off (config monitor.enable: false)");
  return o;
}

static json_object *node_policy_section(struct plugin *p, const struct pod_info *pi) {
  const char *uid = pi->uid;
  const struct ioq_config *c = plugin_cfg(p); /* the node pool's in force: one for the section */
  json_object *o = json_object_new_object();
  json_object *w = json_object_new_object();
  /* 0 = the plugin leaves the QoS cgroup's weight as it is */
  put_u64(w, "Burstable", c->node_policy.weight_burstable);
  put_u64(w, "BestEffort", c->node_policy.weight_besteffort);
  add(o, "qosClassWeights", w);
  json_object *ic = json_object_new_object();
  put_bool(ic, "enable", c->node_policy.iocost_enable);
  if (c->node_policy.iocost_enable) {
    put_str(ic, "ctrl", c->node_policy.iocost_ctrl_user ? "user" : "auto");
    add(ic, "min", json_object_new_double(c->node_policy.iocost_min));
    add(ic, "max", json_object_new_double(c->node_policy.iocost_max));
    put_u64(ic, "latencyUs", c->node_policy.iocost_latency_us);
  }
  add(o, "iocost", ic);
  json_object *ug = json_object_new_object();
  put_bool(ug, "enable", p->cfg.node_policy.ungranted_enable && p->ug); /* fixed at start */
  put_u64(ug, "intervalMs", c->node_policy.ungranted_interval_ms);
  put_bool(ug, "lend", c->node_policy.ungranted_lend);
  put_u64(ug, "lendSampleMs", c->node_policy.ungranted_lend_sample_ms);
  /* the opt-in burst: the policy, and what the pod's annotation says
   * ("invalid": neither true nor false, so it does not count) */
  put_str(ug, "burst", ioq_ug_burst_mode_name(c->node_policy.ungranted_burst));
  put_str(ug, "burstAnnotation", pi->need.burst_invalid ? "invalid" : pi->need.burst ? "true" : "");
  if (p->ug) {
    json_object *pod = explain_ungranted_pod(p->ug, uid);
    if (pod)
      add(ug, "pod", pod);
  }
  add(o, "ungranted", ug);
  return o;
}

/* ---- the document ---- */

static int render(json_object *doc, char **body) {
  const char *s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
  if (!s)
    return -1;
  size_t len = strlen(s);
  if (len > EXPLAIN_BODY_MAX)
    return -2;
  *body = strdup(s);
  return *body ? 0 : -1;
}

unsigned explain_handle(struct plugin *p, const char *pod, const char *uid, char **body) {
  *body = NULL;
  char ns[IOQ_POD_NAMESPACE_MAX + 1] = "", name[IOQ_POD_NAME_MAX + 1] = "";
  if ((pod == NULL) == (uid == NULL))
    return explain_error_body(400, body, "give exactly one of pod=NAMESPACE/NAME or uid=UID");
  if (pod) {
    const char *slash = strchr(pod, '/');
    size_t nl = slash ? (size_t)(slash - pod) : 0;
    if (!slash || nl == 0 || nl > IOQ_POD_NAMESPACE_MAX || strlen(slash + 1) > IOQ_POD_NAME_MAX)
      return explain_error_body(400, body, "pod=%.80s: want NAMESPACE/NAME", pod);
    memcpy(ns, pod, nl);
    ns[nl] = '\0';
    ioq_copy_trunc(name, sizeof name, slash + 1); /* length checked above */
    if (!ioq_k8s_label_valid(ns) || !ioq_k8s_subdomain_valid(name))
      return explain_error_body(400, body, "pod=%.80s: not a Kubernetes namespace/name", pod);
  } else {
    ioq_err e;
    if (ioq_pod_uid_check(uid, &e) < 0)
      return explain_error_body(400, body, "uid=%.80s: %s", uid, e.msg);
  }

  struct pod_info *pi = calloc(1, sizeof *pi);
  if (!pi)
    return explain_error_body(500, body, "out of memory (pod info)");
  bool found;
  char what[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 8];
  /* The pod cache only: it holds this node's pods (list+watch). A GET on a
   * miss would bring in a pod of another node, which the cache must never
   * hold (GetPreferredAllocation picks its candidates there). */
  if (pod) {
    snprintf(what, sizeof what, "%s/%s", ns, name);
    found = p->pods && podcache_peek(p->pods, ns, name, pi);
  } else {
    snprintf(what, sizeof what, "uid %s", uid);
    found = find_by_uid(p, uid, pi);
  }
  if (!found) {
    free(pi);
    if (!p->pods || !podcache_synced(p->pods))
      return explain_error_body(503, body,
                        "pod %s: the plugin has not listed this node's pods from the API server "
                        "yet (starting, or the API server is unreachable: see its log); try again",
                        what);
    return explain_error_body(404, body,
                      "pod %s not found on node %s (the API server lists no such pod here: "
                      "check the name, and the node with `kubectl get pod -o wide`)",
                      what, p->opts.node_name);
  }
  struct applied_pod *aps = NULL, *ap = NULL;
  size_t na = podtable_snapshot(p->table, &aps);
  for (size_t i = 0; i < na && !ap; i++)
    if (strcmp(aps[i].uid, pi->uid) == 0)
      ap = &aps[i];

  json_object *doc = json_object_new_object();
  unsigned status = 200;
  if (!doc) {
    status = explain_error_body(500, body, "out of memory (explanation document)");
    goto out;
  }
  put_str(doc, "apiVersion", "ioqos.io/v1alpha1");
  put_str(doc, "kind", "PodExplanation");
  put_str(doc, "node", p->opts.node_name);
  put_time(doc, "generatedAt", pt_realtime_now());
  add(doc, "pod", pod_section(pi));
  put_bool(doc, "granted", ap && ap->grant.n > 0);
  if (ap && ap->init_unknown)
    put_str(doc, "note",
            "the plugin lost its state file and this Pending pod may hold an init container's "
            "grant: its limits are left as they are until it runs");
  json_object *ctrs = containers_section(p, pi, doc);
  if (ctrs)
    add(doc, "containers", ctrs);
  add(doc, "grants", grants_section(p, pi, ap));
  add(doc, "cgroup", cgroup_section(p, pi, ap));
  add(doc, "files", files_section(p, ap));
  add(doc, "monitor", explain_monitor_json(p, pi->uid));
  json_object *ev = events_recent_json(p->events, pi->ns, pi->name, EXPLAIN_EVENTS_MAX);
  if (ev)
    add(doc, "events", ev);
  add(doc, "nodePolicy", node_policy_section(p, pi));
  int rc = render(doc, body);
  if (rc == -2)
    status = explain_error_body(500, body, "explanation of %s larger than %d bytes", what, EXPLAIN_BODY_MAX);
  else if (rc < 0)
    status = explain_error_body(500, body, "out of memory (explanation body)");
  json_object_put(doc);
out:
  free(aps);
  free(pi);
  return status;
}
