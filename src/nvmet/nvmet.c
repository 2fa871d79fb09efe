// SPDX-License-Identifier: Apache-2.0
#include "nvmet/nvmet.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "base/fsutil.h"
#include "probe/probe.h"
#include "base/grow.h"

const char *ioq_nvmet_state_name(enum ioq_nvmet_state s) {
  switch (s) {
  case IOQ_NVMET_NO_MODULE: return "no-module";
  case IOQ_NVMET_NO_CONFIGFS: return "no-configfs";
  case IOQ_NVMET_PRESENT: return "present";
  }
  return "?";
}

const char *ioq_nvmet_cgid_name(enum ioq_nvmet_cgid c) {
  switch (c) {
  case IOQ_NVMET_CGID_UNKNOWN: return "unknown";
  case IOQ_NVMET_CGID_ABSENT: return "absent";
  case IOQ_NVMET_CGID_PRESENT: return "present";
  }
  return "?";
}

int ioq_cgroup_id(const char *dir, uint64_t *id, ioq_err *e) {
  struct stat st;
  if (stat(dir, &st) < 0)
    return ioq_fail_errno(e, "stat %s", dir);
  if (!S_ISDIR(st.st_mode))
    return ioq_fail(e, ENOTDIR, "%s is not a cgroup directory", dir);
  *id = (uint64_t)st.st_ino;
  return 0;
}

/* "0\n"/"1\n" (enable, buffered_io) */
static int read_bool(const char *dir, const char *name, bool *out, bool *present, ioq_err *e) {
  char path[PATH_MAX], buf[16];
  if (ioq_path_join(path, sizeof path, e, dir, name, NULL) < 0)
    return -1;
  if (present && !ioq_path_exists(path)) {
    *present = false;
    return 0;
  }
  if (ioq_read_line(path, buf, sizeof buf, e) < 0)
    return -1;
  char *t = ioq_trim(buf);
  if (strcmp(t, "0") != 0 && strcmp(t, "1") != 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: '%.8s' is neither 0 nor 1", path, t);
  *out = t[0] == '1';
  if (present)
    *present = true;
  return 0;
}

/* Where the namespace's I/O lands: the device itself, or the disk of the
 * filesystem holding the file. */
static void resolve_backing(const struct ioq_roots *roots, struct ioq_nvmet_ns *ns) {
  if (!ns->device_path[0]) {
    snprintf(ns->backing, sizeof ns->backing, "no device_path set");
    return;
  }
  struct stat st;
  if (stat(ns->device_path, &st) < 0) {
    snprintf(ns->backing, sizeof ns->backing, "device_path %.200s: %s", ns->device_path,
             strerror(errno));
    return;
  }
  bool blk = S_ISBLK(st.st_mode);
  dev_t dev = blk ? st.st_rdev : st.st_dev;
  char sel[32];
  snprintf(sel, sizeof sel, "%u:%u", major(dev), minor(dev));
  struct ioq_disk *d = calloc(1, sizeof *d);
  ioq_err e;
  if (!d) {
    snprintf(ns->backing, sizeof ns->backing, "out of memory resolving %s", sel);
    return;
  }
  if (ioq_disk_resolve(roots, sel, d, &e) < 0) {
    snprintf(ns->backing, sizeof ns->backing, "%s %.200s (%s): %.80s",
             blk ? "block device" : "file on", ns->device_path, sel, e.msg);
  } else {
    ns->backed = true;
    ns->disk = d->dev;
    snprintf(ns->backing, sizeof ns->backing, "%s %.120s (%s): disk %s",
             blk ? "block device" : "file on", ns->device_path, sel, d->dev.name);
  }
  free(d);
}

static int read_ns(const struct ioq_roots *roots, const char *dir, struct ioq_nvmet_ns *ns,
                   ioq_err *e) {
  char path[PATH_MAX];
  bool present = false;
  if (read_bool(dir, "enable", &ns->enabled, NULL, e) < 0)
    return -1;
  bool bio = false;
  if (read_bool(dir, "buffered_io", &bio, &present, e) < 0)
    return -1;
  ns->buffered_io = present ? bio : -1;
  if (ioq_path_join(path, sizeof path, e, dir, "device_path", NULL) < 0 ||
      ioq_read_line(path, ns->device_path, sizeof ns->device_path, e) < 0)
    return -1;
  char *t = ioq_trim(ns->device_path);
  memmove(ns->device_path, t, strlen(t) + 1);
  if (ioq_path_join(path, sizeof path, e, dir, "cgroup_id", NULL) < 0)
    return -1;
  ns->has_cgroup_id = ioq_path_exists(path);
  if (ns->has_cgroup_id) {
    char buf[32];
    if (ioq_read_line(path, buf, sizeof buf, e) < 0)
      return -1;
    if (ioq_parse_u64(ioq_trim(buf), &ns->cgroup_id) < 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: '%.20s' is not a cgroup ID", path, buf);
  }
  resolve_backing(roots, ns);
  return 0;
}

static int by_ns(const void *a, const void *b) {
  const struct ioq_nvmet_ns *x = a, *y = b;
  int c = strcmp(x->subsystem, y->subsystem);
  return c ? c : (x->nsid > y->nsid) - (x->nsid < y->nsid);
}

/* Entries of a configfs directory that are directories, skipping dot entries. */
static DIR *open_dir(const char *path, ioq_err *e) {
  DIR *d = opendir(path);
  if (!d)
    ioq_fail_errno(e, "list %s", path);
  return d;
}

static int list_namespaces(const struct ioq_roots *roots, const char *sub_dir, const char *nqn,
                           struct ioq_nvmet_inventory *out, size_t *cap, ioq_err *e) {
  char nsroot[PATH_MAX];
  if (ioq_path_join(nsroot, sizeof nsroot, e, sub_dir, "namespaces", NULL) < 0)
    return -1;
  if (!ioq_is_dir(nsroot))
    return 0; /* a subsystem being made: no namespaces yet */
  DIR *d = open_dir(nsroot, e);
  if (!d)
    return -1;
  struct dirent *de;
  int rc = 0;
  while ((de = readdir(d)) && rc == 0) {
    if (de->d_name[0] == '.')
      continue;
    uint64_t nsid;
    if (ioq_parse_u64(de->d_name, &nsid) < 0 || nsid == 0 || nsid > UINT32_MAX)
      continue; /* configfs names namespaces by their NSID: anything else is not one */
    if (out->n >= IOQ_NVMET_MAX_NS) {
      rc = ioq_fail(e, E2BIG, "more than %d nvmet namespaces", IOQ_NVMET_MAX_NS);
      break;
    }
    struct ioq_nvmet_ns *g = ioq_grow(out->ns, cap, out->n + 1, sizeof *g, 8);
    if (!g) {
      rc = ioq_fail(e, ENOMEM, "out of memory (nvmet namespaces)");
      break;
    }
    out->ns = g;
    struct ioq_nvmet_ns *ns = &out->ns[out->n];
    memset(ns, 0, sizeof *ns);
    ioq_copy_trunc(ns->subsystem, sizeof ns->subsystem, nqn);
    ns->nsid = (uint32_t)nsid;
    char dir[PATH_MAX];
    if (ioq_path_join(dir, sizeof dir, e, nsroot, de->d_name, NULL) < 0 ||
        read_ns(roots, dir, ns, e) < 0) {
      ioq_err_prefix(e, "nvmet subsystem %.80s namespace %s", nqn, de->d_name);
      rc = -1;
      break;
    }
    out->n++;
  }
  closedir(d);
  return rc;
}

static void verdict(struct ioq_nvmet_inventory *inv, const char *configfs) {
  if (inv->state == IOQ_NVMET_NO_MODULE) {
    snprintf(inv->reason, sizeof inv->reason,
             "the nvmet module is not loaded: this node exports no NVMe-oF namespaces");
    return;
  }
  if (inv->state == IOQ_NVMET_NO_CONFIGFS) {
    snprintf(inv->reason, sizeof inv->reason,
             "nvmet is loaded but %.200s/nvmet does not exist: configfs is not mounted there",
             configfs);
    return;
  }
  size_t with = 0;
  for (size_t i = 0; i < inv->n; i++)
    with += inv->ns[i].has_cgroup_id;
  if (!inv->n) {
    inv->cgroup_id = IOQ_NVMET_CGID_UNKNOWN;
    snprintf(inv->reason, sizeof inv->reason,
             "%zu subsystem(s), no namespace: whether the kernel has the namespace attribute "
             "cgroup_id is known once one exists",
             inv->n_subsystems);
  } else if (with == inv->n) {
    inv->cgroup_id = IOQ_NVMET_CGID_PRESENT;
    snprintf(
        inv->reason, sizeof inv->reason,
        "%zu namespace(s): the kernel charges a namespace's I/O to the cgroup in its cgroup_id",
        inv->n);
  } else {
    inv->cgroup_id = IOQ_NVMET_CGID_ABSENT;
    snprintf(
        inv->reason, sizeof inv->reason,
        "%zu namespace(s) without the attribute cgroup_id: this kernel cannot charge an NVMe-oF "
        "namespace's I/O to a cgroup (Linux 7.5+), so io.max cannot limit one remote tenant",
        inv->n - with);
  }
}

int ioq_nvmet_probe(const struct ioq_roots *roots, struct ioq_nvmet_inventory *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  char module[PATH_MAX], configfs[PATH_MAX], subs[PATH_MAX];
  if (ioq_path_join(module, sizeof module, e, roots->sysfs, "module", "nvmet", NULL) < 0 ||
      ioq_path_join(configfs, sizeof configfs, e, roots->sysfs, "kernel", "config", NULL) < 0 ||
      ioq_path_join(subs, sizeof subs, e, configfs, "nvmet", "subsystems", NULL) < 0)
    return -1;
  if (!ioq_is_dir(module)) {
    out->state = IOQ_NVMET_NO_MODULE;
  } else if (!ioq_is_dir(subs)) {
    out->state = IOQ_NVMET_NO_CONFIGFS;
  } else {
    out->state = IOQ_NVMET_PRESENT;
    DIR *d = open_dir(subs, e);
    if (!d)
      return -1;
    struct dirent *de;
    size_t cap = 0;
    int rc = 0;
    while ((de = readdir(d)) && rc == 0) {
      if (de->d_name[0] == '.')
        continue;
      if (strlen(de->d_name) > IOQ_NVMET_NQN_MAX)
        continue; /* not an NQN the kernel would take */
      char dir[PATH_MAX];
      if (ioq_path_join(dir, sizeof dir, e, subs, de->d_name, NULL) < 0 ||
          list_namespaces(roots, dir, de->d_name, out, &cap, e) < 0)
        rc = -1;
      out->n_subsystems++;
    }
    closedir(d);
    if (rc < 0) {
      ioq_nvmet_free(out);
      return -1;
    }
    if (out->n)
      qsort(out->ns, out->n, sizeof *out->ns, by_ns);
  }
  verdict(out, configfs);
  return 0;
}

json_object *ioq_nvmet_json(const struct ioq_nvmet_inventory *inv) {
  json_object *o = json_object_new_object(), *arr = json_object_new_array();
  if (!o || !arr) {
    json_object_put(o);
    json_object_put(arr);
    return NULL;
  }
  json_object_object_add(o, "state", json_object_new_string(ioq_nvmet_state_name(inv->state)));
  json_object_object_add(o, "cgroupID",
                         json_object_new_string(ioq_nvmet_cgid_name(inv->cgroup_id)));
  json_object_object_add(o, "reason", json_object_new_string(inv->reason));
  json_object_object_add(o, "subsystems", json_object_new_int64((int64_t)inv->n_subsystems));
  for (size_t i = 0; i < inv->n; i++) {
    const struct ioq_nvmet_ns *ns = &inv->ns[i];
    json_object *j = json_object_new_object();
    if (!j)
      break;
    json_object_object_add(j, "subsystem", json_object_new_string(ns->subsystem));
    json_object_object_add(j, "nsid", json_object_new_int64(ns->nsid));
    json_object_object_add(j, "enabled", json_object_new_boolean(ns->enabled));
    if (ns->buffered_io >= 0)
      json_object_object_add(j, "bufferedIO", json_object_new_boolean(ns->buffered_io == 1));
    json_object_object_add(j, "devicePath", json_object_new_string(ns->device_path));
    if (ns->backed) {
      char dev[32];
      snprintf(dev, sizeof dev, "%u:%u", ns->disk.major, ns->disk.minor);
      json_object_object_add(j, "disk", json_object_new_string(ns->disk.name));
      json_object_object_add(j, "dev", json_object_new_string(dev));
    }
    json_object_object_add(j, "backing", json_object_new_string(ns->backing));
    if (ns->has_cgroup_id)
      json_object_object_add(j, "cgroupID", json_object_new_int64((int64_t)ns->cgroup_id));
    json_object_array_add(arr, j);
  }
  json_object_object_add(o, "namespaces", arr);
  return o;
}

int ioq_nvmet_ns_dir(const struct ioq_roots *roots, const char *subsystem, uint32_t nsid,
                     char *buf, size_t len, ioq_err *e) {
  char id[16];
  snprintf(id, sizeof id, "%u", nsid);
  const char *why = ioq_nvmet_nqn_problem(subsystem);
  if (why)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "'%.80s' is not an nvmet subsystem name: %s", subsystem,
                    why);
  return ioq_path_join(buf, len, e, roots->sysfs, "kernel", "config", "nvmet", "subsystems",
                       subsystem, "namespaces", id, NULL);
}

int ioq_nvmet_set_cgroup_id(const struct ioq_roots *roots, const char *subsystem, uint32_t nsid,
                            uint64_t id, ioq_err *e) {
  char dir[PATH_MAX], path[PATH_MAX], buf[32];
  bool enabled;
  if (ioq_nvmet_ns_dir(roots, subsystem, nsid, dir, sizeof dir, e) < 0 ||
      read_bool(dir, "enable", &enabled, NULL, e) < 0 ||
      ioq_path_join(path, sizeof path, e, dir, "cgroup_id", NULL) < 0)
    return -1;
  if (!ioq_path_exists(path))
    return ioq_fail(e, IOQ_EUNSUPPORTED,
                    "%s does not exist: this kernel cannot charge an NVMe-oF namespace to a "
                    "cgroup (Linux 7.5+)",
                    path);
  if (enabled)
    return ioq_fail(e, EBUSY,
                    "nvmet namespace %.80s/%u is enabled: the kernel changes cgroup_id only "
                    "while the namespace is disabled",
                    subsystem, nsid);
  snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)id);
  if (ioq_write_file(path, buf, e) < 0) {
    if (e->code == EBUSY)
      return ioq_fail(e, EBUSY,
                      "write %s: the namespace was enabled meanwhile (EBUSY: the kernel changes "
                      "cgroup_id only while the namespace is disabled)",
                      path);
    return -1;
  }
  uint64_t back;
  if (ioq_read_line(path, buf, sizeof buf, e) < 0)
    return -1;
  if (ioq_parse_u64(ioq_trim(buf), &back) < 0 || back != id)
    return ioq_fail(e, IOQ_EMISMATCH, "wrote %llu to %s, read back '%.20s'",
                    (unsigned long long)id, path, buf);
  return 0;
}

int ioq_nvmet_set_enable(const struct ioq_roots *roots, const char *subsystem, uint32_t nsid,
                         bool on, ioq_err *e) {
  char path[PATH_MAX], dir[PATH_MAX];
  if (ioq_nvmet_ns_dir(roots, subsystem, nsid, dir, sizeof dir, e) < 0 ||
      ioq_path_join(path, sizeof path, e, dir, "enable", NULL) < 0 ||
      ioq_write_file(path, on ? "1\n" : "0\n", e) < 0)
    return -1;
  bool now;
  if (read_bool(dir, "enable", &now, NULL, e) < 0)
    return -1;
  if (now != on)
    return ioq_fail(e, IOQ_EMISMATCH, "wrote %d to %s, read back %d", on, path, now);
  return 0;
}

void ioq_nvmet_free(struct ioq_nvmet_inventory *inv) {
  free(inv->ns);
  inv->ns = NULL;
  inv->n = 0;
}
