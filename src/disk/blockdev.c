// SPDX-License-Identifier: Apache-2.0
#include "disk/blockdev.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"

static int cls_path(char *out, const char *sysfs, const char *name, const char *attr, ioq_err *e) {
  return ioq_path_join(out, PATH_MAX, e, sysfs, "class/block", name, attr, NULL);
}

/* The active scheduler is the bracketed word: "mq-deadline kyber [bfq] none". */
static void active_scheduler(const char *line, char *out, size_t outsz) {
  const char *l = strchr(line, '['), *r = l ? strchr(l, ']') : NULL;
  if (l && r && (size_t)(r - l - 1) < outsz) {
    memcpy(out, l + 1, (size_t)(r - l - 1));
    out[r - l - 1] = '\0';
  } else {
    /* a single word without brackets ("none" on bio-based devices) */
    /* only its first word is kept anyway; a cut name matches no scheduler */
    ioq_copy_trunc(out, outsz, line);
    char *sp = strchr(out, ' ');
    if (sp)
      *sp = '\0';
  }
}

int ioq_blockdev_read(const char *sysfs, const char *name, struct ioq_blockdev *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!ioq_disk_name_valid(name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "block device name '%s' is not valid", name);
  if (!ioq_copy(out->name, sizeof out->name, name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "block device name '%s' longer than %zu characters", name,
                    sizeof out->name - 1);
  char p[PATH_MAX], line[256];
  if (cls_path(p, sysfs, name, "dev", e) < 0)
    return -1;
  if (ioq_read_line(p, line, sizeof line, e) < 0) {
    if (e && e->code == ENOENT)
      return ioq_fail(e, ENOENT, "block device %s not found (%s missing)", name, p);
    return -1;
  }
  if (sscanf(line, "%u:%u", &out->major, &out->minor) != 2)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: '%s' is not MAJ:MIN", p, line);
  if (cls_path(p, sysfs, name, "queue/scheduler", e) < 0)
    return -1;
  if (ioq_read_line(p, line, sizeof line, NULL) == 0)
    active_scheduler(line, out->scheduler, sizeof out->scheduler);
  uint64_t v;
  if (cls_path(p, sysfs, name, "queue/rotational", e) == 0 && ioq_read_u64(p, &v, NULL) == 0)
    out->rotational = v != 0;
  if (cls_path(p, sysfs, name, "queue/logical_block_size", e) == 0 &&
      ioq_read_u64(p, &v, NULL) == 0)
    out->logical_block_size = (unsigned)v;
  return 0;
}

bool ioq_blockdev_is_partition(const char *sysfs, const char *name, char *disk, size_t disksz) {
  char p[PATH_MAX], real[PATH_MAX];
  if (cls_path(p, sysfs, name, "partition", NULL) < 0 || !ioq_path_exists(p))
    return false;
  /* /sys/class/block/sda2 -> .../block/sda/sda2: the parent dir is the disk */
  if (cls_path(p, sysfs, name, NULL, NULL) < 0 || !realpath(p, real))
    return false;
  char *slash = strrchr(real, '/');
  if (!slash)
    return false;
  *slash = '\0';
  const char *parent = strrchr(real, '/');
  if (!parent)
    return false;
  /* kernel disk names are < 32 characters (DISK_NAME_LEN): callers' buffers hold them */
  ioq_copy_trunc(disk, disksz, parent + 1);
  return true;
}

/* Finds the entry of class/block whose attribute `attr` (one line) equals
 * `want`; `prefix` (may be "") limits the names looked at. 1 found, 0 not,
 * -1 if the directory cannot be read. */
static int scan_class_block(const char *sysfs, const char *prefix, const char *attr,
                            const char *want, char *name, size_t namesz, char *dir, ioq_err *e) {
  if (ioq_path_join(dir, PATH_MAX, e, sysfs, "class/block", NULL) < 0)
    return -1;
  DIR *d = opendir(dir);
  if (!d)
    return ioq_fail_errno(e, "open %s", dir);
  struct dirent *de;
  int found = 0;
  while (!found && (de = readdir(d))) {
    if (de->d_name[0] == '.' || strncmp(de->d_name, prefix, strlen(prefix)) != 0)
      continue;
    char p[PATH_MAX], line[256];
    if (ioq_path_join(p, sizeof p, NULL, dir, de->d_name, attr, NULL) == 0 &&
        ioq_read_line(p, line, sizeof line, NULL) == 0 && strcmp(line, want) == 0) {
      if (!ioq_copy(name, namesz, de->d_name)) {
        closedir(d);
        return ioq_fail(e, IOQ_EINVAL_INPUT, "block device %s is named '%s', longer than the %zu "
                        "characters a unit ID can carry", want, de->d_name, namesz - 1);
      }
      found = 1;
    }
  }
  closedir(d);
  return found;
}

int ioq_blockdev_name_for(const char *sysfs, unsigned major, unsigned minor, char *name,
                          size_t namesz, ioq_err *e) {
  char p[PATH_MAX], real[PATH_MAX], mm[32];
  snprintf(mm, sizeof mm, "%u:%u", major, minor);
  if (ioq_path_join(p, sizeof p, e, sysfs, "dev/block", mm, NULL) < 0)
    return -1;
  if (realpath(p, real)) {
    const char *b = strrchr(real, '/');
    /* a cut name would be another (or no) disk: unit IDs need it whole */
    if (!ioq_copy(name, namesz, b ? b + 1 : real))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "block device %s is named '%s', longer than the %zu "
                      "characters a unit ID can carry", mm, b ? b + 1 : real, namesz - 1);
    return 0;
  }
  /* no /sys/dev/block link: scan class/block/ (old kernels, minimal trees) */
  char dir[PATH_MAX];
  int rc = scan_class_block(sysfs, "", "dev", mm, name, namesz, dir, e);
  if (rc == 0)
    return ioq_fail(e, ENOENT, "no block device %s in %s", mm, dir);
  return rc < 0 ? -1 : 0;
}

int ioq_blockdev_dm_by_name(const char *sysfs, const char *dm_name, char *name, size_t namesz,
                            ioq_err *e) {
  char dir[PATH_MAX];
  int rc = scan_class_block(sysfs, "dm-", "dm/name", dm_name, name, namesz, dir, e);
  if (rc == 0)
    return ioq_fail(e, ENOENT, "no device-mapper device named '%s' in %s", dm_name, dir);
  return rc < 0 ? -1 : 0;
}

bool ioq_blockdev_is_stacked(const char *sysfs, const char *name) {
  char p[PATH_MAX];
  if (cls_path(p, sysfs, name, "slaves", NULL) < 0)
    return false;
  DIR *d = opendir(p);
  if (!d)
    return false;
  struct dirent *de;
  bool any = false;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.')
      any = true;
  closedir(d);
  return any;
}

static int add_leaf(const char *sysfs, const char *name, struct ioq_blockdev *leaves, size_t max,
                    size_t *n, ioq_err *e) {
  char disk[IOQ_DISK_NAME_MAX + 1];
  const char *whole = name;
  if (ioq_blockdev_is_partition(sysfs, name, disk, sizeof disk))
    whole = disk;
  for (size_t i = 0; i < *n; i++)
    if (strcmp(leaves[i].name, whole) == 0)
      return 0;
  if (*n >= max)
    return ioq_fail(e, E2BIG, "device stack has more than %zu leaf disks", max);
  if (ioq_blockdev_read(sysfs, whole, &leaves[*n], e) < 0)
    return -1;
  (*n)++;
  return 0;
}

static int walk(const char *sysfs, const char *name, struct ioq_blockdev *leaves, size_t max,
                size_t *n, int depth, ioq_err *e) {
  if (depth > 16)
    return ioq_fail(e, ELOOP, "device stack under %s is deeper than 16 levels", name);
  char p[PATH_MAX];
  if (cls_path(p, sysfs, name, "slaves", e) < 0)
    return -1;
  DIR *d = opendir(p);
  if (!d)
    return add_leaf(sysfs, name, leaves, max, n, e);
  struct dirent *de;
  bool any = false;
  int rc = 0;
  /* collect names first: recursion must not hold many DIR handles open */
  char names[64][IOQ_DISK_NAME_MAX + 1];
  size_t k = 0;
  while ((de = readdir(d)) && k < 64)
    if (de->d_name[0] != '.' && strlen(de->d_name) <= IOQ_DISK_NAME_MAX)
      ioq_copy_trunc(names[k++], sizeof names[0], de->d_name); /* length checked: fits */
  closedir(d);
  for (size_t i = 0; i < k && rc == 0; i++) {
    any = true;
    rc = walk(sysfs, names[i], leaves, max, n, depth + 1, e);
  }
  if (rc < 0)
    return -1;
  return any ? 0 : add_leaf(sysfs, name, leaves, max, n, e);
}

int ioq_blockdev_leaves(const char *sysfs, const char *name, struct ioq_blockdev *leaves,
                        size_t max, size_t *n, ioq_err *e) {
  *n = 0;
  return walk(sysfs, name, leaves, max, n, 0, e);
}

static const char *sysfs_or_default(const char *sysfs) { return sysfs && *sysfs ? sysfs : "/sys"; }

int ioq_blockdev_whole(const char *sysfs, struct ioq_devno dev, char *name, size_t namesz,
                       ioq_err *e) {
  sysfs = sysfs_or_default(sysfs);
  if (ioq_blockdev_name_for(sysfs, dev.major, dev.minor, name, namesz, e) < 0) {
    if (e)
      e->code = ENODEV;
    return -1;
  }
  char disk[IOQ_DISK_NAME_MAX + 1];
  if (!ioq_blockdev_is_partition(sysfs, name, disk, sizeof disk))
    return 0;
  struct ioq_blockdev whole;
  char ddev[32] = "?";
  if (ioq_blockdev_read(sysfs, disk, &whole, NULL) == 0)
    snprintf(ddev, sizeof ddev, "%u:%u", whole.major, whole.minor);
  return ioq_fail(e, IOQ_EINVAL_INPUT,
                  "%u:%u is %s, a partition of %s (%s): io limits and weights apply to whole "
                  "disks only (the kernel answers ENODEV); use %s",
                  dev.major, dev.minor, name, disk, ddev, ddev);
}

int ioq_blockdev_scheduler(const char *sysfs, struct ioq_devno dev, char *out, size_t outsz,
                           ioq_err *e) {
  sysfs = sysfs_or_default(sysfs);
  char name[IOQ_DISK_NAME_MAX + 1];
  struct ioq_blockdev b;
  if (ioq_blockdev_name_for(sysfs, dev.major, dev.minor, name, sizeof name, e) < 0 ||
      ioq_blockdev_read(sysfs, name, &b, e) < 0)
    return -1;
  if (!b.scheduler[0])
    return ioq_fail(e, ENOENT, "%s (%u:%u) has no queue/scheduler (a partition?)", name, dev.major,
                    dev.minor);
  if (!ioq_copy(out, outsz, b.scheduler))
    return ioq_fail(e, ENAMETOOLONG, "%s: scheduler name %s longer than %zu characters", name,
                    b.scheduler, outsz - 1);
  return 0;
}
