// SPDX-License-Identifier: Apache-2.0
/* Grant math: from the unit IDs kubelet gave a pod's containers to what the
 * pod cgroup must hold on each disk.
 *
 * Per disk and resource, the pod-level grant follows Kubernetes'
 * effective-request rule (with sidecars, KEP-753):
 *
 *   steady   = sum(app containers) + sum(sidecars)
 *   init(i)  = units of init container i + sum(sidecars declared before i)
 *   grant    = max(steady, max_i init(i))
 *
 * "sidecar" is a restartable init container (restartPolicy: Always); the
 * order of init containers and sidecars is the pod spec order. kubelet hands
 * the units of a finished init container on to app containers, so the same ID
 * may appear in an init container and an app container; it must not appear in
 * two containers that run at the same time (two apps, an app and a sidecar).
 *
 * Limits: a grant of B bandwidth units caps reads and writes at B x unit
 * size bytes/s each (io.max rbps and wbps); I IOPS units cap riops and wiops
 * at I x unit size. A resource without units is not limited.
 *
 * Weights: a granted pod must outweigh every pod without a grant (weight 100,
 * the kernel default), and more so the larger its share of the disk:
 *
 *   share     = max over granted resources of granted units / disk units
 *               (disk units = the units the disk advertises), capped at 1
 *   io.weight = 100 + ceil(9900 x share)     in 101..10000
 *   BFQ       = 100 + ceil(900 x share)      in 101..1000
 *
 * io.max caps the pod at its grant first (blk-throttle runs before the
 * proportional schedulers), so a high weight cannot take more than the grant
 * from the neighbours; it only makes sure the grant is served first when the
 * disk is contended.
 */
#ifndef IOQOS_GRANT_H
#define IOQOS_GRANT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "units/iolimit.h"
#include "units/units.h"

enum ioq_ctr_kind { IOQ_CTR_INIT = 0, IOQ_CTR_SIDECAR, IOQ_CTR_APP };

struct ioq_ctr_units {
  const char *name;
  enum ioq_ctr_kind kind;
  const char *const *ids; /* unit IDs of any resource and disk */
  size_t n_ids;
};

#define IOQ_POD_DISKS_MAX 16

struct ioq_disk_grant {
  char disk[IOQ_DISK_NAME_MAX + 1];
  uint64_t units[IOQ_RES_COUNT];
};

struct ioq_pod_grant {
  struct ioq_disk_grant disks[IOQ_POD_DISKS_MAX];
  size_t n; /* in order of first appearance */
};

/* Computes the pod's per-disk grant. Containers in pod spec order (init
 * containers and sidecars in their spec order). Errors: a malformed ID, the
 * same ID twice in one container, an ID held by two concurrent containers,
 * more than IOQ_POD_DISKS_MAX disks. */
IOQ_MUST_CHECK
int ioq_grant_compute(const struct ioq_ctr_units *ctrs, size_t n, struct ioq_pod_grant *out,
                      ioq_err *e);

/* The disk's entry, or NULL. */
const struct ioq_disk_grant *ioq_grant_find(const struct ioq_pod_grant *g, const char *disk);

/* io.max values for a disk grant (0 = no limit for resources without units). */
IOQ_MUST_CHECK
int ioq_grant_limits(const struct ioq_disk_grant *g, const struct ioq_unit_sizes *u,
                     struct ioq_io_limits *out, ioq_err *e);

/* The io.max values written for a disk grant: ioq_grant_limits, and a grant
 * of IOPS units only also capped in bandwidth at the same share of the
 * disk's bandwidth (ceil(iops units x the disk's bandwidth units / its IOPS
 * units) bandwidth units): else its I/O of any size (1 MiB at a time)
 * could take the whole disk's bandwidth from the grants there. The cap is
 * not reserved (nothing of the disk's bandwidth units is held by it); a
 * bandwidth-only grant gets no IOPS cap: its bytes bound its I/O count to
 * a small multiple of its share (docs/enforcement.md, "A grant of one
 * resource"). disk_units: the units the disk has per resource (0: none,
 * no cap derived). */
IOQ_MUST_CHECK
int ioq_grant_limits_on_disk(const struct ioq_disk_grant *g, const struct ioq_unit_sizes *u,
                             const uint64_t disk_units[IOQ_RES_COUNT], struct ioq_io_limits *out,
                             ioq_err *e);

/* Weights from the share of the disk (formula above); 0 if nothing is
 * granted. disk_units: the units the disk advertises per resource. Fails if
 * a granted resource has no units on the disk. */
IOQ_MUST_CHECK
int ioq_grant_weights(const struct ioq_disk_grant *g, const uint64_t disk_units[IOQ_RES_COUNT],
                      unsigned *io_weight, unsigned *bfq_weight, ioq_err *e);

#endif
