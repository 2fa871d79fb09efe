// SPDX-License-Identifier: Apache-2.0
#include "service.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "extender.h"
#include "httpd.h"
#include "memlimit.h"
#include "podsync.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "tlswatch.h"

struct ext_service {
  struct extender x;
  struct ioq_kube_informer *informer;
  struct ext_httpd *_Atomic httpd; /* scheduling: filter, prioritize, bind */
  struct ext_httpd *probes;        /* healthz, readyz, metrics */
  struct ext_tlswatch *tlswatch;
  struct ext_refusals *refusals; /* both listeners' refused requests */
  struct ext_budget budget, probe_budget; /* probe_budget: the probe listener's tiny bodies */
  char *tls_cert, *tls_key, *tls_client_ca;
  const char *scheduler_names[EXT_MAX_SCHEDULER_NAMES];
  struct ext_route routes[3], probe_routes[3];
};

static void route_filter(void *ud, json_object *body, struct ext_reply *r) {
  ext_filter(&((struct ext_service *)ud)->x, body, r);
}
static void route_prioritize(void *ud, json_object *body, struct ext_reply *r) {
  ext_prioritize(&((struct ext_service *)ud)->x, body, r);
}
static void route_bind(void *ud, json_object *body, struct ext_reply *r) {
  ext_bind(&((struct ext_service *)ud)->x, body, r);
}

static void route_healthz(void *ud, json_object *body, struct ext_reply *r) {
  (void)ud, (void)body;
  ext_reply_text(r, 200, "text/plain; charset=utf-8", strdup("ok\n"));
}

/* Ready when decisions can be made for both request forms we are set up
 * for: without a node cache at once, with one after its first list. */
static void route_readyz(void *ud, json_object *body, struct ext_reply *r) {
  (void)body;
  struct ext_service *s = ud;
  if (s->x.cache && !ext_nodecache_synced(s->x.cache))
    ext_reply_text(r, 503, "text/plain; charset=utf-8", strdup("node cache not synced yet\n"));
  else if (!ext_podsync_ready(s->x.sync))
    ext_reply_text(r, 503, "text/plain; charset=utf-8",
                   strdup("assumed placements not rebuilt from bound pods yet\n"));
  else
    ext_reply_text(r, 200, "text/plain; charset=utf-8", strdup("ok\n"));
}

static void route_metrics(void *ud, json_object *body, struct ext_reply *r) {
  (void)body;
  struct ext_service *s = ud;
  struct ext_httpd *h = atomic_load(&s->httpd);
  struct ext_gauges g = {
      .in_flight = h ? ext_httpd_in_flight(h) : 0,
      .parse_memory = h ? ext_httpd_parse_memory(h) : 0,
      .parse_budget = s->budget.max,
      .assumed = ext_assumed_count(s->x.assumed),
      .node_cache_enabled = s->x.cache != NULL,
      .node_cache_nodes = s->x.cache ? ext_nodecache_size(s->x.cache) : 0,
      .node_cache_synced = s->x.cache ? ext_nodecache_synced(s->x.cache) : 0,
      .node_cache_lists = s->informer ? ioq_kube_informer_lists(s->informer) : 0,
  };
  ext_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8",
                 ext_metrics_render(s->x.metrics, &g));
}

static void free_parts(struct ext_service *s) {
  ext_podsync_stop(s->x.sync);
  if (s->informer)
    ioq_kube_informer_stop(s->informer);
  ext_nodecache_free(s->x.cache);
  ioq_kube_free(s->x.kube);
  ext_assumed_free(s->x.assumed);
  ext_refusals_free(s->refusals); /* logs the refusals still held back */
  ext_metrics_free(s->x.metrics);
  free(s->tls_cert);
  free(s->tls_key);
  free(s->tls_client_ca);
  free(s);
}

/* API access: explicit flags, else a kubeconfig (--kubeconfig, KUBECONFIG),
 * else in-cluster when it looks like a pod. */
static int start_kube(struct ext_service *s, const struct ext_flags *f, ioq_err *e) {
  if (f->no_kube)
    return 0;
  const char *kc_env = getenv("KUBECONFIG");
  if (!f->kube_api_server && !f->kubeconfig && !(kc_env && *kc_env) &&
      !getenv("KUBERNETES_SERVICE_HOST")) {
    if (f->node_cache == 1)
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "--node-cache=true needs the Kubernetes API: pass --kube-api-server or "
                      "--kubeconfig, or run in a cluster");
    ioq_info("no Kubernetes API configured (no --kube-api-server, --kubeconfig or KUBECONFIG, not "
             "in a cluster): serving full-node filter/prioritize only; NodeNames requests and bind "
             "will be refused");
    return 0;
  }
  struct ioq_kube_opts ko = {
      .server = f->kube_api_server,
      .token_file = f->kube_token_file,
      .ca_file = f->kube_ca_file,
      .kubeconfig = f->kubeconfig,
      .timeout_ms = (long)f->kube_timeout_s * 1000,
      .user_agent = "ioqos-scheduler-ext/" IOQOS_VERSION,
  };
  s->x.kube = ioq_kube_new(&ko, e);
  if (!s->x.kube)
    return -1;
  if (f->node_cache == 0)
    return 0;
  s->x.cache = ext_nodecache_new(s->x.assumed);
  if (!s->x.cache)
    return ioq_fail(e, ENOMEM, "out of memory building the node cache");
  struct ioq_kube_informer_cb cb = {.list_begin = ext_nodecache_list_begin,
                                    .list_page = ext_nodecache_list_page,
                                    .list_end = ext_nodecache_list_end,
                                    .on_event = ext_nodecache_on_event};
  s->informer = ioq_kube_informer_start(s->x.kube, "/api/v1/nodes", NULL, &cb, s->x.cache, e);
  if (!s->informer) {
    ioq_err_prefix(e, "start the node cache");
    return -1;
  }
  /* sweep every 5 s the placements at least 5 s old (their bind is done) */
  s->x.sync = ext_podsync_start(&s->x, 5000, 5000, e);
  return s->x.sync ? 0 : -1;
}

/* The parse budget: --max-request-memory, else a share of the container's
 * memory limit, so hostile bodies are refused (413/503) before the kernel
 * OOM-kills the only replica (the old fixed 1 GiB exceeded the 512 MiB
 * limit of the shipped Deployment). */
static int set_budget(struct ext_service *s, const struct ext_flags *f, ioq_err *e) {
  s->x.budget = &s->budget;
  uint64_t limit = 0;
  char where[512];
  if (ext_memory_limit("/proc/self/cgroup", "/proc/self/mountinfo", &limit, where, sizeof where,
                       e) < 0) {
    ioq_err_prefix(e, "find the container's memory limit (set --max-request-memory to skip)");
    if (!f->max_request_memory)
      return -1;
    ioq_warn("%s", e->msg);
    *e = (ioq_err){0};
  }
  if (f->max_request_memory) {
    s->budget.max = f->max_request_memory;
    if (limit && f->max_request_memory > limit / 2)
      ioq_warn("--max-request-memory=%zu is more than half of the memory limit %llu (%s): hostile "
               "bodies can get the extender OOM-killed",
               f->max_request_memory, (unsigned long long)limit, where);
    ioq_info("parse budget bytes=%zu from=--max-request-memory", s->budget.max);
  } else {
    s->budget.max = ext_parse_budget(limit);
    if (limit)
      ioq_info("parse budget bytes=%zu from=\"a quarter of the memory limit %llu of %s\"",
               s->budget.max, (unsigned long long)limit, where);
    else
      ioq_info("parse budget bytes=%zu from=\"default: no memory limit found\"", s->budget.max);
  }
  return 0;
}

struct ext_service *ext_service_start(const struct ext_flags *f, ioq_err *e) {
  struct ext_service *s = calloc(1, sizeof *s);
  if (!s) {
    ioq_fail(e, ENOMEM, "out of memory building the extender service");
    return NULL;
  }
  s->x.policy = f->policy;
  ext_decide_set_max_age(f->annotation_max_age_s, NULL);
  memcpy(s->scheduler_names, f->scheduler_names, sizeof s->scheduler_names);
  s->x.scheduler_names = s->scheduler_names;
  s->x.n_scheduler_names = f->n_scheduler_names;
  s->x.metrics = ext_metrics_new();
  s->x.assumed = ext_assumed_new((uint64_t)f->assume_ttl_s * 1000u);
  s->refusals = s->x.metrics ? ext_refusals_new(s->x.metrics) : NULL;
  if (!s->x.metrics || !s->x.assumed || !s->refusals) {
    ioq_fail(e, ENOMEM, "out of memory building the metrics, refusal log and assumed placements");
    goto fail;
  }
  if (f->tls_cert) {
    if (ioq_read_file(f->tls_cert, &s->tls_cert, NULL, 1u << 20, e) < 0 ||
        ioq_read_file(f->tls_key, &s->tls_key, NULL, 1u << 20, e) < 0 ||
        (f->tls_client_ca &&
         ioq_read_file(f->tls_client_ca, &s->tls_client_ca, NULL, 1u << 20, e) < 0)) {
      ioq_err_prefix(e, "TLS");
      goto fail;
    }
  }
  if (set_budget(s, f, e) < 0 || start_kube(s, f, e) < 0)
    goto fail;

  const struct ext_route routes[] = {
      {"filter", true, EXT_VERB_FILTER, route_filter, s},
      {"prioritize", true, EXT_VERB_PRIORITIZE, route_prioritize, s},
      {"bind", true, EXT_VERB_BIND, route_bind, s},
  };
  const struct ext_route probe_routes[] = {
      {"/healthz", false, EXT_VERB_HEALTHZ, route_healthz, s},
      {"/readyz", false, EXT_VERB_READYZ, route_readyz, s},
      {"/metrics", false, EXT_VERB_METRICS, route_metrics, s},
  };
  memcpy(s->routes, routes, sizeof routes);
  memcpy(s->probe_routes, probe_routes, sizeof probe_routes);
  /* probes and scrapes get their own listener (plain HTTP: kubelet probes
   * present no client certificate), so they never compete with scheduling
   * for connections or workers, and the scheduling port serves only the
   * extender verbs */
  struct ext_httpd_opts po = {
      .listen = f->metrics_listen,
      .max_body = 4096,
      .budget = &s->probe_budget,
      .refusals = s->refusals,
      .threads = 1,
      .max_connections = 32,
      .idle_timeout_s = f->idle_timeout_s,
      .max_per_ip = f->max_connections_per_ip,
      .deadline_s = f->request_deadline_s,
  };
  s->probe_budget.max = 1u << 20;
  s->probes = ext_httpd_start(&po, s->probe_routes, 3, s->x.metrics, e);
  if (!s->probes) {
    ioq_err_prefix(e, "--metrics-listen");
    goto fail;
  }
  struct ext_httpd_opts ho = {
      .listen = f->listen,
      .tls_cert = s->tls_cert,
      .tls_key = s->tls_key,
      .tls_client_ca = s->tls_client_ca,
      .tls_client_subject = f->tls_client_subject,
      .max_body = f->max_request_bytes,
      .budget = &s->budget,
      .refusals = s->refusals,
      .threads = f->threads,
      .max_connections = f->max_connections,
      .idle_timeout_s = f->idle_timeout_s,
      .max_per_ip = f->max_connections_per_ip,
      .deadline_s = f->request_deadline_s,
  };
  struct ext_httpd *h = ext_httpd_start(&ho, s->routes, 3, s->x.metrics, e);
  if (!h)
    goto fail;
  atomic_store(&s->httpd, h);
  if (f->tls_cert) {
    s->tlswatch = ext_tlswatch_start(h, f->tls_cert, f->tls_key, f->tls_client_ca, s->tls_cert,
                                     s->tls_key, s->tls_client_ca, 1000, e);
    if (!s->tlswatch)
      goto fail;
  }
  ioq_info("serving listen=%s port=%u metrics_listen=%s metrics_port=%u tls=%s client_certs=%s "
           "policy=%s threads=%u max_request_bytes=%zu max_request_memory=%zu assume_ttl_s=%u "
           "annotation_max_age_s=%u kube=%s node_cache=%s bind=%s",
           f->listen, ext_httpd_port(h), f->metrics_listen, ext_httpd_port(s->probes),
           f->tls_cert ? "on" : "off", f->tls_client_ca ? "required" : "off",
           ioq_policy_name(f->policy), f->threads, f->max_request_bytes, s->budget.max,
           f->assume_ttl_s, f->annotation_max_age_s, s->x.kube ? ioq_kube_server(s->x.kube) : "none",
           s->x.cache ? "on" : "off", s->x.kube ? "on" : "off");
  return s;
fail:
  ext_tlswatch_stop(s->tlswatch);
  ext_httpd_stop(s->probes); /* first: /metrics reads the scheduling server */
  ext_httpd_stop(atomic_load(&s->httpd));
  free_parts(s);
  return NULL;
}

void ext_service_tick(struct ext_service *s) { ext_refusals_tick(s->refusals); }

void ext_service_stop(struct ext_service *s, unsigned grace_s) {
  if (!s)
    return;
  struct ext_httpd *h = atomic_load(&s->httpd);
  ext_tlswatch_stop(s->tlswatch); /* no reload from here on */
  s->tlswatch = NULL;
  ext_httpd_quiesce(h);
  ext_httpd_quiesce(s->probes);
  uint64_t left = ext_httpd_drain(h, grace_s * 1000u);
  if (left)
    ioq_warn("shutdown grace period over, dropping requests in_flight=%llu",
             (unsigned long long)left);
  ext_httpd_stop(s->probes); /* first: /metrics reads the scheduling server */
  s->probes = NULL;
  atomic_store(&s->httpd, NULL);
  ext_httpd_stop(h);
  free_parts(s);
}
