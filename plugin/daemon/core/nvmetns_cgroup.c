// SPDX-License-Identifier: Apache-2.0
/* The NVMe-oF namespaces' plan applied to cgroups (steps 1-3 and the
 * letting go described in nvmetns.h): a reserved namespace's cgroup made and
 * limited, its cgroup_id pointed at it, and the cgroups below the current or
 * an earlier nvmet.parent that no reserved namespace wants cleared and
 * removed. The pass that calls it is nvmetns.c. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "support/metrics.h"
#include "plugin.h"
#include "nvmetns_internal.h"

/* ---- the namespace's cgroup ---- */

static int ns_cgroup_dir(struct plugin *p, const char *subsystem, uint32_t nsid, char *dir,
                         size_t len, ioq_err *e) {
  char name[IOQ_NVMET_NQN_MAX + 16];
  if (ioq_nvmet_cgroup_name(subsystem, nsid, name, sizeof name, e) < 0)
    return -1;
  return ioq_path_join(dir, len, e, p->layout.io_root, p->cfg.nvmet.parent, name, NULL);
}

/* Makes the cgroup (io enabled down to it) and writes the plan's limits and
 * weights for the namespace's disk. */
static int put_limits(struct plugin *p, const struct ioq_nvmet_plan_ns *pn,
                      const struct ioq_disk *d, const char *dir, ioq_err *e) {
  if (!ioq_is_dir(dir)) {
    if (ioq_mkdir_p(dir, e) < 0)
      return -1;
    ioq_info("nvmet namespace cgroup created subsystem=%s nsid=%" PRIu32 " cgroup=%s",
             pn->subsystem, pn->nsid, dir);
  }
  char iomax[PATH_MAX];
  unsigned enabled = 0;
  if (ioq_path_join(iomax, sizeof iomax, e, dir, "io.max", NULL) < 0)
    return -1;
  if (!ioq_path_exists(iomax) &&
      ioq_cg_ensure_controllers(p->layout.io_root, dir, IOQ_CTRL_IO,
                                p->cfg.enforcement.enable_controllers, &enabled, e) < 0)
    return -1;
  if (enabled)
    ioq_info("io controller enabled for nvmet namespace cgroup cgroup=%s writes=%u", dir, enabled);
  struct ioq_cg cg;
  if (ioq_cg_open(dir, IOQ_CGV2, &cg, e) < 0)
    return -1;
  char wfile[PATH_MAX];
  bool has_weight = ioq_path_join(wfile, sizeof wfile, NULL, dir, "io.weight", NULL) == 0 &&
                    ioq_path_exists(wfile);
  bool stacked = !(d->n_leaves == 1 && d->leaves[0].major == d->dev.major &&
                   d->leaves[0].minor == d->dev.minor) &&
                 d->n_leaves > 0;
  unsigned w = p->cfg.enforcement.io_weight && has_weight ? pn->weight : 0;
  unsigned bw = p->cfg.enforcement.bfq_weight && !stacked && !strcmp(d->dev.scheduler, "bfq")
                    ? pn->bfq_weight
                    : 0;
  struct ioq_disk_setting s = {
      .dev = pn->dev, .max = pn->limits, .weight = stacked ? 0 : w, .bfq_weight = bw};
  struct ioq_apply_opts ao = {.sysfs_root = p->opts.sysfs_root};
  struct ioq_apply_report rep;
  if (ioq_cg_apply_disk(&cg, &s, &ao, &rep, e) < 0)
    return -1;
  for (size_t i = 0; i < rep.n; i++)
    if (rep.steps[i].changed) {
      metrics_inc(p->metrics, C_NVMET_WRITES);
      ioq_info("nvmet namespace limit set subsystem=%s nsid=%" PRIu32 " disk=%s file=%s/%s "
               "wrote='%s' readback='%s'",
               pn->subsystem, pn->nsid, d->dev.name, dir, rep.steps[i].file, rep.steps[i].written,
               rep.steps[i].readback);
    }
  /* a stacked disk (dm, md): the limit on the device, the weight where the
   * proportional schedulers work */
  for (size_t i = 0; stacked && w && i < d->n_leaves; i++) {
    struct ioq_disk_setting ls = {
        .dev = {d->leaves[i].major, d->leaves[i].minor}, .weight = w, .weights_only = true};
    if (ioq_cg_apply_disk(&cg, &ls, &ao, NULL, e) < 0)
      return -1;
  }
  return 0;
}

/* ---- cgroup_id ---- */

/* Points the namespace at `id`. Returns the state in words; *warn when it
 * is a problem. */
static void point(struct plugin *p, const struct ioq_nvmet_ns *ns, uint64_t id, char *state,
                  size_t len, bool *warn) {
  const struct ioq_roots *roots = &p->probe.roots;
  ioq_err e;
  *warn = false;
  if (ns->cgroup_id == id) {
    snprintf(state, len, "charged to its cgroup (cgroup_id=%" PRIu64 ")", id);
    return;
  }
  char was[64] = "";
  if (ns->cgroup_id)
    snprintf(was, sizeof was, " (was %" PRIu64 ": its cgroup was removed or made again)",
             ns->cgroup_id);
  if (!ns->enabled) {
    if (ioq_nvmet_set_cgroup_id(roots, ns->subsystem, ns->nsid, id, &e) < 0) {
      metrics_inc(p->metrics, C_NVMET_FAIL);
      snprintf(state, len, "cgroup_id not set: %s", e.msg);
      *warn = true;
      return;
    }
    metrics_inc(p->metrics, C_NVMET_WRITES);
    snprintf(state, len,
             "cgroup_id set to %" PRIu64 "%s while disabled: charged to its cgroup once enabled",
             id, was);
    return;
  }
  if (!p->cfg.nvmet.allow_namespace_restart) {
    snprintf(state, len,
             "will apply at next enable: the namespace is enabled and the kernel changes "
             "cgroup_id only while it is disabled (nvmet.allowNamespaceRestart is false); "
             "cgroup_id=%" PRIu64 " wanted %" PRIu64,
             ns->cgroup_id, id);
    *warn = true;
    return;
  }
  /* disruptive, and asked for: initiators lose the namespace until enable */
  ioq_warn("nvmet namespace restart subsystem=%s nsid=%" PRIu32 " reason=\"set cgroup_id %" PRIu64
           "%s (nvmet.allowNamespaceRestart)\"",
           ns->subsystem, ns->nsid, id, was);
  if (ioq_nvmet_set_enable(roots, ns->subsystem, ns->nsid, false, &e) < 0) {
    metrics_inc(p->metrics, C_NVMET_FAIL);
    snprintf(state, len, "not restarted: disable failed: %s", e.msg);
    *warn = true;
    return;
  }
  ioq_err se, ee;
  int set = ioq_nvmet_set_cgroup_id(roots, ns->subsystem, ns->nsid, id, &se);
  if (ioq_nvmet_set_enable(roots, ns->subsystem, ns->nsid, true, &ee) == 0) {
    if (set == 0) {
      metrics_inc(p->metrics, C_NVMET_WRITES);
      snprintf(state, len, "restarted and charged to its cgroup (cgroup_id=%" PRIu64 ")%s", id,
               was);
    } else {
      metrics_inc(p->metrics, C_NVMET_FAIL);
      snprintf(state, len, "restarted, cgroup_id not set: %s", se.msg);
      *warn = true;
    }
    return;
  }
  /* the kernel refused to enable it with the new ID: put the old one back
   * so the initiators get their namespace again */
  metrics_inc(p->metrics, C_NVMET_FAIL);
  ioq_err re;
  if (set == 0 &&
      ioq_nvmet_set_cgroup_id(roots, ns->subsystem, ns->nsid, ns->cgroup_id, &re) == 0 &&
      ioq_nvmet_set_enable(roots, ns->subsystem, ns->nsid, true, &re) == 0)
    snprintf(state, len, "enable refused with cgroup_id %" PRIu64 " (%s); re-enabled with %" PRIu64,
             id, ee.msg, ns->cgroup_id);
  else
    snprintf(state, len, "left DISABLED: enable failed: %s", ee.msg);
  *warn = true;
}

/* ---- one plan entry ---- */

/* The state of the namespace the plan entry `pn` is about, in `state`. */
void nvns_apply_one(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_ns *ns,
                    const struct ioq_nvmet_plan_ns *pn, const struct ioq_disk *d, char *dir,
                    size_t dirlen, char *state, size_t len, bool *warn) {
  ioq_err e;
  *warn = false;
  dir[0] = '\0';
  if (pn->verdict == IOQ_NVMET_NS_REFUSED) {
    snprintf(state, len, "refused: %s", pn->why);
    *warn = true;
    return;
  }
  if (ns_cgroup_dir(p, pn->subsystem, pn->nsid, dir, dirlen, &e) < 0 ||
      put_limits(p, pn, d, dir, &e) < 0) {
    nvns_failed(p, n, e.msg);
    snprintf(state, len, "limits not in place: %s", e.msg);
    *warn = true;
    return;
  }
  if (pn->verdict == IOQ_NVMET_NS_UNCHARGED) {
    snprintf(state, len, "limits in %s, not enforced: %s", dir, pn->why);
    *warn = true;
    return;
  }
  uint64_t id;
  if (ioq_cgroup_id(dir, &id, &e) < 0) {
    nvns_failed(p, n, e.msg);
    snprintf(state, len, "cgroup ID unknown: %s", e.msg);
    *warn = true;
    return;
  }
  point(p, ns, id, state, len, warn);
}

/* ---- cgroups nobody wants ---- */

static const struct ioq_nvmet_ns *charged_to(const struct ioq_nvmet_inventory *inv, uint64_t id) {
  for (size_t i = 0; i < inv->n; i++)
    if (inv->ns[i].has_cgroup_id && inv->ns[i].cgroup_id == id)
      return &inv->ns[i];
  return NULL;
}

/* Removes the limits of every device in the cgroup's io.max. */
static int clear_all(struct plugin *p, const char *dir, ioq_err *e) {
  struct ioq_cg cg;
  char path[PATH_MAX], *text = NULL;
  size_t len;
  if (ioq_cg_open(dir, IOQ_CGV2, &cg, e) < 0 ||
      ioq_path_join(path, sizeof path, e, dir, "io.max", NULL) < 0 ||
      ioq_read_file(path, &text, &len, 1 << 16, e) < 0)
    return -1;
  struct ioq_apply_opts ao = {.sysfs_root = p->opts.sysfs_root};
  int rc = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line && rc == 0;
       line = strtok_r(NULL, "\n", &save)) {
    unsigned ma, mi;
    if (sscanf(line, "%u:%u", &ma, &mi) == 2)
      rc = ioq_cg_clear_disk(&cg, (struct ioq_devno){ma, mi}, &ao, NULL, e);
  }
  free(text);
  return rc;
}

/* Is a parent (the current one or an earlier one) below the cgroup `rel`
 * (relative to the cgroup2 root), or `rel` itself when `or_self`? Such a
 * cgroup is not a namespace cgroup to let go of (nested parents: "ioqos"
 * changed to "ioqos/nvmet" or back). */
static bool parent_below(struct plugin *p, const struct nvmetns *n, const char *rel, bool or_self) {
  size_t k = strlen(rel);
  for (size_t i = 0; i <= n->parents.n; i++) {
    const char *q = i < n->parents.n ? n->parents.v[i] : p->cfg.nvmet.parent;
    if (!strncmp(q, rel, k) && (q[k] == '/' || (or_self && q[k] == '\0')))
      return true;
  }
  return false;
}

/* The plan entry that reserves namespace `ns` (NULL: none, or refused). */
static const struct ioq_nvmet_plan_ns *reserved_at(const struct ioq_nvmet_plan *plan,
                                                   const struct ioq_nvmet_ns *ns) {
  for (size_t i = 0; ns && i < plan->n; i++)
    if (plan->ns[i].verdict != IOQ_NVMET_NS_REFUSED && plan->ns[i].nsid == ns->nsid &&
        !strcmp(plan->ns[i].subsystem, ns->subsystem))
      return &plan->ns[i];
  return NULL;
}

/* Lets go of the cgroups below `parent` (relative) that no reserved
 * namespace wants: all of them when it is an earlier parent (`old`).
 * Returns how many namespace cgroups are left below it. */
size_t nvns_sweep(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_inventory *inv,
                  const struct ioq_nvmet_plan *plan, const struct ioq_inventory *disks,
                  const char *parent, bool old) {
  char pdir[PATH_MAX];
  ioq_err e;
  size_t left = 0;
  if (ioq_path_join(pdir, sizeof pdir, &e, p->layout.io_root, parent, NULL) < 0 ||
      !ioq_is_dir(pdir))
    return 0;
  DIR *dh = opendir(pdir);
  if (!dh) {
    ioq_fail_errno(&e, "list %s", pdir);
    nvns_failed(p, n, e.msg);
    return 1;
  }
  struct dirent *de;
  while ((de = readdir(dh))) {
    char dir[PATH_MAX], rel[PATH_MAX];
    if (de->d_name[0] == '.' ||
        ioq_path_join(dir, sizeof dir, NULL, pdir, de->d_name, NULL) < 0 || !ioq_is_dir(dir))
      continue;
    if (ioq_path_join(rel, sizeof rel, NULL, parent, de->d_name, NULL) < 0 ||
        parent_below(p, n, rel, true))
      continue;
    left++;
    bool wanted = false;
    for (size_t i = 0; i < plan->n && !wanted && !old; i++) {
      char want[PATH_MAX];
      wanted =
          plan->ns[i].verdict != IOQ_NVMET_NS_REFUSED &&
          ns_cgroup_dir(p, plan->ns[i].subsystem, plan->ns[i].nsid, want, sizeof want, NULL) == 0 &&
          !strcmp(want, dir);
    }
    uint64_t id;
    if (wanted || ioq_cgroup_id(dir, &id, &e) < 0)
      continue;
    const struct ioq_nvmet_ns *ns = charged_to(inv, id);
    const struct ioq_nvmet_plan_ns *pn = reserved_at(plan, ns);
    if (pn) {
      /* still reserved, with its cgroup elsewhere now (nvmet.parent
       * changed): this pass pointed it there if it could (the inventory
       * read before says otherwise), an enabled one moves at its next
       * enable. Until a pass sees it charged elsewhere, this cgroup stays,
       * bounded by the grant */
      if (pn->disk_index < disks->n &&
          put_limits(p, pn, &disks->disks[pn->disk_index], dir, &e) < 0)
        nvns_failed(p, n, e.msg);
      continue;
    }
    if (ns && ns->enabled) {
      /* the namespace's I/O is charged here: lift the limits, keep the cgroup */
      if (clear_all(p, dir, &e) < 0)
        nvns_failed(p, n, e.msg);
      continue;
    }
    if (ns && ioq_nvmet_set_cgroup_id(&p->probe.roots, ns->subsystem, ns->nsid, 0, &e) < 0) {
      nvns_failed(p, n, e.msg);
      continue;
    }
    if (rmdir(dir) < 0) {
      ioq_fail_errno(&e, "rmdir %s (an nvmet namespace cgroup no longer configured)", dir);
      nvns_failed(p, n, e.msg);
      continue;
    }
    left--;
    if (old)
      ioq_info("nvmet namespace cgroup removed cgroup=%s cgroup_id_cleared=%s reason=\"below an "
               "earlier nvmet.parent\"",
               dir, ns ? "true" : "false");
    else
      ioq_info("nvmet namespace cgroup removed cgroup=%s cgroup_id_cleared=%s reason=\"no "
               "configured namespace uses it\"",
               dir, ns ? "true" : "false");
  }
  closedir(dh);
  return left;
}

/* The cgroups below parents of earlier configs: let go of like those of
 * removed entries; the parent itself removed (and forgotten) once empty.
 * One that holds the current parent (or another earlier one) is only
 * forgotten once no namespace cgroup is left directly below it. */
void nvns_sweep_old_parents(struct plugin *p, struct nvmetns *n,
                            const struct ioq_nvmet_inventory *inv,
                            const struct ioq_nvmet_plan *plan, const struct ioq_inventory *disks) {
  for (size_t i = 0; i < n->parents.n;) {
    char parent[PATH_MAX], pdir[PATH_MAX];
    ioq_err e;
    ioq_copy_trunc(parent, sizeof parent, n->parents.v[i]);
    if (!strcmp(parent, p->cfg.nvmet.parent) ||
        ioq_path_join(pdir, sizeof pdir, &e, p->layout.io_root, parent, NULL) < 0 ||
        nvns_sweep(p, n, inv, plan, disks, parent, true) > 0) {
      i++; /* still used: kept for the next pass */
      continue;
    }
    bool holds = parent_below(p, n, parent, false);
    if (!holds && rmdir(pdir) < 0 && errno != ENOENT) {
      ioq_fail_errno(&e, "rmdir %s (the earlier nvmet.parent)", pdir);
      nvns_failed(p, n, e.msg);
      i++;
      continue;
    }
    if (nvmet_parents_drop(&n->parents, parent, &e) < 0) {
      nvns_failed(p, n, e.msg);
      i++;
      continue;
    }
    if (holds)
      ioq_info("nvmet parent let go of cgroup=%s reason=\"nvmet.parent is now %s, below it\"",
               pdir, p->cfg.nvmet.parent);
    else
      ioq_info("nvmet parent removed cgroup=%s reason=\"nvmet.parent is now %s\"", pdir,
               p->cfg.nvmet.parent);
  }
}

/* Records the parent before any cgroup is made below it. */
void nvns_record_parent(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_plan *plan) {
  ioq_err e;
  if (!n->parents_loaded) {
    char path[PATH_MAX];
    n->parents_loaded = true;
    if (p->opts.state_dir && *p->opts.state_dir &&
        (ioq_path_join(path, sizeof path, &e, p->opts.state_dir, NVMET_PARENTS_FILE, NULL) < 0 ||
         nvmet_parents_load(&n->parents, path, &e) < 0))
      ioq_warn("nvmet parents not read, cgroups below an earlier nvmet.parent are not removed "
               "error=\"%s\"",
               e.msg);
  }
  bool makes = false;
  for (size_t i = 0; i < plan->n && !makes; i++)
    makes = plan->ns[i].verdict != IOQ_NVMET_NS_REFUSED;
  if (makes && nvmet_parents_add(&n->parents, p->cfg.nvmet.parent, &e) < 0)
    nvns_failed(p, n, e.msg);
}
