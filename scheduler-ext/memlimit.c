// SPDX-License-Identifier: Apache-2.0
#include "memlimit.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "disk/mountinfo.h"

/* v1 reports "no limit" as the largest page-aligned long (9223372036854771712) */
#define V1_UNLIMITED (1ull << 62)

/* The cgroup path of the memory controller: the v1 line naming "memory",
 * else the v2 line ("0::/path"). */
static int own_cgroup(const char *proc_cgroup, char *path, size_t psz, bool *v1, ioq_err *e) {
  char *text;
  if (ioq_read_file(proc_cgroup, &text, NULL, 1u << 16, e) < 0)
    return -1;
  bool found = false;
  *v1 = false;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c2 = '\0';
    const char *ctrls = c1 + 1;
    bool mem = false;
    char list[256];
    snprintf(list, sizeof list, ",%s,", ctrls);
    mem = strstr(list, ",memory,") != NULL;
    if (mem || (!*ctrls && !*v1 && !found)) {
      if (!ioq_copy(path, psz, c2 + 1)) {
        free(text);
        return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: cgroup path too long", proc_cgroup);
      }
      found = true;
      if (mem) {
        *v1 = true;
        break;
      }
    }
  }
  free(text);
  if (!found)
    path[0] = '\0';
  return 0;
}

/* Mount point and root of the hierarchy: cgroup2, or v1 cgroup with memory. */
static int find_mount(const char *mountinfo, bool v1, char *mnt, size_t msz, char *root,
                      size_t rsz, ioq_err *e) {
  char *text;
  if (ioq_read_file(mountinfo, &text, NULL, 1u << 22, e) < 0)
    return -1;
  mnt[0] = '\0';
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
    char *f[5], *s2 = NULL;
    int n = 0;
    char *sep = strstr(line, " - ");
    if (!sep)
      continue;
    *sep = '\0';
    for (char *t = strtok_r(line, " ", &s2); t && n < 5; t = strtok_r(NULL, " ", &s2))
      f[n++] = t;
    if (n < 5)
      continue;
    char fstype[32] = "", source[256] = "", super[512] = "";
    if (sscanf(sep + 3, "%31s %255s %511s", fstype, source, super) < 3)
      continue;
    char opts[520];
    snprintf(opts, sizeof opts, ",%s,", super);
    bool match = v1 ? strcmp(fstype, "cgroup") == 0 && strstr(opts, ",memory,")
                    : strcmp(fstype, "cgroup2") == 0;
    if (!match)
      continue;
    ioq_mountinfo_unescape(f[3]);
    ioq_mountinfo_unescape(f[4]);
    if (!ioq_copy(mnt, msz, f[4]) || !ioq_copy(root, rsz, f[3])) {
      free(text);
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: cgroup mount path too long", mountinfo);
    }
    break; /* the first one: a later bind mount of it adds nothing */
  }
  free(text);
  return 0;
}

/* Reads one limit file: 0 = no limit (or no file at this level). */
static int read_limit(const char *file, uint64_t *out, ioq_err *e) {
  *out = 0;
  if (access(file, F_OK) < 0)
    return 0;
  char buf[64];
  if (ioq_read_line(file, buf, sizeof buf, e) < 0)
    return -1;
  if (strcmp(buf, "max") == 0)
    return 0;
  if (ioq_parse_u64(buf, out) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: '%s' is not a number of bytes", file, buf);
  if (*out >= V1_UNLIMITED)
    *out = 0;
  return 0;
}

int ext_memory_limit(const char *proc_cgroup, const char *mountinfo, uint64_t *limit, char *where,
                     size_t wsz, ioq_err *e) {
  *limit = 0;
  if (where && wsz)
    where[0] = '\0';
  char cg[PATH_MAX], mnt[PATH_MAX], root[PATH_MAX];
  bool v1;
  if (own_cgroup(proc_cgroup, cg, sizeof cg, &v1, e) < 0 ||
      (cg[0] && find_mount(mountinfo, v1, mnt, sizeof mnt, root, sizeof root, e) < 0))
    return -1;
  if (!cg[0] || !mnt[0])
    return 0; /* no memory cgroup: no limit to follow */
  /* the cgroup path is relative to the hierarchy's root; the mount shows
   * the subtree below `root` (a container's own cgroup namespace: "/") */
  size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
  if (rl && (strncmp(cg, root, rl) != 0 || (cg[rl] != '/' && cg[rl] != '\0')))
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "cgroup %s is outside the mounted cgroup tree %s (root %s)", cg, mnt, root);
  char dir[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s%s", mnt, cg + rl) >= (int)sizeof dir)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup path %s%s too long", mnt, cg + rl);
  size_t ml = strlen(mnt);
  const char *name = v1 ? "memory.limit_in_bytes" : "memory.max";
  /* the tightest limit on the way up counts (a pod's or a node's limit can
   * be the binding one) */
  for (;;) {
    char file[PATH_MAX + 32];
    snprintf(file, sizeof file, "%s/%s", dir, name);
    uint64_t l;
    if (read_limit(file, &l, e) < 0)
      return -1;
    if (l && (!*limit || l < *limit)) {
      *limit = l;
      if (where && wsz)
        snprintf(where, wsz, "%s", file);
    }
    char *slash = strrchr(dir, '/');
    if (strlen(dir) <= ml || !slash || (size_t)(slash - dir) < ml)
      break; /* the mount point (the hierarchy's root) was the last */
    *slash = '\0';
  }
  return 0;
}

size_t ext_parse_budget(uint64_t limit) {
  if (!limit)
    return (size_t)EXT_BUDGET_UNLIMITED;
  uint64_t b = limit / 4;
  if (b < EXT_BUDGET_MIN)
    b = EXT_BUDGET_MIN;
  if (b > EXT_BUDGET_MAX)
    b = EXT_BUDGET_MAX;
  return (size_t)b;
}
