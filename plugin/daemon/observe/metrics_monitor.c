// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's /metrics families (metrics_text.c), written from
 * monitor_snapshot: per granted pod and disk the achieved rates, the stall
 * and the verdict; per disk what it delivered and the verdict seconds; the
 * monitor's own cost and Events. */
#include <stdio.h>

#include "base/log.h"
#include "core/monitor.h"
#include "metrics_monitor.h"
#include "plugin.h"
#include "support/promtext.h"

static void open_pod(FILE *f, const char *name, const struct plugin *p,
                     const struct monitor_snap_pod *pp, const struct monitor_snap_slot *s) {
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

static void open_mdisk(FILE *f, const char *name, const struct plugin *p,
                       const struct monitor_snap_disk *d) {
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

void metrics_monitor(FILE *f, struct plugin *p) {
  if (!p->mon)
    return;
  ioq_err e;
  struct monitor_snap *sn = monitor_snapshot(p->mon, NULL, &e);
  if (!sn) {
    ioq_warn("/metrics: no grant monitor series: %s", e.msg);
    return;
  }
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
    for (size_t i = 0; i < sn->n_pods; i++)
      for (size_t d = 0; d < sn->pods[i].n; d++) {
        const struct monitor_snap_slot *s = &sn->pods[i].slots[d];
        if (!s->have_rates)
          continue;
        for (int dir = 0; dir < 2; dir++) {
          open_pod(f, rate_fam[k].name, p, &sn->pods[i], s);
          fprintf(f, ",direction=\"%s\"} %.6g\n", dir ? "write" : "read",
                  rate_fam[k].iops ? (dir ? s->rates.wiops : s->rates.riops)
                                   : (dir ? s->rates.wbps : s->rates.rbps));
        }
      }
  }
  metrics_head(f, "ioqos_pod_io_stall_ratio", "gauge",
       "Share of the monitor's last interval in which some task of a granted pod waited for I/O "
       "(io.pressure some; no series where unknown: cgroup v1, no PSI).");
  for (size_t i = 0; i < sn->n_pods; i++)
    for (size_t d = 0; d < sn->pods[i].n; d++) {
      const struct monitor_snap_slot *s = &sn->pods[i].slots[d];
      if (!s->have_rates || s->rates.stall < 0)
        continue;
      open_pod(f, "ioqos_pod_io_stall_ratio", p, &sn->pods[i], s);
      fprintf(f, "} %.6g\n", s->rates.stall);
    }
  metrics_head(f, "ioqos_pod_grant_verdict", "gauge",
       "1 for the grant monitor's verdict on a granted pod and disk for the last interval "
       "(idle, within, at-cap, starved, unknown), 0 for the others.");
  for (size_t i = 0; i < sn->n_pods; i++)
    for (size_t d = 0; d < sn->pods[i].n; d++) {
      const struct monitor_snap_slot *s = &sn->pods[i].slots[d];
      for (int v = 0; v < MON_VERDICTS; v++) {
        open_pod(f, "ioqos_pod_grant_verdict", p, &sn->pods[i], s);
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
    for (size_t i = 0; i < sn->n_disks; i++) {
      const struct monitor_snap_disk *d = &sn->disks[i];
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
    for (size_t i = 0; i < sn->n_disks; i++) {
      const struct monitor_snap_disk *d = &sn->disks[i];
      if (!d->seen || !d->cur.known)
        continue;
      open_mdisk(f, busy_fam[k].name, p, d);
      fprintf(f, "} %.6g\n", k == 0 ? d->cur.got.busy : d->cur.got.queue);
    }
  }
  metrics_head(f, "ioqos_disk_grant_verdict_seconds_total", "counter",
       "Pod-seconds the grant monitor classified granted pods on a disk in each verdict.");
  for (size_t i = 0; i < sn->n_disks; i++) {
    const struct monitor_snap_disk *d = &sn->disks[i];
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
  fprintf(f, "} %llu\n", (unsigned long long)sn->passes);
  metrics_head(f, "ioqos_monitor_pass_duration_seconds", "gauge", "Wall time of the grant monitor's last pass.");
  open_node(f, "ioqos_monitor_pass_duration_seconds", p);
  fprintf(f, "} %.6g\n", sn->last_pass_s);
  metrics_head(f, "ioqos_monitor_cpu_seconds_total", "counter", "CPU time the grant monitor's passes used.");
  open_node(f, "ioqos_monitor_cpu_seconds_total", p);
  fprintf(f, "} %.6g\n", sn->cpu_s);
  metrics_head(f, "ioqos_monitor_pods", "gauge", "Granted pods the grant monitor measures.");
  open_node(f, "ioqos_monitor_pods", p);
  fprintf(f, "} %zu\n", sn->n_pods);
  metrics_head(f, "ioqos_monitor_read_failures_total", "counter",
       "io.stat / block stat reads of the grant monitor that failed (pod cgroup gone, ...).");
  open_node(f, "ioqos_monitor_read_failures_total", p);
  fprintf(f, "} %llu\n", (unsigned long long)sn->read_fail);
  metrics_head(f, "ioqos_monitor_events_total", "counter",
       "Events the grant monitor posted, by reason.");
  for (int k = 0; k < MONITOR_EV_KINDS; k++) {
    open_node(f, "ioqos_monitor_events_total", p);
    fprintf(f, ",reason=\"%s\"} %llu\n", monitor_event_reason((enum monitor_event_kind)k),
            (unsigned long long)sn->events[k]);
  }
  metrics_head(f, "ioqos_monitor_events_suppressed_total", "counter",
       "Warnings the grant monitor did not post because of monitor.eventIntervalSeconds, by reason.");
  for (int k = 0; k < MONITOR_EV_KINDS; k += 2) { /* NotMet and DiskUnderDelivers */
    open_node(f, "ioqos_monitor_events_suppressed_total", p);
    fprintf(f, ",reason=\"%s\"} %llu\n", monitor_event_reason((enum monitor_event_kind)k),
            (unsigned long long)sn->suppressed[k]);
  }
  monitor_snapshot_free(sn);
}
