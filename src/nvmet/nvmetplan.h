// SPDX-License-Identifier: Apache-2.0
/* What each NVMe-oF target namespace gets (config nvmet.namespaces[],
 * docs/operations.md "Storage nodes"): the one rule the plugin enforces and
 * `ioqosctl probe` shows.
 *
 * For every namespace of the nvmet inventory, the first config entry whose
 * subsystem matches and whose nsid matches (or is absent) decides. A
 * matched namespace is refused (nothing reserved, nothing written) when:
 *   - the node's io hierarchy is cgroup v1 (cgroup_id names cgroup2 cgroups);
 *   - buffered_io is set: the kernel refuses to enable a namespace with a
 *     cgroup_id and buffered I/O (page-cache writeback is not charged to it);
 *   - its device_path does not resolve to a block device (nvmetns cannot
 *     know which disk's io.max to write);
 *   - that disk is not a managed disk, or advertises none of the units the
 *     entry asks for;
 *   - the disk's units (before any namespace, in config order) are not
 *     enough for it after the namespaces before it.
 * Otherwise its units are taken from the disk: ioq_nvmet_plan_build moves
 * them from disks[].units (what pods are offered) to disks[].nvmet_units, so
 * pods and namespaces together never exceed what the disk advertises. A grant
 * in units gives io.max like a pod's (ioq_grant_limits); raw limits count
 * ceil(max(read, write) / unit size) units per resource.
 *
 * A reserved namespace is enforced when the kernel has the attribute
 * cgroup_id (Linux 7.5+); without it the limits are written to the cgroup
 * but the kernel does not charge the namespace's I/O there, and the plan
 * says so. The units stay reserved either way: the namespace uses the disk
 * whatever the kernel can bound. */
#ifndef IOQOS_NVMETPLAN_H
#define IOQOS_NVMETPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/cglayout.h"
#include "config/config.h"
#include "probe/disk.h"
#include "base/error.h"
#include "units/iolimit.h"
#include "nvmet/nvmet.h"

enum ioq_nvmet_verdict {
  IOQ_NVMET_NS_ENFORCED,  /* reserved; the kernel charges it to its cgroup once cgroup_id is set */
  IOQ_NVMET_NS_UNCHARGED, /* reserved; the kernel lacks cgroup_id, its limits do not apply */
  IOQ_NVMET_NS_REFUSED,   /* not reserved, nothing written */
};

struct ioq_nvmet_plan_ns {
  char subsystem[IOQ_NVMET_NQN_MAX + 1];
  uint32_t nsid;
  size_t cfg_index; /* nvmet.namespaces[cfg_index] */
  enum ioq_nvmet_verdict verdict;
  char why[400]; /* the verdict in words */
  /* when not refused: */
  size_t disk_index; /* into the disks given to ioq_nvmet_plan_build */
  char disk[IOQ_DISK_NAME_MAX + 1];
  struct ioq_devno dev;          /* the throttled device of that disk */
  uint64_t units[IOQ_RES_COUNT]; /* taken from the disk */
  struct ioq_io_limits limits;   /* io.max on dev (0 = max) */
  unsigned weight;               /* io.weight on dev (1..10000) */
  unsigned bfq_weight;           /* io.bfq.weight, from the same share (1..1000) */
};

struct ioq_nvmet_plan {
  struct ioq_nvmet_plan_ns *ns; /* the namespaces a config entry matched, inventory order */
  size_t n;
  /* config entries that matched no namespace, and why (e.g. "subsystem X
   * has no namespace 3"): a typo must not look like a quiet success */
  char (*unmatched)[320];
  size_t n_unmatched;
};

/* Builds the plan and moves the reserved units on `disks` (see above). A
 * config without nvmet entries, or an inventory without namespaces, gives an
 * empty plan and leaves the disks alone. Errors: out of memory only. */
IOQ_MUST_CHECK
int ioq_nvmet_plan_build(const struct ioq_config *c, enum ioq_cg_version io_version,
                         const struct ioq_nvmet_inventory *inv, struct ioq_disk *disks,
                         size_t n_disks, struct ioq_nvmet_plan *out, ioq_err *e);
void ioq_nvmet_plan_free(struct ioq_nvmet_plan *p);

/* Adds the plan to `nv`, the inventory's JSON (ioq_nvmet_json): each
 * planned namespace gets "ioqos": {entry, verdict, why, disk and units when
 * not refused}, and nv gets "unmatched": [...]. Returns the "ioqos" object of
 * plan entry i in objs[i] when objs is not NULL (borrowed references), so the
 * plugin can add what it did. -1 on OOM. */
IOQ_MUST_CHECK
int ioq_nvmet_plan_json(const struct ioq_nvmet_plan *p, json_object *nv, json_object **objs);

/* "enforced", "uncharged", "refused" */
const char *ioq_nvmet_verdict_name(enum ioq_nvmet_verdict v);

/* The cgroup directory name of a namespace below nvmet.parent:
 * "<subsystem NQN>-<nsid>" (an NQN holds no '/'; the nsid after the last '-'
 * keeps it unique). */
IOQ_MUST_CHECK
int ioq_nvmet_cgroup_name(const char *subsystem, uint32_t nsid, char *buf, size_t len, ioq_err *e);

#endif
