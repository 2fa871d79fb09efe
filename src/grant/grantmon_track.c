// SPDX-License-Identifier: Apache-2.0
/* The grant monitor's sustained window, recovery and Event rate limit
 * (grant/grantmon.h). */
#include "grant/grantmon.h"

enum ioq_gm_action ioq_gm_track_step(struct ioq_gm_track *t, enum ioq_gm_verdict v, double now,
                                     double dt, double window, double recover) {
  if (v == IOQ_GM_UNKNOWN)
    return IOQ_GM_NOTHING;
  if (v != t->verdict || t->verdict_since == 0) {
    t->verdict = v;
    t->verdict_since = now - dt;
  }
  if (v == IOQ_GM_STARVED) {
    if (t->starved_since == 0)
      t->starved_since = now - dt;
    t->last_starved = now;
    if (!t->alerted && now - t->starved_since >= window) {
      t->alerted = t->posted = true;
      return IOQ_GM_NOT_MET;
    }
    return IOQ_GM_NOTHING;
  }
  if (t->starved_since == 0 || now - t->last_starved < recover)
    return IOQ_GM_NOTHING;
  bool posted = t->posted;
  t->starved_since = t->last_starved = 0;
  t->alerted = t->posted = false;
  return posted ? IOQ_GM_MET : IOQ_GM_NOTHING;
}

void ioq_gm_track_declined(struct ioq_gm_track *t) { t->posted = false; }

bool ioq_gm_ratelimit_allow(struct ioq_gm_ratelimit *rl, double now, double min_interval) {
  if (rl->any && now - rl->last < min_interval) {
    rl->suppressed++;
    return false;
  }
  rl->any = true;
  rl->last = now;
  return true;
}
