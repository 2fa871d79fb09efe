// SPDX-License-Identifier: Apache-2.0
/* The daemon's shared state: one struct plugin owns every component. Each
 * component has its own file; this header ties them together. */
#ifndef IOQOS_PLUGIN_PLUGIN_H
#define IOQOS_PLUGIN_PLUGIN_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "catalog.h"
#include "enforcer.h"
#include "explain.h"
#include "grpcs.h"
#include "ioqos/config.h"
#include "ioqos/probe.h"
#include "ioqos/kube/kube.h"
#include "metrics.h"
#include "monitor.h"
#include "opts.h"
#include "podcache.h"
#include "ungranted.h"

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

struct plugin;

/* One DevicePlugin endpoint: a socket serving one resource. */
struct endpoint {
  struct plugin *p;
  enum ioq_resource res;
  char sock_name[64]; /* bare file name, the Register endpoint */
  char sock_path[PATH_MAX];
  pthread_mutex_t lock; /* guards srv and the socket identity */
  struct grpcs *srv;
  dev_t sock_dev; /* identity of the socket file we bound */
  ino_t sock_ino;
  /* registration (registrar thread only, except the atomics) */
  atomic_bool registered;
  dev_t kubelet_dev; /* kubelet.sock identity at the last Register */
  ino_t kubelet_ino;
  double next_attempt, backoff;
};

struct plugin {
  struct plugin_opts opts;
  struct ioq_config cfg;
  struct ioq_probe_opts probe;
  char kubepods_dir[PATH_MAX]; /* for the probe; "" = let it look */
  struct ioq_cg_layout layout; /* the io hierarchy */
  enum ioq_cg_driver driver;   /* kubelet's cgroup driver (detected when auto and possible) */
  char kubelet_sock[PATH_MAX];

  struct catalog *catalog;
  struct enforcer *enf;
  struct metrics *metrics;
  struct endpoint ep[IOQ_RES_COUNT];

  struct ioq_kube *kube;     /* informer, annotation, events */
  struct ioq_kube *kube_rpc; /* lookups on an RPC's path: short timeout */
  struct podcache *pods;
  struct events *events;
  _Atomic(struct reconciler *) rec; /* read by the informer thread */
  struct registrar *reg;
  struct ungranted *ug; /* NULL when nodePolicy.ungranted.enable is false */
  struct monitor *mon;  /* grant monitor; NULL when monitor.enable is false */
  struct httpd *http;
  struct explain *explain; /* notes for `ioqosctl explain` (explain.h) */

  atomic_bool stopping;
  atomic_bool inventory_ok; /* a probe has succeeded since start */
  atomic_bool first_reconcile_done;
};

/* ---- endpoint.c: the DevicePlugin service on one socket ---- */
/* Fails if another live process serves the socket (refuses to take it over). */
int endpoint_check_free(const char *sock_path, ioq_err *e);
int endpoint_start(struct endpoint *ep, ioq_err *e);
/* Stops serving; farewell = empty list + UNAVAILABLE to ListAndWatch streams. */
void endpoint_stop(struct endpoint *ep, bool farewell);
/* true if our socket file is still the one we bound */
bool endpoint_socket_intact(struct endpoint *ep);
unsigned endpoint_streams(struct endpoint *ep);
double endpoint_last_tick(struct endpoint *ep);

/* ---- nodepolicy.c: config nodePolicy (iocost, QoS-class weights) ---- */
/* Applies the policy to the disks of `inv`; returns how many kernel files it
 * changed (the probe then sees e.g. iocost enabled). Failures are logged and
 * counted, never fatal: the policy is an opt-in extra. */
unsigned nodepolicy_apply(struct plugin *p, const struct ioq_inventory *inv);

/* ---- diskstate.c ---- */
struct ioq_disk_state;
/* The disks with units, health, capabilities and allocated units, for the
 * placement function and the node annotation. *out is malloc'd (NULL and 0
 * when out of memory). */
size_t plugin_disk_states(struct plugin *p, struct ioq_disk_state **out);
/* After a probe: tells each change of a disk's health or reason, and each
 * configured selector that gives no disk, once (log + Event on the node). */
void disks_report_health(struct plugin *p);

/* ---- prestart.c ---- */
struct grpcs_reply;
void prestart_handle(struct plugin *p, enum ioq_resource r, char *const *ids, size_t n,
                     struct grpcs_reply *out);

/* ---- registrar.c: Register with kubelet, re-register after its restarts ---- */
struct registrar *registrar_start(struct plugin *p, ioq_err *e);
void registrar_stop(struct registrar *r);

/* ---- reconcile.c: periodic + triggered passes ---- */
struct reconciler *reconciler_start(struct plugin *p, ioq_err *e);
void reconciler_kick(struct reconciler *r);
/* Ends the thread; kicks are still safe until reconciler_free. */
void reconciler_stop(struct reconciler *r);
void reconciler_free(struct reconciler *r);
/* One pass now, on the caller's thread (also used at start). */
void reconcile_pass(struct plugin *p);
/* Re-probes the disks and updates the catalog (health, units). */
void inventory_refresh(struct plugin *p);

/* ---- events.c: Kubernetes Events, posted off the RPC path ---- */
struct events *events_start(struct plugin *p);
void events_stop(struct events *ev);
/* Queues a Warning (or Normal) event on a pod (uid may be "") or, with ns
 * NULL, on the node. Never blocks; drops (and counts) when the queue is full. */
void events_post(struct events *ev, const char *ns, const char *name, const char *uid,
                 const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* The pod's recent events (at most max, newest first) as a JSON array of
 * {type, reason, message, count, first, last (CLOCK_REALTIME seconds),
 * dropped}; a repeat inside the minute it is not posted again is counted.
 * An empty array for NULL ev; NULL only when out of memory. */
struct json_object *events_recent_json(struct events *ev, const char *ns, const char *name,
                                       size_t max);

/* ---- httpd.c + metrics_text.c ---- */
/* Listeners: /metrics etc. on `address` (TCP, "" = none) and, with
 * opts.explain_socket set, /v1/explain on that unix socket (root only:
 * mode 0600; a path owned by another user or served by a live process is
 * refused, a stale socket replaced, the socket removed by httpd_stop). */
struct httpd *httpd_start(struct plugin *p, const char *address, ioq_err *e);
void httpd_stop(struct httpd *h);
/* Prometheus text exposition (malloc'd). */
char *metrics_render(struct plugin *p);
/* /readyz: true when serving and registered; why says what is missing */
bool plugin_ready(struct plugin *p, char *why, size_t whysz);
bool plugin_live(struct plugin *p, char *why, size_t whysz);

#endif
