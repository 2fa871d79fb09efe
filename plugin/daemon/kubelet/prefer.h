// SPDX-License-Identifier: Apache-2.0
/* GetPreferredAllocation: which `size` IDs out of kubelet's `available`
 * list the container should get. All from one disk, keeping must_include:
 *
 *   1. must_include non-empty: their disk, if it has enough free units;
 *   2. a hint disk (pod annotation ioqos.io/disk of the one pending pod that
 *      could be asking), if it has enough free units;
 *   3. the placement function shared with the extender (placement.h), on
 *      disks whose free units are what kubelet offers right now;
 *   4. otherwise the disk with the most free units that still has enough;
 *   5. otherwise (no single disk can hold it) the fullest-free disks first:
 *      kubelet treats the answer as a hint and would spread anyway.
 * Lowest unit indexes first, so answers are stable. Pure: no I/O, no locks. */
#ifndef IOQOS_PLUGIN_PREFER_H
#define IOQOS_PLUGIN_PREFER_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "base/error.h"
#include "grant/placement.h"
#include "units/units.h"

struct prefer_req {
  enum ioq_resource res;
  char *const *available;
  size_t n_available;
  char *const *must;
  size_t n_must;
  int32_t size;
};

struct prefer_ctx {
  /* the node's disks: capacity[] = advertised units; allocated[] of the
   * other resource as last known (this resource's comes from `available`) */
  const struct ioq_disk_state *disks;
  size_t n_disks;
  const char *hint_disk;       /* NULL = none */
  const struct ioq_need *need; /* the asking pod's need; NULL = unknown */
  enum ioq_policy policy;
};

struct prefer_result {
  const char **ids; /* points into the request's arrays (malloc'd array) */
  size_t n;
  char disk[IOQ_DISK_NAME_MAX + 1]; /* the chosen disk ("" when spread) */
  const char *how; /* "must-include", "annotation", "placement", "largest-free", "spread" */
  char note[320];
};

int prefer_choose(const struct prefer_req *req, const struct prefer_ctx *ctx,
                  struct prefer_result *out, ioq_err *e);
void prefer_result_free(struct prefer_result *r);

#endif
