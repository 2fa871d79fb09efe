// SPDX-License-Identifier: Apache-2.0
/* Prometheus text exposition (format 0.0.4) of the daemon's state, and the
 * health/readiness verdicts. Gauges are read live at scrape time.
 *
 * Conventions (docs/operations.md "Metrics conventions"): every ioqos_ series
 * carries node="NODE_NAME"; quantities are in base units named by the suffix
 * (_bytes_per_second, _iops, _bytes, _seconds), never in ioqos units, so a
 * metric never mixes bandwidth and IOPS; every per-disk series carries the
 * same labels (node, disk, class) so ratios between them match one to one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubelet/dradriver.h"
#include "kubelet/endpoint.h"
#include "state/catalog.h"
#include "state/listview.h"
#include "core/podtable.h"
#include "support/grpcs.h"
#include "httpd.h"
#include "base/buildinfo.h"
#include "cgroup/cgwrite.h"
#include "dra/draslice.h"
#include "base/monoclock.h"
#include "grant/placement.h"
#include "base/procstat.h"
#include "support/metrics.h"
#include "support/promtext.h"
#include "metrics_monitor.h"
#include "plugin.h"
#include "state/podcache.h"
#include "core/ungranted.h"

/* NAME{node="N" — the caller adds labels with lbl() and ends with val() */
static void open_s(FILE *f, const char *name, const struct plugin *p) {
  fprintf(f, "%s{node=\"", name);
  metrics_lv(f, p->opts.node_name);
  fputc('"', f);
}

static void lbl(FILE *f, const char *key, const char *value) {
  fprintf(f, ",%s=\"", key);
  metrics_lv(f, value);
  fputc('"', f);
}

static void val(FILE *f, unsigned long long v) { fprintf(f, "} %llu\n", v); }

/* the per-disk label set shared by every per-disk family */
static void open_disk(FILE *f, const char *name, const struct plugin *p, const struct cat_disk *cd) {
  open_s(f, name, p);
  lbl(f, "disk", cd->disk.dev.name);
  lbl(f, "class", cd->disk.class_name);
}

/* Each resource has families of its own, named by its base unit: a value is
 * ioqos units x the configured unit size. */
static const char *const g_res_suffix[IOQ_RES_COUNT] = {"bytes_per_second", "iops"};
static const char *const g_res_name[IOQ_RES_COUNT] = {"bandwidth", "IOPS"};

static void disks(FILE *f, struct plugin *p, const struct cat_disk *cd, size_t n) {
  metrics_head(f, "ioqos_disk_info", "gauge",
       "1 per managed disk; dev is the throttled device (major:minor).");
  for (size_t i = 0; i < n; i++) {
    open_disk(f, "ioqos_disk_info", p, &cd[i]);
    fprintf(f, ",dev=\"%u:%u\"", cd[i].dev.major, cd[i].dev.minor);
    val(f, 1);
  }
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    char name[64], help[160];
    snprintf(name, sizeof name, "ioqos_disk_capacity_%s", g_res_suffix[r]);
    snprintf(help, sizeof help,
             "Allocatable %s of a managed disk: the units it advertises x the unit size.",
             g_res_name[r]);
    metrics_head(f, name, "gauge", help);
    for (size_t i = 0; i < n; i++) {
      open_disk(f, name, p, &cd[i]);
      val(f, cd[i].units[r] * p->cfg.units.size[r]);
    }
    snprintf(name, sizeof name, "ioqos_disk_allocated_%s", g_res_suffix[r]);
    snprintf(help, sizeof help,
             "%s of a disk held by pods (kubelet's pod resources List), in the same unit as "
             "ioqos_disk_capacity_%s.", g_res_name[r], g_res_suffix[r]);
    metrics_head(f, name, "gauge", help);
    for (size_t i = 0; i < n; i++) {
      uint64_t al[IOQ_RES_COUNT];
      listview_allocated(p->table, cd[i].disk.dev.name, al);
      open_disk(f, name, p, &cd[i]);
      val(f, al[r] * p->cfg.units.size[r]);
    }
  }
  metrics_head(f, "ioqos_disk_healthy", "gauge", "1 if the disk's units are Healthy.");
  for (size_t i = 0; i < n; i++) {
    open_disk(f, "ioqos_disk_healthy", p, &cd[i]);
    val(f, cd[i].healthy ? 1 : 0);
  }
  metrics_head(f, "ioqos_disk_capability", "gauge", "1 for each capability the probe found on a disk.");
  for (size_t i = 0; i < n; i++)
    for (unsigned b = 0; b < IOQ_CAP_COUNT_; b++) {
      const char *name = ioq_cap_name(1u << b);
      if (!name)
        continue;
      open_disk(f, "ioqos_disk_capability", p, &cd[i]);
      lbl(f, "capability", name);
      val(f, (cd[i].disk.caps & (1u << b)) ? 1 : 0);
    }
  metrics_head(f, "ioqos_disk_capacity_error", "gauge",
       "1 if the disk's capacity source is broken (corrupt calibration entry, bad io.cost.model "
       "line): the disk is Unhealthy, the others keep serving.");
  for (size_t i = 0; i < n; i++) {
    open_disk(f, "ioqos_disk_capacity_error", p, &cd[i]);
    val(f, cd[i].disk.fault[0] ? 1 : 0);
  }
  struct ioq_select_fault *sf;
  size_t nf = catalog_faults(p->catalog, &sf);
  metrics_head(f, "ioqos_disk_select_errors", "gauge",
       "Configured disk selectors that give no disk (1 per selector; the log and a node Event say why).");
  for (size_t i = 0; i < nf; i++) {
    open_s(f, "ioqos_disk_select_errors", p);
    lbl(f, "select", sf[i].select);
    val(f, 1);
  }
  free(sf);
}

/* Per-pod series exist only for pods holding a grant on this node (bounded by
 * the node's pod count x IOQ_POD_DISKS_MAX). */
static void pods(FILE *f, struct plugin *p) {
  struct applied_pod *ap;
  size_t n = podtable_snapshot(p->table, &ap);
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    char name[64], help[128];
    snprintf(name, sizeof name, "ioqos_pod_grant_%s", g_res_suffix[r]);
    snprintf(help, sizeof help, "%s granted to a pod on a disk (pod-level total, units x unit size).",
             g_res_name[r]);
    metrics_head(f, name, "gauge", help);
    for (size_t i = 0; i < n; i++)
      for (size_t d = 0; d < ap[i].grant.n; d++) {
        open_s(f, name, p);
        lbl(f, "namespace", ap[i].ns);
        lbl(f, "pod", ap[i].name);
        lbl(f, "disk", ap[i].grant.disks[d].disk);
        val(f, ap[i].grant.disks[d].units[r] * p->cfg.units.size[r]);
      }
  }
  metrics_head(f, "ioqos_pod_io_bytes_total", "counter",
       "Bytes a granted pod read/wrote on a disk (io.stat, or v1 blkio.throttle stats).");
  metrics_head(f, "ioqos_pod_io_operations_total", "counter", "I/O operations of a granted pod on a disk.");
  struct ioq_iostat st[64];
  for (size_t i = 0; i < n; i++) {
    struct ioq_cg cg;
    size_t ns = 0;
    if (ioq_cg_open(ap[i].cgroup, ap[i].version, &cg, NULL) < 0 ||
        ioq_cg_read_iostat(&cg, st, sizeof st / sizeof st[0], &ns, NULL) < 0)
      continue;
    for (size_t d = 0; d < ap[i].grant.n; d++)
      for (size_t k = 0; k < ns; k++) {
        if (!ioq_devno_eq(st[k].dev, ap[i].devs[d]))
          continue;
        const struct {
          const char *metric, *dir;
          uint64_t v;
        } vals[] = {{"ioqos_pod_io_bytes_total", "read", st[k].rbytes},
                    {"ioqos_pod_io_bytes_total", "write", st[k].wbytes},
                    {"ioqos_pod_io_operations_total", "read", st[k].rios},
                    {"ioqos_pod_io_operations_total", "write", st[k].wios}};
        for (size_t v = 0; v < 4; v++) {
          open_s(f, vals[v].metric, p);
          lbl(f, "namespace", ap[i].ns);
          lbl(f, "pod", ap[i].name);
          lbl(f, "disk", ap[i].grant.disks[d].disk);
          lbl(f, "direction", vals[v].dir);
          val(f, vals[v].v);
        }
      }
  }
  free(ap);
}

static void counters(FILE *f, struct plugin *p) {
  struct metrics_snapshot *s = malloc(sizeof *s);
  if (!s)
    return;
  metrics_snapshot(p->metrics, s);
  static const char *const code_names[RPC_CODES] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
      "UNAUTHENTICATED"};
  metrics_head(f, "ioqos_rpc_requests_total", "counter", "Device plugin RPCs answered, by status code.");
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    for (int m = 0; m < RPC_METHOD_COUNT_; m++)
      for (int c = 0; c < RPC_CODES; c++)
        if (s->rpc[r][m].codes[c]) {
          open_s(f, "ioqos_rpc_requests_total", p);
          lbl(f, "resource", ioq_resource_name(r));
          lbl(f, "method", rpc_method_name(m));
          lbl(f, "code", code_names[c]);
          val(f, s->rpc[r][m].codes[c]);
        }
  metrics_head(f, "ioqos_rpc_duration_seconds", "histogram",
       "Time from receiving an RPC to sending its answer (ListAndWatch: the first list).");
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    for (int m = 0; m < RPC_METHOD_COUNT_; m++) {
      const struct ioq_histogram *h = &s->rpc[r][m].dur;
      if (!h->count)
        continue;
      /* the node name is a validated DNS subdomain (opts.c): nothing to escape */
      char labels[384];
      snprintf(labels, sizeof labels, "node=\"%s\",resource=\"%s\",method=\"%s\"",
               p->opts.node_name, ioq_resource_name(r), rpc_method_name(m));
      ioq_histogram_write(f, "ioqos_rpc_duration_seconds", labels, rpc_bucket_bounds, RPC_BUCKETS,
                          h);
    }
  metrics_head(f, "ioqos_enforcement_errors_total", "counter",
       "Failures to put a pod's grant in place, by reason.");
  for (int r = FAIL_FIRST_; r < FAIL_COUNT_; r++) {
    open_s(f, "ioqos_enforcement_errors_total", p);
    lbl(f, "reason", fail_reason_name(r));
    val(f, s->errors[r]);
  }

  static const struct {
    enum counter c;
    const char *name, *help;
    bool per_res;
  } plain[] = {
      {C_ENFORCE_OK, "ioqos_prestart_enforced_total", "PreStartContainer calls that put a grant in place and verified it.", false},
      {C_FAIL_OPEN, "ioqos_prestart_fail_open_total", "PreStartContainer failures let through because enforcement.failOpen is set.", false},
      {C_DRIFT_FIXED, "ioqos_drift_corrections_total", "Reconcile passes that found a pod's cgroup values changed and rewrote them.", false},
      {C_PODS_RELEASED, "ioqos_pods_released_total", "Pods whose limits were cleared because kubelet no longer lists them.", false},
      {C_RECONCILE_OK, "ioqos_reconcile_ok_total", "Reconcile passes where every listed pod's grant is in place.", false},
      {C_RECONCILE_FAIL, "ioqos_reconcile_failed_total", "Reconcile passes that could not list pod resources or left a pod without its grant.", false},
      {C_KUBELET_RESTARTS, "ioqos_kubelet_restarts_total", "kubelet restarts seen (kubelet.sock re-created).", false},
      {C_PUBLISH_OK, "ioqos_node_annotation_publishes_total", "Node annotation patches the API server accepted.", false},
      {C_PUBLISH_FAIL, "ioqos_node_annotation_publish_errors_total", "Node annotation patches that failed (retried with backoff).", false},
      {C_EVENTS_OK, "ioqos_events_posted_total", "Kubernetes Events posted.", false},
      {C_EVENTS_FAIL, "ioqos_event_post_errors_total", "Kubernetes Events the API server did not take.", false},
      {C_EVENTS_DROPPED, "ioqos_events_dropped_total", "Events dropped (queue full or shutting down).", false},
      {C_PROBES, "ioqos_disk_probes_total", "Disk inventory probes.", false},
      {C_PROBE_FAIL, "ioqos_disk_probe_errors_total", "Disk inventory probes that failed.", false},
      {C_POLICY_WRITES, "ioqos_node_policy_writes_total", "Kernel files the node policy (nodePolicy: iocost, QoS-class weights) changed.", false},
      {C_POLICY_FAIL, "ioqos_node_policy_errors_total", "Node policy settings that could not be put in place.", false},
      {C_UG_WRITES, "ioqos_ungranted_writes_total", "io.max writes that placed or moved a bound of a pod without a grant.", false},
      {C_UG_FAIL, "ioqos_ungranted_failures_total", "Bounds of pods without a grant that could not be put in place.", false},
      {C_HTTP_DEADLINE_CUTS, "ioqos_http_deadline_closed_total", "HTTP connections closed because a request ran past --http-request-timeout (slow or stuck clients).", false},
      {C_LIMIT_DRIFT, "ioqos_limit_drift_total", "Limits of a granted pod found changed outside ioqos and rewritten by reconcile (file, device, old and new value in the log and an IoqosLimitDrift Event), by resource.", true},
      {C_RESPLITS, "ioqos_direction_resplits_total", "Combined-direction grants (enforcement.combinedDirections): read/write re-splits written, by resource.", true},
      {C_RESPLIT_FAIL, "ioqos_direction_resplit_errors_total", "Combined-direction re-splits that could not be written, by resource.", true},
      {C_DRA_PREPARED, "ioqos_dra_claims_prepared_total", "DRA mode: claims prepared (grant written into the pod cgroup and read back).", false},
      {C_DRA_PREPARE_FAIL, "ioqos_dra_claim_prepare_errors_total", "DRA mode: claims refused or not put in place at NodePrepareResources (kubelet retries the pod).", false},
      {C_DRA_UNPREPARED, "ioqos_dra_claims_unprepared_total", "DRA mode: claims unprepared (their limits cleared).", false},
      {C_DRA_UNPREPARE_FAIL, "ioqos_dra_claim_unprepare_errors_total", "DRA mode: claims whose limits could not be cleared at NodeUnprepareResources (kubelet retries).", false},
      {C_DRA_SLICE_WRITES, "ioqos_dra_resourceslice_writes_total", "DRA mode: ResourceSlice creates, updates and deletes the API server accepted.", false},
      {C_DRA_SLICE_FAIL, "ioqos_dra_resourceslice_errors_total", "DRA mode: ResourceSlice publishing attempts that failed (retried).", false},
      {C_DRA_RECOVERED, "ioqos_dra_claims_recovered_total", "DRA mode: prepared claims the state file did not hold, found again from the API server at start.", false},
      {C_NVMET_WRITES, "ioqos_nvmet_writes_total", "NVMe-oF namespaces (config nvmet): kernel files written (namespace cgroup limits, cgroup_id).", false},
      {C_NVMET_FAIL, "ioqos_nvmet_errors_total", "NVMe-oF namespaces (config nvmet): probes and settings that failed (retried every pass).", false},
      {C_REGISTER_OK, "ioqos_kubelet_registrations_total", "Successful Register calls to kubelet.", true},
      {C_REGISTER_FAIL, "ioqos_kubelet_registration_errors_total", "Failed Register calls to kubelet (retried with backoff).", true},
      {C_RESERVES, "ioqos_socket_reserves_total", "Times our socket was deleted (kubelet restart) and served again.", true},
  };
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    metrics_head(f, plain[i].name, "counter", plain[i].help);
    if (!plain[i].per_res) {
      open_s(f, plain[i].name, p);
      val(f, s->counters[plain[i].c]);
      continue;
    }
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      open_s(f, plain[i].name, p);
      lbl(f, "resource", ioq_resource_name(r));
      val(f, s->per_res[plain[i].c][r]);
    }
  }
  free(s);
}

/* The pool of pods without a grant, per disk; same label set as the disk's
 * capacity so "pool / capacity" matches. */
static void ungranted(FILE *f, struct plugin *p, const struct cat_disk *cd, size_t ncd) {
  struct ungranted_disk_stat st[16];
  struct ungranted_totals t;
  size_t n = ungranted_stats(p->ug, st, 16, &t);
  static const struct {
    const char *name, *help;
  } g[] = {
      {"ioqos_ungranted_pool_bytes_per_second",
       "Bandwidth shared by the pods without a grant on a disk (0 while no pod holds units there)."},
      {"ioqos_ungranted_pool_iops", "IOPS shared by the pods without a grant on a disk (0: not bounded in IOPS)."},
      {"ioqos_ungranted_pods", "Pods without a grant bounded on a disk now."},
      {"ioqos_ungranted_lent_bytes_per_second",
       "Bandwidth of grants their pods do not use, lent to the pods without a grant on a disk now (part of the pool)."},
      {"ioqos_ungranted_lent_iops", "IOPS of grants lent to the pods without a grant on a disk now (part of the pool)."},
      {"ioqos_ungranted_burst_bytes_per_second",
       "Bandwidth granted pods may use above their grants on a disk now (opt-in burst, out of the pool)."},
      {"ioqos_ungranted_burst_iops", "IOPS granted pods may use above their grants on a disk now (opt-in burst, out of the pool)."},
      {"ioqos_ungranted_bursting_pods", "Granted pods bursting above their grant on a disk now (opt-in burst)."},
  };
  for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
    metrics_head(f, g[k].name, "gauge", g[k].help);
    for (size_t i = 0; i < n; i++) {
      const char *cls = NULL;
      for (size_t c = 0; c < ncd && !cls; c++)
        if (strcmp(cd[c].disk.dev.name, st[i].disk) == 0)
          cls = cd[c].disk.class_name;
      if (!cls) /* the disk left the catalog between the two snapshots */
        continue;
      const uint64_t vals[] = {st[i].pool_bps,  st[i].pool_iops,  st[i].pods,    st[i].lent_bps,
                               st[i].lent_iops, st[i].burst_bps, st[i].burst_iops, st[i].bursting};
      uint64_t v = vals[k];
      open_s(f, g[k].name, p);
      lbl(f, "disk", st[i].disk);
      lbl(f, "class", cls);
      val(f, v);
    }
  }
  /* the node-wide ones: one value each */
  const struct {
    const char *name, *type, *help;
    uint64_t v;
  } one[] = {
      {"ioqos_ungranted_before_bound_max_bytes", "gauge",
       "Most bytes a pod without a grant did on a disk before its bound was in place.", t.max_bytes_before},
      {"ioqos_ungranted_reclaims_total", "counter",
       "Times lent capacity was taken back between passes because a granted pod woke up.", t.reclaims},
      {"ioqos_ungranted_owe_holds_total", "counter",
       "Times a pod was found to owe the kernel (it got through more than its io.max after a cut, blk-throttle "
       "on Debian's 6.1) and its io.max was held until it paid.",
       t.owe_holds},
      {"ioqos_ungranted_owing_pods", "gauge", "Pods whose io.max is held now because they owe the kernel.",
       (uint64_t)t.owing},
      {"ioqos_ungranted_page_cache_bounded_pods", "gauge",
       "Pods without a grant whose page cache is bounded now (memory.high, nodePolicy.ungranted.pageCacheBytes).",
       t.page_cache_bounded},
      {"ioqos_ungranted_page_cache_writes_total", "counter",
       "memory.high writes that placed, moved or removed the page cache bound of a pod without a grant.",
       t.page_cache_writes},
  };
  for (size_t k = 0; k < sizeof one / sizeof one[0]; k++) {
    metrics_head(f, one[k].name, one[k].type, one[k].help);
    open_s(f, one[k].name, p);
    val(f, one[k].v);
  }
  metrics_head(f, "ioqos_ungranted_reclaim_seconds", "histogram",
               "Time from a lender's last quiet sample to the pool's cuts in place.");
  size_t nb;
  const double *bounds = ungranted_reclaim_bounds(&nb);
  /* the node name is a validated DNS subdomain (opts.c): nothing to escape */
  char labels[320];
  snprintf(labels, sizeof labels, "node=\"%s\"", p->opts.node_name);
  ioq_histogram_write(f, "ioqos_ungranted_reclaim_seconds", labels, bounds, nb, &t.reclaim_s);
}

/* Set by the registrar's checks (registrar.c), in both modes. */
static const char g_registered_help[] =
    "1 while registered with a kubelet that is up (kubelet.sock accepts connections); 0 while "
    "kubelet is down or restarting, or the registration was refused or not made yet.";

static void endpoint_state(FILE *f, struct plugin *p) {
  metrics_head(f, "ioqos_kubelet_registered", "gauge", g_registered_help);
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    open_s(f, "ioqos_kubelet_registered", p);
    lbl(f, "resource", ioq_resource_name(r));
    val(f, atomic_load(&p->ep[r]->registered) ? 1 : 0);
  }
  metrics_head(f, "ioqos_listandwatch_streams", "gauge", "Open ListAndWatch streams.");
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    open_s(f, "ioqos_listandwatch_streams", p);
    lbl(f, "resource", ioq_resource_name(r));
    val(f, endpoint_streams(p->ep[r]));
  }
}

/* DRA mode: one registration, the driver's */
static void driver_state(FILE *f, struct plugin *p) {
  metrics_head(f, "ioqos_kubelet_registered", "gauge", g_registered_help);
  open_s(f, "ioqos_kubelet_registered", p);
  lbl(f, "resource", IOQ_DRA_DRIVER);
  val(f, dradriver_kubelet_registered(p->drad) ? 1 : 0);
}

static void state(FILE *f, struct plugin *p) {
  if (p->opts.mode == PLUGIN_MODE_DEVICE_PLUGIN)
    endpoint_state(f, p);
  else
    driver_state(f, p);
  metrics_head(f, "ioqos_pod_cache_synced", "gauge", "1 once the node's pods were listed from the API server.");
  open_s(f, "ioqos_pod_cache_synced", p);
  val(f, podcache_synced(p->pods) ? 1 : 0);
  metrics_head(f, "ioqos_pod_cache_lists_total", "counter", "Full lists of the node's pods (start, 410 Gone, errors).");
  open_s(f, "ioqos_pod_cache_lists_total", p);
  val(f, podcache_lists(p->pods));
  metrics_head(f, "ioqos_pod_cache_oversized_total", "counter",
       "Pod objects whose fields ioqos reads exceed the per-pod budget (cached by name, never acted on).");
  open_s(f, "ioqos_pod_cache_oversized_total", p);
  val(f, podcache_oversized(p->pods));
}

char *metrics_render(struct plugin *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  struct cat_disk *cd;
  size_t n = catalog_snapshot(p->catalog, &cd);
  disks(f, p, cd, n);
  pods(f, p);
  counters(f, p);
  ungranted(f, p, cd, n);
  metrics_monitor(f, p);
  free(cd);
  state(f, p);
  ioq_build_info_write(f, "ioqos-plugin");
  ioq_procstat_expose(f);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

bool plugin_live(struct plugin *p, char *why, size_t whysz) {
  if (p->opts.mode == PLUGIN_MODE_DRA && !dradriver_live(p->drad, why, whysz))
    return false;
  double now = ioq_mono_s();
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    double t = endpoint_last_tick(p->ep[r]);
    if (t > 0 && now - t > 10) {
      snprintf(why, whysz, "gRPC loop of %s has not run for %.0f s", ioq_resource_name(r), now - t);
      return false;
    }
  }
  why[0] = '\0';
  return true;
}

bool plugin_ready(struct plugin *p, char *why, size_t whysz) {
  if (atomic_load(&p->stopping))
    return snprintf(why, whysz, "shutting down"), false;
  if (!atomic_load(&p->inventory_ok))
    return snprintf(why, whysz, "disk probe has not succeeded yet (no configured disk resolves, "
                                "or no cgroup io hierarchy: see the log and ioqos_disk_select_errors)"), false;
  if (p->opts.mode == PLUGIN_MODE_DRA) {
    if (!dradriver_ready(p->drad, why, whysz))
      return false;
  } else {
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      if (!atomic_load(&p->ep[r]->registered))
        return snprintf(why, whysz, "%s not registered with kubelet", ioq_resource_name(r)), false;
  }
  if (p->pods && !podcache_synced(p->pods))
    return snprintf(why, whysz, "pod cache not synced with the API server"), false;
  if (!atomic_load(&p->first_reconcile_done))
    return snprintf(why, whysz, "grants not rebuilt from pod resources yet"), false;
  why[0] = '\0';
  return true;
}
