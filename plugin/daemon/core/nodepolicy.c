// SPDX-License-Identifier: Apache-2.0
/* The node policy (config nodePolicy), opt-in and node-wide:
 *  - iocost: io.cost.qos of the root cgroup for every managed disk's leaf
 *    disks (iocost acts on request-based disks), which is what makes
 *    io.weight take effect (cgroup v2 only); with pace, also io.cost.model;
 *  - weights of the Burstable and BestEffort QoS cgroups on every managed
 *    disk (io.weight and io.bfq.weight on v2, blkio.bfq.weight on v1), e.g. a
 *    low BestEffort weight.
 * Applied on every probe (start and each reconcile pass) with the same
 * writers as pod grants: a value in place is not rewritten, each write is
 * read back. A failure is logged once per distinct message and counted. */
#include <stdio.h>
#include <string.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "cgroup/iocost.h"
#include "base/log.h"
#include "base/numconv.h"
#include "grant/pace.h"
#include "cgroup/podcg.h"
#include "support/metrics.h"
#include "nodepolicy.h"
#include "plugin.h"

/* only the reconcile thread (and startup, before it runs) calls in */
static char g_last_err[IOQ_ERR_MSG_MAX];
static bool g_v1_iocost_said;

static void failed(struct plugin *p, const ioq_err *e) {
  metrics_inc(p->metrics, C_POLICY_FAIL);
  if (strcmp(g_last_err, e->msg) != 0)
    ioq_warn("node policy not applied error=\"%s\"", e->msg);
  ioq_copy_trunc(g_last_err, sizeof g_last_err, e->msg);
}

/* nodePolicy.iocost.pace: iocost's model at pace x the disk's capacity, so
 * that iocost (vrate pinned) issues no more than that, spread over its
 * period. A token-bucket disk then never runs dry under the throttled bursts
 * blk-throttle releases once per slice (100 ms on Debian's 6.1 kernels). */
static unsigned apply_pace(struct plugin *p, const struct ioq_config *c, const struct ioq_disk *d) {
  double pace;
  ioq_err e;
  switch (ioq_pace_of(c, p->layout.io_version, d, &pace, &e)) {
  case IOQ_PACE_OFF: return 0;
  case IOQ_PACE_CANNOT: failed(p, &e); return 0;
  case IOQ_PACE_ON: break;
  }
  /* pace is in (0, 1]: the products stay within the capacities */
  struct ioq_iocost_model want = {.bps = ioq_u64_from_double_sat(pace * (double)d->capacity_bw_bytes),
                                  .iops = ioq_u64_from_double_sat(pace * (double)d->capacity_iops)};
  if (!want.bps || !want.iops)
    want.bps = want.iops = 1; /* a disk of a few bytes: the kernel needs > 0 */
  struct ioq_devno dev = {d->leaves[0].major, d->leaves[0].minor};
  bool changed;
  char line[256];
  if (ioq_iocost_model_apply(p->layout.io_root, dev, &want, &changed, line, sizeof line, &e) < 0) {
    ioq_err_prefix(&e, "nodePolicy.iocost.pace on %s", d->leaves[0].name);
    failed(p, &e);
    return 0;
  }
  if (!changed)
    return 0;
  ioq_info(
      "node policy iocost model set disk=%s pace=%.2f pace_from=%s capacity_bytes_per_second=%llu "
      "capacity_iops=%llu file=%s/io.cost.model wrote='%s'",
      d->leaves[0].name, pace,
      c->node_policy.iocost_pace_auto ? "auto:grants+ungranted-pool" : "config",
      (unsigned long long)d->capacity_bw_bytes, (unsigned long long)d->capacity_iops,
      p->layout.io_root, line);
  return 1;
}

static unsigned apply_iocost(struct plugin *p, const struct ioq_config *c,
                             const struct ioq_disk *d) {
  struct ioq_iocost_qos want = {.enable = true, .ctrl_user = c->node_policy.iocost_ctrl_user,
                                .min = c->node_policy.iocost_min, .max = c->node_policy.iocost_max,
                                .latency_us = c->node_policy.iocost_latency_us};
  /* the model before enabling, so iocost starts at the paced rate */
  unsigned writes = apply_pace(p, c, d);
  for (size_t i = 0; i < d->n_leaves; i++) {
    struct ioq_devno dev = {d->leaves[i].major, d->leaves[i].minor};
    bool changed;
    char line[256];
    ioq_err e;
    if (ioq_iocost_qos_apply(p->layout.io_root, dev, &want, &changed, line, sizeof line, &e) < 0) {
      ioq_err_prefix(&e, "nodePolicy.iocost on %s", d->leaves[i].name);
      failed(p, &e);
    } else if (changed) {
      writes++;
      ioq_info("node policy iocost enabled disk=%s file=%s/io.cost.qos wrote='%s'", d->leaves[i].name,
               p->layout.io_root, line);
    }
  }
  return writes;
}

static unsigned apply_qos_weight(struct plugin *p, const struct ioq_inventory *inv,
                                 enum ioq_qos_class qos, unsigned weight) {
  char name[PATH_MAX], dir[PATH_MAX];
  ioq_err e;
  enum ioq_cg_driver drv = p->driver;
  if (drv == IOQ_CG_DRIVER_AUTO &&
      ioq_cg_driver_detect(&p->layout, p->opts.kubelet_cgroup_root, &drv, &e) < 0) {
    ioq_debug("node policy: QoS cgroups not found yet: %s", e.msg);
    return 0;
  }
  if (ioq_qos_cgroup_name(drv, p->opts.kubelet_cgroup_root, qos, name, sizeof name, &e) < 0 ||
      ioq_path_join(dir, sizeof dir, &e, p->layout.io_root, name, NULL) < 0) {
    ioq_err_prefix(&e, "nodePolicy.qosClassWeights.%s", qos == IOQ_QOS_BURSTABLE ? "burstable" : "besteffort");
    failed(p, &e);
    return 0;
  }
  if (!ioq_is_dir(dir)) {
    ioq_debug("node policy: QoS cgroup not there yet (kubelet creates it) dir=%s", dir);
    return 0;
  }
  struct ioq_cg cg;
  if (ioq_cg_open(dir, p->layout.io_version, &cg, &e) < 0) {
    failed(p, &e);
    return 0;
  }
  struct ioq_apply_opts o = {.sysfs_root = p->opts.sysfs_root};
  unsigned writes = 0;
  for (size_t i = 0; i < inv->n; i++) {
    const struct ioq_disk *d = &inv->disks[i];
    for (size_t k = 0; k < d->n_leaves; k++) {
      struct ioq_disk_setting s = {
          .dev = {d->leaves[k].major, d->leaves[k].minor},
          .weight = p->layout.io_version == IOQ_CGV2 ? weight : 0,
          .bfq_weight = strcmp(d->leaves[k].scheduler, "bfq") == 0 ? (weight > 1000 ? 1000 : weight) : 0,
          .weights_only = true,
      };
      if (!s.weight && !s.bfq_weight)
        continue; /* v1 without BFQ: no weight interface for this disk */
      struct ioq_apply_report rep;
      if (ioq_cg_apply_disk(&cg, &s, &o, &rep, &e) < 0) {
        failed(p, &e);
        continue;
      }
      for (size_t j = 0; j < rep.n; j++)
        if (rep.steps[j].changed) {
          writes++;
          ioq_info("node policy weight set qos=%s disk=%s file=%s/%s wrote='%s' readback='%s' "
                   "note=\"%s\"",
                   ioq_qos_name(qos), d->leaves[k].name, dir, rep.steps[j].file,
                   rep.steps[j].written, rep.steps[j].readback, rep.steps[j].note);
        }
    }
  }
  return writes;
}

unsigned nodepolicy_apply(struct plugin *p, const struct ioq_config *c,
                          const struct ioq_inventory *inv) {
  unsigned writes = 0;
  if (c->node_policy.iocost_enable) {
    if (p->layout.io_version != IOQ_CGV2) {
      if (!g_v1_iocost_said)
        ioq_warn("nodePolicy.iocost ignored: iocost is part of cgroup v2 and this node uses %s",
                 p->layout.description);
      g_v1_iocost_said = true;
    } else {
      for (size_t i = 0; i < inv->n; i++)
        writes += apply_iocost(p, c, &inv->disks[i]);
    }
  }
  if (c->node_policy.weight_burstable)
    writes += apply_qos_weight(p, inv, IOQ_QOS_BURSTABLE, c->node_policy.weight_burstable);
  if (c->node_policy.weight_besteffort)
    writes += apply_qos_weight(p, inv, IOQ_QOS_BESTEFFORT, c->node_policy.weight_besteffort);
  for (unsigned i = 0; i < writes; i++)
    metrics_inc(p->metrics, C_POLICY_WRITES);
  return writes;
}
