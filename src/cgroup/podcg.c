// SPDX-License-Identifier: Apache-2.0
#include "cgroup/podcg.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/fsutil.h"
#include "base/log.h"

#define MAX_PARTS 32
#define PART_MAX 256

int ioq_cg_driver_parse(const char *s, enum ioq_cg_driver *out, ioq_err *e) {
  if (s && strcmp(s, "auto") == 0)
    *out = IOQ_CG_DRIVER_AUTO;
  else if (s && strcmp(s, "cgroupfs") == 0)
    *out = IOQ_CG_DRIVER_CGROUPFS;
  else if (s && strcmp(s, "systemd") == 0)
    *out = IOQ_CG_DRIVER_SYSTEMD;
  else
    return ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup driver '%s': want auto, cgroupfs or systemd",
                    s ? s : "");
  return 0;
}

const char *ioq_cg_driver_name(enum ioq_cg_driver d) {
  switch (d) {
  case IOQ_CG_DRIVER_CGROUPFS: return "cgroupfs";
  case IOQ_CG_DRIVER_SYSTEMD: return "systemd";
  default: return "auto";
  }
}

int ioq_qos_parse(const char *s, enum ioq_qos_class *out, ioq_err *e) {
  if (s && strcasecmp(s, "Guaranteed") == 0)
    *out = IOQ_QOS_GUARANTEED;
  else if (s && strcasecmp(s, "Burstable") == 0)
    *out = IOQ_QOS_BURSTABLE;
  else if (s && strcasecmp(s, "BestEffort") == 0)
    *out = IOQ_QOS_BESTEFFORT;
  else
    return ioq_fail(e, IOQ_EINVAL_INPUT, "QoS class '%s': want Guaranteed, Burstable or BestEffort",
                    s ? s : "");
  return 0;
}

const char *ioq_qos_name(enum ioq_qos_class q) {
  switch (q) {
  case IOQ_QOS_BURSTABLE: return "Burstable";
  case IOQ_QOS_BESTEFFORT: return "BestEffort";
  default: return "Guaranteed";
  }
}

int ioq_pod_uid_check(const char *uid, ioq_err *e) {
  if (!uid)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod UID missing");
  size_t n = strnlen(uid, IOQ_POD_UID_LEN + 1);
  if (n != IOQ_POD_UID_LEN)
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "pod UID '%.64s': must be 36 characters (8-4-4-4-12 lowercase hex digits and "
                    "dashes), got %s%zu",
                    uid, n > IOQ_POD_UID_LEN ? "more than " : "", n > IOQ_POD_UID_LEN ? n - 1 : n);
  for (size_t i = 0; i < n; i++) {
    char c = uid[i];
    bool dash_pos = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_pos && c != '-')
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "pod UID '%s': expected '-' at position %zu (form 8-4-4-4-12)", uid, i + 1);
    if (!dash_pos && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "pod UID '%s': character %zu ('%c') is not a lowercase hex digit "
                      "(Kubernetes UIDs are lowercase)",
                      uid, i + 1, (c >= 0x20 && c < 0x7f) ? c : '?');
  }
  return 0;
}

/* Splits kubelet's --cgroup-root (cgroupfs form, like ParseCgroupfsToCgroupName)
 * into parts, rejecting what would escape or confuse a path. */
static int root_parts(const char *root, char parts[][PART_MAX], size_t *n, ioq_err *e) {
  *n = 0;
  if (!root || !*root)
    root = IOQ_DEFAULT_KUBELET_CGROUP_ROOT;
  if (root[0] != '/')
    return ioq_fail(e, IOQ_EINVAL_INPUT, "kubelet cgroup root '%s': must be an absolute path", root);
  const char *p = root;
  while (*p) {
    while (*p == '/')
      p++;
    if (!*p)
      break;
    size_t len = strcspn(p, "/");
    if (len >= PART_MAX || *n >= MAX_PARTS - 4)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "kubelet cgroup root '%.200s': too long", root);
    memcpy(parts[*n], p, len);
    parts[*n][len] = '\0';
    if (strcmp(parts[*n], ".") == 0 || strcmp(parts[*n], "..") == 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "kubelet cgroup root '%s': '.' and '..' are not allowed",
                      root);
    for (size_t i = 0; i < len; i++)
      if ((unsigned char)p[i] <= 0x20 || p[i] == 0x7f)
        return ioq_fail(e, IOQ_EINVAL_INPUT,
                        "kubelet cgroup root '%s': whitespace or control characters are not allowed",
                        root);
    (*n)++;
    p += len;
  }
  return 0;
}

/* Builds the cgroup name from parts in the driver's form. */
static int build_name(enum ioq_cg_driver d, char parts[][PART_MAX], size_t n, char *out,
                      size_t outsz, ioq_err *e) {
  size_t used = 0;
  out[0] = '\0';
  if (d == IOQ_CG_DRIVER_CGROUPFS) {
    for (size_t i = 0; i < n; i++) {
      int w = snprintf(out + used, outsz - used, "/%s", parts[i]);
      if (w < 0 || (size_t)w >= outsz - used)
        goto toolong;
      used += (size_t)w;
    }
    return 0;
  }
  if (d != IOQ_CG_DRIVER_SYSTEMD)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "cgroup driver must be cgroupfs or systemd here");
  /* systemd: escape '-' to '_' in each part, then ExpandSlice of
   * "p0-p1-...-pn.slice": "/p0.slice/p0-p1.slice/.../p0-...-pn.slice". */
  char prefix[PATH_MAX] = "";
  size_t plen = 0;
  for (size_t i = 0; i < n; i++) {
    char esc[PART_MAX];
    snprintf(esc, sizeof esc, "%s", parts[i]);
    for (char *c = esc; *c; c++)
      if (*c == '-')
        *c = '_';
    int w = snprintf(out + used, outsz - used, "/%s%s.slice", prefix, esc);
    if (w < 0 || (size_t)w >= outsz - used)
      goto toolong;
    used += (size_t)w;
    w = snprintf(prefix + plen, sizeof prefix - plen, "%s-", esc);
    if (w < 0 || (size_t)w >= sizeof prefix - plen)
      goto toolong;
    plen += (size_t)w;
  }
  return 0;
toolong:
  return ioq_fail(e, ENAMETOOLONG, "cgroup name too long");
}

static int kube_parts(const char *root, char parts[][PART_MAX], size_t *n, ioq_err *e) {
  if (root_parts(root, parts, n, e) < 0)
    return -1;
  snprintf(parts[(*n)++], PART_MAX, "kubepods");
  return 0;
}

int ioq_kubepods_cgroup_name(enum ioq_cg_driver driver, const char *cgroup_root, char *out,
                             size_t outsz, ioq_err *e) {
  char parts[MAX_PARTS][PART_MAX];
  size_t n;
  if (kube_parts(cgroup_root, parts, &n, e) < 0)
    return -1;
  return build_name(driver, parts, n, out, outsz, e);
}

/* kubepods[/qos] parts: Guaranteed pods sit directly under kubepods */
static int qos_parts(const char *root, enum ioq_qos_class qos, char parts[][PART_MAX], size_t *n,
                     ioq_err *e) {
  if (kube_parts(root, parts, n, e) < 0)
    return -1;
  if (qos == IOQ_QOS_BURSTABLE)
    snprintf(parts[(*n)++], PART_MAX, "burstable");
  else if (qos == IOQ_QOS_BESTEFFORT)
    snprintf(parts[(*n)++], PART_MAX, "besteffort");
  return 0;
}

int ioq_qos_cgroup_name(enum ioq_cg_driver driver, const char *cgroup_root, enum ioq_qos_class qos,
                        char *out, size_t outsz, ioq_err *e) {
  char parts[MAX_PARTS][PART_MAX];
  size_t n;
  if (qos_parts(cgroup_root, qos, parts, &n, e) < 0)
    return -1;
  return build_name(driver, parts, n, out, outsz, e);
}

int ioq_pod_cgroup_name(enum ioq_cg_driver driver, const char *cgroup_root, enum ioq_qos_class qos,
                        const char *uid, char *out, size_t outsz, ioq_err *e) {
  if (ioq_pod_uid_check(uid, e) < 0)
    return -1;
  char parts[MAX_PARTS][PART_MAX];
  size_t n;
  if (qos_parts(cgroup_root, qos, parts, &n, e) < 0)
    return -1;
  snprintf(parts[n++], PART_MAX, "pod%s", uid);
  return build_name(driver, parts, n, out, outsz, e);
}

/* ---- search ------------------------------------------------------------ */

struct search {
  const char *uid;
  char uid_sd[IOQ_POD_UID_LEN + 1]; /* dashes as underscores (systemd) */
  size_t visited;
  bool truncated;
  char found[2][PATH_MAX];
  size_t n_found;
};

static bool name_matches(const struct search *s, const char *name) {
  char want[64];
  if (strncmp(name, "pod", 3) == 0 && strcmp(name + 3, s->uid) == 0)
    return true; /* cgroupfs: pod<uid> */
  snprintf(want, sizeof want, "pod%s.slice", s->uid_sd);
  size_t nl = strlen(name), wl = strlen(want);
  /* systemd: [...-]pod<uid_>.slice */
  return nl >= wl && strcmp(name + nl - wl, want) == 0 && (nl == wl || name[nl - wl - 1] == '-');
}

static bool is_subdir(const char *parent, const struct dirent *de) {
  if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
    return false;
  if (de->d_type == DT_DIR)
    return true;
  if (de->d_type != DT_UNKNOWN)
    return false;
  char p[PATH_MAX];
  struct stat st;
  return snprintf(p, sizeof p, "%s/%s", parent, de->d_name) < (int)sizeof p && lstat(p, &st) == 0 &&
         S_ISDIR(st.st_mode);
}

static void search_dir(struct search *s, const char *dir, int depth) {
  if (depth <= 0 || s->n_found >= 2)
    return;
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *de;
  while ((de = readdir(d)) && s->n_found < 2) {
    if (!is_subdir(dir, de))
      continue;
    if (++s->visited > IOQ_PODCG_SEARCH_MAX_DIRS) {
      s->truncated = true;
      break;
    }
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p)
      continue;
    if (name_matches(s, de->d_name)) {
      snprintf(s->found[s->n_found++], PATH_MAX, "%s", p);
      continue; /* a pod cgroup holds containers, not other pods */
    }
    search_dir(s, p, depth - 1);
  }
  closedir(d);
}

static bool kubepods_name(const char *n) {
  size_t l = strlen(n);
  return strcmp(n, "kubepods") == 0 || strcmp(n, "kubepods.slice") == 0 ||
         (l > 15 && strcmp(n + l - 15, "-kubepods.slice") == 0);
}

/* Kubepods directories anywhere near the top of the hierarchy (when the
 * configured --cgroup-root does not match the node). */
static size_t find_kubepods(const char *dir, int depth, char out[][PATH_MAX], size_t max,
                            size_t n, size_t *visited) {
  if (depth <= 0 || n >= max)
    return n;
  DIR *d = opendir(dir);
  if (!d)
    return n;
  struct dirent *de;
  while ((de = readdir(d)) && n < max) {
    if (!is_subdir(dir, de) || ++*visited > IOQ_PODCG_SEARCH_MAX_DIRS)
      continue;
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p)
      continue;
    if (kubepods_name(de->d_name))
      snprintf(out[n++], PATH_MAX, "%s", p);
    else
      n = find_kubepods(p, depth - 1, out, max, n, visited);
  }
  closedir(d);
  return n;
}

static void append(char *buf, size_t sz, const char *fmt, const char *s) {
  size_t l = strlen(buf);
  if (l < sz)
    snprintf(buf + l, sz - l, fmt, s);
}

int ioq_pod_cgroup_resolve(const struct ioq_cg_layout *l, enum ioq_cg_driver driver,
                           const char *cgroup_root, enum ioq_qos_class qos, const char *uid,
                           struct ioq_pod_cgroup *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (ioq_pod_uid_check(uid, e) < 0)
    return -1;
  enum ioq_cg_driver cands[2];
  size_t nc = 0;
  if (driver == IOQ_CG_DRIVER_AUTO) {
    cands[nc++] = IOQ_CG_DRIVER_SYSTEMD;
    cands[nc++] = IOQ_CG_DRIVER_CGROUPFS;
  } else {
    cands[nc++] = driver;
  }

  char tried[2][PATH_MAX], kube[2][PATH_MAX];
  char name[PATH_MAX];
  int hit = -1;
  for (size_t i = 0; i < nc; i++) {
    if (ioq_pod_cgroup_name(cands[i], cgroup_root, qos, uid, name, sizeof name, e) < 0)
      return -1;
    if (ioq_path_join(tried[i], PATH_MAX, e, l->io_root, name, NULL) < 0)
      return -1;
    char kname[PATH_MAX];
    if (ioq_kubepods_cgroup_name(cands[i], cgroup_root, kname, sizeof kname, e) < 0 ||
        ioq_path_join(kube[i], PATH_MAX, e, l->io_root, kname, NULL) < 0)
      return -1;
    if (ioq_is_dir(tried[i])) {
      if (hit >= 0)
        return ioq_fail(e, IOQ_ECONFLICT,
                        "pod %s: cgroups exist for both drivers (%s and %s); pass the kubelet "
                        "cgroup driver explicitly",
                        uid, tried[hit], tried[i]);
      hit = (int)i;
      snprintf(out->name, sizeof out->name, "%s", name);
    }
  }
  if (hit >= 0) {
    snprintf(out->dir, sizeof out->dir, "%s", tried[hit]);
    out->driver = cands[hit];
    return 0;
  }

  /* Not where kubelet's naming says: search the kubepods subtree(s). */
  struct search s = {.uid = uid};
  snprintf(s.uid_sd, sizeof s.uid_sd, "%s", uid);
  for (char *c = s.uid_sd; *c; c++)
    if (*c == '-')
      *c = '_';
  char roots[4][PATH_MAX];
  size_t nr = 0;
  for (size_t i = 0; i < nc; i++)
    if (ioq_is_dir(kube[i]))
      snprintf(roots[nr++], PATH_MAX, "%s", kube[i]);
  bool discovered = false;
  if (nr == 0) {
    size_t visited = 0;
    nr = find_kubepods(l->io_root, IOQ_PODCG_SEARCH_DEPTH, roots, 4, 0, &visited);
    s.visited = visited;
    discovered = nr > 0;
  }
  for (size_t i = 0; i < nr; i++)
    search_dir(&s, roots[i], IOQ_PODCG_SEARCH_DEPTH);

  char where[3 * PATH_MAX] = "";
  for (size_t i = 0; i < nr; i++)
    append(where, sizeof where, i ? ", %s" : "%s", roots[i]);
  if (s.n_found == 1) {
    snprintf(out->dir, sizeof out->dir, "%s", s.found[0]);
    const char *rel = s.found[0] + strlen(l->io_root);
    snprintf(out->name, sizeof out->name, "%s%s", *rel == '/' ? "" : "/", rel);
    out->by_search = true;
    out->driver = strstr(out->dir, ".slice") ? IOQ_CG_DRIVER_SYSTEMD : IOQ_CG_DRIVER_CGROUPFS;
    ioq_warn("pod cgroup not at the derived path, found by search uid=%s qos=%s expected=%s "
             "found=%s%s",
             uid, ioq_qos_name(qos), tried[0], out->dir,
             discovered ? " (kubepods is not where the configured driver and cgroup root put it)" : "");
    return 0;
  }
  char tried_s[2 * PATH_MAX + 8];
  snprintf(tried_s, sizeof tried_s, "%s%s%s", tried[0], nc > 1 ? ", " : "", nc > 1 ? tried[1] : "");
  if (s.n_found > 1)
    return ioq_fail(e, IOQ_ECONFLICT, "pod %s: more than one cgroup matches the UID: %s and %s",
                    uid, s.found[0], s.found[1]);
  if (nr == 0)
    return ioq_fail(e, IOQ_ENOTFOUND,
                    "pod cgroup for UID %s (%s) not found: tried %s; no kubepods cgroup exists "
                    "(%s%s%s) nor any within %d levels of %s",
                    uid, ioq_qos_name(qos), tried_s, kube[0], nc > 1 ? ", " : "",
                    nc > 1 ? kube[1] : "", IOQ_PODCG_SEARCH_DEPTH, l->io_root);
  return ioq_fail(e, IOQ_ENOTFOUND,
                  "pod cgroup for UID %s (%s) not found: tried %s; searched %zu directories under "
                  "%s%s",
                  uid, ioq_qos_name(qos), tried_s, s.visited, where,
                  s.truncated ? " (search limit reached)" : "");
}

int ioq_cg_driver_detect(const struct ioq_cg_layout *l, const char *cgroup_root,
                         enum ioq_cg_driver *out, ioq_err *e) {
  char p[2][PATH_MAX];
  bool ex[2];
  const enum ioq_cg_driver ds[2] = {IOQ_CG_DRIVER_SYSTEMD, IOQ_CG_DRIVER_CGROUPFS};
  for (int i = 0; i < 2; i++) {
    char name[PATH_MAX];
    if (ioq_kubepods_cgroup_name(ds[i], cgroup_root, name, sizeof name, e) < 0 ||
        ioq_path_join(p[i], PATH_MAX, e, l->io_root, name, NULL) < 0)
      return -1;
    ex[i] = ioq_is_dir(p[i]);
  }
  if (ex[0] && ex[1])
    return ioq_fail(e, IOQ_ECONFLICT,
                    "both %s (systemd driver) and %s (cgroupfs driver) exist; set the kubelet "
                    "cgroup driver explicitly",
                    p[0], p[1]);
  if (!ex[0] && !ex[1])
    return ioq_fail(e, IOQ_ENOTFOUND,
                    "cannot detect the kubelet cgroup driver: neither %s (systemd) nor %s "
                    "(cgroupfs) exists (is kubelet running with this cgroup root?)",
                    p[0], p[1]);
  *out = ex[0] ? IOQ_CG_DRIVER_SYSTEMD : IOQ_CG_DRIVER_CGROUPFS;
  return 0;
}
