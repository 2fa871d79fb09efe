// SPDX-License-Identifier: Apache-2.0
/* Which cgroup hierarchy carries the io controller on this node.
 *
 * Detected from files under the cgroupfs root (default /sys/fs/cgroup), so
 * tests use temp trees:
 *   ROOT/cgroup.controllers                  -> unified v2 (io_root = ROOT)
 *   ROOT/blkio/ (v1 blkio hierarchy)         -> v1 (io_root = ROOT/blkio)
 *   ROOT/unified/cgroup.controllers as well  -> hybrid: v1 blkio + a v2 mount
 *     that carries no io controller (systemd's hybrid mode, as on the dev
 *     machines); io is still v1 there.
 */
#ifndef IOQOS_CGLAYOUT_H
#define IOQOS_CGLAYOUT_H

#include <limits.h>
#include <stdbool.h>

#include "base/error.h"

enum ioq_cg_version { IOQ_CGV_NONE = 0, IOQ_CGV1 = 1, IOQ_CGV2 = 2 };

struct ioq_cg_layout {
  enum ioq_cg_version io_version; /* hierarchy used for io limits */
  bool hybrid;                    /* v1 controllers plus a v2 mount */
  char root[PATH_MAX];            /* the cgroupfs root given */
  char io_root[PATH_MAX];         /* v2: unified root; v1: the blkio hierarchy */
  char unified_root[PATH_MAX];    /* v2 mount ("" if none) */
  char memory_root[PATH_MAX];     /* v1 memory hierarchy ("" if none or v2) */
  char description[PATH_MAX + 128];          /* e.g. "cgroup v2 (unified) at /sys/fs/cgroup" */
};

/* Fails with IOQ_EUNSUPPORTED if no io/blkio hierarchy is found. */
IOQ_MUST_CHECK
int ioq_cg_layout_detect(const char *cgroupfs_root, struct ioq_cg_layout *out, ioq_err *e);

/* Builds a layout from explicit values (for callers that know, e.g. tests or
 * `ioqosctl cgroup-path --cgroup-version`). */
IOQ_MUST_CHECK
int ioq_cg_layout_for(const char *cgroupfs_root, enum ioq_cg_version v, struct ioq_cg_layout *out,
                      ioq_err *e);

#endif
