// SPDX-License-Identifier: Apache-2.0
/* Bottom layer of the cgroup writer: path, existence, read and write of one
 * cgroup file, and report steps (contract in cgfile.h). */
#include "cgfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/fsutil.h"

struct ioq_apply_step *ioq_step_new(struct ioq_apply_report *rep, const char *file) {
  static __thread struct ioq_apply_step scratch;
  struct ioq_apply_step *s = &scratch;
  if (rep && rep->n < IOQ_APPLY_MAX_STEPS)
    s = &rep->steps[rep->n++];
  memset(s, 0, sizeof *s);
  snprintf(s->file, sizeof s->file, "%s", file);
  return s;
}

int ioq_cg_file(const struct ioq_cg *cg, const char *name, char *out, ioq_err *e) {
  return ioq_path_join(out, PATH_MAX, e, cg->dir, name, NULL);
}

bool ioq_cg_has(const struct ioq_cg *cg, const char *name) {
  char p[PATH_MAX];
  return ioq_cg_file(cg, name, p, NULL) == 0 && ioq_path_exists(p);
}

int ioq_cg_read(const struct ioq_cg *cg, const char *name, char **content, ioq_err *e) {
  char p[PATH_MAX];
  if (ioq_cg_file(cg, name, p, e) < 0)
    return -1;
  return ioq_read_file(p, content, NULL, 0, e);
}

/* What the kernel's errno means for a cgroup I/O file, or NULL. */
static const char *errno_hint(int code) {
  switch (code) {
  case ENODEV: return "the kernel accepts whole disks only, and the device must exist";
  case EROFS: return "the cgroup filesystem is mounted read-only";
  case ERANGE: return "value out of the kernel's range";
  case ENOENT: return "the cgroup or the file is gone";
  case EACCES:
  case EPERM: return "not permitted (needs root / CAP_SYS_ADMIN over the cgroup)";
  default: return NULL;
  }
}

int ioq_cg_write(const struct ioq_cg *cg, const char *name, const char *data, ioq_err *e) {
  char p[PATH_MAX];
  if (ioq_cg_file(cg, name, p, e) < 0)
    return -1;
  if (ioq_write_file(p, data, e) == 0)
    return 0;
  const char *hint = e ? errno_hint(e->code) : NULL;
  if (hint) {
    size_t l = strlen(e->msg);
    snprintf(e->msg + l, sizeof e->msg - l, " (%s)", hint);
  }
  return -1;
}
