// SPDX-License-Identifier: Apache-2.0
/* The pod table's internals, shared by the files of the pod table:
 * podtable.c (the table, its lookups and copies), podtable_apply.c (applying
 * a grant), podtable_cgroup.c (the kernel writes), podtable_release.c
 * (releasing gone pods), podtable_split.c (read/write splits),
 * podtable_list.c (the List view) and initbook.c (regular init container
 * grants: the state file, guesses of ambiguous starts, unknown pods). Not
 * for other files: podtable.h is the interface. */
#ifndef IOQOS_PLUGIN_PODTABLE_INTERNAL_H
#define IOQOS_PLUGIN_PODTABLE_INTERNAL_H

#include <pthread.h>
#include <string.h>

#include "podtable.h"
#include "cgroup/cgwrite.h"
#include "state/listview.h"
#include "support/filelog.h"

struct podtable {
  struct podtable_opts o;
  char kubelet_cgroup_root[PATH_MAX];
  char sysfs_root[PATH_MAX];
  char state_file[PATH_MAX];
  /* One apply or release at a time (PreStart threads and the reconcile
   * loop): a pass that computed a grant before a PreStart changed it must
   * not write it after. Taken before `lock`. */
  pthread_mutex_t apply_lock;
  /* the tables below; held only to copy in and out, never across a kernel
   * write (podtable.h, "Locks") */
  pthread_mutex_t lock;
  struct applied_pod *pods;
  size_t n, cap;
  /* the view from the last List (podtable_list.c) */
  struct listview list;
  /* the init container grants (applied_pod.init_ids) changed since the last
   * save; under apply_lock */
  bool state_dirty;
  bool state_lost; /* the state file was unusable at start */
  /* with state_lost: pods found unknown whose grant was written since, so
   * they are not unknown again (under apply_lock) */
  char (*settled)[IOQ_POD_UID_MAX + 1];
  size_t n_settled, cap_settled;
};

/* table helpers (podtable.c); _locked: with `lock` held */
struct applied_pod *pt_find_locked(struct podtable *f, const char *uid);
void pt_free_init(struct applied_pod *ap, int r);
void pt_free_strs(char **s, size_t n);
bool pt_has_init(const struct applied_pod *ap);
/* known init units, or unknown ones that may be in place */
bool pt_holds_init(const struct applied_pod *ap);
void pt_free_all_init(struct applied_pod *ap);
void pt_free_files(struct applied_pod *ap);
/* The pod's entry (uid), appended empty when it has none; with `lock`
 * held. NULL + *e when out of memory. */
struct applied_pod *pt_slot_locked(struct podtable *f, const char *uid, ioq_err *e);
/* Moves entry i out of the table into *out (its init units and files go
 * with it); with `lock` held. */
void pt_take_locked(struct podtable *f, size_t i, struct applied_pod *out);

/* the kernel writes (podtable_cgroup.c) */
enum fail_reason pt_classify(const ioq_err *e);
/* Writes one disk's grant into the cgroup (its limits: the read/write split
 * when `split` is a valid one of the grant, else the full-grant split; plus
 * the burst, when not NULL). */
int pt_apply_disk(struct podtable *f, const struct ioq_cg *cg, const struct ioq_disk_grant *dg,
                  const struct cat_disk *cd, const struct ioq_io_limits *split,
                  const uint64_t *burst, struct ioq_io_limits *full, struct podtable_result *res,
                  struct pt_file_log *log, ioq_err *e);
/* lim with the burst extra[r] (may be NULL: none) added to each direction
 * that limits resource r (0 = no limit stays 0) */
struct ioq_io_limits pt_with_burst(struct ioq_io_limits lim, const uint64_t *extra);
/* After a write of the pod's limits on `disk` outside an apply (a split, a
 * burst): the file records `ioqosctl explain` shows take what was written;
 * with `lock` held. */
void pt_note_written_locked(struct applied_pod *w, const char *disk, const struct ioq_apply_report *rep);
/* Clears the limits of pods taken out of the table (`lock` not held) and
 * frees them. */
void pt_clear_taken(struct podtable *f, struct applied_pod *taken, size_t n, const char *why);
/* Clears every managed disk but the grant's in the pod cgroup. */
void pt_clear_other_disks(struct podtable *f, const struct ioq_cg *cg,
                          const struct ioq_pod_grant *g, const struct podres_pod *pr);
/* Finds and opens the pod's cgroup (res->cgroup). */
int pt_open_pod_cgroup(struct podtable *f, const struct podres_pod *pr, const struct pod_info *pi,
                       struct podtable_result *res, struct ioq_cg *cg, ioq_err *e);
/* Clears the disks an earlier grant of the pod had and the new one does not. */
void pt_clear_dropped_disks(struct podtable *f, const struct ioq_cg *cg,
                            const struct ioq_pod_grant *old, const struct ioq_devno *devs,
                            const struct ioq_pod_grant *now, const struct podres_pod *pr,
                            struct podtable_result *res);

/* initbook.c, with apply_lock held */
/* The guessed units `ids` of r plus the pod's earlier guess on disks `ids`
 * has none of (malloc'd copies), or NULL when there is nothing to add. */
char **pt_merge_guess(struct podtable *f, const char *uid, enum ioq_resource r, char *const *ids,
                       size_t n, size_t *n_out);
bool pt_is_settled(struct podtable *f, const char *uid);
void pt_settle(struct podtable *f, const char *uid);
/* Writes the init container grants to the state file if they changed since
 * the last save; a failed save is retried on the next change or pass. */
void pt_save_state(struct podtable *f);

#endif
