// SPDX-License-Identifier: Apache-2.0
#include "fixture.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

char *fx_tmpdir(void) {
  char tmpl[] = "/tmp/ioqos-test-XXXXXX";
  char *d = mkdtemp(tmpl);
  cr_assert_not_null(d, "mkdtemp: %s", strerror(errno));
  return strdup(d);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

void fx_rmtree(const char *path) {
  if (!path || strncmp(path, "/tmp/ioqos-test-", 16) != 0)
    return;
  nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fx_path(const char *root, const char *rel) {
  static char bufs[8][PATH_MAX];
  static int slot;
  char *b = bufs[slot++ % 8];
  snprintf(b, PATH_MAX, "%s/%s", root, rel);
  return b;
}

static void mkdirs(const char *path) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(tmp, 0755);
      *p = '/';
    }
  mkdir(tmp, 0755);
}

void fx_mkdir(const char *root, const char *rel) { mkdirs(fx_path(root, rel)); }

static void mkparent(const char *full) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", full);
  char *s = strrchr(dir, '/');
  if (s) {
    *s = '\0';
    mkdirs(dir);
  }
}

void fx_write(const char *root, const char *rel, const char *content) {
  const char *full = fx_path(root, rel);
  mkparent(full);
  FILE *f = fopen(full, "w");
  cr_assert_not_null(f, "fopen %s: %s", full, strerror(errno));
  fputs(content, f);
  fclose(f);
}

void fx_symlink(const char *root, const char *rel, const char *target) {
  const char *full = fx_path(root, rel);
  mkparent(full);
  unlink(full);
  cr_assert_eq(symlink(target, full), 0, "symlink %s: %s", full, strerror(errno));
}

bool fx_swallower(const char *root, const char *rel) {
  const char *full = fx_path(root, rel);
  mkparent(full);
  unlink(full);
  if (mknod(full, S_IFCHR | 0666, makedev(1, 3)) == 0)
    return true;
  cr_assert(errno == EPERM, "mknod %s: %s", full, strerror(errno));
  return false;
}

char *fx_read(const char *root, const char *rel) {
  const char *full = fx_path(root, rel);
  FILE *f = fopen(full, "r");
  cr_assert_not_null(f, "fopen %s: %s", full, strerror(errno));
  char *buf = calloc(1, 1 << 16);
  size_t n = fread(buf, 1, (1 << 16) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* the real path of a block device (disk or partition) in the fixture */
static const char *devdir(const char *disk, const char *part) {
  static char b[PATH_MAX];
  if (part)
    snprintf(b, sizeof b, "sys/devices/virtual/block/%s/%s", disk, part);
  else
    snprintf(b, sizeof b, "sys/devices/virtual/block/%s", disk);
  return b;
}

static void links(const char *root, const char *name, const char *dir, const char *majmin) {
  char rel[PATH_MAX], target[PATH_MAX];
  snprintf(rel, sizeof rel, "sys/class/block/%s", name);
  snprintf(target, sizeof target, "../../%s", dir + 4); /* strip "sys/" */
  fx_symlink(root, rel, target);
  snprintf(rel, sizeof rel, "sys/dev/block/%s", majmin);
  fx_symlink(root, rel, target);
}

void fx_sys_disk(const char *root, const char *name, const char *majmin, const char *sched,
                 int rotational) {
  char dir[PATH_MAX], rel[PATH_MAX], val[64];
  snprintf(dir, sizeof dir, "%s", devdir(name, NULL));
  snprintf(rel, sizeof rel, "%s/dev", dir);
  snprintf(val, sizeof val, "%s\n", majmin);
  fx_write(root, rel, val);
  snprintf(rel, sizeof rel, "%s/queue/scheduler", dir);
  snprintf(val, sizeof val, "%s\n", sched);
  fx_write(root, rel, val);
  snprintf(rel, sizeof rel, "%s/queue/rotational", dir);
  fx_write(root, rel, rotational ? "1\n" : "0\n");
  snprintf(rel, sizeof rel, "%s/queue/logical_block_size", dir);
  fx_write(root, rel, "512\n");
  snprintf(rel, sizeof rel, "%s/slaves", dir);
  fx_mkdir(root, rel);
  links(root, name, dir, majmin);
}

void fx_sys_part(const char *root, const char *disk, const char *part, const char *majmin, int partno) {
  char dir[PATH_MAX], rel[PATH_MAX], val[64];
  snprintf(dir, sizeof dir, "%s", devdir(disk, part));
  snprintf(rel, sizeof rel, "%s/dev", dir);
  snprintf(val, sizeof val, "%s\n", majmin);
  fx_write(root, rel, val);
  snprintf(rel, sizeof rel, "%s/partition", dir);
  snprintf(val, sizeof val, "%d\n", partno);
  fx_write(root, rel, val);
  links(root, part, dir, majmin);
}

void fx_sys_slave(const char *root, const char *name, const char *lower) {
  char rel[PATH_MAX], target[PATH_MAX];
  snprintf(rel, sizeof rel, "sys/class/block/%s/slaves/%s", name, lower);
  /* an absolute link into the fixture: only the entry's name matters */
  snprintf(target, sizeof target, "%s/sys/class/block/%s", root, lower);
  fx_symlink(root, rel, target);
}

void fx_sys_dm_name(const char *root, const char *dm, const char *dm_name) {
  char rel[PATH_MAX], val[128];
  snprintf(rel, sizeof rel, "sys/class/block/%s/dm/name", dm);
  snprintf(val, sizeof val, "%s\n", dm_name);
  fx_write(root, rel, val);
}
