// SPDX-License-Identifier: Apache-2.0
/* The daemon's shared state: one struct plugin owns every component. Each
 * component has its own file and header (endpoint.h, podtable.h, events.h,
 * ...); this header holds only the struct that ties them together and the
 * time bounds several of them share. */
#ifndef IOQOS_PLUGIN_PLUGIN_H
#define IOQOS_PLUGIN_PLUGIN_H

#include <limits.h>
#include <stdatomic.h>

#include "config/config.h"
#include "cgroup/podcg.h"
#include "probe/probe.h"
#include "support/opts.h"

/* the components, each with its own header (endpoint.h, podtable.h, ...):
 * a file includes the headers of those it calls */
struct catalog;
struct endpoint;
struct podtable;
struct events;
struct choices;
struct httpd;
struct ioq_kube;
struct metrics;
struct monitor;
struct podcache;
struct reconciler;
struct registrar;
struct ungranted;
struct drastate;
struct dradriver;
struct nvmetns;
struct nodepool;

#define KUBELET_SOCKET_NAME "kubelet.sock"
#define DP_API_VERSION "v1beta1"

/* Bounds on work done while kubelet waits on an RPC. */
#define PODRES_TIMEOUT_MS 5000     /* one pod resources List */
#define PREFER_LIST_TIMEOUT_MS 2000 /* the List inside GetPreferredAllocation */
#define PRESTART_LIST_TRIES 10     /* the pod may not be listed yet ... */
#define PRESTART_LIST_RETRY_MS 200 /* ... retry this often ... */
#define PRESTART_LIST_BUDGET_MS 10000 /* ... for at most this long (kubelet gives PreStart 30 s) */
#define KUBE_RPC_TIMEOUT_MS 3000   /* API server GET on a pod cache miss */
#define KUBE_TIMEOUT_MS 10000      /* informer, annotation, events */
#define REGISTER_TIMEOUT_MS 15000  /* kubelet dials us with a 10 s timeout inside Register */

struct plugin {
  struct plugin_opts opts;
  /* The config as selected at start, never changed afterwards: read its
   * units and placement policy (the same in every pool) and the settings
   * only a restart changes (poolswitch.h) from here, on any thread. The
   * settings a node pool changes at run time are read through plugin_cfg. */
  struct ioq_config cfg;
  /* The config in force since the node was last moved to another pool
   * (nodepool.c); NULL = cfg. Each one stays allocated until teardown. */
  _Atomic(const struct ioq_config *) live;
  struct ioq_probe_opts probe;
  char kubepods_dir[PATH_MAX]; /* for the probe; "" = let it look */
  struct ioq_cg_layout layout; /* the io hierarchy */
  enum ioq_cg_driver driver;   /* kubelet's cgroup driver (detected when auto and possible) */
  char kubelet_sock[PATH_MAX];

  struct catalog *catalog;
  struct podtable *table; /* the applied pods (podtable.h) */
  struct metrics *metrics;
  struct endpoint *ep[IOQ_RES_COUNT]; /* device plugin sockets (kubelet/endpoint.h), allocated in both modes */

  struct ioq_kube *kube;     /* informer, annotation, events */
  struct ioq_kube *kube_rpc; /* lookups on an RPC's path: short timeout */
  struct podcache *pods;
  struct events *events;
  _Atomic(struct reconciler *) rec; /* read by the informer thread */
  struct registrar *reg;
  struct ungranted *ug; /* NULL when nodePolicy.ungranted.enable is false */
  struct drastate *dra;     /* DRA mode: the prepared claims; NULL in device-plugin mode */
  struct dradriver *drad;   /* DRA mode: kubelet's DRA service, registration, ResourceSlice */
  struct nvmetns *nvmet;    /* NVMe-oF target namespaces (config nvmet) */
  struct nodepool *np;      /* config pools: the Node's labels pick the pool; NULL without pools */
  struct monitor *mon;  /* grant monitor; NULL when monitor.enable is false */
  struct httpd *http;
  struct choices *choices; /* preferred-allocation decisions, for `ioqosctl explain` (choices.h) */
  struct combined *combined; /* combined-direction re-split state (combined.h) */

  atomic_bool stopping;
  atomic_bool inventory_ok; /* a probe has succeeded since start */
  atomic_bool first_reconcile_done;
  atomic_bool dra_recovered; /* DRA mode: drarecover.h ran once to the end */
};

/* The config in force (its node pool's), for one pass: take it once and use
 * that pointer throughout, so no pass mixes two pools' settings. Any thread. */
static inline const struct ioq_config *plugin_cfg(struct plugin *p) {
  const struct ioq_config *c = atomic_load_explicit(&p->live, memory_order_acquire);
  return c ? c : &p->cfg;
}

#endif
