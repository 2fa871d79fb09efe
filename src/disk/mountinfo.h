// SPDX-License-Identifier: Apache-2.0
/* /proc/self/mountinfo parsing: which mount holds a path, and its device. */
#ifndef IOQOS_MOUNTINFO_H
#define IOQOS_MOUNTINFO_H

#include <limits.h>
#include <stddef.h>

#include "base/error.h"

struct ioq_mount {
  unsigned major, minor;   /* st_dev of the filesystem (0:N for btrfs, tmpfs, ...) */
  char mountpoint[PATH_MAX];
  char fstype[64];
  char source[PATH_MAX];   /* e.g. /dev/sda2, /dev/mapper/vg-lv, tmpfs */
};

/* Finds the mount whose mount point is the longest path-component prefix of
 * `path` (later entries win on equal mount points: stacked mounts). `path`
 * must be absolute and normalised (no "..", no "//"). */
IOQ_MUST_CHECK
int ioq_mount_for_path(const char *mountinfo_file, const char *path, struct ioq_mount *out,
                       ioq_err *e);

/* Decodes the octal escapes mountinfo uses (\040 for space, ...) in place. */
void ioq_mountinfo_unescape(char *s);

#endif
