// SPDX-License-Identifier: Apache-2.0
/* NVMe-oF namespaces as QoS consumers (nvmetns.h), a pass: the nvmet probe,
 * the units the namespaces take from the disks (kept through a failed
 * probe), what was said per namespace, pods holding more than is left, and
 * the state for the node annotation. The plan is applied to cgroups by
 * nvmetns_cgroup.c. */
#include "nvmetns.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "nvmet/nvmet.h"
#include "nvmet/nvmetplan.h"
#include "podtable.h"
#include "support/metrics.h"
#include "state/nvmetparents.h"
#include "plugin.h"
#include "nvmetns_internal.h"

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

void nvns_failed(struct plugin *p, struct nvmetns *n, const char *msg) {
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
    nvns_failed(p, n, e.msg);
    take_again(n, inv);
    goto out;
  }
  remember_taken(n, inv);
  if (p->layout.io_version == IOQ_CGV2)
    nvns_record_parent(p, n, &plan);
  if (nv.state != IOQ_NVMET_NO_MODULE || p->cfg.nvmet.n)
    st = ioq_nvmet_json(&nv);
  json_object **objs = plan.n ? calloc(plan.n, sizeof *objs) : NULL;
  if (st && p->cfg.nvmet.n && ((plan.n && !objs) || ioq_nvmet_plan_json(&plan, st, objs) < 0))
    nvns_failed(p, n, "out of memory (nvmet state for the node annotation)");
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
    nvns_apply_one(p, n, ns, pn,
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
    nvns_sweep(p, n, &nv, &plan, inv, p->cfg.nvmet.parent, false);
    nvns_sweep_old_parents(p, n, &nv, &plan, inv);
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
