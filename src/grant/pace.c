// SPDX-License-Identifier: Apache-2.0
#include "grant/pace.h"

#include "grant/ungranted.h"

enum ioq_pace_state ioq_pace_of(const struct ioq_config *c, enum ioq_cg_version io_version,
                                const struct ioq_disk *d, double *pace, ioq_err *e) {
  *pace = 0;
  if (!ioq_config_paces(c))
    return IOQ_PACE_OFF;
  if (io_version != IOQ_CGV2) {
    ioq_fail(e, IOQ_EUNSUPPORTED, "nodePolicy.iocost.pace on %s: iocost needs cgroup v2; not paced",
             d->dev.name);
    return IOQ_PACE_CANNOT;
  }
  if (d->n_leaves != 1) {
    /* one model per leaf would need each leaf's share of the capacity */
    ioq_fail(e, IOQ_EUNSUPPORTED,
             "nodePolicy.iocost.pace on %s: it sits on %zu disks and a "
             "per-disk model would need each one's share of the capacity; not paced",
             d->dev.name, d->n_leaves);
    return IOQ_PACE_CANNOT;
  }
  if (!d->capacity_bw_bytes || !d->capacity_iops) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "nodePolicy.iocost.pace on %s: no capacity to pace from (%s)",
             d->dev.name, d->capacity_source);
    return IOQ_PACE_CANNOT;
  }
  /* auto: what grants and the pool of pods without a grant take together,
   * so pacing cuts no one's bound; a number is taken as configured */
  *pace = c->node_policy.iocost_pace_auto
              ? ioq_ug_bounded_fraction(d, &c->units, c->node_policy.ungranted_enable,
                                        c->node_policy.ungranted_headroom_share)
              : c->node_policy.iocost_pace;
  return IOQ_PACE_ON;
}
