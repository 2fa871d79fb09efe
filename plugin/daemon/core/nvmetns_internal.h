// SPDX-License-Identifier: Apache-2.0
/* The state of the NVMe-oF namespaces module, shared by its files only:
 * nvmetns.c (a pass: the probe, the units the namespaces take, what was said
 * per namespace, the node annotation's state) and nvmetns_cgroup.c (the plan
 * applied to cgroups: made, limited, pointed at; and let go of). All of it
 * is the reconcile thread's (nvmetns.h) but `state`, which nvmetns_state()
 * reads under `lock`. */
#ifndef IOQOS_PLUGIN_NVMETNS_INTERNAL_H
#define IOQOS_PLUGIN_NVMETNS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "base/error.h"
#include "nvmet/nvmet.h"
#include "nvmet/nvmetplan.h"
#include "probe/probe.h"
#include "state/nvmetparents.h"
#include "units/units.h"

struct plugin;

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

/* nvmetns.c */
/* Counts a failure; logs it when it was not among the last pass's. */
void nvns_failed(struct plugin *p, struct nvmetns *n, const char *msg);

/* nvmetns_cgroup.c */
/* Records the parent before any cgroup is made below it. */
void nvns_record_parent(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_plan *plan);
/* Puts plan entry `pn` in place for namespace `ns` on disk `d` (NULL when
 * refused); its cgroup in `dir` ("" when none), its state in words in
 * `state`, *warn when that is a problem. */
void nvns_apply_one(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_ns *ns,
                    const struct ioq_nvmet_plan_ns *pn, const struct ioq_disk *d, char *dir,
                    size_t dirlen, char *state, size_t len, bool *warn);
/* Lets go of the cgroups below `parent` that no reserved namespace wants
 * (all of them when `old`); returns how many namespace cgroups are left. */
size_t nvns_sweep(struct plugin *p, struct nvmetns *n, const struct ioq_nvmet_inventory *inv,
                  const struct ioq_nvmet_plan *plan, const struct ioq_inventory *disks,
                  const char *parent, bool old);
/* The same below the parents of earlier configs, removed once empty. */
void nvns_sweep_old_parents(struct plugin *p, struct nvmetns *n,
                            const struct ioq_nvmet_inventory *inv,
                            const struct ioq_nvmet_plan *plan, const struct ioq_inventory *disks);

#endif
