// SPDX-License-Identifier: Apache-2.0
#include "disk/mountinfo.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"

void ioq_mountinfo_unescape(char *s) {
  char *w = s;
  for (char *r = s; *r;) {
    if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
        r[3] <= '7') {
      *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
      r += 4;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
}

/* true if mountpoint mp contains path p (component-wise prefix) */
static bool contains(const char *mp, const char *p) {
  if (strcmp(mp, "/") == 0)
    return p[0] == '/';
  size_t n = strlen(mp);
  return strncmp(mp, p, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* Parses one line; returns 0 on success, -1 if malformed. Fields:
 * ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
static int parse_line(char *line, struct ioq_mount *m) {
  char *save, *tok[6];
  for (int i = 0; i < 6; i++) {
    tok[i] = strtok_r(i == 0 ? line : NULL, " \n", &save);
    if (!tok[i])
      return -1;
  }
  if (sscanf(tok[2], "%u:%u", &m->major, &m->minor) != 2)
    return -1;
  char *t;
  while ((t = strtok_r(NULL, " \n", &save)) && strcmp(t, "-") != 0)
    ;
  if (!t)
    return -1;
  char *fstype = strtok_r(NULL, " \n", &save);
  char *source = strtok_r(NULL, " \n", &save);
  if (!fstype || !source)
    return -1;
  ioq_mountinfo_unescape(tok[4]);
  ioq_mountinfo_unescape(source);
  /* a cut mount point would match the wrong paths: such a line is not used */
  if (!ioq_copy(m->mountpoint, sizeof m->mountpoint, tok[4]) ||
      !ioq_copy(m->fstype, sizeof m->fstype, fstype) ||
      !ioq_copy(m->source, sizeof m->source, source))
    return -1;
  return 0;
}

int ioq_mount_for_path(const char *mountinfo_file, const char *path, struct ioq_mount *out,
                       ioq_err *e) {
  if (!path || path[0] != '/')
    return ioq_fail(e, IOQ_EINVAL_INPUT, "path '%s' is not absolute", path ? path : "(null)");
  char *data;
  if (ioq_read_file(mountinfo_file, &data, NULL, 16u << 20, e) < 0)
    return -1;
  size_t best = 0;
  bool found = false;
  int lineno = 0;
  char *save;
  for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    lineno++;
    struct ioq_mount m;
    if (parse_line(line, &m) < 0)
      continue; /* the kernel never writes malformed lines; tolerate test junk */
    if (!contains(m.mountpoint, path))
      continue;
    size_t l = strlen(m.mountpoint);
    if (!found || l >= best) {
      *out = m;
      best = l;
      found = true;
    }
  }
  free(data);
  if (!found)
    return ioq_fail(e, IOQ_ENOTFOUND, "no mount in %s contains %s", mountinfo_file, path);
  return 0;
}
