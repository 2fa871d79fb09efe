// SPDX-License-Identifier: Apache-2.0
#include "nvmetns.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state/catalog.h"
#include "observe/explain.h"
#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "nvmet/nvmet.h"
#include "nvmet/nvmetplan.h"
#include "podtable.h"
#include "support/metrics.h"
#include "state/nvmetparents.h"
#include "plugin.h"

/* What one namespace's last pass said, so each change is logged once. */
struct ns_said {
  char key[IOQ_NVMET_NQN_MAX + 16]; /* "NQN/NSID" */
  char state[600];
  bool seen; /* in this pass: entries of namespaces gone are dropped */
};

struct nvmetns {
  pthread_mutex_t lock;
  json_object *state; /* nvmetns_state(); NULL = nothing to say */
  struct ns_said *said;
  size_t n_said;
  char probe_said[IOQ_ERR_MSG_MAX + 400];
  /* distinct errors of this pass and the one before: an error is logged
   * when it first appears, not again while it stays */
  char errs[8][IOQ_ERR_MSG_MAX], prev_errs[8][IOQ_ERR_MSG_MAX];
  size_t n_errs, n_prev_errs;
  char oversold_said[IOQ_ERR_MSG_MAX];
  /* the units the last good pass took per disk, kept through a failed probe */
  struct taken {
    char disk[IOQ_DISK_NAME_MAX + 1];
    uint64_t units[IOQ_RES_COUNT];
  } * taken;
  size_t n_taken;
  /* parents namespace cgroups were made under (nvmetparents.h) */
  struct nvmet_parents parents;
  bool parents_loaded;
};

struct nvmetns *nvmetns_new(void) {
  struct nvmetns *n = calloc(1, sizeof *n);
  if (n)
    pthread_mutex_init(&n->lock, NULL);
  return n;
}

void nvmetns_free(struct nvmetns *n) {
  if (!n)
    return;
  json_object_put(n->state);
  free(n->said);
  free(n->taken);
  nvmet_parents_free(&n->parents);
  pthread_mutex_destroy(&n->lock);
  free(n);
}

/* Logs `state` of namespace `key` ("NQN/NSID", or "(config #N)" for the
 * N-th entry that selects nothing) when it differs from the last pass. */
static void say(struct nvmetns *n, const char *key, const char *state, bool warn) {
  for (size_t i = 0; i < n->n_said; i++)
    if (!strcmp(n->said[i].key, key)) {
      n->said[i].seen = true;
      if (!strcmp(n->said[i].state, state))
        return;
      ioq_copy_trunc(n->said[i].state, sizeof n->said[i].state, state);
      goto log;
    }
  struct ns_said *g = realloc(n->said, (n->n_said + 1) * sizeof *g);
  if (!g)
    return;
  n->said = g;
  ioq_copy_trunc(g[n->n_said].key, sizeof g[n->n_said].key, key);
  ioq_copy_trunc(g[n->n_said].state, sizeof g[n->n_said].state, state);
  g[n->n_said].seen = true;
  n->n_said++;
log:
  if (key[0] == '(') /* a config entry, not a namespace */
    ioq_warn("nvmet config entry selects nothing reason=\"%s\"", state);
  else if (warn)
    ioq_warn("nvmet namespace state namespace=%s state=\"%s\"", key, state);
  else
    ioq_info("nvmet namespace state namespace=%s state=\"%s\"", key, state);
}

static void failed(struct plugin *p, struct nvmetns *n, const char *msg) {
  metrics_inc(p->metrics, C_NVMET_FAIL);
  for (size_t i = 0; i < n->n_errs; i++)
    if (!strcmp(n->errs[i], msg))
      return;
  if (n->n_errs < sizeof n->errs / sizeof n->errs[0])
    ioq_copy_trunc(n->errs[n->n_errs++], sizeof n->errs[0], msg);
  for (size_t i = 0; i < n->n_prev_errs; i++)
    if (!strcmp(n->prev_errs[i], msg))
      return;
  ioq_warn("nvmet namespace setting not applied error=\"%s\"", msg);
}

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
static size_t sweep(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_inventory *inv,
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
    failed(p, n, e.msg);
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
        failed(p, n, e.msg);
      continue;
    }
    if (ns && ns->enabled) {
      /* the namespace's I/O is charged here: lift the limits, keep the cgroup */
      if (clear_all(p, dir, &e) < 0)
        failed(p, n, e.msg);
      continue;
    }
    if (ns && ioq_nvmet_set_cgroup_id(&p->probe.roots, ns->subsystem, ns->nsid, 0, &e) < 0) {
      failed(p, n, e.msg);
      continue;
    }
    if (rmdir(dir) < 0) {
      ioq_fail_errno(&e, "rmdir %s (an nvmet namespace cgroup no longer configured)", dir);
      failed(p, n, e.msg);
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
static void sweep_old_parents(struct plugin *p, struct nvmetns *n,
                              const struct ioq_nvmet_inventory *inv,
                              const struct ioq_nvmet_plan *plan, const struct ioq_inventory *disks) {
  for (size_t i = 0; i < n->parents.n;) {
    char parent[PATH_MAX], pdir[PATH_MAX];
    ioq_err e;
    ioq_copy_trunc(parent, sizeof parent, n->parents.v[i]);
    if (!strcmp(parent, p->cfg.nvmet.parent) ||
        ioq_path_join(pdir, sizeof pdir, &e, p->layout.io_root, parent, NULL) < 0 ||
        sweep(p, n, inv, plan, disks, parent, true) > 0) {
      i++; /* still used: kept for the next pass */
      continue;
    }
    bool holds = parent_below(p, n, parent, false);
    if (!holds && rmdir(pdir) < 0 && errno != ENOENT) {
      ioq_fail_errno(&e, "rmdir %s (the earlier nvmet.parent)", pdir);
      failed(p, n, e.msg);
      i++;
      continue;
    }
    if (nvmet_parents_drop(&n->parents, parent, &e) < 0) {
      failed(p, n, e.msg);
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
static void record_parent(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_plan *plan) {
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
    failed(p, n, e.msg);
}

/* ---- one pass ---- */

static void remember_taken(struct nvmetns *n, const struct ioq_inventory *inv) {
  struct taken *t = calloc(inv->n ? inv->n : 1, sizeof *t);
  if (!t)
    return; /* the last good pass's record stays */
  size_t m = 0;
  for (size_t i = 0; i < inv->n; i++) {
    if (!inv->disks[i].nvmet_units[IOQ_RES_BANDWIDTH] && !inv->disks[i].nvmet_units[IOQ_RES_IOPS])
      continue;
    ioq_copy_trunc(t[m].disk, sizeof t[m].disk, inv->disks[i].dev.name);
    memcpy(t[m].units, inv->disks[i].nvmet_units, sizeof t[m].units);
    m++;
  }
  free(n->taken);
  n->taken = t;
  n->n_taken = m;
}

/* A failed nvmet probe: the namespaces keep the units they had, so nothing
 * they use is offered to pods meanwhile. */
static void take_again(struct nvmetns *n, struct ioq_inventory *inv) {
  for (size_t k = 0; k < n->n_taken; k++)
    for (size_t i = 0; i < inv->n; i++) {
      struct ioq_disk *d = &inv->disks[i];
      if (strcmp(d->dev.name, n->taken[k].disk) != 0)
        continue;
      for (int r = 0; r < IOQ_RES_COUNT; r++) {
        uint64_t u = n->taken[k].units[r] < d->units[r] ? n->taken[k].units[r] : d->units[r];
        d->units[r] -= u;
        d->nvmet_units[r] += u;
      }
    }
}

/* The state of the namespace the plan entry `pn` is about, in `state`. */
static void apply_one(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_ns *ns,
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
    failed(p, n, e.msg);
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
    failed(p, n, e.msg);
    snprintf(state, len, "cgroup ID unknown: %s", e.msg);
    *warn = true;
    return;
  }
  point(p, ns, id, state, len, warn);
}

/* Pods may hold more of a disk than is left after the namespaces (units
 * they had before the namespaces were configured): said once per change. */
static void check_oversold(struct plugin *p, struct nvmetns *n, const struct ioq_inventory *inv) {
  char now[IOQ_ERR_MSG_MAX] = "";
  const struct ioq_disk *d = NULL;
  int r = 0;
  uint64_t held[IOQ_RES_COUNT] = {0};
  for (size_t i = 0; i < inv->n && !now[0]; i++) {
    d = &inv->disks[i];
    if (!d->nvmet_units[IOQ_RES_BANDWIDTH] && !d->nvmet_units[IOQ_RES_IOPS])
      continue;
    listview_allocated(p->table, d->dev.name, held);
    for (r = 0; r < IOQ_RES_COUNT && !now[0]; r++)
      if (held[r] > d->units[r])
        snprintf(now, sizeof now, "%s %d %" PRIu64 " %" PRIu64, d->dev.name, r, held[r],
                 d->nvmet_units[r]);
  }
  if (now[0] && strcmp(now, n->oversold_said) != 0) {
    r--; /* the loop stepped past it */
    ioq_warn("disk oversold by pods and nvmet namespaces disk=%s resource=%s pods_hold=%" PRIu64
             " namespaces_hold=%" PRIu64 " disk_units=%" PRIu64
             " reason=\"pods hold units the NVMe-oF namespaces now take: no new pod gets units of "
             "this disk until pods release %" PRIu64 "\"",
             d->dev.name, ioq_resource_name(r), held[r], d->nvmet_units[r],
             d->units[r] + d->nvmet_units[r], held[r] - d->units[r]);
  }
  ioq_copy_trunc(n->oversold_said, sizeof n->oversold_said, now);
}

void nvmetns_refresh(struct plugin *p, struct ioq_inventory *inv) {
  struct nvmetns *n = p->nvmet;
  struct ioq_nvmet_inventory nv;
  struct ioq_nvmet_plan plan = {0};
  ioq_err e;
  json_object *st = NULL;
  char said[sizeof n->probe_said];
  memcpy(n->prev_errs, n->errs, sizeof n->errs);
  n->n_prev_errs = n->n_errs;
  n->n_errs = 0;
  if (ioq_nvmet_probe(&p->probe.roots, &nv, &e) < 0) {
    snprintf(said, sizeof said, "error: %s", e.msg);
    if (strcmp(said, n->probe_said) != 0)
      ioq_warn("nvmet probe failed error=\"%s\"", e.msg);
    ioq_copy_trunc(n->probe_said, sizeof n->probe_said, said);
    metrics_inc(p->metrics, C_NVMET_FAIL);
    take_again(n, inv);
    return;
  }
  snprintf(said, sizeof said, "%s %s %zu %s", ioq_nvmet_state_name(nv.state),
           ioq_nvmet_cgid_name(nv.cgroup_id), nv.n, nv.reason);
  if (strcmp(said, n->probe_said) != 0 &&
      (nv.state != IOQ_NVMET_NO_MODULE || n->probe_said[0] || p->cfg.nvmet.n))
    ioq_info("nvmet target state=%s cgroup_id=%s namespaces=%zu reason=\"%s\"",
             ioq_nvmet_state_name(nv.state), ioq_nvmet_cgid_name(nv.cgroup_id), nv.n, nv.reason);
  ioq_copy_trunc(n->probe_said, sizeof n->probe_said, said);

  if (ioq_nvmet_plan_build(&p->cfg, p->layout.io_version, &nv, inv->disks, inv->n, &plan, &e) < 0) {
    failed(p, n, e.msg);
    take_again(n, inv);
    goto out;
  }
  remember_taken(n, inv);
  if (p->layout.io_version == IOQ_CGV2)
    record_parent(p, n, &plan);
  if (nv.state != IOQ_NVMET_NO_MODULE || p->cfg.nvmet.n)
    st = ioq_nvmet_json(&nv);
  json_object **objs = plan.n ? calloc(plan.n, sizeof *objs) : NULL;
  if (st && p->cfg.nvmet.n && ((plan.n && !objs) || ioq_nvmet_plan_json(&plan, st, objs) < 0))
    failed(p, n, "out of memory (nvmet state for the node annotation)");
  for (size_t i = 0; i < plan.n; i++) {
    const struct ioq_nvmet_plan_ns *pn = &plan.ns[i];
    const struct ioq_nvmet_ns *ns = NULL;
    for (size_t k = 0; k < nv.n && !ns; k++)
      if (!strcmp(nv.ns[k].subsystem, pn->subsystem) && nv.ns[k].nsid == pn->nsid)
        ns = &nv.ns[k];
    if (!ns)
      continue;
    char dir[PATH_MAX], state[600], key[IOQ_NVMET_NQN_MAX + 16];
    bool warn;
    apply_one(p, n, ns, pn,
              pn->verdict == IOQ_NVMET_NS_REFUSED ? NULL : &inv->disks[pn->disk_index], dir,
              sizeof dir, state, sizeof state, &warn);
    snprintf(key, sizeof key, "%s/%" PRIu32, pn->subsystem, pn->nsid);
    say(n, key, state, warn);
    if (objs && objs[i]) {
      json_object_object_add(objs[i], "state", json_object_new_string(state));
      if (dir[0])
        json_object_object_add(objs[i], "cgroup", json_object_new_string(dir));
    }
  }
  free(objs);
  for (size_t i = 0; i < plan.n_unmatched; i++) {
    char key[32];
    snprintf(key, sizeof key, "(config #%zu)", i); /* the entry index is in the text */
    say(n, key, plan.unmatched[i], true);
  }
  size_t kept = 0;
  for (size_t i = 0; i < n->n_said; i++)
    if (n->said[i].seen) {
      n->said[i].seen = false;
      n->said[kept++] = n->said[i];
    }
  n->n_said = kept;
  /* also without entries: the namespaces of entries removed are let go */
  if (p->layout.io_version == IOQ_CGV2) {
    sweep(p, n, &nv, &plan, inv, p->cfg.nvmet.parent, false);
    sweep_old_parents(p, n, &nv, &plan, inv);
  }
  check_oversold(p, n, inv);
out:
  pthread_mutex_lock(&n->lock);
  json_object_put(n->state);
  n->state = st;
  pthread_mutex_unlock(&n->lock);
  ioq_nvmet_plan_free(&plan);
  ioq_nvmet_free(&nv);
}

json_object *nvmetns_state(struct plugin *p) {
  if (!p->nvmet)
    return NULL;
  pthread_mutex_lock(&p->nvmet->lock);
  json_object *j = json_object_get(p->nvmet->state);
  pthread_mutex_unlock(&p->nvmet->lock);
  return j;
}

unsigned nvmetns_explain(struct plugin *p, const char *filter, char **body) {
  *body = NULL;
  char sub[IOQ_NVMET_NQN_MAX + 1] = "";
  uint64_t nsid = 0;
  if (filter) {
    const char *slash = strrchr(filter, '/');
    size_t n = slash ? (size_t)(slash - filter) : strlen(filter);
    if (n == 0 || n > IOQ_NVMET_NQN_MAX ||
        (slash && (ioq_parse_u64(slash + 1, &nsid) < 0 || nsid == 0 || nsid > UINT32_MAX)))
      return explain_error_body(400, body, "namespace: want NQN or NQN/NSID (NSID 1..4294967295)");
    memcpy(sub, filter, n);
    sub[n] = '\0';
  }
  json_object *st = nvmetns_state(p);
  if (!st)
    return explain_error_body(404, body,
                              "nothing to explain: the nvmet module is not loaded on this node and "
                              "config nvmet.namespaces is empty");
  /* a copy narrowed to the filter: the shared state is not changed */
  json_object *out = NULL;
  if (json_object_deep_copy(st, &out, NULL) < 0) {
    json_object_put(st);
    return explain_error_body(500, body, "out of memory (nvmet state)");
  }
  json_object_put(st);
  json_object *arr;
  if (filter && json_object_object_get_ex(out, "namespaces", &arr)) {
    json_object *kept = json_object_new_array();
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; kept && i < n; i++) {
      json_object *j = json_object_array_get_idx(arr, i), *s, *id;
      if (json_object_object_get_ex(j, "subsystem", &s) &&
          json_object_object_get_ex(j, "nsid", &id) && !strcmp(json_object_get_string(s), sub) &&
          (!nsid || (uint64_t)json_object_get_int64(id) == nsid))
        json_object_array_add(kept, json_object_get(j));
    }
    if (!kept || !json_object_array_length(kept)) {
      json_object_put(kept);
      json_object_put(out);
      return explain_error_body(404, body, "the nvmet target has no namespace %.240s", filter);
    }
    json_object_object_add(out, "namespaces", kept);
  }
  *body = strdup(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
  json_object_put(out);
  return *body ? 200 : 500;
}
