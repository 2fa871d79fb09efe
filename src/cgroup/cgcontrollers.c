// SPDX-License-Identifier: Apache-2.0
/* cgroup v2: controllers enabled along the path to a pod cgroup.
 *
 * A cgroup has io.max only if its parent lists "io" in
 * cgroup.subtree_control, and so on up to the root. Cgroup writeback (buffered
 * writes charged to the cgroup that dirtied the pages) is documented to need
 * memory along the same path too, so both are enabled. The kernel refuses to
 * enable a controller in a non-root cgroup that has processes of its own
 * (EBUSY, "no internal processes") and in a cgroup whose parent does not
 * offer it (ENOENT). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/log.h"

static const struct {
  unsigned bit;
  const char *name;
  const char *why;
} g_ctrls[] = {
    {IOQ_CTRL_IO, "io", "needed for io.max / io.weight"},
    {IOQ_CTRL_MEMORY, "memory", "needed to charge buffered writeback to the pod"},
};

/* True if the space-separated list in `path` contains `word`. */
static int list_has(const char *path, const char *word, bool *has, ioq_err *e) {
  char *c = NULL;
  if (ioq_read_file(path, &c, NULL, 0, e) < 0)
    return -1;
  *has = false;
  char *save = NULL;
  for (char *t = strtok_r(c, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
    if (strcmp(t, word) == 0)
      *has = true;
  free(c);
  return 0;
}

static int ensure_one(const char *cg, const char *parent, const char *name, const char *why,
                      bool enable, unsigned *enabled, ioq_err *e) {
  char sc[PATH_MAX], cc[PATH_MAX];
  if (ioq_path_join(sc, sizeof sc, e, cg, "cgroup.subtree_control", NULL) < 0 ||
      ioq_path_join(cc, sizeof cc, e, cg, "cgroup.controllers", NULL) < 0)
    return -1;
  bool has;
  if (list_has(sc, name, &has, e) < 0)
    return -1;
  if (has)
    return 0;
  bool offered;
  if (list_has(cc, name, &offered, e) < 0)
    return -1;
  if (!offered)
    return ioq_fail(e, IOQ_EUNSUPPORTED,
                    "the %s controller (%s) is not available in %s: %s", name, why, cg,
                    parent ? "its parent does not enable it in cgroup.subtree_control"
                           : "the kernel does not offer it in cgroup.controllers");
  if (!enable)
    return ioq_fail(e, IOQ_EUNSUPPORTED,
                    "the %s controller (%s) is not enabled in %s (enabling controllers is "
                    "turned off in the configuration)",
                    name, why, sc);
  char cmd[32];
  snprintf(cmd, sizeof cmd, "+%s", name);
  if (ioq_write_file(sc, cmd, e) < 0) {
    if (e && e->code == EBUSY)
      ioq_err_prefix(e, "cannot enable %s in %s: the cgroup has processes of its own, and cgroup "
                        "v2 delegates controllers only from cgroups without processes",
                     name, cg);
    else
      ioq_err_prefix(e, "cannot enable %s (%s) in %s", name, why, cg);
    return -1;
  }
  if (list_has(sc, name, &has, e) < 0)
    return -1;
  if (!has)
    return ioq_fail(e, IOQ_EMISMATCH, "%s: wrote '%s' but the controller is not listed afterwards",
                    sc, cmd);
  ioq_info("cgroup controller enabled cgroup=%s controller=%s", cg, name);
  if (enabled)
    (*enabled)++;
  return 0;
}

int ioq_cg_ensure_controllers(const char *root, const char *dir, unsigned mask, bool enable,
                              unsigned *enabled, ioq_err *e) {
  if (enabled)
    *enabled = 0;
  size_t rl = strlen(root);
  while (rl > 1 && root[rl - 1] == '/')
    rl--;
  if (strncmp(dir, root, rl) != 0 || (dir[rl] != '/' && dir[rl] != '\0'))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s is not inside the cgroup v2 root %s", dir, root);
  char cur[PATH_MAX];
  if (rl >= sizeof cur)
    return ioq_fail(e, ENAMETOOLONG, "path too long");
  memcpy(cur, root, rl);
  cur[rl] = '\0';
  const char *rest = dir + rl;
  const char *parent = NULL;
  char prev[PATH_MAX] = "";
  /* Ancestors: root, root/a, root/a/b, ... excluding dir itself. */
  for (;;) {
    while (*rest == '/')
      rest++;
    if (!*rest)
      break; /* cur is dir itself */
    for (size_t i = 0; i < sizeof g_ctrls / sizeof g_ctrls[0]; i++)
      if ((mask & g_ctrls[i].bit) &&
          ensure_one(cur, parent, g_ctrls[i].name, g_ctrls[i].why, enable, enabled, e) < 0)
        return -1;
    snprintf(prev, sizeof prev, "%s", cur);
    parent = prev;
    size_t len = strcspn(rest, "/");
    size_t cl = strlen(cur);
    if (cl + 1 + len >= sizeof cur)
      return ioq_fail(e, ENAMETOOLONG, "path too long");
    cur[cl] = '/';
    memcpy(cur + cl + 1, rest, len);
    cur[cl + 1 + len] = '\0';
    if (!ioq_is_dir(cur))
      return ioq_fail(e, ENOENT, "cgroup %s does not exist", cur);
    rest += len;
  }
  return 0;
}
