// SPDX-License-Identifier: Apache-2.0
#include "dradriver.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dra/v1/api.pb-c.h"
#include "core/draprepare.h"
#include "drapub.h"
#include "endpoint.h"
#include "support/grpcs.h"
#include "dra/draslice.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "support/metrics.h"
#include "plugin.h"
#include "pluginregistration/v1/api.pb-c.h"

/* The request and response messages of dra/v1 and dra/v1beta1 are the same
 * bytes except v1's Device.share_id (field 5, kubelet >= 1.35): both
 * services are served with the v1 messages, and share_id stays unset on
 * v1beta1 answers (docs/dra.md, "The DRA kubelet service"). */
/* kubelet batches the claims of one pod per call, and a pod has far fewer;
 * the bound keeps one call's memory small (a prepared claim is ~10 KiB) */
#define DRA_MAX_CLAIMS_PER_CALL 128

#define DRA_V1 "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
#define DRA_V1BETA1 "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"

struct dradriver {
  struct plugin *p;
  char dra_sock[PATH_MAX];
  char reg_sock[PATH_MAX];
  struct grpcs *dra_srv;
  pthread_mutex_t lock; /* guards reg (the registrar thread serves it again) */
  struct served_socket reg;
  struct drapub *pub;
  atomic_bool registered; /* kubelet's last word on the registration socket served now */
  atomic_bool notified;   /* kubelet said something (registered or not) */
  atomic_bool gauge;      /* registered with a live kubelet: ioqos_kubelet_registered */
};

typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim Claim;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device Device;

/* ---- registration (kubelet is the client) ---- */

static void h_get_info(void *ud, const ProtobufCMessage *req, struct grpcs_reply *out) {
  struct dradriver *d = ud;
  (void)req;
  static char *versions[] = {"v1.DRAPlugin", "v1beta1.DRAPlugin"}; /* most preferred first */
  Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
  info.type = "DRAPlugin";
  info.name = IOQ_DRA_DRIVER;
  info.endpoint = d->dra_sock;
  info.n_supported_versions = 2;
  info.supported_versions = versions;
  ioq_debug("dra GetInfo from kubelet endpoint=%s", d->dra_sock);
  grpcs_reply_pack(out, &info.base);
}

static void h_notify(void *ud, const ProtobufCMessage *req, struct grpcs_reply *out) {
  struct dradriver *d = ud;
  const Pluginregistration__RegistrationStatus *st = (const void *)req;
  atomic_store(&d->notified, true);
  if (st->plugin_registered) {
    if (!atomic_exchange(&d->registered, true))
      ioq_info("dra driver registered with kubelet driver=%s endpoint=%s", IOQ_DRA_DRIVER,
               d->dra_sock);
    metrics_inc(d->p->metrics, C_REGISTER_OK);
  } else {
    atomic_store(&d->registered, false);
    metrics_inc(d->p->metrics, C_REGISTER_FAIL);
    ioq_error("kubelet refused the dra driver driver=%s error=\"%s\"", IOQ_DRA_DRIVER,
              st->error && *st->error ? st->error : "(no reason given)");
  }
  Pluginregistration__RegistrationStatusResponse r =
      PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
  grpcs_reply_pack(out, &r.base);
}

/* ---- the DRA service ---- */

/* "<request>/<subrequest>" -> "<request>": kubelet matches request names
 * of the claim's spec */
static char *request_of(const char *r) {
  const char *slash = strchr(r, '/');
  return strndup(r, slash ? (size_t)(slash - r) : strlen(r));
}

static void free_devices(Device **dv, size_t n) {
  for (size_t i = 0; dv && i < n; i++) {
    if (!dv[i])
      continue;
    if (dv[i]->request_names)
      free(dv[i]->request_names[0]);
    free(dv[i]->request_names);
    free(dv[i]);
  }
  free(dv);
}

/* The Device entries of a prepared claim; pointers into r stay valid while
 * r lives. NULL on OOM. */
static Device **devices_of(const struct dra_rec *r, bool v1, const char *pool, size_t *n) {
  Device **dv = calloc(r->n_shares ? r->n_shares : 1, sizeof *dv);
  *n = 0;
  for (size_t i = 0; dv && i < r->n_shares; i++) {
    Device *x = calloc(1, sizeof *x);
    char **names = calloc(1, sizeof *names);
    char *req = request_of(r->shares[i].request);
    if (!x || !names || !req) {
      free(x);
      free(names);
      free(req);
      free_devices(dv, *n);
      return NULL;
    }
    k8s__io__kubelet__pkg__apis__dra__v1__device__init(x);
    names[0] = req;
    x->n_request_names = 1;
    x->request_names = names;
    x->pool_name = (char *)pool; /* the node's pool */
    x->device_name = (char *)r->shares[i].device;
    /* no CDI devices: nothing is injected into containers, the limit is
     * on the pod cgroup */
    if (v1 && r->shares[i].share_id[0])
      x->share_id = (char *)r->shares[i].share_id;
    dv[(*n)++] = x;
  }
  return dv;
}

static void prepare(struct dradriver *d, const ProtobufCMessage *msg, bool v1,
                    struct grpcs_reply *out) {
  typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse__ClaimsEntry Entry;
  typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse One;
  const K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest *req = (const void *)msg;
  size_t n = req->n_claims;
  if (n > DRA_MAX_CLAIMS_PER_CALL) {
    grpcs_reply_error(out, GRPC_STATUS_INVALID_ARGUMENT, "%zu claims in one call, at most %d", n,
                      DRA_MAX_CLAIMS_PER_CALL);
    return;
  }
  Entry *ents = calloc(n ? n : 1, sizeof *ents), **ep = calloc(n ? n : 1, sizeof *ep);
  One *ones = calloc(n ? n : 1, sizeof *ones);
  struct dra_rec *recs = calloc(n ? n : 1, sizeof *recs);
  char **errs = calloc(n ? n : 1, sizeof *errs);
  if (!ents || !ep || !ones || !recs || !errs) {
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory (%zu claims)", n);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const Claim *c = req->claims[i];
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__claims_entry__init(
        &ents[i]);
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resource_response__init(&ones[i]);
    ents[i].key = c->uid;
    ents[i].value = &ones[i];
    ep[i] = &ents[i];
    ioq_err e;
    if (dra_prepare_claim(d->p, c->namespace_, c->uid, c->name, &recs[i], &e) < 0) {
      metrics_inc(d->p->metrics, C_DRA_PREPARE_FAIL);
      ioq_warn("dra claim not prepared claim=%s/%s uid=%s error=\"%s\"", c->namespace_, c->name,
               c->uid, e.msg);
      errs[i] = strdup(e.msg);
      ones[i].error = errs[i] ? errs[i] : "out of memory";
      continue;
    }
    metrics_inc(d->p->metrics, C_DRA_PREPARED);
    size_t nd = 0;
    ones[i].devices = devices_of(&recs[i], v1, d->p->opts.node_name, &nd);
    ones[i].n_devices = nd;
    if (!ones[i].devices)
      ones[i].error = "out of memory (devices of the answer)";
  }
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse resp =
      K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
  resp.n_claims = n;
  resp.claims = ep;
  grpcs_reply_pack(out, &resp.base);
out:
  for (size_t i = 0; ones && i < n; i++)
    free_devices(ones[i].devices, ones[i].n_devices);
  for (size_t i = 0; errs && i < n; i++)
    free(errs[i]);
  free(errs);
  free(recs);
  free(ones);
  free(ep);
  free(ents);
}

static void unprepare(struct dradriver *d, const ProtobufCMessage *msg, struct grpcs_reply *out) {
  typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry Entry;
  typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourceResponse One;
  const K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest *req =
      (const void *)msg;
  size_t n = req->n_claims;
  if (n > DRA_MAX_CLAIMS_PER_CALL) {
    grpcs_reply_error(out, GRPC_STATUS_INVALID_ARGUMENT, "%zu claims in one call, at most %d", n,
                      DRA_MAX_CLAIMS_PER_CALL);
    return;
  }
  Entry *ents = calloc(n ? n : 1, sizeof *ents), **ep = calloc(n ? n : 1, sizeof *ep);
  One *ones = calloc(n ? n : 1, sizeof *ones);
  char **errs = calloc(n ? n : 1, sizeof *errs);
  if (!ents || !ep || !ones || !errs) {
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory (%zu claims)", n);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    const Claim *c = req->claims[i];
    k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__claims_entry__init(
        &ents[i]);
    k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resource_response__init(&ones[i]);
    ents[i].key = c->uid;
    ents[i].value = &ones[i];
    ep[i] = &ents[i];
    ioq_err e;
    int u = dra_unprepare_claim(d->p, c->namespace_, c->uid, c->name, &e);
    if (u < 0) {
      metrics_inc(d->p->metrics, C_DRA_UNPREPARE_FAIL);
      ioq_warn("dra claim not unprepared claim=%s/%s uid=%s error=\"%s\"", c->namespace_, c->name,
               c->uid, e.msg);
      errs[i] = strdup(e.msg);
      ones[i].error = errs[i] ? errs[i] : "out of memory";
      continue;
    }
    if (u > 0)
      metrics_inc(d->p->metrics, C_DRA_UNPREPARED);
  }
  K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse resp =
      K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
  resp.n_claims = n;
  resp.claims = ep;
  grpcs_reply_pack(out, &resp.base);
out:
  for (size_t i = 0; errs && i < n; i++)
    free(errs[i]);
  free(errs);
  free(ones);
  free(ep);
  free(ents);
}

static void h_prepare_v1(void *ud, const ProtobufCMessage *m, struct grpcs_reply *o) {
  prepare(ud, m, true, o);
}
static void h_prepare_v1beta1(void *ud, const ProtobufCMessage *m, struct grpcs_reply *o) {
  prepare(ud, m, false, o);
}
static void h_unprepare(void *ud, const ProtobufCMessage *m, struct grpcs_reply *o) {
  unprepare(ud, m, o);
}

static const struct grpcs_method g_dra_methods[] = {
    {DRA_V1 "NodePrepareResources",
     &k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__descriptor,
     GRPCS_UNARY_BLOCKING, h_prepare_v1},
    {DRA_V1 "NodeUnprepareResources",
     &k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__descriptor,
     GRPCS_UNARY_BLOCKING, h_unprepare},
    {DRA_V1BETA1 "NodePrepareResources",
     &k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__descriptor,
     GRPCS_UNARY_BLOCKING, h_prepare_v1beta1},
    {DRA_V1BETA1 "NodeUnprepareResources",
     &k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__descriptor,
     GRPCS_UNARY_BLOCKING, h_unprepare},
};

static const struct grpcs_method g_reg_methods[] = {
    {"/pluginregistration.Registration/GetInfo", &pluginregistration__info_request__descriptor,
     GRPCS_UNARY, h_get_info},
    {"/pluginregistration.Registration/NotifyRegistrationStatus",
     &pluginregistration__registration_status__descriptor, GRPCS_UNARY, h_notify},
};

static void observe(void *ud, const char *path, grpc_status_code code, double seconds) {
  (void)ud;
  ioq_debug("rpc done method=%s code=%d seconds=%.6f", path, (int)code, seconds);
}

/* ---- start / stop ---- */

int dradriver_reg_socket(const struct plugin *p, char *out, size_t outsz, ioq_err *e) {
  return ioq_path_join(out, outsz, e, p->opts.kubelet_registry_dir,
                       IOQ_DRA_DRIVER DRA_REG_SOCKET_SUFFIX, NULL);
}

/* Unix socket paths have at most 107 bytes (sun_path). */
static int check_len(const char *path, ioq_err *e) {
  if (strlen(path) > 107)
    return ioq_fail(e, ENAMETOOLONG,
                    "socket path %s is longer than a unix socket path can be (107 bytes)", path);
  return 0;
}

/* The config of one of the driver's two servers. */
static struct grpcs_config server_config(struct dradriver *d, const char *name, const char *path,
                                         const struct grpcs_method *methods, size_t n) {
  return (struct grpcs_config){
      .name = name, .socket_path = path, .methods = methods, .n_methods = n, .ud = d,
      .observe = observe};
}

/* The registration socket: kubelet's plugin watcher registers the driver
 * when it sees the socket appear, and deregisters it when the socket goes. */
static int serve_registration(struct dradriver *d, ioq_err *e) {
  struct grpcs_config rc =
      server_config(d, "registration " IOQ_DRA_DRIVER, d->reg_sock, g_reg_methods,
                    sizeof g_reg_methods / sizeof g_reg_methods[0]);
  return endpoint_serve(&rc, &d->lock, &d->reg, e);
}

struct dradriver *dradriver_start(struct plugin *p, ioq_err *e) {
  struct dradriver *d = calloc(1, sizeof *d);
  if (!d) {
    ioq_fail(e, ENOMEM, "out of memory (dra driver)");
    return NULL;
  }
  pthread_mutex_init(&d->lock, NULL);
  d->p = p;
  char dir[PATH_MAX];
  if (ioq_path_join(dir, sizeof dir, e, p->opts.kubelet_plugins_dir, IOQ_DRA_DRIVER, NULL) < 0 ||
      ioq_path_join(d->dra_sock, sizeof d->dra_sock, e, dir, DRA_SOCKET_NAME, NULL) < 0 ||
      dradriver_reg_socket(p, d->reg_sock, sizeof d->reg_sock, e) < 0 ||
      check_len(d->dra_sock, e) < 0 || check_len(d->reg_sock, e) < 0 || ioq_mkdir_p(dir, e) < 0 ||
      ioq_mkdir_p(p->opts.kubelet_registry_dir, e) < 0 || endpoint_check_free(d->dra_sock, e) < 0 ||
      endpoint_check_free(d->reg_sock, e) < 0)
    goto fail;
  /* the service first: kubelet >= 1.34 dials it as soon as it registers us */
  struct grpcs_config dc = server_config(d, "dra " IOQ_DRA_DRIVER, d->dra_sock, g_dra_methods,
                                         sizeof g_dra_methods / sizeof g_dra_methods[0]);
  if (!(d->dra_srv = grpcs_start(&dc, e)))
    goto fail;
  if (!(d->pub = drapub_start(p, e)))
    goto fail;
  if (serve_registration(d, e) < 0)
    goto fail;
  ioq_info("dra driver serving driver=%s endpoint=%s registration=%s versions=v1.DRAPlugin,"
           "v1beta1.DRAPlugin",
           IOQ_DRA_DRIVER, d->dra_sock, d->reg_sock);
  return d;
fail:
  dradriver_stop(d);
  return NULL;
}

void dradriver_stop(struct dradriver *d) {
  if (!d)
    return;
  /* registration first: kubelet deregisters the driver when the socket goes */
  endpoint_unserve(&d->lock, &d->reg, false);
  if (d->dra_srv)
    grpcs_stop(d->dra_srv, false);
  drapub_stop(d->pub); /* the slice stays for the next instance */
  pthread_mutex_destroy(&d->lock);
  free(d);
}

bool dradriver_ready(struct dradriver *d, char *why, size_t whysz) {
  if (!d)
    return snprintf(why, whysz, "dra driver not started"), false;
  if (!atomic_load(&d->registered))
    return snprintf(why, whysz, "dra driver %s not registered with kubelet%s", IOQ_DRA_DRIVER,
                    atomic_load(&d->notified) ? " (kubelet refused it: see the log)" : ""),
           false;
  return drapub_ready(d->pub, why, whysz);
}

static double reg_last_tick(struct dradriver *d) {
  pthread_mutex_lock(&d->lock);
  double t = d->reg.srv ? grpcs_last_tick(d->reg.srv) : 0;
  pthread_mutex_unlock(&d->lock);
  return t;
}

bool dradriver_live(struct dradriver *d, char *why, size_t whysz) {
  if (!d)
    return true;
  double now = ioq_mono_s();
  double t[2] = {d->dra_srv ? grpcs_last_tick(d->dra_srv) : 0, reg_last_tick(d)};
  for (int i = 0; i < 2; i++)
    if (t[i] > 0 && now - t[i] > 10)
      return snprintf(why, whysz, "gRPC loop of the dra %s socket has not run for %.0f s",
                      i ? "registration" : "service", now - t[i]),
             false;
  return true;
}

/* ---- registration with a live kubelet (the registrar thread) ---- */

/* The registration socket was deleted, so kubelet deregistered the driver:
 * a fresh socket makes its plugin watcher register it again. */
static void serve_registration_again(struct dradriver *d) {
  endpoint_unserve(&d->lock, &d->reg, false);
  /* before the new socket exists: kubelet may answer on it at once */
  atomic_store(&d->registered, false);
  atomic_store(&d->notified, false);
  ioq_err e;
  if (serve_registration(d, &e) < 0) {
    ioq_error("serving the dra registration socket again failed driver=%s error=\"%s\"",
              IOQ_DRA_DRIVER, e.msg);
    return;
  }
  ioq_warn("dra registration socket gone, serving it again driver=%s socket=%s", IOQ_DRA_DRIVER,
           d->reg_sock);
}

/* Why the driver is not registered with a live kubelet; NULL when it is. */
static const char *not_registered(struct dradriver *d, bool intact, bool kubelet_live,
                                  const char *kubelet_why) {
  if (!intact)
    return "registration socket deleted (kubelet deregistered the driver)";
  if (!kubelet_live)
    return kubelet_why;
  if (!atomic_load(&d->registered))
    return atomic_load(&d->notified) ? "kubelet refused the driver"
                                     : "kubelet has not registered the driver";
  return NULL;
}

void dradriver_watch(struct dradriver *d, bool kubelet_live, const char *kubelet_why) {
  if (!d)
    return;
  bool intact = endpoint_serving(&d->lock, &d->reg, d->reg_sock);
  const char *why = not_registered(d, intact, kubelet_live, kubelet_why);
  bool on = !why;
  if (atomic_exchange(&d->gauge, on) != on) {
    if (on)
      ioq_info("kubelet registration up driver=%s registration=%s", IOQ_DRA_DRIVER, d->reg_sock);
    else
      ioq_warn("kubelet registration lost driver=%s reason=\"%s\"", IOQ_DRA_DRIVER, why);
  }
  if (!intact)
    serve_registration_again(d);
}

bool dradriver_kubelet_registered(struct dradriver *d) {
  return d && atomic_load(&d->gauge);
}
