// SPDX-License-Identifier: Apache-2.0
/* Selector -> managed disk (the device io.max accepts, plus weight leaves). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk/blockdev.h"
#include "base/fsutil.h"
#include "disk/mountinfo.h"
#include "probe/probe.h"

static bool is_majmin(const char *s, unsigned *maj, unsigned *min) {
  char tail;
  return isdigit((unsigned char)s[0]) && sscanf(s, "%u:%u%c", maj, min, &tail) == 2;
}

/* Canonical form of a directory path that may not exist (yet): realpath of
 * the deepest existing ancestor + the rest. Keeps symlinked kubelet dirs
 * honest (e.g. /var/lib/kubelet -> /data/kubelet). */
static int canonical_dir(const char *path, char *out, ioq_err *e) {
  char tmp[PATH_MAX];
  if (!ioq_copy(tmp, sizeof tmp, path))
    return ioq_fail(e, ENAMETOOLONG, "path %s too long", path);
  char rest[PATH_MAX] = "";
  for (;;) {
    char real[PATH_MAX];
    if (realpath(tmp, real)) {
      if (ioq_path_join(out, PATH_MAX, e, real, rest[0] ? rest : NULL, NULL) < 0)
        return -1;
      return 0;
    }
    char *slash = strrchr(tmp, '/');
    if (!slash || slash == tmp) {
      /* nothing exists (test trees): use the path as given */
      return ioq_copy(out, PATH_MAX, path) ? 0 : ioq_fail(e, ENAMETOOLONG, "path too long");
    }
    char nr[PATH_MAX];
    snprintf(nr, sizeof nr, "%s%s%s", slash + 1, rest[0] ? "/" : "", rest);
    if (!ioq_copy(rest, sizeof rest, nr))
      return ioq_fail(e, ENAMETOOLONG, "path %s too long", path);
    *slash = '\0';
  }
}

/* Device name behind a mount's source when st_dev is anonymous (btrfs,
 * overlay upper on a disk): /dev/sdX, /dev/mapper/NAME, /dev/disk/by-... */
static int name_from_dev_path(const struct ioq_roots *r, const char *devpath, char *name,
                              size_t namesz, ioq_err *e) {
  if (strncmp(devpath, "/dev/", 5) != 0)
    return ioq_fail(e, IOQ_ENOTFOUND, "'%s' is not a /dev path", devpath);
  if (strncmp(devpath, "/dev/mapper/", 12) == 0 &&
      ioq_blockdev_dm_by_name(r->sysfs, devpath + 12, name, namesz, NULL) == 0)
    return 0;
  char p[PATH_MAX], real[PATH_MAX];
  if (ioq_path_join(p, sizeof p, e, r->devfs, devpath + 5, NULL) < 0)
    return -1;
  const char *base;
  if (realpath(p, real))
    base = strrchr(real, '/') + 1;
  else
    base = strrchr(devpath, '/') + 1;
  char probe[PATH_MAX];
  if (ioq_path_join(probe, sizeof probe, e, r->sysfs, "class/block", base, NULL) < 0)
    return -1;
  if (!ioq_path_exists(probe))
    return ioq_fail(e, ENOENT, "%s is not a block device known to %s/class/block", devpath,
                    r->sysfs);
  if (!ioq_copy(name, namesz, base))
    return ioq_fail(e, ENAMETOOLONG, "block device name %s longer than %zu characters", base,
                    namesz - 1);
  return 0;
}

/* /dev/shm and friends are directories (mount points), not devices */
static bool is_dir_under(const char *devfs, const char *rel) {
  char p[PATH_MAX];
  return ioq_path_join(p, sizeof p, NULL, devfs, rel, NULL) == 0 && ioq_is_dir(p);
}

int ioq_disk_resolve(const struct ioq_roots *r, const char *sel, struct ioq_disk *d, ioq_err *e) {
  char name[IOQ_DISK_NAME_MAX + 1];
  char how[512] = "";
  unsigned maj, min;
  ioq_copy_trunc(d->selected_by, sizeof d->selected_by, sel); /* shown to the operator */

  if (is_majmin(sel, &maj, &min)) {
    if (ioq_blockdev_name_for(r->sysfs, maj, min, name, sizeof name, e) < 0)
      return -1;
    snprintf(how, sizeof how, "device %s is %s", sel, name);
  } else if (strncmp(sel, "/dev/", 5) == 0 && !is_dir_under(r->devfs, sel + 5)) {
    if (name_from_dev_path(r, sel, name, sizeof name, e) < 0)
      return -1;
    snprintf(how, sizeof how, "%s is %s", sel, name);
  } else if (sel[0] == '/') {
    char canon[PATH_MAX];
    struct ioq_mount m;
    if (canonical_dir(sel, canon, e) < 0 || ioq_mount_for_path(r->mountinfo, canon, &m, e) < 0)
      return -1;
    if (m.major != 0) {
      if (ioq_blockdev_name_for(r->sysfs, m.major, m.minor, name, sizeof name, e) < 0) {
        ioq_err_prefix(e, "%s is on mount %s (%s, device %u:%u)", sel, m.mountpoint, m.fstype,
                       m.major, m.minor);
        return -1;
      }
    } else if (name_from_dev_path(r, m.source, name, sizeof name, e) < 0) {
      ioq_err_prefix(e, "%s is on %s mount %s from '%s', which is not a block device", sel,
                     m.fstype, m.mountpoint, m.source);
      return -1;
    }
    snprintf(how, sizeof how, "%s is on mount %s (%s from %s, %s)", sel, m.mountpoint, m.fstype,
             m.source, name);
  } else {
    if (!ioq_disk_name_valid(sel))
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "'%s' is not a disk name, /dev path, mount point or MAJ:MIN", sel);
    if (!ioq_copy(name, sizeof name, sel))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "disk name '%s' longer than %zu characters", sel,
                      sizeof name - 1);
    snprintf(how, sizeof how, "disk %s", name);
  }

  /* io.max takes whole devices only: the kernel answers ENODEV for a partition */
  char disk[IOQ_DISK_NAME_MAX + 1];
  if (ioq_blockdev_is_partition(r->sysfs, name, disk, sizeof disk)) {
    size_t l = strlen(how);
    snprintf(how + l, sizeof how - l, ", a partition of %s", disk);
    ioq_copy_trunc(name, sizeof name, disk); /* same size: fits */
  }
  if (ioq_blockdev_read(r->sysfs, name, &d->dev, e) < 0)
    return -1;
  if (ioq_blockdev_leaves(r->sysfs, name, d->leaves, IOQ_MAX_LEAVES, &d->n_leaves, e) < 0) {
    ioq_err_prefix(e, "walk the device stack under %s", name);
    return -1;
  }
  ioq_copy_trunc(d->resolution, sizeof d->resolution, how); /* shown to the operator */
  if (ioq_blockdev_is_stacked(r->sysfs, name)) {
    char leaves[200] = "";
    for (size_t i = 0; i < d->n_leaves; i++) {
      size_t l = strlen(leaves);
      snprintf(leaves + l, sizeof leaves - l, "%s%s", i ? ", " : "", d->leaves[i].name);
    }
    snprintf(d->throttle_note, sizeof d->throttle_note,
             "io.max on %s (%u:%u), the stacked device pods write to; weights on its disks %s",
             name, d->dev.major, d->dev.minor, leaves);
  } else {
    snprintf(d->throttle_note, sizeof d->throttle_note, "limits and weights on %s (%u:%u)", name,
             d->dev.major, d->dev.minor);
  }
  return 0;
}
