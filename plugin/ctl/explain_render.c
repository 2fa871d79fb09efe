// SPDX-License-Identifier: Apache-2.0
#include "explain_render.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- field access (absent or wrong type: a default) ---- */

static json_object *get(json_object *o, const char *k) {
  json_object *v = NULL;
  return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v)
             ? v
             : NULL;
}
static const char *str(json_object *o, const char *k) {
  json_object *v = get(o, k);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}
static const char *dash(const char *s) { return s && *s ? s : "-"; }
static bool has_num(json_object *o, const char *k) {
  json_object *v = get(o, k);
  return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}
static double num(json_object *o, const char *k) {
  json_object *v = get(o, k);
  return has_num(o, k) ? json_object_get_double(v) : 0;
}
static int64_t i64(json_object *o, const char *k) {
  json_object *v = get(o, k);
  return has_num(o, k) ? json_object_get_int64(v) : 0;
}
static bool boolean(json_object *o, const char *k) {
  json_object *v = get(o, k);
  return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}
static size_t alen(json_object *a) {
  return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}
static json_object *at(json_object *a, size_t i) { return json_object_array_get_idx(a, i); }

static void fmt_binary(char *buf, size_t sz, double b, const char *per) {
  static const char *const u[] = {"B", "KiB", "MiB", "GiB"};
  int k = 0;
  while (b >= 1024 && k < 3) {
    b /= 1024;
    k++;
  }
  if (b == (double)(int64_t)b)
    snprintf(buf, sz, "%" PRId64 " %s%s", (int64_t)b, u[k], per);
  else
    snprintf(buf, sz, "%.1f %s%s", b, u[k], per);
}

void explain_fmt_rate(char *buf, size_t sz, double b) { fmt_binary(buf, sz, b, "/s"); }
void explain_fmt_bytes(char *buf, size_t sz, double b) { fmt_binary(buf, sz, b, ""); }

void explain_fmt_time(char *buf, size_t sz, double t, double now) {
  if (t <= 0) {
    snprintf(buf, sz, "-");
    return;
  }
  time_t s = (time_t)t;
  struct tm tm;
  gmtime_r(&s, &tm);
  char ts[32];
  strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%SZ", &tm);
  double ago = now - t;
  if (now <= 0 || ago < 0)
    snprintf(buf, sz, "%s", ts);
  else if (ago < 120)
    snprintf(buf, sz, "%s (%.0fs ago)", ts, ago);
  else if (ago < 7200)
    snprintf(buf, sz, "%s (%.0fm ago)", ts, ago / 60);
  else
    snprintf(buf, sz, "%s (%.0fh ago)", ts, ago / 3600);
}

/* ---- sections ---- */

static void section_pod(FILE *out, json_object *doc, json_object *pod) {
  fprintf(out, "Pod:      %s/%s  uid %s\n", dash(str(pod, "namespace")), dash(str(pod, "name")),
          dash(str(pod, "uid")));
  json_object *req = get(pod, "requested");
  fprintf(out, "          phase %s, QoS %s, ioqos class %s, ioqos.io/disk %s\n",
          dash(str(pod, "phase")), dash(str(pod, "qosClass")), dash(str(pod, "class")),
          dash(str(pod, "diskAnnotation")));
  fprintf(out, "          requests ioqos/bandwidth %" PRId64 ", ioqos/iops %" PRId64 "%s\n",
          i64(req, "ioqos/bandwidth"), i64(req, "ioqos/iops"),
          boolean(pod, "terminating") ? " (terminating)" : "");
  if (*str(pod, "specError"))
    fprintf(out, "          ! %s\n", str(pod, "specError"));
  fprintf(out, "Node:     %s\n", dash(str(doc, "node")));
  if (*str(doc, "note"))
    fprintf(out, "Note:     %s\n", str(doc, "note"));
}

static void section_grants(FILE *out, json_object *doc) {
  json_object *ctrs = get(doc, "containers"), *grants = get(doc, "grants");
  fprintf(out, "\nGrants:\n");
  if (*str(doc, "containersError"))
    fprintf(out, "  (kubelet's pod resources List failed: %s)\n", str(doc, "containersError"));
  else if (!alen(ctrs)) {
    json_object *req = get(get(doc, "pod"), "requested");
    bool asks = i64(req, "ioqos/bandwidth") || i64(req, "ioqos/iops");
    fprintf(out, "  %s\n",
            !asks ? "none: the pod requests no ioqos units (see Node policy below)"
            : boolean(doc, "listedByKubelet")
                ? "kubelet lists no ioqos units for the pod's containers"
                : "kubelet does not list the pod (not admitted on this node yet, or gone)");
  }
  if (alen(ctrs)) {
    fprintf(out, "  %-20s %-8s %-16s %6s  %s\n", "CONTAINER", "KIND", "RESOURCE", "UNITS", "DISK");
    for (size_t i = 0; i < alen(ctrs); i++) {
      json_object *c = at(ctrs, i);
      fprintf(out, "  %-20s %-8s %-16s %6" PRId64 "  %s\n", dash(str(c, "container")),
              dash(str(c, "kind")), dash(str(c, "resource")), i64(c, "units"),
              dash(str(c, "disk")));
    }
  }
  for (size_t i = 0; i < alen(grants); i++) {
    json_object *g = at(grants, i), *u = get(g, "units"), *l = get(g, "limits"),
                *r = get(g, "reason");
    char rb[32], wb[32];
    explain_fmt_rate(rb, sizeof rb, num(l, "rbps"));
    explain_fmt_rate(wb, sizeof wb, num(l, "wbps"));
    fprintf(out, "  disk %s (%s): pod total %" PRId64 " bandwidth + %" PRId64 " iops units",
            dash(str(g, "disk")), dash(str(g, "device")), i64(u, "ioqos/bandwidth"),
            i64(u, "ioqos/iops"));
    if (has_num(g, "diskBandwidthUnits"))
      fprintf(out, " of %" PRId64 " + %" PRId64 " on the disk", i64(g, "diskBandwidthUnits"),
              i64(g, "diskIopsUnits"));
    fputc('\n', out);
    char ri[32] = "max", wi[32] = "max";
    if (i64(l, "riops"))
      snprintf(ri, sizeof ri, "%" PRId64, i64(l, "riops"));
    if (i64(l, "wiops"))
      snprintf(wi, sizeof wi, "%" PRId64, i64(l, "wiops"));
    fprintf(out, "    io.max: rbps %s, wbps %s, riops %s, wiops %s\n", num(l, "rbps") ? rb : "max",
            num(l, "wbps") ? wb : "max", ri, wi);
    fprintf(out, "    why this disk: %s\n", dash(str(r, "summary")));
    json_object *pa = get(r, "preferredAllocation");
    for (size_t k = 0; k < alen(pa); k++)
      if (*str(at(pa, k), "note"))
        fprintf(out, "      %s: %s\n", dash(str(at(pa, k), "resource")), str(at(pa, k), "note"));
    if (has_num(g, "diskBandwidthUnits") && !boolean(g, "diskHealthy"))
      fprintf(out, "    ! disk unhealthy: %s\n", dash(str(g, "diskUnhealthyReason")));
  }
}

static void section_cgroup(FILE *out, json_object *doc) {
  json_object *cg = get(doc, "cgroup");
  fprintf(out, "\nCgroup:   %s\n", *str(cg, "path") ? str(cg, "path") : "(not found)");
  if (*str(cg, "error"))
    fprintf(out, "          ! %s\n", str(cg, "error"));
  if (*str(cg, "how"))
    fprintf(out, "          %s\n", str(cg, "how"));
  fprintf(out, "          kubelet --cgroup-root %s, --cgroup-driver %s\n",
          dash(str(cg, "kubeletCgroupRoot")), dash(str(cg, "driverFlag")));
  if (*str(cg, "enforcedPath") && strcmp(str(cg, "enforcedPath"), str(cg, "path")) != 0)
    fprintf(out, "          ! limits were written to %s\n", str(cg, "enforcedPath"));
}

static void section_files(FILE *out, json_object *doc, double now) {
  json_object *fs = get(doc, "files");
  if (!alen(fs)) {
    if (boolean(doc, "granted"))
      fprintf(out, "\nFiles:    (no record of the writes yet)\n");
    return;
  }
  fprintf(out, "\nFiles (written -> read back):\n");
  for (size_t i = 0; i < alen(fs); i++) {
    json_object *f = at(fs, i);
    char w[64], v[64];
    explain_fmt_time(w, sizeof w, num(f, "writtenAt"), now);
    explain_fmt_time(v, sizeof v, num(f, "verifiedAt"), now);
    fprintf(out, "  %s\n", dash(str(f, "path")));
    if (*str(f, "written"))
      fprintf(out, "    wrote \"%s\" at %s\n", str(f, "written"), w);
    else
      fprintf(out, "    (found in place, not written by this plugin run)\n");
    fprintf(out, "    read back \"%s\" at %s\n", str(f, "readBack"), v);
    if (*str(f, "note"))
      fprintf(out, "    note: %s\n", str(f, "note"));
  }
}

/* "12 MiB/s" or "-" for a missing rate */
static void rate_of(char *buf, size_t sz, json_object *o, const char *k) {
  if (has_num(o, k))
    explain_fmt_rate(buf, sz, num(o, k));
  else
    snprintf(buf, sz, "-");
}

/* One disk of the grant monitor's view (plugin/daemon/core/monitor.c). */
static void monitor_disk(FILE *out, json_object *d) {
  json_object *g = get(d, "grant"), *l = get(d, "last"), *x = get(d, "diskNow");
  fprintf(out, "  %s: %s", dash(str(d, "disk")), dash(str(d, "verdict")));
  if (*str(d, "verdictSince"))
    fprintf(out, " since %s", str(d, "verdictSince"));
  if (*str(d, "starvedSince"))
    fprintf(out, " (starved since %s)", str(d, "starvedSince"));
  fputc('\n', out);
  char rb[32], wb[32], gr[32], gw[32];
  rate_of(gr, sizeof gr, g, "rbps");
  rate_of(gw, sizeof gw, g, "wbps");
  if (l) {
    rate_of(rb, sizeof rb, l, "rbps");
    rate_of(wb, sizeof wb, l, "wbps");
    fprintf(out, "    achieved: read %s of %s, write %s of %s, %.0f / %.0f IOPS of %" PRId64
                 " / %" PRId64,
            rb, num(g, "rbps") ? gr : "max", wb, num(g, "wbps") ? gw : "max", num(l, "riops"),
            num(l, "wiops"), i64(g, "riops"), i64(g, "wiops"));
    if (has_num(l, "stall"))
      fprintf(out, "; stalled %.0f%% of the time", 100 * num(l, "stall"));
    fputc('\n', out);
  } else {
    fprintf(out, "    achieved: no complete interval yet (grant read %s, write %s)\n",
            num(g, "rbps") ? gr : "max", num(g, "wbps") ? gw : "max");
  }
  if (x) {
    char db[32], cb[32], gb[32];
    rate_of(db, sizeof db, x, "bps");
    rate_of(cb, sizeof cb, x, "capacityBps");
    rate_of(gb, sizeof gb, x, "grantsBps");
    fprintf(out, "    disk now: %s of %s capacity, busy %.0f%%, contended %s; grants want %s",
            db, cb, 100 * num(x, "busy"), dash(str(x, "contended")), gb);
    if (*str(x, "cause") && strcmp(str(x, "cause"), "none") != 0)
      fprintf(out, "; likely cause: %s", str(x, "cause"));
    fputc('\n', out);
  }
  json_object *h = get(d, "history");
  if (alen(h)) {
    fprintf(out, "    last %zu intervals:", alen(h));
    size_t from = alen(h) > 10 ? alen(h) - 10 : 0;
    if (from)
      fprintf(out, " ...");
    for (size_t k = from; k < alen(h); k++)
      fprintf(out, " %s", dash(str(at(h, k), "verdict")));
    fputc('\n', out);
  }
}

static void section_monitor(FILE *out, json_object *doc) {
  json_object *m = get(doc, "monitor");
  if (!m)
    return;
  fprintf(out, "\nMonitor:  ");
  if (!boolean(m, "enabled") || !boolean(m, "monitored")) {
    fprintf(out, "%s\n", dash(str(m, "reason")));
    return;
  }
  json_object *disks = get(m, "disks");
  if (has_num(m, "intervalSeconds"))
    fprintf(out, "every %" PRId64 " s; starved for %" PRId64 " s raises IoqosGrantNotMet\n",
            i64(m, "intervalSeconds"), i64(m, "starvedWindowSeconds"));
  else
    fputc('\n', out);
  for (size_t i = 0; i < alen(disks); i++)
    if (json_object_is_type(at(disks, i), json_type_object))
      monitor_disk(out, at(disks, i));
  if (!alen(disks))
    fprintf(out, "  no disk sampled yet\n");
  if (i64(m, "eventsSuppressed"))
    fprintf(out, "  %" PRId64 " Events not posted (rate limit)\n", i64(m, "eventsSuppressed"));
}

static void section_events(FILE *out, json_object *doc, double now) {
  json_object *ev = get(doc, "events");
  fprintf(out, "\nEvents (by this plugin, newest first):%s\n", alen(ev) ? "" : " none");
  for (size_t i = 0; i < alen(ev); i++) {
    json_object *e = at(ev, i);
    char t[64];
    explain_fmt_time(t, sizeof t, num(e, "last"), now);
    fprintf(out, "  %s  %-7s %s", t, dash(str(e, "type")), dash(str(e, "reason")));
    if (i64(e, "count") > 1)
      fprintf(out, " (x%" PRId64 ")", i64(e, "count"));
    if (boolean(e, "dropped"))
      fprintf(out, " (not posted: queue full)");
    fprintf(out, "\n    %s\n", dash(str(e, "message")));
  }
}

static void section_policy(FILE *out, json_object *doc) {
  json_object *np = get(doc, "nodePolicy"), *w = get(np, "qosClassWeights"),
              *ic = get(np, "iocost"), *ug = get(np, "ungranted"), *pod = get(ug, "pod");
  bool granted = boolean(doc, "granted");
  fprintf(out, "\nNode policy%s:\n", granted ? "" : " (this pod has no grant)");
  if (!boolean(ug, "enable")) {
    fprintf(out, "  pods without a grant: not bounded (nodePolicy.ungranted.enable: false)\n");
  } else {
    fprintf(out, "  pods without a grant: bounded to the disk's pool, re-split every %" PRId64
                 " ms by demand\n",
            i64(ug, "intervalMs"));
    if (boolean(ug, "lend"))
      fprintf(out, "  idle grants: lent to the pool, taken back when used (lenders sampled every %" PRId64
                   " ms)\n",
              i64(ug, "lendSampleMs"));
    const char *burst = str(ug, "burst"), *ann = str(ug, "burstAnnotation");
    if (!strcmp(burst, "all"))
      fprintf(out, "  burst: every granted pod may use idle capacity above its grant, after the pods "
                   "without a grant (nodePolicy.ungranted.burst: all)\n");
    else if (!strcmp(burst, "annotated"))
      fprintf(out, "  burst: granted pods annotated %s: \"true\" may use idle capacity above their grant "
                   "(nodePolicy.ungranted.burst: annotated); this pod %s\n",
              "ioqos.io/burst",
              !strcmp(ann, "true")      ? "is annotated"
              : !strcmp(ann, "invalid") ? "has the annotation with a value other than \"true\" or "
                                          "\"false\": it does not burst"
                                        : "is not annotated");
    else if (!strcmp(ann, "true") || !strcmp(ann, "invalid"))
      fprintf(out, "  burst: off on this node (nodePolicy.ungranted.burst: off): the pod's ioqos.io/burst "
                   "annotation has no effect\n");
    json_object *disks = get(pod, "disks");
    for (size_t i = 0; i < alen(disks); i++) {
      json_object *d = at(disks, i);
      char pb[32], cb[32], mb[32];
      explain_fmt_rate(pb, sizeof pb, num(d, "poolBytesPerSec"));
      explain_fmt_rate(cb, sizeof cb, num(d, "capBytesPerSec"));
      explain_fmt_rate(mb, sizeof mb, num(d, "measuredBytesPerSec"));
      fprintf(out, "  %s: ", dash(str(d, "disk")));
      if (!boolean(d, "active")) {
        fprintf(out, "no pod holds units of it: no bound applies\n");
        continue;
      }
      fprintf(out, "pool %s, %" PRId64 " IOPS shared by %" PRId64 " pod(s)", pb,
              i64(d, "poolIops"), i64(d, "podsBounded"));
      if (num(d, "lentBytesPerSec") > 0 || i64(d, "lentIops") > 0) {
        /* the pool is what nobody holds plus what idle grants lend now */
        char lb[32], bb[32];
        explain_fmt_rate(lb, sizeof lb, num(d, "lentBytesPerSec"));
        explain_fmt_rate(bb, sizeof bb, num(d, "poolBaseBytesPerSec"));
        fprintf(out, " (%s nobody holds + %s, %" PRId64 " IOPS lent by idle grants)", bb, lb,
                i64(d, "lentIops"));
      }
      fprintf(out, "; ");
      if (boolean(d, "granted") && (num(d, "lendsBytesPerSec") > 0 || i64(d, "lendsIops") > 0)) {
        char lb[32];
        explain_fmt_rate(lb, sizeof lb, num(d, "lendsBytesPerSec"));
        fprintf(out, "this pod holds a grant here and lends %s, %" PRId64
                     " IOPS of it while idle (taken back when it is used)\n",
                lb, i64(d, "lendsIops"));
      } else if (boolean(d, "granted") && (num(d, "burstBytesPerSec") > 0 || i64(d, "burstIops") > 0)) {
        char xb[32];
        explain_fmt_rate(xb, sizeof xb, num(d, "burstBytesPerSec"));
        fprintf(out, "this pod holds a grant here and bursts %s, %" PRId64
                     " IOPS above it (idle capacity, taken back first)\n",
                xb, i64(d, "burstIops"));
      } else if (boolean(d, "granted"))
        fprintf(out, "this pod holds a grant here%s\n",
                boolean(d, "mayBurst") ? " (may burst above it; not bursting now)" : "");
      else if (boolean(d, "bounded"))
        fprintf(out, "this pod's bound %s, %" PRId64 " IOPS%s%s\n", cb, i64(d, "capIops"),
                has_num(d, "measuredBytesPerSec") ? "; measured " : "",
                has_num(d, "measuredBytesPerSec") ? mb : "");
      else
        fprintf(out, "this pod's bound: none yet\n");
      if (has_num(d, "owesKernelSeconds"))
        fprintf(out, "    its io.max is held (%.1f s so far): after a cut it got through more than its "
                     "limits allow (blk-throttle, Debian's 6.1 kernel), and a write before that is paid "
                     "would let it through again\n",
                num(d, "owesKernelSeconds"));
    }
    if (!granted && pod && !boolean(pod, "podSeen"))
      fprintf(out, "  this pod's cgroup has not been seen by the bounding pass yet\n");
    json_object *pc = get(pod, "pageCache");
    if (pc) {
      char rb[32], hb[32], db[32];
      explain_fmt_bytes(rb, sizeof rb, num(pc, "roomBytes"));
      explain_fmt_bytes(hb, sizeof hb, num(pc, "memoryHighBytes"));
      explain_fmt_bytes(db, sizeof db, num(pc, "dirtyBytes") + num(pc, "writebackBytes"));
      if (!i64(pc, "roomBytes"))
        fprintf(out, "  page cache of pods without a grant: not bounded (nodePolicy.ungranted.pageCacheBytes: 0)\n");
      else if (boolean(pc, "bounded"))
        fprintf(out, "  this pod's page cache: bounded, memory.high %s (its other memory + %s); %s dirty or "
                     "under writeback\n",
                hb, rb, db);
      else if (*str(pc, "note"))
        fprintf(out, "  this pod's page cache: not bounded (%s)\n", str(pc, "note"));
    }
  }
  char wb[32] = "left as is", we[32] = "left as is";
  if (i64(w, "Burstable"))
    snprintf(wb, sizeof wb, "%" PRId64, i64(w, "Burstable"));
  if (i64(w, "BestEffort"))
    snprintf(we, sizeof we, "%" PRId64, i64(w, "BestEffort"));
  const char *qos = str(get(doc, "pod"), "qosClass");
  fprintf(out, "  QoS-class weights (nodePolicy): Burstable %s, BestEffort %s%s%s%s\n", wb, we,
          *qos ? " (this pod: " : "", qos, *qos ? ")" : "");
  fprintf(out, "  iocost: %s\n", boolean(ic, "enable") ? "enabled by the plugin" : "not managed");
}

int explain_render(FILE *out, json_object *doc, char *err, size_t errsz) {
  json_object *pod = get(doc, "pod");
  if (!pod || !json_object_is_type(pod, json_type_object)) {
    snprintf(err, errsz, "the answer is not an explain document (no \"pod\" object)");
    return -1;
  }
  double now = num(doc, "generatedAt");
  section_pod(out, doc, pod);
  section_grants(out, doc);
  section_cgroup(out, doc);
  section_files(out, doc, now);
  section_monitor(out, doc);
  section_events(out, doc, now);
  section_policy(out, doc);
  return 0;
}
