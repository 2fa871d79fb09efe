// SPDX-License-Identifier: Apache-2.0
/* DRA mode: one claim prepared or unprepared (what NodePrepareResources and
 * NodeUnprepareResources do for each claim kubelet sends).
 *
 * Prepare: GET the ResourceClaim, read it with ioq_dra_claim_parse against
 * the UID kubelet sent, this driver, this node's pool and the disks the
 * slice offers; it must be reserved for exactly one pod (kubelet prepares a
 * claim once per node, so a claim shared by pods would leave the later ones
 * unlimited); record it (drastate.h, saved before the answer) and apply the
 * pod's grant through the pod table, which writes the pod cgroup with the
 * enforcement writer and reads it back. kubelet calls this before it
 * creates the sandbox, with the pod cgroup in place (docs/dra.md, "When
 * kubelet calls the driver"): the limits hold from the first I/O. Any
 * failure leaves nothing recorded and nothing new written: fail closed,
 * kubelet retries the pod later.
 *
 * Unprepare: forget the claim and apply the pod again without it (its
 * disks are cleared); a pod cgroup that is gone took its limits with it.
 * A claim this node does not know is already unprepared. */
#ifndef IOQOS_PLUGIN_DRAPREPARE_H
#define IOQOS_PLUGIN_DRAPREPARE_H

#include "state/drastate.h"
#include "dra/draclaim.h"
#include "base/error.h"

struct plugin;

/* *out (heap: it is large) = what was recorded. Unprepare returns 1 when
 * it undid a claim, 0 when the claim was not prepared here, -1 + *e. */
int dra_prepare_claim(struct plugin *p, const char *ns, const char *uid, const char *name,
                      struct dra_rec *out, ioq_err *e);
int dra_unprepare_claim(struct plugin *p, const char *ns, const char *uid, const char *name,
                        ioq_err *e);

/* The claim from the API server, read against this driver, node and the
 * disks the slice offers (*disks: malloc'd or NULL; free it either way).
 * uid NULL: any UID (a claim found again from its pod, drarecover.h).
 * Errors: IOQ_ENOTFOUND (no such claim, not allocated, no result of this
 * driver), IOQ_EMISMATCH (another UID), IOQ_EINVAL_INPUT (not a claim this
 * node can enforce), others (the API server did not answer). */
int dra_fetch_claim(struct plugin *p, const char *ns, const char *uid, const char *name,
                    struct ioq_dra_claim *c, struct ioq_disk **disks, size_t *n_disks,
                    ioq_err *e);
/* The record of a parsed claim (reserved for exactly one pod). */
void dra_rec_of(const struct ioq_dra_claim *c, const struct ioq_disk *disks, struct dra_rec *r);

#endif
