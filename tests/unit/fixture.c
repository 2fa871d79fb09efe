#include "fixture.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
