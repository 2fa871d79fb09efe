// SPDX-License-Identifier: Apache-2.0
/* DRA mode: what a Pod object (as the API server returns it) says about the
 * ResourceClaims kubelet prepares for it on its node: the names of its
 * claims (spec.resourceClaims[].resourceClaimName, and for claims made from
 * a template status.resourceClaimStatuses[].resourceClaimName) and whether
 * kubelet may still hold them prepared (docs/dra.md, "Restarts"). Used to
 * rebuild the prepared claims of a node whose state file was lost. Pure:
 * nothing here talks to the API server. */
#ifndef IOQOS_DRAPOD_H
#define IOQOS_DRAPOD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "dra/draclaim.h"
#include "base/error.h"

/* spec.resourceClaims is capped by the API (4 today); the bound keeps a
 * tenant's odd object small */
#define IOQ_DRA_POD_CLAIMS_MAX 32

struct ioq_dra_pod {
  char ns[IOQ_DRA_NS_MAX + 1];
  char name[IOQ_DRA_OBJ_NAME_MAX + 1];
  char uid[IOQ_DRA_UID_MAX + 1];
  /* kubelet prepares the pod's claims before its sandbox and unprepares
   * them once all its containers stopped: true while the pod is Pending or
   * Running and not every container it has a status for has terminated */
  bool may_hold;
  char claims[IOQ_DRA_POD_CLAIMS_MAX][IOQ_DRA_OBJ_NAME_MAX + 1]; /* distinct, spec order */
  size_t n_claims;
};

/* Reads *out from a Pod object. Errors (IOQ_EINVAL_INPUT): not an object, no
 * usable metadata namespace/name/uid, a claim name that is not a valid
 * object name, more than IOQ_DRA_POD_CLAIMS_MAX claims. A pod without
 * claims is no error (n_claims 0). */
IOQ_MUST_CHECK
int ioq_dra_pod_parse(json_object *pod, struct ioq_dra_pod *out, ioq_err *e);

#endif
