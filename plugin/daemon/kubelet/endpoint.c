// SPDX-License-Identifier: Apache-2.0
/* The DevicePlugin service of one resource on its own socket: method table,
 * handlers that translate protobuf to the catalog / placement / enforcement
 * calls, and socket ownership. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "allocate.h"
#include "state/catalog.h"
#include "deviceplugin/v1beta1/api.pb-c.h"
#include "core/diskalloc.h"
#include "endpoint.h"
#include "state/listview.h"
#include "core/podtable.h"
#include "state/choices.h"
#include "support/grpcs.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "grant/nodeanno.h"
#include "support/metrics.h"
#include "plugin.h"
#include "state/podcache.h"
#include "state/podres.h"
#include "prefer.h"
#include "core/prestart.h"

#define MAX_CANDIDATES 8

/* ---- GetDevicePluginOptions ---- */

static void h_options(void *ud, const ProtobufCMessage *req, struct grpcs_reply *out) {
  (void)ud;
  (void)req;
  V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
  o.pre_start_required = 1;
  o.get_preferred_allocation_available = 1;
  grpcs_reply_pack(out, &o.base);
}

/* ---- ListAndWatch ---- */

static uint64_t s_generation(void *ud) {
  struct endpoint *ep = ud;
  return catalog_generation(ep->p->catalog, ep->res);
}

static void s_build(void *ud, struct grpcs_reply *out, uint64_t *gen) {
  struct endpoint *ep = ud;
  if (catalog_list_packed(ep->p->catalog, ep->res, &out->data, &out->len, gen) < 0) {
    /* nothing better to send than the previous list: retry next tick */
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED,
                      "out of memory (ListAndWatch device list)");
    *gen = 0;
    ioq_error("device list build failed resource=%s reason=out-of-memory",
              ioq_resource_name(ep->res));
    return;
  }
  uint64_t all, healthy;
  catalog_totals(ep->p->catalog, ep->res, &all, &healthy);
  ioq_info("device list sent resource=%s units=%llu healthy=%llu generation=%llu",
           ioq_resource_name(ep->res), (unsigned long long)all, (unsigned long long)healthy,
           (unsigned long long)*gen);
}

static void s_final(void *ud, struct grpcs_reply *out) {
  struct endpoint *ep = ud;
  V1beta1__ListAndWatchResponse empty = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
  grpcs_reply_pack(out, &empty.base);
  ioq_info("device list sent resource=%s units=0 reason=shutdown", ioq_resource_name(ep->res));
}

/* ---- GetPreferredAllocation ---- */

/* A pending pod is not asking for r any more once kubelet lists it with all
 * of its r units (kubelet allocates one resource after the other, so a pod
 * may hold its bandwidth units while it asks for IOPS). */
static bool skip_satisfied(void *ud, const struct pod_info *pi, enum ioq_resource r) {
  uint64_t held[IOQ_RES_COUNT];
  if (!listview_pod_held(ud, pi->ns, pi->name, held))
    return false;
  uint64_t need = pi->need_ok ? pi->need.units[r] : 0;
  return need ? held[r] >= need : held[r] > 0;
}

static int prefer_one(struct endpoint *ep, const V1beta1__ContainerPreferredAllocationRequest *cr,
                      const struct ioq_disk_state *ds, size_t nds,
                      V1beta1__ContainerPreferredAllocationResponse *resp,
                      struct prefer_result *res, ioq_err *e) {
  struct plugin *p = ep->p;
  struct prefer_req req = {ep->res, cr->available_deviceids, cr->n_available_deviceids,
                           cr->must_include_deviceids, cr->n_must_include_deviceids,
                           cr->allocation_size};
  /* Which pending pod could be asking? Only an unambiguous one counts. */
  struct pod_info *cand = calloc(MAX_CANDIDATES, sizeof *cand);
  if (!cand)
    return ioq_fail(e, ENOMEM, "out of memory (candidate pods of a PreStart)");
  size_t nc = 0;
  if (p->pods && cr->allocation_size > 0)
    nc = podcache_candidates(p->pods, ep->res, (uint64_t)cr->allocation_size, skip_satisfied, p->table,
                             cand, MAX_CANDIDATES);
  struct ioq_need need = {0}, *needp = NULL;
  const char *hint = NULL;
  if (nc == 1 && cand[0].need_ok) {
    ioq_pod_need_placement(&cand[0].need, &need);
    needp = &need;
    hint = cand[0].need.disk[0] ? cand[0].need.disk : NULL;
  } else if (nc > 1 && nc <= MAX_CANDIDATES) {
    bool same = true;
    for (size_t i = 1; i < nc && same; i++)
      same = strcmp(cand[i].need.class_name, cand[0].need.class_name) == 0;
    if (same && cand[0].need.class_name[0]) { /* class known, amounts not */
      need.class_name = cand[0].need.class_name;
      needp = &need;
    }
  }
  struct prefer_ctx ctx = {ds, nds, hint, needp, p->cfg.policy};
  int rc = prefer_choose(&req, &ctx, res, e);
  if (rc == 0) {
    resp->deviceids = (char **)res->ids;
    resp->n_deviceids = res->n;
    ioq_info("preferred allocation resource=%s size=%d available=%zu must_include=%zu disk=%s "
             "how=%s candidates=%zu pod=%s%s%s",
             ioq_resource_name(ep->res), cr->allocation_size, cr->n_available_deviceids,
             cr->n_must_include_deviceids, res->disk[0] ? res->disk : "(several)", res->how, nc,
             nc == 1 ? cand[0].ns : "", nc == 1 ? "/" : "", nc == 1 ? cand[0].name : "");
    if (res->note[0])
      ioq_info("preferred allocation note resource=%s note=\"%s\"", ioq_resource_name(ep->res),
               res->note);
    if (nc == 1 && res->disk[0]) /* the asker is known: `ioqosctl explain` tells why this disk */
      choices_note(p->choices, cand[0].ns, cand[0].name, ep->res, res->disk, res->how,
                          res->note);
  }
  free(cand);
  return rc;
}

static void h_preferred(void *ud, const ProtobufCMessage *msg, struct grpcs_reply *out) {
  struct endpoint *ep = ud;
  const V1beta1__PreferredAllocationRequest *req = (const V1beta1__PreferredAllocationRequest *)msg;
  if (req->n_container_requests == 0) {
    grpcs_reply_error(out, GRPC_STATUS_INVALID_ARGUMENT, "no container requests");
    return;
  }
  /* A fresh List tells which pending pods already hold their units (kubelet
   * releases its device-manager lock while it waits for this RPC). If it
   * fails, the reconcile loop's last List serves. */
  struct podres_list list;
  ioq_err le;
  if (podres_list(ep->p->opts.pod_resources_socket, PREFER_LIST_TIMEOUT_MS, &list, &le) == 0) {
    podcache_drop_terminal(ep->p->pods, &list);
    listview_note(ep->p->table, &list);
    podres_list_free(&list);
  } else {
    ioq_debug("preferred allocation without a fresh pod resources List error=\"%s\"", le.msg);
  }
  struct ioq_disk_state *ds;
  size_t nds = plugin_disk_states(ep->p, &ds);
  size_t n = req->n_container_requests;
  V1beta1__ContainerPreferredAllocationResponse *crs = calloc(n, sizeof *crs);
  V1beta1__ContainerPreferredAllocationResponse **ptrs = calloc(n, sizeof *ptrs);
  struct prefer_result *res = calloc(n, sizeof *res);
  if (!crs || !ptrs || !res || !ds) {
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED,
                      "out of memory (GetPreferredAllocation response)");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    v1beta1__container_preferred_allocation_response__init(&crs[i]);
    ptrs[i] = &crs[i];
    ioq_err e;
    if (prefer_one(ep, req->container_requests[i], ds, nds, &crs[i], &res[i], &e) < 0) {
      ioq_warn("preferred allocation rejected resource=%s container_request=%zu error=\"%s\"",
               ioq_resource_name(ep->res), i + 1, e.msg);
      grpcs_reply_error(out, e.code == ENOMEM ? GRPC_STATUS_RESOURCE_EXHAUSTED
                                              : GRPC_STATUS_INVALID_ARGUMENT,
                        "container request %zu: %s", i + 1, e.msg);
      goto out;
    }
  }
  V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
  resp.n_container_responses = n;
  resp.container_responses = ptrs;
  grpcs_reply_pack(out, &resp.base);
out:
  if (res)
    for (size_t i = 0; i < n; i++)
      prefer_result_free(&res[i]);
  free(res);
  free(crs);
  free(ptrs);
  free(ds);
}

/* ---- Allocate ---- */

static void h_allocate(void *ud, const ProtobufCMessage *msg, struct grpcs_reply *out) {
  struct endpoint *ep = ud;
  struct plugin *p = ep->p;
  const V1beta1__AllocateRequest *req = (const V1beta1__AllocateRequest *)msg;
  size_t n = req->n_container_requests;
  if (n == 0) {
    grpcs_reply_error(out, GRPC_STATUS_INVALID_ARGUMENT, "no container requests");
    return;
  }
  V1beta1__ContainerAllocateResponse *crs = calloc(n, sizeof *crs);
  V1beta1__ContainerAllocateResponse **ptrs = calloc(n, sizeof *ptrs);
  struct env_kv(*envs)[2] = calloc(n, sizeof *envs);
  V1beta1__ContainerAllocateResponse__EnvsEntry(*entries)[2] = calloc(n, sizeof *entries);
  V1beta1__ContainerAllocateResponse__EnvsEntry *(*eptrs)[2] = calloc(n, sizeof *eptrs);
  if (!crs || !ptrs || !envs || !entries || !eptrs) {
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory (Allocate response)");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const V1beta1__ContainerAllocateRequest *cr = req->container_requests[i];
    struct id_tally t;
    ioq_err e;
    if (catalog_check_ids(p->catalog, ep->res, cr->devices_ids, cr->n_devices_ids, &t, &e) < 0 ||
        allocate_envs(ep->res, &p->cfg.units, &t, envs[i], &e) < 0) {
      id_tally_free(&t);
      ioq_warn("allocate rejected resource=%s container_request=%zu ids=%zu error=\"%s\"",
               ioq_resource_name(ep->res), i + 1, cr->n_devices_ids, e.msg);
      grpcs_reply_error(out, e.code == ENOMEM ? GRPC_STATUS_RESOURCE_EXHAUSTED
                                              : GRPC_STATUS_INVALID_ARGUMENT,
                        "container request %zu: %s", i + 1, e.msg);
      goto out;
    }
    for (size_t k = 0; k < t.n; k++)
      if (!t.d[k].healthy)
        ioq_warn("allocate of units on an unhealthy disk resource=%s disk=%s units=%llu",
                 ioq_resource_name(ep->res), t.d[k].disk, (unsigned long long)t.d[k].count);
    id_tally_free(&t);
    v1beta1__container_allocate_response__init(&crs[i]);
    for (int k = 0; k < 2; k++) {
      v1beta1__container_allocate_response__envs_entry__init(&entries[i][k]);
      entries[i][k].key = envs[i][k].key;
      entries[i][k].value = envs[i][k].value;
      eptrs[i][k] = &entries[i][k];
    }
    crs[i].n_envs = 2;
    crs[i].envs = eptrs[i];
    ptrs[i] = &crs[i];
    ioq_info("allocate resource=%s container_request=%zu ids=%zu %s=%s %s=%s",
             ioq_resource_name(ep->res), i + 1, cr->n_devices_ids, envs[i][0].key,
             envs[i][0].value, envs[i][1].key, envs[i][1].value);
  }
  V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
  resp.n_container_responses = n;
  resp.container_responses = ptrs;
  grpcs_reply_pack(out, &resp.base);
out:
  free(crs);
  free(ptrs);
  free(envs);
  free(entries);
  free(eptrs);
}

/* ---- PreStartContainer (blocking: waits on kubelet and the API server) ---- */

static void h_prestart(void *ud, const ProtobufCMessage *msg, struct grpcs_reply *out) {
  struct endpoint *ep = ud;
  const V1beta1__PreStartContainerRequest *req = (const V1beta1__PreStartContainerRequest *)msg;
  prestart_handle(ep->p, ep->res, req->devices_ids, req->n_devices_ids, out);
}

static const struct grpcs_method g_methods[] = {
    {"/v1beta1.DevicePlugin/GetDevicePluginOptions", &v1beta1__empty__descriptor, GRPCS_UNARY,
     h_options},
    {"/v1beta1.DevicePlugin/ListAndWatch", &v1beta1__empty__descriptor, GRPCS_SERVER_STREAM, NULL},
    {"/v1beta1.DevicePlugin/GetPreferredAllocation",
     &v1beta1__preferred_allocation_request__descriptor, GRPCS_UNARY_BLOCKING, h_preferred},
    {"/v1beta1.DevicePlugin/Allocate", &v1beta1__allocate_request__descriptor, GRPCS_UNARY,
     h_allocate},
    {"/v1beta1.DevicePlugin/PreStartContainer", &v1beta1__pre_start_container_request__descriptor,
     GRPCS_UNARY_BLOCKING, h_prestart},
};

static const struct grpcs_stream_source g_stream = {s_generation, s_build, s_final};

static void observe(void *ud, const char *path, grpc_status_code code, double seconds) {
  struct endpoint *ep = ud;
  enum rpc_method m = rpc_method_from_path(path);
  metrics_rpc(ep->p->metrics, ep->res, m, code, seconds);
  ioq_debug("rpc done resource=%s method=%s code=%d seconds=%.6f", ioq_resource_name(ep->res),
            rpc_method_name(m), (int)code, seconds);
}

/* ---- socket ownership ---- */

int endpoint_probe(const char *path, ioq_err *e) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return ioq_fail(e, ENAMETOOLONG, "socket path %s is too long for a unix socket", path);
  memcpy(sa.sun_path, path, strlen(path) + 1);
  /* non-blocking: a full backlog (EAGAIN) is a live server, not a reason to wait */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return ioq_fail_errno(e, "socket");
  int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  int err = errno;
  close(fd);
  if (rc == 0 || err == EAGAIN || err == EINPROGRESS)
    return 1;
  if (err == ECONNREFUSED || err == ENOENT)
    return 0;
  return ioq_fail(e, err, "probe %s: %s", path, strerror(err));
}

int endpoint_check_free(const char *path, ioq_err *e) {
  struct stat st;
  if (lstat(path, &st) < 0) {
    if (errno == ENOENT)
      return 0;
    return ioq_fail_errno(e, "stat %s", path);
  }
  if (!S_ISSOCK(st.st_mode))
    return ioq_fail(e, EEXIST, "%s exists and is not a socket; refusing to replace it", path);
  int live = endpoint_probe(path, e);
  if (live < 0)
    return -1;
  if (live)
    return ioq_fail(e, EADDRINUSE,
                    "%s is served by another live process (another ioqos-plugin?); refusing to "
                    "take it over",
                    path);
  /* stale socket of a process that died: ours to reuse */
  if (unlink(path) < 0 && errno != ENOENT)
    return ioq_fail_errno(e, "remove stale socket %s", path);
  ioq_info("stale socket removed socket=%s", path);
  return 0;
}

int endpoint_serve(const struct grpcs_config *cfg, pthread_mutex_t *lock, struct served_socket *ss,
                   ioq_err *e) {
  if (endpoint_check_free(cfg->socket_path, e) < 0)
    return -1;
  struct grpcs *srv = grpcs_start(cfg, e);
  if (!srv)
    return -1;
  struct stat st;
  if (stat(cfg->socket_path, &st) < 0) {
    int err = errno;
    grpcs_stop(srv, false);
    errno = err;
    return ioq_fail_errno(e, "socket %s missing right after bind", cfg->socket_path);
  }
  pthread_mutex_lock(lock);
  *ss = (struct served_socket){srv, st.st_dev, st.st_ino};
  pthread_mutex_unlock(lock);
  return 0;
}

void endpoint_unserve(pthread_mutex_t *lock, struct served_socket *ss, bool farewell) {
  pthread_mutex_lock(lock);
  struct grpcs *srv = ss->srv;
  ss->srv = NULL;
  pthread_mutex_unlock(lock);
  grpcs_stop(srv, farewell);
}

bool endpoint_serving(pthread_mutex_t *lock, const struct served_socket *ss, const char *path) {
  struct stat st;
  pthread_mutex_lock(lock);
  bool ok = ss->srv && stat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == ss->dev &&
            st.st_ino == ss->ino;
  pthread_mutex_unlock(lock);
  return ok;
}

int endpoint_start(struct endpoint *ep, ioq_err *e) {
  struct grpcs_config cfg = {
      .name = ioq_resource_name(ep->res),
      .socket_path = ep->sock_path,
      .methods = g_methods,
      .n_methods = sizeof g_methods / sizeof g_methods[0],
      .stream = &g_stream,
      .ud = ep,
      .observe = observe,
  };
  return endpoint_serve(&cfg, &ep->lock, &ep->sock, e);
}

void endpoint_stop(struct endpoint *ep, bool farewell) {
  endpoint_unserve(&ep->lock, &ep->sock, farewell);
}

bool endpoint_socket_intact(struct endpoint *ep) {
  return endpoint_serving(&ep->lock, &ep->sock, ep->sock_path);
}

unsigned endpoint_streams(struct endpoint *ep) {
  pthread_mutex_lock(&ep->lock);
  unsigned n = grpcs_open_streams(ep->sock.srv);
  pthread_mutex_unlock(&ep->lock);
  return n;
}

double endpoint_last_tick(struct endpoint *ep) {
  pthread_mutex_lock(&ep->lock);
  double t = ep->sock.srv ? grpcs_last_tick(ep->sock.srv) : 0;
  pthread_mutex_unlock(&ep->lock);
  return t;
}
