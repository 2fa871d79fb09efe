// SPDX-License-Identifier: Apache-2.0
/* Puts pod grants into pod cgroups and takes them out again.
 *
 * A grant is computed from the unit IDs kubelet lists for the pod's
 * containers (grant.h: per disk, pod-level totals); the pod cgroup is found
 * from UID + QoS class (podcg.h) and written with the one enforcement writer
 * (cgroup/cgwrite.h), which reads every file back. The pod table remembers what it
 * applied where, so pods that are gone get their limits cleared and drift
 * (someone rewrote io.max) is corrected on the next pass. It also keeps the
 * node's view from the last pod resources List: which pods hold units and how
 * many units of each disk are allocated. With combined-direction grants the
 * read/write split of a grant (podtable_set_split) is what is applied and
 * kept, until that disk's grant changes. Thread-safe.
 *
 * Regular init containers' grants (units kubelet never lists) are saved to
 * a state file before PreStart answers (initstate.h) and restored at start,
 * so a restarted plugin neither lowers a running init container's limit nor
 * forgets to clear an init-only pod's. When the file is unusable (corrupt,
 * another version) the plugin starts anyway and rebuilds from the pods: a
 * Pending pod whose spec has a regular init container asking for ioqos units
 * and that no PreStart has told about since is "unknown" — its limits are
 * left as they are while it is Pending and such an init container may run
 * (its status does not say it terminated): never lowered without knowing.
 * Once it runs, its status shows those init containers terminated, or a
 * PreStart of one of its containers comes, its grant is written and every
 * other managed disk of its cgroup cleared.
 *
 * Locks (podtable_internal.h): the write lock serialises every change of
 * the table and every kernel write of a grant (apply, release of gone or
 * recreated pods, read/write splits; ungranted.c takes it through
 * podtable_writes_lock so its writes never interleave with a grant's). The
 * table lock guards the table and the List view, and is held only to copy
 * entries in and out: never across a kernel write or a call into another
 * component, so readers (metrics, explain, allocated units, the monitor)
 * do not wait on the kernel. A reader sees an entry as it was before or
 * after an apply, never half-updated: an apply rewrites it in one table-lock
 * section. Order: write lock, then table lock. */
#ifndef IOQOS_PLUGIN_PODTABLE_H
#define IOQOS_PLUGIN_PODTABLE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "state/catalog.h"
#include "support/failreason.h"
#include "support/filelog.h"
#include "cgroup/cglayout.h"
#include "base/error.h"
#include "grant/grant.h"
#include "units/iolimit.h"
#include "grant/nodeanno.h"
#include "cgroup/podcg.h"
#include "state/podcache.h"
#include "state/podres.h"

struct podtable_opts {
  struct ioq_cg_layout layout;
  enum ioq_cg_driver driver;
  const char *kubelet_cgroup_root;
  const char *sysfs_root;
  struct ioq_unit_sizes sizes;
  bool io_weight, bfq_weight, enable_controllers;
  struct catalog *catalog;
  const char *state_file; /* where init container grants are saved; NULL: nowhere */
  /* DRA mode: the prepared claims (drastate.h), whose units join each pod's
   * grant and are the held units of every disk; NULL in device-plugin mode */
  struct drastate *dra;
};


/* One file a write changed: for the drift report (reconcile.c), which
 * tells drift (a known pod, same grant) from a grant being put in place. */
#define PODTABLE_CHANGES_MAX 8
struct enforce_change {
  char file[40];                     /* "io.max", "blkio.throttle.read_bps_device", ... */
  char disk[IOQ_DISK_NAME_MAX + 1];  /* the catalog's disk */
  char dev[IOQ_DEVNO_STR_MAX];       /* the device written */
  char before[160], written[160];    /* the device's value before, what was written */
  bool limit[IOQ_RES_COUNT];         /* a limit of that resource changed (else a weight) */
};

struct podtable_result {
  enum fail_reason fail; /* FAIL_NONE, or FAIL_GRANT..FAIL_VERIFY */
  char cgroup[PATH_MAX];
  struct ioq_pod_grant grant;
  unsigned writes;    /* files actually written (0 = everything already in place) */
  bool known;         /* applied before to the same cgroup */
  bool grant_changed; /* known, but the grant differs from the last one */
  struct enforce_change changes[PODTABLE_CHANGES_MAX]; /* the first files written */
  size_t n_changes;
};

struct applied_pod {
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  enum ioq_cg_version version;
  struct ioq_pod_grant grant;
  struct ioq_devno devs[IOQ_POD_DISKS_MAX]; /* throttled device of each grant disk */
  /* combined-direction grants: the read/write split in place per grant disk
   * (has_split false: the full-grant split); reset when that disk's grant
   * changes, not kept across restarts */
  struct ioq_io_limits split[IOQ_POD_DISKS_MAX];
  bool has_split[IOQ_POD_DISKS_MAX];
  /* the full-grant split each grant disk was written with
   * (ioq_grant_limits_on_disk: an IOPS-only grant's bandwidth cap included) */
  struct ioq_io_limits full[IOQ_POD_DISKS_MAX];
  /* the opt-in burst (nodePolicy.ungranted.burst, set by ungranted.c through
   * podtable_set_burst): per grant disk and resource, what is added above
   * the grant to each direction its limits hold; reset when that disk's
   * grant changes, not kept across restarts (the grant alone is written
   * then). burst_asked/burst_invalid: the pod's ioqos.io/burst annotation
   * at the last apply. */
  uint64_t burst[IOQ_POD_DISKS_MAX][IOQ_RES_COUNT];
  bool burst_asked, burst_invalid;
  /* units of the running regular init container (from its PreStart; kubelet
   * does not list it), per resource; kept while the pod is Pending. Not
   * copied by podtable_snapshot. */
  char **init_ids[IOQ_RES_COUNT];
  size_t n_init[IOQ_RES_COUNT];
  /* init_ids[r] are a guess: an ambiguous init-only PreStart wrote them to
   * every candidate pod (prestart.c) until the asker is known */
  bool init_guess[IOQ_RES_COUNT];
  /* the state file was lost and the pod may hold an init container's grant
   * the plugin does not know: nothing is written while it is Pending */
  bool init_unknown;
  double applied_at; /* CLOCK_MONOTONIC seconds of the last apply */
  /* the files of the grant (owned by the table; not copied by
   * podtable_snapshot: see podtable_pod_files) */
  struct podtable_file *files;
  size_t n_files;
  /* when a List first left the pod out while the API server still showed it
   * alive (0: listed); see podtable_release_gone */
  double missing_since;
};

struct podtable;

struct podtable *podtable_new(const struct podtable_opts *o);
void podtable_free(struct podtable *f);

/* Loads the saved init container grants (once, before serving). A missing
 * file is a first start; an unusable one is logged and the pod table
 * rebuilds from the pods (see above). */
void podtable_restore(struct podtable *f);
/* true when the state file was unusable at start */
bool podtable_state_lost(struct podtable *f);
/* true if the pod is unknown: it may hold an init container grant the
 * plugin lost with the state file, which only its grant being written
 * (a PreStart, or a reconcile pass once it runs) settles */
bool podtable_unknown(struct podtable *f, const struct pod_info *pi);

/* Applies the grant of pod `pr` (as listed by kubelet) whose API object is
 * `pi`, verifies it and remembers it. `init_ids` (may be NULL) are the units
 * of resource `init_res` of a regular init container about to start, which
 * kubelet does not list: they count as an init container (grant.h) now and
 * on later passes while the pod is still Pending. Flags: PODTABLE_PRESTART,
 * called for a container about to start (else by a reconcile pass, which
 * leaves an unknown Pending pod's limits alone); PODTABLE_GUESS, `init_ids` are
 * written to every candidate of an ambiguous PreStart (they replace an
 * earlier guess on the same disks, and add to one on other disks: the pod
 * may run either). */
#define PODTABLE_PRESTART 1u
#define PODTABLE_GUESS 2u
int podtable_apply(struct podtable *f, const struct podres_pod *pr, const struct pod_info *pi,
                   enum ioq_resource init_res, char *const *init_ids, size_t n_init_ids,
                   unsigned flags, struct podtable_result *res, ioq_err *e);

/* Pods holding guessed init container units, for settling them. */
struct init_guess {
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  enum ioq_resource r;
  char first[IOQ_UNIT_ID_MAX + 1]; /* the latest ambiguous PreStart's first ID */
};
/* Returns how many (malloc'd array in *out). */
size_t podtable_guesses(struct podtable *f, struct init_guess **out);
/* The asker of a guess is known: keep (its units are certain now) or drop
 * the pod's guessed units of r. The caller applies the pod again. */
void podtable_settle_guess(struct podtable *f, const char *uid, enum ioq_resource r, bool keep);

/* true if the pod's spec has a regular init container asking for units */
bool pod_init_asks(const struct pod_info *pi);

/* Clears the limits of every remembered pod that is not in `listed`
 * (matching namespace, name; a listed name the pod cache `pc` shows under
 * another UID is a recreated pod, the remembered one is gone); a pod whose
 * cgroup is already gone just is forgotten. A pod applied after the List
 * was asked for is kept: a PreStart that raced the List must not lose its
 * limits. So is a pod restored from the state file while the pod cache has
 * not listed yet, and, for up to
 * PODTABLE_MISSING_GRACE_S, a pod the pod cache `pc` (may be NULL) still
 * shows alive under the same UID: a kubelet that just restarted lists pods
 * only as its pod sources deliver them, and a running pod must not lose its
 * limits (nor its units in the node annotation) in that window. Returns how
 * many were released. */
#define PODTABLE_MISSING_GRACE_S 120.0
size_t podtable_release_gone(struct podtable *f, const struct podres_list *listed,
                             struct podcache *pc);

/* The regular init container units the pod with this UID (uid NULL: the
 * pod remembered under ns/name) holds: -1 none, 0 others than `ids`, 1
 * exactly `ids` (n of resource r), 2 a guess (PODTABLE_GUESS); with r < 0, 1 if
 * it holds any. */
int podtable_init_held(struct podtable *f, const char *ns, const char *name, const char *uid,
                       int r, char *const *ids, size_t n);

/* Holds grant writes (apply, release) off while the caller writes limits
 * of other pods that must not interleave with them: the bounds of pods
 * without a grant (ungranted.c) never overwrite a grant being put in place. */
void podtable_writes_lock(struct podtable *f);
void podtable_writes_unlock(struct podtable *f);

/* Combined-direction grants (enforcement.combinedDirections). The limits of
 * the pod `uid` on grant disk `disk`: *grant the full-grant split it was
 * written with (ioq_grant_limits_on_disk), *cur what the pod table keeps in place (the split, or
 * *grant). Returns false if the pod or disk is not applied. */
bool podtable_get_split(struct podtable *f, const char *uid, const char *disk,
                        struct ioq_io_limits *grant, struct ioq_io_limits *cur);
/* Writes `split` (a valid split of `grant`, ioq_dirsplit_valid) as the
 * pod's limits on `disk` through the enforcement writer, read back, under
 * the write lock, and keeps it as the desired state so reconcile holds it.
 * Returns 1 written, 0 not done because the pod is gone or its grant on the
 * disk is no longer `grant` (the next interval starts from the new one),
 * -1 + *e when the write failed. */
int podtable_set_split(struct podtable *f, const char *uid, const char *disk,
                       const struct ioq_io_limits *grant, const struct ioq_io_limits *split,
                       ioq_err *e);
/* The opt-in burst (nodePolicy.ungranted.burst): writes the pod's limits on
 * grant disk `disk` as its grant (its read/write split when one is kept)
 * plus extra[r] on each direction that limits resource r, through the
 * enforcement writer, read back, and keeps extra so that reconcile holds it
 * (a rewrite of the grant alone would be drift). The caller holds
 * podtable_writes_lock (ungranted.c's pass or sample). Returns 1 written, 0
 * nothing to do (the pod or disk is not applied, or the extra is in place
 * already), -1 + *e when the write failed (a failed cut is still kept as
 * the pod's extra: reconcile writes it once it can). */
int podtable_set_burst(struct podtable *f, const char *uid, const char *disk,
                       const uint64_t extra[IOQ_RES_COUNT], ioq_err *e);
/* The files the pod with this UID's grant was written to and read back
 * from at the last apply (malloc'd copy in *out, NULL when none). Returns
 * how many; -1 when the pod table does not remember the pod. */
int podtable_pod_files(struct podtable *f, const char *uid, struct podtable_file **out);

/* Copy of what is applied (malloc'd; caller frees). */
size_t podtable_snapshot(struct podtable *f, struct applied_pod **out);

/* The node's view from the last pod resources List (the view:
 * state/listview.h), kept under the table lock: which pods hold units and
 * how many units of each disk are allocated (the List's plus the grants in
 * place it does not show). Read by GetPreferredAllocation, the node
 * annotation, metrics and explain; noted by every List (reconcile,
 * GetPreferredAllocation). Never takes the write lock, so it does not wait
 * on the kernel (podtable_list.c). */

/* Remembers the List result: pods holding units, units allocated per disk.
 * A List asked for before the one already noted is ignored (the reconcile
 * loop and GetPreferredAllocation list concurrently). */
void listview_note(struct podtable *f, const struct podres_list *listed);
/* true if the last List showed the pod; held gets its units per resource */
bool listview_pod_held(struct podtable *f, const char *ns, const char *name,
                       uint64_t held[IOQ_RES_COUNT]);
/* Units allocated on `disk` per the last List, plus the grants of pods
 * with limits in place that it does not show holding units (kept while a
 * restarting kubelet does not list them, a PreStart that raced the List, a
 * regular init container's). */
void listview_allocated(struct podtable *f, const char *disk, uint64_t out[IOQ_RES_COUNT]);
/* UIDs (from the pod cache `pc`) of the pods the last List showed holding
 * units, i.e. the pods `allocated` counts; pods the cache does not know yet
 * are left out. Returns how many (malloc'd array in *out). */
size_t listview_listed_uids(struct podtable *f, struct podcache *pc,
                            char (**out)[IOQ_POD_UID_STR_MAX + 1]);
/* true once a List has been noted */
bool listview_have_list(struct podtable *f);

#endif
