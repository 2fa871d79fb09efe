// SPDX-License-Identifier: Apache-2.0
/* Listing the pod cgroups that exist (for bounds on pods without a grant,
 * which get no kubelet call: the directory is the first sign of them). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "cgroup/podcg.h"
#include "base/grow.h"

bool ioq_pod_uid_from_dirname(const char *name, char uid[IOQ_POD_UID_LEN + 1]) {
  size_t nl = strlen(name);
  const char *u = NULL;
  bool systemd = false;
  if (nl == 3 + IOQ_POD_UID_LEN && strncmp(name, "pod", 3) == 0) {
    u = name + 3;
  } else if (nl >= 3 + IOQ_POD_UID_LEN + 6 && strcmp(name + nl - 6, ".slice") == 0) {
    const char *p = name + nl - 6 - IOQ_POD_UID_LEN - 3;
    if (strncmp(p, "pod", 3) != 0 || (p != name && p[-1] != '-'))
      return false;
    u = p + 3;
    systemd = true;
  } else {
    return false;
  }
  for (size_t i = 0; i < IOQ_POD_UID_LEN; i++)
    uid[i] = systemd && u[i] == '_' ? '-' : u[i];
  uid[IOQ_POD_UID_LEN] = '\0';
  return ioq_pod_uid_check(uid, NULL) == 0;
}

static int by_dir(const void *a, const void *b) {
  return strcmp(((const struct ioq_pod_cgroup_entry *)a)->dir,
                ((const struct ioq_pod_cgroup_entry *)b)->dir);
}

static int list_parent(const char *parent, enum ioq_qos_class qos,
                       struct ioq_pod_cgroup_entry **out, size_t *n, size_t *cap, ioq_err *e) {
  DIR *d = opendir(parent);
  if (!d) {
    if (errno == ENOENT)
      return 0; /* removed since it was found: nothing below it */
    return ioq_fail_errno(e, "list pod cgroups in %s", parent);
  }
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d))) {
    char uid[IOQ_POD_UID_LEN + 1];
    if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
      continue;
    if (!ioq_pod_uid_from_dirname(de->d_name, uid))
      continue;
    if (*n >= IOQ_PODCG_LIST_MAX) {
      rc = ioq_fail(e, IOQ_EINVAL_INPUT, "more than %d pod cgroups under %s", IOQ_PODCG_LIST_MAX,
                    parent);
      break;
    }
    struct ioq_pod_cgroup_entry *g = ioq_grow(*out, cap, *n + 1, sizeof *g, 32);
    if (!g) {
      rc = ioq_fail(e, ENOMEM, "list pod cgroups: out of memory for %zu entries", *cap * 2);
      break;
    }
    *out = g;
    struct ioq_pod_cgroup_entry *pe = &(*out)[*n];
    if (ioq_path_join(pe->dir, sizeof pe->dir, NULL, parent, de->d_name, NULL) < 0 ||
        !ioq_is_dir(pe->dir))
      continue; /* too long for a path, or not a directory (DT_UNKNOWN) */
    memcpy(pe->uid, uid, sizeof pe->uid);
    pe->qos = qos;
    (*n)++;
  }
  closedir(d);
  return rc;
}

int ioq_pod_cgroups_list(const struct ioq_cg_layout *l, enum ioq_cg_driver driver,
                         const char *cgroup_root, struct ioq_pod_cgroup_entry **out, size_t *n,
                         char qos_dirs[3][PATH_MAX], ioq_err *e) {
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  if (driver != IOQ_CG_DRIVER_CGROUPFS && driver != IOQ_CG_DRIVER_SYSTEMD)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "list pod cgroups: the cgroup driver must be known");
  static const enum ioq_qos_class classes[3] = {IOQ_QOS_GUARANTEED, IOQ_QOS_BURSTABLE,
                                                IOQ_QOS_BESTEFFORT};
  for (int i = 0; i < 3; i++) {
    char name[PATH_MAX];
    qos_dirs[classes[i]][0] = '\0';
    if (ioq_qos_cgroup_name(driver, cgroup_root, classes[i], name, sizeof name, e) < 0 ||
        ioq_path_join(qos_dirs[classes[i]], PATH_MAX, e, l->io_root, name, NULL) < 0)
      goto fail;
    if (!ioq_is_dir(qos_dirs[classes[i]])) {
      qos_dirs[classes[i]][0] = '\0';
      continue;
    }
    if (list_parent(qos_dirs[classes[i]], classes[i], out, n, &cap, e) < 0)
      goto fail;
  }
  if (*n)
    qsort(*out, *n, sizeof **out, by_dir);
  return 0;
fail:
  free(*out);
  *out = NULL;
  *n = 0;
  return -1;
}
