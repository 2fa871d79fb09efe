// SPDX-License-Identifier: Apache-2.0
/* Allocate's answer: the environment a container gets for its units.
 *
 *   IOQOS_DEVICES                   disks the units are on, e.g. "nvme0n1"
 *                                   ("nvme0n1,sdb" when several)
 *   IOQOS_BANDWIDTH_BYTES_PER_SEC   bandwidth endpoint: bytes/s granted, e.g.
 *                                   "209715200"; per disk when several:
 *                                   "nvme0n1=104857600,sdb=104857600"
 *   IOQOS_IOPS                      iops endpoint: IOPS granted, same forms
 *
 * kubelet calls Allocate once per resource and merges the envs; both
 * endpoints set IOQOS_DEVICES, which agrees when a pod's units share a disk
 * (what placement ensures). */
#ifndef IOQOS_PLUGIN_ALLOCATE_H
#define IOQOS_PLUGIN_ALLOCATE_H

#include <stddef.h>

#include "state/catalog.h"
#include "base/error.h"
#include "units/units.h"

#define ENV_DEVICES "IOQOS_DEVICES"
#define ENV_BANDWIDTH "IOQOS_BANDWIDTH_BYTES_PER_SEC"
#define ENV_IOPS "IOQOS_IOPS"

struct env_kv {
  char key[40];
  char value[1600];
};

/* Fills out[0] (devices) and out[1] (the resource's amount). */
int allocate_envs(enum ioq_resource r, const struct ioq_unit_sizes *sizes, const struct id_tally *t,
                  struct env_kv out[2], ioq_err *e);

#endif
