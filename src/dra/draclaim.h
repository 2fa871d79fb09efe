// SPDX-License-Identifier: Apache-2.0
/* A ResourceClaim (resource.k8s.io/v1, as the API server returns it) read
 * into what this node's driver must enforce (docs/dra.md): the allocation
 * results of this driver, each a share of one disk with the consumed
 * "bandwidth" and "iops" in units, and the UIDs of the pods the claim is
 * reserved for. Everything is checked against the claim UID kubelet sent,
 * the driver, this node's pool and the disks, and refused with a message
 * saying what is wrong; nothing is guessed. Bounded: the document, the
 * results and reservedFor have caps (below), strings have their API
 * limits. Pure: nothing here talks to the API server or writes cgroups. */
#ifndef IOQOS_DRACLAIM_H
#define IOQOS_DRACLAIM_H

#include <stddef.h>
#include <stdint.h>

#include "probe/disk.h"
#include "dra/draslice.h"
#include "base/error.h"
#include "units/units.h"

#define IOQ_DRA_CLAIM_MAX_BYTES (1024u * 1024u) /* etcd's own limit is 1.5 MiB */
#define IOQ_DRA_MAX_RESULTS 32      /* allocation results per claim (API limit) */
#define IOQ_DRA_MAX_RESERVED 256    /* status.reservedFor entries (API limit) */
#define IOQ_DRA_REQUEST_NAME_MAX 127 /* "<request>/<subrequest>", 63 each */
#define IOQ_DRA_SHARE_ID_MAX 64
#define IOQ_DRA_UID_MAX 128
#define IOQ_DRA_OBJ_NAME_MAX 253
#define IOQ_DRA_NS_MAX 63

/* One allocation result of this driver: a share of one disk. */
struct ioq_dra_share {
  char request[IOQ_DRA_REQUEST_NAME_MAX + 1];
  char device[IOQ_DRA_DEVICE_NAME_MAX + 1];
  size_t disk;                      /* index into the disk list given */
  char share_id[IOQ_DRA_SHARE_ID_MAX + 1]; /* "" if the result has none */
  uint64_t units[IOQ_RES_COUNT];    /* consumed bandwidth / iops units */
};

/* About 107 KiB (the API's bounds): allocate it, do not put it on a thread's
 * small stack. */
struct ioq_dra_claim {
  char uid[IOQ_DRA_UID_MAX + 1];
  char ns[IOQ_DRA_NS_MAX + 1];
  char name[IOQ_DRA_OBJ_NAME_MAX + 1];
  struct ioq_dra_share shares[IOQ_DRA_MAX_RESULTS];
  size_t n_shares;
  /* reservedFor pods: UIDs, each checked with ioq_pod_uid_check(), and
   * names (the claim's namespace is theirs) */
  char pods[IOQ_DRA_MAX_RESERVED][IOQ_DRA_UID_MAX + 1];
  char pod_names[IOQ_DRA_MAX_RESERVED][IOQ_DRA_OBJ_NAME_MAX + 1];
  size_t n_pods;
};

/* What the claim must match. */
struct ioq_dra_claim_want {
  const char *uid;        /* the UID kubelet sent (NodePrepareResources Claim.uid); NULL:
                           * any (a claim found again from its pod, docs/dra.md) */
  const char *driver;     /* IOQ_DRA_DRIVER */
  const char *pool;       /* this node's pool (the node name) */
  const struct ioq_disk *disks; /* the disks this node publishes */
  size_t n_disks;
};

/* Parses text[0..len) (at most IOQ_DRA_CLAIM_MAX_BYTES) into *out. Errors
 * (IOQ_EINVAL_INPUT unless noted), each naming the claim as ns/name when
 * known: malformed or oversized JSON; not a ResourceClaim; UID differs from
 * want->uid (IOQ_EMISMATCH); not allocated (IOQ_ENOTFOUND); no result of
 * want->driver (IOQ_ENOTFOUND, naming the drivers it has); a result of this
 * driver from another pool, for an unknown or unpublishable device, without
 * consumedCapacity, with an unknown capacity name, with a quantity that is
 * negative, fractional or not a quantity, or above the device's capacity
 * (also summed over the claim's results on one device); too many results or
 * reservedFor entries; a pod UID not of the form kubelet uses (ioq_pod_uid_check);
 * reserved for no pod. On failure *out is zeroed. */
IOQ_MUST_CHECK
int ioq_dra_claim_parse(const char *text, size_t len, const struct ioq_dra_claim_want *want,
                        struct ioq_dra_claim *out, ioq_err *e);

#endif
