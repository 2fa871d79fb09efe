// SPDX-License-Identifier: Apache-2.0
#include "cgroup/cglayout.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/fsutil.h"

static int setp(char *dst, const char *root, const char *sub, ioq_err *e) {
  return ioq_path_join(dst, PATH_MAX, e, root, sub, NULL);
}

int ioq_cg_layout_for(const char *root, enum ioq_cg_version v, struct ioq_cg_layout *out,
                      ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (snprintf(out->root, sizeof out->root, "%s", root) >= (int)sizeof out->root)
    return ioq_fail(e, ENAMETOOLONG, "cgroup root %s: path too long", root);
  out->io_version = v;
  char probe[PATH_MAX];
  if (v == IOQ_CGV2) {
    snprintf(out->io_root, sizeof out->io_root, "%s", root);
    snprintf(out->unified_root, sizeof out->unified_root, "%s", root);
    snprintf(out->description, sizeof out->description, "cgroup v2 (unified) at %s", root);
    return 0;
  }
  if (v != IOQ_CGV1)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup version must be 1 or 2");
  if (setp(out->io_root, root, "blkio", e) < 0 || setp(out->memory_root, root, "memory", e) < 0 ||
      setp(probe, root, "unified/cgroup.controllers", e) < 0)
    return -1;
  if (ioq_path_exists(probe)) {
    out->hybrid = true;
    setp(out->unified_root, root, "unified", e);
  }
  snprintf(out->description, sizeof out->description, "cgroup v1%s, blkio at %s",
           out->hybrid ? " (hybrid: v2 mounted at unified/ without io)" : "", out->io_root);
  return 0;
}

int ioq_cg_layout_detect(const char *root, struct ioq_cg_layout *out, ioq_err *e) {
  char probe[PATH_MAX];
  if (setp(probe, root, "cgroup.controllers", e) < 0)
    return -1;
  if (ioq_path_exists(probe))
    return ioq_cg_layout_for(root, IOQ_CGV2, out, e);
  if (setp(probe, root, "blkio", e) < 0)
    return -1;
  if (ioq_is_dir(probe))
    return ioq_cg_layout_for(root, IOQ_CGV1, out, e);
  memset(out, 0, sizeof *out);
  return ioq_fail(e, IOQ_EUNSUPPORTED,
                  "no cgroup hierarchy with io control under %s: neither %s/cgroup.controllers "
                  "(cgroup v2) nor %s/blkio (cgroup v1) exists",
                  root, root, root);
}
