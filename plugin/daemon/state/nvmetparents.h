// SPDX-License-Identifier: Apache-2.0
/* The nvmet.parent cgroups the plugin has made namespace cgroups under,
 * kept across restarts in <state-dir>/nvmet-parents.json, so that after the
 * config's parent changes (a restart with a new config) the cgroups below
 * the old one are let go like those of a removed entry (core/nvmetns_cgroup.c), and
 * the old parent removed once empty.
 *
 * File: {"version":1,"parents":["ioqos-nvmet.slice", ...]}. Every name is
 * checked as nvmet.parent is (ioq_nvmet_parent_problem): the file is ours,
 * but a damaged one must not make the plugin remove some other cgroup. */
#ifndef IOQOS_PLUGIN_NVMETPARENTS_H
#define IOQOS_PLUGIN_NVMETPARENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define NVMET_PARENTS_FILE "nvmet-parents.json"
#define NVMET_PARENTS_MAX 16

struct nvmet_parents {
  char *path; /* NULL: not kept (no state dir) */
  char *v[NVMET_PARENTS_MAX];
  size_t n;
};

/* Reads the file at `path` (NULL: keep nothing). A missing file is an
 * empty list; a damaged one fails with the reason and leaves the list
 * empty (the next save rewrites it). */
int nvmet_parents_load(struct nvmet_parents *ps, const char *path, ioq_err *e);
bool nvmet_parents_has(const struct nvmet_parents *ps, const char *parent);
/* Adds `parent` (if new) and saves. Full list: fails, nothing changed. */
int nvmet_parents_add(struct nvmet_parents *ps, const char *parent, ioq_err *e);
/* Drops `parent` (if there) and saves. */
int nvmet_parents_drop(struct nvmet_parents *ps, const char *parent, ioq_err *e);
void nvmet_parents_free(struct nvmet_parents *ps);

#endif
