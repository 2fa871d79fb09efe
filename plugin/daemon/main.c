// SPDX-License-Identifier: Apache-2.0
/* ioqos-plugin: the node daemon that makes ioqos/bandwidth and ioqos/iops
 * real. Startup order matters:
 *   probe disks -> serve both DevicePlugin sockets -> register with kubelet
 * (kubelet calls back into the socket while Register is in flight), and the
 * reconcile loop rebuilds every grant from the pod resources List at once.
 * SIGTERM/SIGINT: empty device lists, UNAVAILABLE to the streams, exit 0;
 * limits stay in the pod cgroups for the next instance to adopt. */
#include <errno.h>
#include <grpc/grpc.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "state/catalog.h"
#include "kubelet/endpoint.h"
#include "core/combined.h"
#include "kubelet/dradriver.h"
#include "state/drastate.h"
#include "core/podtable.h"
#include "support/events.h"
#include "state/choices.h"
#include "observe/httpd.h"
#include "state/initstate.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "kube/kube.h"
#include "support/metrics.h"
#include "core/nvmetns.h"
#include "core/monitor.h"
#include "core/nodepool.h"
#include "plugin.h"
#include "state/podcache.h"
#include "core/reconcile.h"
#include "kubelet/registrar.h"
#include "core/ungranted.h"

static void on_pods_changed(void *ud) {
  struct plugin *p = ud;
  reconciler_kick(p->rec);
}

static int setup_kube(struct plugin *p, ioq_err *e) {
  if (p->kube)
    return 0; /* made early to read the Node's labels (config pools) */
  struct ioq_kube_opts ko = {
      .server = p->opts.kube_api_server,
      .token_file = p->opts.kube_token_file,
      .ca_file = p->opts.kube_ca_file,
      .kubeconfig = p->opts.kubeconfig,
      .timeout_ms = KUBE_TIMEOUT_MS,
      .user_agent = "ioqos-plugin/" IOQOS_VERSION,
  };
  if (!(p->kube = ioq_kube_new(&ko, e)))
    return -1;
  ko.timeout_ms = KUBE_RPC_TIMEOUT_MS;
  if (!(p->kube_rpc = ioq_kube_new(&ko, e)))
    return -1;
  ioq_info("kubernetes api server=%s", ioq_kube_server(p->kube));
  return 0;
}

/* One mode per node: never start beside a live instance of the other mode
 * (both would sell the same disks, to schedulers that do not see each
 * other). The sockets tell: the device plugin's in device-plugins/, the DRA
 * driver's registration socket in plugins_registry/. */
static int check_other_mode(struct plugin *p, ioq_err *e) {
  char path[PATH_MAX];
  if (p->opts.mode == PLUGIN_MODE_DRA) {
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      char name[64];
      snprintf(name, sizeof name, "ioqos-%s.sock", ioq_resource_short((enum ioq_resource)r));
      if (ioq_path_join(path, sizeof path, e, p->opts.device_plugin_dir, name, NULL) < 0)
        return -1;
      if (endpoint_check_free(path, e) < 0) {
        ioq_err_prefix(e, "--mode=dra: a device-plugin mode instance runs on this node");
        return -1;
      }
    }
    return 0;
  }
  if (dradriver_reg_socket(p, path, sizeof path, e) < 0)
    return -1;
  if (endpoint_check_free(path, e) < 0) {
    ioq_err_prefix(e, "--mode=device-plugin: a dra mode instance runs on this node");
    return -1;
  }
  return 0;
}

static int setup_endpoints(struct plugin *p, ioq_err *e) {
  if (check_other_mode(p, e) < 0)
    return -1;
  /* in both modes: /metrics and /readyz read them (never registered in DRA mode) */
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (!(p->ep[r] = calloc(1, sizeof *p->ep[r])))
      return ioq_fail(e, ENOMEM, "out of memory (device plugin endpoints)");
  /* both modes: the registrar tells a live kubelet by it */
  if (ioq_path_join(p->kubelet_sock, sizeof p->kubelet_sock, e, p->opts.device_plugin_dir,
                    KUBELET_SOCKET_NAME, NULL) < 0)
    return -1;
  if (p->opts.mode == PLUGIN_MODE_DRA)
    return 0; /* no device-plugin units: the claims' capacity is in the ResourceSlice */
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    struct endpoint *ep = p->ep[r];
    ep->p = p;
    ep->res = (enum ioq_resource)r;
    pthread_mutex_init(&ep->lock, NULL);
    snprintf(ep->sock_name, sizeof ep->sock_name, "ioqos-%s.sock", ioq_resource_short(ep->res));
    if (ioq_path_join(ep->sock_path, sizeof ep->sock_path, e, p->opts.device_plugin_dir,
                      ep->sock_name, NULL) < 0)
      return -1;
    /* before anything else runs: never take over a live instance's socket */
    if (endpoint_check_free(ep->sock_path, e) < 0)
      return -1;
  }
  return 0;
}

static int setup_podtable(struct plugin *p, ioq_err *e) {
  struct podtable_opts eo = {0};
  if (ioq_cg_layout_detect(p->opts.cgroup_root, &eo.layout, e) < 0)
    return -1;
  ioq_info("cgroup layout %s driver=%s kubelet_cgroup_root=%s", eo.layout.description,
           ioq_cg_driver_name(p->opts.cgroup_driver), p->opts.kubelet_cgroup_root);
  /* The probe judges per-cgroup io files on kubelet's kubepods cgroup. */
  enum ioq_cg_driver drv = p->opts.cgroup_driver;
  char name[PATH_MAX];
  ioq_err de;
  if ((drv != IOQ_CG_DRIVER_AUTO ||
       ioq_cg_driver_detect(&eo.layout, p->opts.kubelet_cgroup_root, &drv, &de) == 0) &&
      ioq_kubepods_cgroup_name(drv, p->opts.kubelet_cgroup_root, name, sizeof name, NULL) == 0 &&
      ioq_path_join(p->kubepods_dir, sizeof p->kubepods_dir, NULL, eo.layout.io_root, name, NULL) ==
          0 &&
      ioq_is_dir(p->kubepods_dir)) {
    p->probe.kubepods_dir = p->kubepods_dir;
    ioq_info("kubepods cgroup found dir=%s driver=%s", p->kubepods_dir, ioq_cg_driver_name(drv));
  } else {
    p->kubepods_dir[0] = '\0';
    ioq_warn("kubepods cgroup not found under %s (kubelet not running yet?); pod cgroups are "
             "resolved per pod, the probe judges from the root",
             eo.layout.io_root);
  }
  p->layout = eo.layout;
  p->driver = drv;
  eo.driver = p->opts.cgroup_driver;
  eo.kubelet_cgroup_root = p->opts.kubelet_cgroup_root;
  eo.sysfs_root = p->opts.sysfs_root;
  eo.sizes = p->cfg.units;
  eo.io_weight = p->cfg.enforcement.io_weight;
  eo.bfq_weight = p->cfg.enforcement.bfq_weight;
  eo.enable_controllers = p->cfg.enforcement.enable_controllers;
  eo.catalog = p->catalog;
  char state_file[PATH_MAX];
  if (ioq_path_join(state_file, sizeof state_file, e, p->opts.state_dir, INITSTATE_FILE, NULL) < 0)
    return -1;
  eo.state_file = state_file;
  if (p->opts.mode == PLUGIN_MODE_DRA) {
    char dra_file[PATH_MAX];
    if (ioq_path_join(dra_file, sizeof dra_file, e, p->opts.state_dir, DRASTATE_FILE, NULL) < 0)
      return -1;
    if (!(p->dra = drastate_new(dra_file)))
      return ioq_fail(e, ENOMEM, "out of memory (DRA claims)");
    ioq_err le;
    if (drastate_load(p->dra, &le) < 0)
      ioq_error("prepared DRA claims not restored, starting without them (pods prepared before "
                "keep their limits until their cgroups go, but are not re-checked) error=\"%s\"",
                le.msg);
    else
      ioq_info("prepared DRA claims restored claims=%zu file=%s", drastate_count(p->dra), dra_file);
    eo.dra = p->dra;
  }
  if (!(p->table = podtable_new(&eo)))
    return ioq_fail(e, ENOMEM, "out of memory (pod table)");
  podtable_restore(p->table);
  return 0;
}

static void teardown(struct plugin *p) {
  atomic_store(&p->stopping, true);
  registrar_stop(p->reg);
  p->reg = NULL;
  dradriver_stop(p->drad); /* kubelet deregisters the driver; the node's slice goes */
  p->drad = NULL;
  /* Order: what serves requests first (PreStart handlers and the pod cache's
   * informer kick the reconciler, /healthz reads the endpoints), then the
   * reconcile thread (it uses the pod cache and posts events), then the
   * rest; the reconciler's memory goes last, after everything that could
   * still kick it. */
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (p->ep[r] && p->ep[r]->p)
      endpoint_stop(p->ep[r], true);
  httpd_stop(p->http);
  nodepool_stop(p->np); /* before the events and the reconciler it posts to and kicks */
  ungranted_stop(p->ug);
  monitor_stop(p->mon);
  reconciler_stop(p->rec);
  events_stop(p->events);
  podcache_stop(p->pods);
  reconciler_free(atomic_exchange(&p->rec, NULL));
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (p->ep[r] && p->ep[r]->p)
      pthread_mutex_destroy(&p->ep[r]->lock);
    free(p->ep[r]);
    p->ep[r] = NULL;
  }
  ioq_kube_free(p->kube_rpc);
  ioq_kube_free(p->kube);
  ungranted_free(p->ug);
  p->ug = NULL;
  monitor_free(p->mon);
  p->mon = NULL;
  combined_free(p->combined); /* its hook ran on the monitor thread */
  p->combined = NULL;
  podtable_free(p->table);
  drastate_free(p->dra);
  p->dra = NULL;
  choices_free(p->choices);
  p->choices = NULL;
  nvmetns_free(p->nvmet);
  p->nvmet = NULL;
  catalog_free(p->catalog);
  metrics_free(p->metrics);
  atomic_store(&p->live, NULL); /* every reader has stopped: the pools' configs go */
  nodepool_free(p->np);
  p->np = NULL;
  ioq_config_free(&p->cfg);
}

static int run(struct plugin *p, const sigset_t *sigs) {
  ioq_err e;
  if (ioq_config_load(p->opts.config, &p->cfg, &e) < 0)
    goto fatal;
  if (p->cfg.n_pools && (setup_kube(p, &e) < 0 || nodepool_select(p->kube, p->opts.node_name,
                                                                    p->opts.config, &p->cfg, &p->np,
                                                                    &e) < 0))
    goto fatal;
  ioq_info("ioqos-plugin starting version=%s node=%s config=%s pool=%s device_plugin_dir=%s "
           "pod_resources=%s cgroupfs_root=%s sysfs_root=%s fail_open=%s reconcile_interval=%us",
           IOQOS_VERSION, p->opts.node_name, p->cfg.source, p->cfg.pool ? p->cfg.pool : "(top level)",
           p->opts.device_plugin_dir,
           p->opts.pod_resources_socket, p->opts.cgroup_root, p->opts.sysfs_root,
           p->cfg.enforcement.fail_open ? "true" : "false",
           p->cfg.enforcement.reconcile_interval_s);
  ioq_probe_opts_default(&p->probe);
  p->probe.roots.sysfs = p->opts.sysfs_root;
  p->probe.roots.cgroupfs = p->opts.cgroup_root;
  if (!(p->catalog = catalog_new()) || !(p->metrics = metrics_new()) ||
      !(p->choices = choices_new()) || !(p->nvmet = nvmetns_new())) {
    ioq_fail(&e, ENOMEM, "out of memory (catalog, metrics, explain notes or nvmet state)");
    goto fatal;
  }
  if (ioq_mkdir_p(p->opts.device_plugin_dir, &e) < 0 || setup_endpoints(p, &e) < 0 ||
      setup_podtable(p, &e) < 0 || setup_kube(p, &e) < 0)
    goto fatal;

  p->events = events_start(p); /* before the first probe: it reports disk faults */
  inventory_refresh(p); /* the first ListAndWatch already carries the units */
  if (!(p->pods = podcache_start(p->kube, p->kube_rpc, p->opts.node_name, on_pods_changed, p, &e)))
    goto fatal;
  if (p->opts.mode == PLUGIN_MODE_DEVICE_PLUGIN) {
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      if (endpoint_start(p->ep[r], &e) < 0)
        goto fatal;
    if (!(p->rec = reconciler_start(p, &e)) || !(p->reg = registrar_start(p, &e)))
      goto fatal;
  } else if (!(p->rec = reconciler_start(p, &e)) || !(p->drad = dradriver_start(p, &e)) ||
             !(p->reg = registrar_start(p, &e))) {
    goto fatal;
  }
  if (nodepool_watch(p->np, p, &e) < 0) /* after the reconciler and events it uses */
    goto fatal;
  if (p->cfg.node_policy.ungranted_enable) {
    if (!(p->ug = ungranted_start(p, &e)))
      goto fatal;
  } else {
    ioq_info("pods without a grant are not bounded (nodePolicy.ungranted.enable is false): "
             "grants hold only against pods that have grants too");
  }
  if (p->cfg.monitor.enable) {
    if (!(p->mon = monitor_start(p, &e)))
      goto fatal;
  } else {
    ioq_info("grant monitor off (monitor.enable is false): nobody checks that grants are kept");
  }
  combined_attach(p); /* after the monitor started: its hook */
  if ((*p->opts.metrics_address || p->opts.explain_socket) &&
      !(p->http = httpd_start(p, p->opts.metrics_address, &e)))
    goto fatal;
  if (p->opts.mode == PLUGIN_MODE_DRA)
    ioq_info("ioqos-plugin running mode=dra driver=ioqos.io plugins_dir=%s registry_dir=%s",
             p->opts.kubelet_plugins_dir, p->opts.kubelet_registry_dir);
  else
    ioq_info("ioqos-plugin running mode=device-plugin sockets=%s,%s kubelet=%s", p->ep[0]->sock_path,
             p->ep[1]->sock_path, p->kubelet_sock);

  for (;;) {
    int sig = 0;
    if (sigwait(sigs, &sig) != 0)
      continue;
    if (sig == SIGHUP) {
      ioq_info("SIGHUP ignored (restart the pod to reload the config)");
      continue;
    }
    ioq_info("signal received signal=%s: telling kubelet the units are gone and exiting",
             strsignal(sig));
    break;
  }
  teardown(p);
  ioq_info("ioqos-plugin stopped");
  return 0;
fatal:
  ioq_error("ioqos-plugin cannot run: %s", e.msg);
  teardown(p);
  return 1;
}

int main(int argc, char **argv) {
  static struct plugin plugin; /* large; and tools see it as reachable */
  struct plugin *p = &plugin;
  ioq_err e;
  if (plugin_opts_parse(argc, argv, &p->opts, &e) < 0) {
    fprintf(stderr, "ioqos-plugin: %s\n", e.msg);
    return 2;
  }
  if (p->opts.help) {
    plugin_opts_usage(stdout);
    return 0;
  }
  if (p->opts.version) {
    printf("ioqos-plugin %s\n", IOQOS_VERSION);
    return 0;
  }
  ioq_log_set_level(p->opts.log_level);
  ioq_log_set_format(p->opts.log_format);
  for (size_t i = 0; i < p->opts.n_warnings; i++)
    ioq_warn("%s", p->opts.warnings[i]);
  /* PreStart and preferred-allocation answers run on short-lived threads;
   * glibc would give each a malloc arena that keeps its freed memory. Two
   * arenas keep idle RSS flat at a negligible cost in contention. */
  mallopt(M_ARENA_MAX, 2);
  /* Everything this root daemon creates is its own: above all its gRPC
   * sockets in kubelet's device-plugins directory, which gRPC binds with the
   * process umask (a 0755-style socket lets any local user call Allocate). */
  umask(077);

  /* Signals are taken by sigwait on this thread only: block them before any
   * thread exists (gRPC's included) so every thread inherits the mask. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  grpc_init();
  int rc = run(p, &sigs);
  grpc_shutdown();
  return rc;
}
