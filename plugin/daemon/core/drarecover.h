// SPDX-License-Identifier: Apache-2.0
/* DRA mode: prepared claims found again from the API server when the state
 * file (drastate.h) does not hold them: it was wiped with the node's state
 * directory, or unreadable at start. kubelet never prepares a claim twice,
 * so without this the limits would stay in the kernel while unprepare,
 * drift correction and the pool of pods without a grant forget them.
 *
 * Once after start (the reconcile loop retries until the API server
 * answers): list this node's pods, take the claims of each pod kubelet may
 * hold prepared (ioq_dra_pod_parse: Pending or Running, not every container
 * stopped), GET each claim and read it as prepare does (this driver, this
 * node's pool, the disks of the slice, reserved for exactly that pod), and
 * record those the file lacks (drastate_adopt: never over a record kubelet
 * made meanwhile, never one kubelet unprepared lately). The next reconcile
 * pass then puts their grants in place like any other. Claims that are not
 * this node's to enforce are skipped with the reason; a pod or claim the
 * API server cannot serve fails the whole pass, retried later. */
#ifndef IOQOS_PLUGIN_DRARECOVER_H
#define IOQOS_PLUGIN_DRARECOVER_H

#include <stddef.h>

#include "base/error.h"

struct plugin;

struct dra_recover_stats {
  size_t pods;      /* pods of the node that may hold prepared claims */
  size_t claims;    /* their claims */
  size_t recovered; /* recorded now */
  size_t skipped;   /* not this node's to enforce (reason logged) */
};

int dra_recover(struct plugin *p, struct dra_recover_stats *st, ioq_err *e);

#endif
