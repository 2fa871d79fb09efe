// SPDX-License-Identifier: Apache-2.0
/* DRA mode: the claims this node has prepared (NodePrepareResources) and
 * not yet unprepared, each a per-disk share of one pod's grant.
 *
 * The pod table (podtable.h) asks this table for a pod's DRA units when it
 * computes the pod's grant, so prepared claims are written, read back,
 * drift-corrected, monitored and explained by the same code as
 * device-plugin grants; ungranted.c and the node annotation count them as
 * held units through listview_allocated. The table is saved to a state file
 * (atomically, before prepare answers) because kubelet checkpoints what it
 * prepared and never asks again after a plugin restart: without the file a
 * restarted plugin would forget the grants it must keep in place.
 * Thread-safe. */
#ifndef IOQOS_PLUGIN_DRASTATE_H
#define IOQOS_PLUGIN_DRASTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/disk.h"
#include "dra/draclaim.h"
#include "base/error.h"
#include "grant/grant.h"
#include "cgroup/podcg.h"

#define DRASTATE_FILE "dra-claims.json"
#define DRASTATE_MAX_CLAIMS 4096 /* 256 pods per node (kubelet's default 110) x many claims */
#define DRASTATE_FILE_MAX (16u * 1024u * 1024u)
#define DRASTATE_UNPREPARED_KEPT 256

struct dra_share_rec {
  char disk[IOQ_DISK_NAME_MAX + 1];
  char device[IOQ_DRA_DEVICE_NAME_MAX + 1];
  char request[IOQ_DRA_REQUEST_NAME_MAX + 1];
  char share_id[IOQ_DRA_SHARE_ID_MAX + 1];
  uint64_t units[IOQ_RES_COUNT];
};

struct dra_rec {
  char claim_uid[IOQ_DRA_UID_MAX + 1];
  char ns[IOQ_DRA_NS_MAX + 1];
  char name[IOQ_DRA_OBJ_NAME_MAX + 1];
  char pod_uid[IOQ_DRA_UID_MAX + 1];
  char pod_name[IOQ_DRA_OBJ_NAME_MAX + 1];
  struct dra_share_rec shares[IOQ_DRA_MAX_RESULTS];
  size_t n_shares;
};

struct drastate;

/* path: the state file (NULL: kept in memory only, for tests). */
struct drastate *drastate_new(const char *path);
void drastate_free(struct drastate *s);

/* Loads the state file once, before serving. A missing file is a first
 * start (0); an unreadable or malformed one is an error (the caller logs it
 * and goes on empty: kubelet's own retries of unprepare then find nothing,
 * and the pods' limits stay until their cgroups go). */
int drastate_load(struct drastate *s, ioq_err *e);

/* Records (or replaces, by claim UID) a prepared claim and saves the file.
 * On a save error nothing changes. */
int drastate_put(struct drastate *s, const struct dra_rec *r, ioq_err *e);
/* Records a claim found again from the API server (drarecover.h) unless it
 * is known already (kubelet prepared it meanwhile: its record wins) or
 * kubelet unprepared it lately (one of the last DRASTATE_UNPREPARED_KEPT
 * unprepare calls named it, found or not). Returns 1 (recorded), 0 (left
 * alone), -1 + *e (not saved). */
int drastate_adopt(struct drastate *s, const struct dra_rec *r, ioq_err *e);
/* Removes a claim and saves the file (and remembers the UID for
 * drastate_adopt, whether it was known or not). Returns 1 (found, *out = it; out may
 * be NULL), 0 (not known: nothing to do), -1 + *e (not saved: kept). */
int drastate_take(struct drastate *s, const char *claim_uid, struct dra_rec *out, ioq_err *e);
/* Drops every claim of a pod that is gone (the pod table released it) and
 * saves the file. Returns how many went (0: none), -1 + *e (not saved:
 * kept). */
int drastate_forget_pod(struct drastate *s, const char *pod_uid, ioq_err *e);
/* Copy of a claim: true if known. */
bool drastate_get(struct drastate *s, const char *claim_uid, struct dra_rec *out);

/* Adds the units of every claim of the pod to *g (disks merged by name).
 * Fails when the pod's disks would exceed IOQ_POD_DISKS_MAX. */
int drastate_pod_grant(struct drastate *s, const char *pod_uid, struct ioq_pod_grant *g,
                       ioq_err *e);
/* true if some claim is prepared for this pod (by namespace/name, or by UID
 * when uid is non-NULL) */
bool drastate_pod_has(struct drastate *s, const char *ns, const char *name, const char *uid);
/* Adds the units claims hold on a disk to out[]. */
void drastate_disk_units(struct drastate *s, const char *disk, uint64_t out[IOQ_RES_COUNT]);
size_t drastate_count(struct drastate *s);
/* Copies of the pod's claims (malloc'd in *out, NULL when none or out of
 * memory); returns how many. */
size_t drastate_pod_recs(struct drastate *s, const char *pod_uid, struct dra_rec **out);

#endif
