// SPDX-License-Identifier: Apache-2.0
/* Managed disks: what ioqos advertises units of and throttles.
 *
 * A managed disk is selected by config (name, /dev path, mount point or
 * MAJ:MIN) or by default the disk behind the kubelet root directory, and is
 * resolved from sysfs + mountinfo to the device that io.max accepts:
 *  - a partition resolves to its whole disk (io.max rejects partitions, ENODEV);
 *  - a device-mapper or md device is throttled at that (whole) device, which
 *    limits exactly what the pod submits; its leaf disks (slaves/ walked
 *    recursively, partitions lifted to their disks) are where weights act,
 *    since iocost and BFQ work on request-based disks only.
 */
#ifndef IOQOS_DISK_H
#define IOQOS_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/cglayout.h"
#include "disk/blockdev.h"
#include "disk/roots.h"
#include "config/config.h"
#include "base/error.h"
#include "units/units.h"

#define IOQ_MAX_LEAVES 16

/* Filesystem roots, all parameters so tests run on temp trees. */
struct ioq_disk {
  struct ioq_blockdev dev;        /* the throttled device (io.max target) */
  struct ioq_blockdev leaves[IOQ_MAX_LEAVES]; /* weight targets; == dev for plain disks */
  size_t n_leaves;
  char class_name[IOQ_CLASS_NAME_MAX + 1];
  char selected_by[256];  /* the config selector, or "kubelet root dir /var/lib/kubelet" */
  char resolution[512];   /* e.g. "/var/lib/kubelet is on /dev/sda2, a partition of sda" */
  char throttle_note[256];/* which device is throttled and why */

  /* capabilities (IOQ_CAP_* bits) and why missing ones are missing */
  unsigned caps;
  char cap_reasons[8][160]; /* indexed by capability bit position; "" if present */
  bool enforceable;         /* at least a bandwidth/iops limit can be enforced */
  char not_enforceable_reason[256];

  /* capacity (raw, before the allocatable fraction) and its source */
  uint64_t capacity_bw_bytes, capacity_iops;
  char capacity_source[160]; /* "config", "io.cost.model", "calibration <file> (<date>)", or why none */
  double allocatable_fraction;
  uint64_t units[IOQ_RES_COUNT]; /* advertised: floor(capacity * fraction / unit size) */
  /* of those, taken by NVMe-oF target namespaces (config nvmet, nvmetplan.h)
   * and so not advertised: units + nvmet_units = floor(capacity * fraction /
   * unit size) */
  uint64_t nvmet_units[IOQ_RES_COUNT];
  /* configured pool for pods without a grant (0 = derived, ungranted.h);
   * a configured pool larger than the capacity is cut to it, and the note
   * says so */
  uint64_t ungranted_pool_bw_bytes, ungranted_pool_iops;
  char ungranted_note[200];
  /* a per-disk error (capacity source unreadable or malformed): the disk is
   * listed Unhealthy with this reason and advertises nothing, the other
   * disks are not affected; "" if none */
  char fault[320];
};

/* A configured selector that gave no disk (does not resolve, or reaches a
 * disk another selector already took). */
struct ioq_select_fault {
  char select[256];
  char reason[320];
};

struct ioq_inventory {
  struct ioq_cg_layout layout;
  struct ioq_disk *disks;
  size_t n;
  unsigned node_caps;          /* cgroup-wide capabilities (e.g. buffered writes) */
  char node_notes[4][256];     /* node-wide findings (controllers not enabled, ...) */
  size_t n_notes;
  /* selectors that gave no disk; the disks of the others are listed */
  struct ioq_select_fault *faults;
  size_t n_faults;
};

#endif
