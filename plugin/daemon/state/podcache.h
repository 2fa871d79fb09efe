// SPDX-License-Identifier: Apache-2.0
/* The pods of this node as the API server sees them: a cache kept by
 * list+watch on /api/v1/pods?fieldSelector=spec.nodeName=NODE, with a GET
 * (short timeout) on a miss, so PreStartContainer learns a pod's UID and QoS
 * class without waiting on a slow API server longer than that bound. */
#ifndef IOQOS_PLUGIN_PODCACHE_H
#define IOQOS_PLUGIN_PODCACHE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "grant/grant.h"
#include "cgroup/podcg.h"
#include "grant/podneed.h"
#include "kube/kube.h"
#include "podres.h"

#define POD_CTR_NAME_MAX 63
#define POD_CTRS_MAX 64
/* Budget of the fields kept per pod (kube_jfilter.h's cost: 64 per value
 * plus key and string bytes); a real pod's are a few KiB. A pod past it is
 * cached as `oversized`: known by name, never acted on. */
#define POD_COST_MAX (256 * 1024)
/* pods per list page: pages are read as they arrive, so this bounds the
 * time one request takes, not memory: 20 pods of the API server's largest
 * (~1.5 MB) are 30 MB, well inside KUBE_TIMEOUT_MS on a slow link */
#define POD_PAGE_LIMIT 20

/* status.initContainerStatuses[].state of an init container */
enum pod_ctr_state { PCS_UNKNOWN = 0, PCS_WAITING, PCS_RUNNING, PCS_TERMINATED };

struct pod_ctr {
  char name[POD_CTR_NAME_MAX + 1];
  enum ioq_ctr_kind kind;
  uint64_t units[IOQ_RES_COUNT]; /* limit (or request) of each ioqos resource */
  enum pod_ctr_state state;      /* init containers only */
};

struct pod_info {
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  char phase[16];       /* status.phase, "" if none */
  char created[32];     /* metadata.creationTimestamp (RFC 3339 UTC: sorts as text), "" if none */
  bool terminating;     /* metadata.deletionTimestamp set */
  bool oversized;       /* cut at POD_COST_MAX: only ns/name/uid are known */
  bool has_qos;         /* status.qosClass present and known */
  enum ioq_qos_class qos;
  struct ioq_pod_need need; /* effective units, class, ioqos.io/disk */
  bool need_ok;             /* false: the spec's ioqos resources are invalid */
  struct pod_ctr ctrs[POD_CTRS_MAX]; /* init containers then app containers, spec order */
  size_t n_ctrs;
};

/* Reads what the plugin needs from a Pod object (whole, or filtered by
 * podcache_pod_rules: one cut at its budget gives an `oversized` pod_info). */
int pod_info_from_json(json_object *pod, struct pod_info *out, ioq_err *e);

/* The fields of a Pod the cache reads (kube_jfilter.h rules). */
extern const struct ioq_jf_rule podcache_pod_rules[];

struct podcache;

/* k: for the informer; k_rpc: for GETs on a miss (its timeout is the bound).
 * on_change (may be NULL) runs on the informer thread after every list or
 * event (the reconcile loop wakes up on it). */
struct podcache *podcache_start(struct ioq_kube *k, struct ioq_kube *k_rpc, const char *node,
                                void (*on_change)(void *ud), void *ud, ioq_err *e);
void podcache_stop(struct podcache *c);
bool podcache_synced(struct podcache *c);
unsigned long podcache_lists(struct podcache *c);
/* pod objects (list items, events, GETs) cut at POD_COST_MAX */
unsigned long podcache_oversized(struct podcache *c);

/* Looks a pod up; on a miss GETs it from the API server and caches it.
 * IOQ_ENOTFOUND if the API server does not know it; EFBIG for an oversized
 * pod (decisions on a partial spec are never made). */
int podcache_get(struct podcache *c, const char *ns, const char *name, struct pod_info *out,
                 ioq_err *e);

/* Pending, not terminating pods of this node with a container asking for
 * exactly `size` units of r, skipping those `skip` says already hold theirs
 * (called with the cache locked). Fills up to max entries of out; returns
 * how many there are in total. */
size_t podcache_candidates(struct podcache *c, enum ioq_resource r, uint64_t size,
                           bool (*skip)(void *ud, const struct pod_info *p, enum ioq_resource r),
                           void *ud, struct pod_info *out, size_t max);

/* Cache-only lookup (no API call): true and *out filled if cached. */
bool podcache_peek(struct podcache *c, const char *ns, const char *name, struct pod_info *out);

/* Copy of every cached pod (malloc'd; caller frees). */
size_t podcache_snapshot(struct podcache *c, struct pod_info **out);

/* true for a phase whose containers are all done for good */
bool pod_phase_terminal(const char *phase);

/* Removes from a pod resources List the pods the cache knows in a terminal
 * phase (Succeeded, Failed): kubelet may still list their units (before
 * Kubernetes 1.34 List showed every pod it knows) and hands them to new
 * pods, so they are neither counted as allocated nor given their limits
 * again; being unlisted, their limits are released. Returns how many. */
size_t podcache_drop_terminal(struct podcache *c, struct podres_list *l);

#endif
