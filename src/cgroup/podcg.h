// SPDX-License-Identifier: Apache-2.0
/* Pod cgroup resolution: from (kubelet cgroup driver, kubelet --cgroup-root,
 * QoS class, pod UID) to the pod cgroup directory, named exactly as kubelet
 * names it (pkg/kubelet/cm/cgroup_manager_linux.go, see
 * shared/reference/k8s-interfaces.md section 8):
 *
 *   parts = ROOT parts + "kubepods" [+ "burstable"|"besteffort"] + "pod<UID>"
 *   cgroupfs: "/" + join(parts, "/")
 *             /kubepods/burstable/pod1234-...
 *   systemd:  each part with '-' replaced by '_', joined with '-', ".slice"
 *             appended, then expanded like systemd's slice names
 *             (libcontainer ExpandSlice), so every level is a slice:
 *             /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_....slice
 *             --cgroup-root=/kubelet gives /kubelet.slice/kubelet-kubepods.slice/...
 *
 * Guaranteed pods have no QoS level. The directory lives under the io
 * hierarchy of the layout (v1: the blkio hierarchy, v2: the unified root).
 */
#ifndef IOQOS_PODCG_H
#define IOQOS_PODCG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "cgroup/cglayout.h"
#include "base/error.h"

enum ioq_cg_driver { IOQ_CG_DRIVER_AUTO = 0, IOQ_CG_DRIVER_CGROUPFS, IOQ_CG_DRIVER_SYSTEMD };
enum ioq_qos_class { IOQ_QOS_GUARANTEED = 0, IOQ_QOS_BURSTABLE, IOQ_QOS_BESTEFFORT };

#define IOQ_POD_UID_LEN 36
#define IOQ_DEFAULT_KUBELET_CGROUP_ROOT "/"
/* Bounds of the fallback search for a pod cgroup below kubepods. */
#define IOQ_PODCG_SEARCH_DEPTH 3
#define IOQ_PODCG_SEARCH_MAX_DIRS 20000

/* "auto" | "cgroupfs" | "systemd" */
IOQ_MUST_CHECK
int ioq_cg_driver_parse(const char *s, enum ioq_cg_driver *out, ioq_err *e);
const char *ioq_cg_driver_name(enum ioq_cg_driver d);

/* Kubernetes status.qosClass names: "Guaranteed" | "Burstable" | "BestEffort"
 * (case-insensitive). */
IOQ_MUST_CHECK
int ioq_qos_parse(const char *s, enum ioq_qos_class *out, ioq_err *e);
const char *ioq_qos_name(enum ioq_qos_class q);

/* A pod UID as kubelet uses it in cgroup names: 36 characters, lowercase hex
 * digits with dashes at positions 8, 13, 18 and 23. Checked before a UID
 * ever becomes part of a path. */
IOQ_MUST_CHECK
int ioq_pod_uid_check(const char *uid, ioq_err *e);

/* kubelet's cgroup name (relative to the hierarchy root, starting with '/')
 * of the kubepods cgroup, of a QoS class cgroup and of a pod. `driver` must be
 * cgroupfs or systemd; `cgroup_root` is kubelet's --cgroup-root (NULL = "/"). */
IOQ_MUST_CHECK
int ioq_kubepods_cgroup_name(enum ioq_cg_driver driver, const char *cgroup_root, char *out,
                             size_t outsz, ioq_err *e);
IOQ_MUST_CHECK
int ioq_pod_cgroup_name(enum ioq_cg_driver driver, const char *cgroup_root, enum ioq_qos_class qos,
                        const char *uid, char *out, size_t outsz, ioq_err *e);
/* The parent cgroup of a QoS class's pods: kubepods[-burstable|-besteffort]
 * (Guaranteed: kubepods itself). */
IOQ_MUST_CHECK
int ioq_qos_cgroup_name(enum ioq_cg_driver driver, const char *cgroup_root, enum ioq_qos_class qos,
                        char *out, size_t outsz, ioq_err *e);

struct ioq_pod_cgroup {
  char dir[PATH_MAX];        /* absolute directory (io hierarchy root + name) */
  char name[PATH_MAX];       /* relative to the io hierarchy root */
  enum ioq_cg_driver driver; /* whose naming matched (cgroupfs or systemd) */
  bool by_search;            /* not at the derived path; found by the search */
};

/* Finds the pod cgroup directory. With driver AUTO both namings are tried.
 * If the derived directory does not exist, a bounded search (depth
 * IOQ_PODCG_SEARCH_DEPTH, at most IOQ_PODCG_SEARCH_MAX_DIRS directories) of
 * the kubepods subtree looks for the UID, and logs what it found. Not found:
 * IOQ_ENOTFOUND with every path tried in the message. */
IOQ_MUST_CHECK
int ioq_pod_cgroup_resolve(const struct ioq_cg_layout *l, enum ioq_cg_driver driver,
                           const char *cgroup_root, enum ioq_qos_class qos, const char *uid,
                           struct ioq_pod_cgroup *out, ioq_err *e);

/* ---- podcg_list.c: the pod cgroups that exist ---- */

/* The pod UID in a pod cgroup directory's name: "pod<UID>" (cgroupfs) or
 * "[...-]pod<UID with '_' for '-'>.slice" (systemd). false if the name is
 * not a pod cgroup's (e.g. the QoS cgroups beside Guaranteed pods). */
bool ioq_pod_uid_from_dirname(const char *name, char uid[IOQ_POD_UID_LEN + 1]);

struct ioq_pod_cgroup_entry {
  char dir[PATH_MAX];
  char uid[IOQ_POD_UID_LEN + 1];
  enum ioq_qos_class qos;
};

/* Bound on the pods listed in one call (a node runs at most a few hundred). */
#define IOQ_PODCG_LIST_MAX 4096

/* Lists the pod cgroups under the io hierarchy, as kubelet made them:
 * Guaranteed pods are children of kubepods, the others of the Burstable and
 * BestEffort QoS cgroups. `driver` must be cgroupfs or systemd. qos_dirs
 * gets the three parents' directories (indexed by ioq_qos_class); a parent
 * that does not exist (kubelet not started, or a QoS class it never made) is
 * listed as "" and contributes nothing. *out is malloc'd (caller frees),
 * sorted by directory. Fails only on out of memory, a name that does not fit,
 * or an unreadable parent (with the path and errno). */
IOQ_MUST_CHECK
int ioq_pod_cgroups_list(const struct ioq_cg_layout *l, enum ioq_cg_driver driver,
                         const char *cgroup_root, struct ioq_pod_cgroup_entry **out, size_t *n,
                         char qos_dirs[3][PATH_MAX], ioq_err *e);

/* Which driver's kubepods cgroup exists under the io hierarchy: exactly one
 * must (IOQ_ENOTFOUND if neither, IOQ_ECONFLICT if both). */
IOQ_MUST_CHECK
int ioq_cg_driver_detect(const struct ioq_cg_layout *l, const char *cgroup_root,
                         enum ioq_cg_driver *out, ioq_err *e);

#endif
