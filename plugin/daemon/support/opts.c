// SPDX-License-Identifier: Apache-2.0
#include "opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/k8sname.h"
#include "base/listenaddr.h"

enum {
  OPT_DP_DIR = 256, OPT_PODRES, OPT_STATE, OPT_CONFIG, OPT_NODE, OPT_API, OPT_TOKEN, OPT_CA, OPT_CGROOT,
  OPT_SYSFS, OPT_DRIVER, OPT_KCGROOT, OPT_METRICS, OPT_HEALTH,
  OPT_HTTP_TIMEOUT, OPT_HTTP_CONNS, OPT_HTTP_CONNS_IP, OPT_LOGLEVEL, OPT_LOGFORMAT, OPT_HELP, OPT_VERSION,
  OPT_KUBECONFIG, OPT_EXPLAIN, OPT_MODE, OPT_DRA_PLUGINS, OPT_DRA_REGISTRY,
};

/* One table drives parsing, environment fallbacks and --help. */
static const struct flag {
  const char *name;
  int id;
  const char *env;
  const char *def;
  const char *arg;
  const char *help;
} g_flags[] = {
    {"mode", OPT_MODE, "IOQOS_MODE", "device-plugin", "device-plugin|dra",
     "how units are sold: kubelet device plugin (ioqos/bandwidth, ioqos/iops; with the "
     "scheduler extender) or a DRA driver (ResourceSlice capacity, kube-scheduler alone)"},
    {"device-plugin-dir", OPT_DP_DIR, "IOQOS_DEVICE_PLUGIN_DIR", "/var/lib/kubelet/device-plugins",
     "DIR", "kubelet device-plugins directory (kubelet.sock, our sockets)"},
    {"pod-resources-socket", OPT_PODRES, "IOQOS_POD_RESOURCES_SOCKET",
     "/var/lib/kubelet/pod-resources/kubelet.sock", "PATH", "kubelet pod resources API socket"},
    {"kubelet-plugins-dir", OPT_DRA_PLUGINS, "IOQOS_KUBELET_PLUGINS_DIR", "/var/lib/kubelet/plugins",
     "DIR", "dra mode: kubelet plugins directory (our DRA socket is DIR/ioqos.io/dra.sock)"},
    {"kubelet-registry-dir", OPT_DRA_REGISTRY, "IOQOS_KUBELET_REGISTRY_DIR",
     "/var/lib/kubelet/plugins_registry", "DIR",
     "dra mode: kubelet plugin registration directory (we create DIR/ioqos.io-reg.sock)"},
    {"state-dir", OPT_STATE, "IOQOS_STATE_DIR", "/var/lib/ioqos", "DIR",
     "host directory for state that must survive restarts (init container grants)"},
    {"config", OPT_CONFIG, "IOQOS_CONFIG", NULL, "FILE",
     "node configuration, YAML or JSON (default: built-in, the kubelet root disk)"},
    {"node-name", OPT_NODE, "NODE_NAME", NULL, "NAME", "this node's name (required)"},
    {"kube-api-server", OPT_API, "IOQOS_KUBE_API_SERVER", NULL, "URL",
     "API server URL, http:// allowed for testing (default: in-cluster service account)"},
    {"kube-token-file", OPT_TOKEN, "IOQOS_KUBE_TOKEN_FILE", NULL, "FILE",
     "bearer token file for --kube-api-server"},
    {"kube-ca-file", OPT_CA, "IOQOS_KUBE_CA_FILE", NULL, "FILE",
     "CA bundle for --kube-api-server (default: system CAs)"},
    {"kubeconfig", OPT_KUBECONFIG, "IOQOS_KUBECONFIG", NULL, "FILE",
     "kubeconfig: its current context's server and credentials (else KUBECONFIG, else in-cluster)"},
    {"cgroupfs-root", OPT_CGROOT, "IOQOS_CGROUPFS_ROOT", "/sys/fs/cgroup", "DIR",
     "where cgroupfs is mounted (v2 root, or the v1 tmpfs holding blkio/)"},
    {"sysfs-root", OPT_SYSFS, "IOQOS_SYSFS_ROOT", "/sys", "DIR", "where sysfs is mounted"},
    {"cgroup-driver", OPT_DRIVER, "IOQOS_CGROUP_DRIVER", "auto", "auto|systemd|cgroupfs",
     "kubelet's cgroup driver (auto: detect from the kubepods cgroup)"},
    {"kubelet-cgroup-root", OPT_KCGROOT, "IOQOS_KUBELET_CGROUP_ROOT", "/", "PATH",
     "kubelet's --cgroup-root"},
    /* loopback by default: a local run can curl it, and nothing beyond the
     * host reaches it unless asked (the DaemonSet passes the pod IP) */
    {"metrics-address", OPT_METRICS, "IOQOS_METRICS_ADDRESS", "127.0.0.1:9464", "[HOST]:PORT",
     "serve /metrics, /healthz, /readyz here; empty disables"},
    {"health-address", OPT_HEALTH, "IOQOS_HEALTH_ADDRESS", "", "[HOST]:PORT",
     "also serve /healthz, /readyz on a listener of their own (own thread and connection "
     "slots: slow /metrics clients cannot starve probes); empty: none"},
    {"explain-socket", OPT_EXPLAIN, "IOQOS_EXPLAIN_SOCKET", "", "PATH|off",
     "unix socket (mode 0600, root only) serving /v1/explain to `ioqosctl explain`; "
     "empty: <state-dir>/plugin.sock; off disables"},
    {"http-request-timeout", OPT_HTTP_TIMEOUT, "IOQOS_HTTP_REQUEST_TIMEOUT", "10", "SECONDS",
     "absolute time a connection gets per request, from accept or the previous response "
     "(not reset by each byte)"},
    {"http-max-connections", OPT_HTTP_CONNS, "IOQOS_HTTP_MAX_CONNECTIONS", "64", "N",
     "open connections per listener"},
    {"http-max-connections-per-ip", OPT_HTTP_CONNS_IP, "IOQOS_HTTP_MAX_CONNECTIONS_PER_IP", "4",
     "N", "open connections per listener and client address"},
    {"log-level", OPT_LOGLEVEL, "IOQOS_LOG_LEVEL", "info", "error|warn|info|debug", "log verbosity"},
    {"log-format", OPT_LOGFORMAT, "IOQOS_LOG_FORMAT", "text", "text|json",
     "log lines as logfmt or as one JSON object each"},
    {"help", OPT_HELP, NULL, NULL, NULL, "show this help"},
    {"version", OPT_VERSION, NULL, NULL, NULL, "print the version"},
};
#define NFLAGS (sizeof g_flags / sizeof g_flags[0])
/* getopt value of flag i's former spelling */
#define OPT_OLD_BASE 1000

/* Former spellings (flag and env) that still work, with a warning.
 * --cgroup-root meant the mount here but kubelet's root in ioqosctl
 * cgroup-path: every binary now says --cgroupfs-root for the mount and
 * --kubelet-cgroup-root for kubelet's root. */
static const struct renamed {
  int id;
  const char *old_name, *old_env;
} g_renamed[] = {
    {OPT_CGROOT, "cgroup-root", "IOQOS_CGROUP_ROOT"},
};

static const struct renamed *renamed_of(int id) {
  for (size_t i = 0; i < sizeof g_renamed / sizeof g_renamed[0]; i++)
    if (g_renamed[i].id == id)
      return &g_renamed[i];
  return NULL;
}

static size_t idx_of(int id) {
  for (size_t i = 0; i < NFLAGS; i++)
    if (g_flags[i].id == id)
      return i;
  abort(); /* every OPT_* is in the table */
}

void plugin_opts_usage(FILE *f) {
  fprintf(f, "usage: ioqos-plugin [FLAGS]\n\n"
             "Kubernetes device plugin for disk I/O: advertises ioqos/bandwidth and ioqos/iops\n"
             "units of this node's managed disks to kubelet and writes each pod's grant into its\n"
             "cgroup (io.max / blkio.throttle) before the pod's containers start. With --mode=dra\n"
             "it is the DRA driver ioqos.io instead: one ResourceSlice device per disk with\n"
             "consumable bandwidth and iops, each claim's share written before the pod's sandbox.\n"
             "\nFlags:\n");
  for (size_t i = 0; i < NFLAGS; i++) {
    const struct flag *fl = &g_flags[i];
    char lhs[96];
    snprintf(lhs, sizeof lhs, "--%s%s%s", fl->name, fl->arg ? " " : "", fl->arg ? fl->arg : "");
    fprintf(f, "  %-44s %s\n", lhs, fl->help);
    if (fl->def || fl->env) {
      fprintf(f, "  %-44s ", "");
      if (fl->def)
        fprintf(f, "default %s%s", *fl->def ? fl->def : "\"\"", fl->env ? "; " : "");
      if (fl->env)
        fprintf(f, "env %s", fl->env);
      fputc('\n', f);
    }
    const struct renamed *r = renamed_of(fl->id);
    if (r)
      fprintf(f, "  %-44s deprecated: --%s, env %s (same meaning)\n", "", r->old_name, r->old_env);
  }
  fprintf(f, "\nSignals: SIGTERM/SIGINT tell kubelet every unit is gone (empty ListAndWatch),\n"
             "close the streams with UNAVAILABLE and exit 0; pod limits stay in place.\n"
             "See docs/plugin.md for behaviour and metrics.\n");
}

static void warn_old(struct plugin_opts *o, const char *old, const char *now) {
  if (o->n_warnings < PLUGIN_OPTS_MAX_WARNINGS)
    snprintf(o->warnings[o->n_warnings++], sizeof o->warnings[0],
             "%s is deprecated and will be removed: use %s (same meaning)", old, now);
}

/* flag > former flag > env > former env > default */
static const char *pick(const struct flag *fl, const char *given, const char *given_old,
                        struct plugin_opts *o) {
  const struct renamed *r = renamed_of(fl->id);
  char now[64], old[64];
  if (given)
    return given;
  if (given_old) {
    snprintf(now, sizeof now, "--%s", fl->name);
    snprintf(old, sizeof old, "--%s", r->old_name);
    warn_old(o, old, now);
    return given_old;
  }
  const char *env = fl->env ? getenv(fl->env) : NULL;
  if (env)
    return env;
  env = r ? getenv(r->old_env) : NULL;
  if (env) {
    warn_old(o, r->old_env, fl->env);
    return env;
  }
  return fl->def;
}

int plugin_opts_parse(int argc, char **argv, struct plugin_opts *o, ioq_err *e) {
  struct option longopts[2 * NFLAGS + 1];
  const char *given[NFLAGS] = {0}, *given_old[NFLAGS] = {0};
  memset(o, 0, sizeof *o);
  memset(longopts, 0, sizeof longopts);
  size_t nl = 0;
  for (size_t i = 0; i < NFLAGS; i++) {
    longopts[nl].name = g_flags[i].name;
    longopts[nl].has_arg = g_flags[i].arg ? required_argument : no_argument;
    longopts[nl++].val = g_flags[i].id;
    const struct renamed *r = renamed_of(g_flags[i].id);
    if (r) {
      longopts[nl] = longopts[nl - 1];
      longopts[nl].name = r->old_name;
      longopts[nl++].val = OPT_OLD_BASE + (int)i;
    }
  }
  optind = 0; /* GNU: full re-initialisation, so parsing can run more than once (tests) */
  opterr = 0;
  for (;;) {
    int idx = -1;
    int c = getopt_long(argc, argv, "h", longopts, &idx);
    if (c == -1)
      break;
    if (c == '?' || c == ':') {
      const char *bad = argv[optind - 1] ? argv[optind - 1] : "?";
      if (optopt)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "flag %s needs a value", bad);
      return ioq_fail(e, IOQ_EINVAL_INPUT, "unknown flag %s (see --help)", bad);
    }
    if (c == 'h')
      c = OPT_HELP;
    if (c >= OPT_OLD_BASE) {
      size_t i = (size_t)(c - OPT_OLD_BASE);
      if (given[i])
        return ioq_fail(e, IOQ_EINVAL_INPUT, "--%s and its deprecated spelling --%s both given",
                        g_flags[i].name, renamed_of(g_flags[i].id)->old_name);
      given_old[i] = optarg;
      continue;
    }
    size_t i = idx_of(c);
    if (given_old[i])
      return ioq_fail(e, IOQ_EINVAL_INPUT, "--%s and its deprecated spelling --%s both given",
                      g_flags[i].name, renamed_of(g_flags[i].id)->old_name);
    given[i] = optarg ? optarg : "";
  }
  if (optind < argc)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unexpected argument '%s' (flags only, see --help)",
                    argv[optind]);

  const char *v[NFLAGS];
  for (size_t i = 0; i < NFLAGS; i++)
    v[i] = pick(&g_flags[i], given[i], given_old[i], o);
#define VAL(id) v[idx_of(id)]
  o->help = given[idx_of(OPT_HELP)] != NULL;
  o->version = given[idx_of(OPT_VERSION)] != NULL;
  o->device_plugin_dir = VAL(OPT_DP_DIR);
  o->kubelet_plugins_dir = VAL(OPT_DRA_PLUGINS);
  o->kubelet_registry_dir = VAL(OPT_DRA_REGISTRY);
  o->pod_resources_socket = VAL(OPT_PODRES);
  o->state_dir = VAL(OPT_STATE);
  o->config = VAL(OPT_CONFIG);
  o->node_name = VAL(OPT_NODE);
  o->kube_api_server = VAL(OPT_API);
  o->kube_token_file = VAL(OPT_TOKEN);
  o->kube_ca_file = VAL(OPT_CA);
  o->kubeconfig = VAL(OPT_KUBECONFIG);
  o->cgroup_root = VAL(OPT_CGROOT);
  o->sysfs_root = VAL(OPT_SYSFS);
  o->kubelet_cgroup_root = VAL(OPT_KCGROOT);
  o->metrics_address = VAL(OPT_METRICS);
  o->health_address = VAL(OPT_HEALTH);
  if (o->help || o->version)
    return 0;
  const char *xs = VAL(OPT_EXPLAIN);
  if (xs && strcmp(xs, "off") == 0) {
    o->explain_socket = NULL;
  } else {
    if (!xs || !*xs) {
      int n = snprintf(o->explain_socket_buf, sizeof o->explain_socket_buf, "%s%splugin.sock",
                       o->state_dir ? o->state_dir : "",
                       o->state_dir && *o->state_dir && o->state_dir[strlen(o->state_dir) - 1] == '/'
                           ? ""
                           : "/");
      if (n < 0 || (size_t)n >= sizeof o->explain_socket_buf)
        return ioq_fail(e, IOQ_EINVAL_INPUT,
                        "--state-dir '%s': too long for the explain socket <state-dir>/plugin.sock "
                        "(a unix socket path has at most %zu bytes); give --explain-socket",
                        o->state_dir, sizeof o->explain_socket_buf - 1);
      xs = o->explain_socket_buf;
    }
    if (xs[0] != '/')
      return ioq_fail(e, IOQ_EINVAL_INPUT, "--explain-socket '%s': must be an absolute path or off",
                      xs);
    if (strlen(xs) >= sizeof o->explain_socket_buf)
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "--explain-socket '%.120s': longer than a unix socket path can be (%zu bytes)",
                      xs, sizeof o->explain_socket_buf - 1);
    o->explain_socket = xs;
  }

  if (strcmp(VAL(OPT_MODE), "device-plugin") == 0)
    o->mode = PLUGIN_MODE_DEVICE_PLUGIN;
  else if (strcmp(VAL(OPT_MODE), "dra") == 0)
    o->mode = PLUGIN_MODE_DRA;
  else
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--mode '%.80s': must be device-plugin or dra",
                    VAL(OPT_MODE));
  if (ioq_cg_driver_parse(VAL(OPT_DRIVER), &o->cgroup_driver, e) < 0) {
    ioq_err_prefix(e, "--cgroup-driver");
    return -1;
  }
  if (ioq_log_parse_level(VAL(OPT_LOGLEVEL), &o->log_level) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--log-level '%s': must be error, warn, info or debug",
                    VAL(OPT_LOGLEVEL));
  if (ioq_log_parse_format(VAL(OPT_LOGFORMAT), &o->log_format) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--log-format '%s': must be text or json",
                    VAL(OPT_LOGFORMAT));
  if (!o->node_name || !*o->node_name)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--node-name (or NODE_NAME) is required");
  /* it becomes the URL of the node patch and the pods' field selector */
  if (!ioq_k8s_subdomain_valid(o->node_name))
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "--node-name '%.80s': not a Kubernetes node name (DNS-1123 subdomain: a-z, 0-9, "
                    "'-', '.', at most 253)",
                    o->node_name);
  static const struct {
    int id;
    const char *name;
  } abs_paths[] = {{OPT_DP_DIR, "--device-plugin-dir"}, {OPT_PODRES, "--pod-resources-socket"},
                   {OPT_STATE, "--state-dir"},
                   {OPT_DRA_PLUGINS, "--kubelet-plugins-dir"},
                   {OPT_DRA_REGISTRY, "--kubelet-registry-dir"},
                   {OPT_CGROOT, "--cgroupfs-root"},       {OPT_SYSFS, "--sysfs-root"},
                   {OPT_KCGROOT, "--kubelet-cgroup-root"}};
  for (size_t i = 0; i < sizeof abs_paths / sizeof abs_paths[0]; i++) {
    const char *p = VAL(abs_paths[i].id);
    if (!p || p[0] != '/')
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s '%s': must be an absolute path", abs_paths[i].name,
                      p ? p : "");
  }
  if (o->config && !*o->config)
    o->config = NULL;
  if (o->kube_api_server && !*o->kube_api_server)
    o->kube_api_server = NULL;
  if (o->kube_api_server && strncmp(o->kube_api_server, "http://", 7) != 0 &&
      strncmp(o->kube_api_server, "https://", 8) != 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--kube-api-server '%s': must start with http:// or https://",
                    o->kube_api_server);
  static const struct {
    int id;
    const char *name;
  } addrs[] = {{OPT_METRICS, "--metrics-address"}, {OPT_HEALTH, "--health-address"}};
  for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
    struct ioq_listen_addr la;
    const char *a = VAL(addrs[i].id);
    if (*a && ioq_parse_listen(a, 0, &la, e) < 0) {
      ioq_err_prefix(e, addrs[i].name);
      return -1;
    }
  }
  if (*o->health_address && !*o->metrics_address)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--health-address needs --metrics-address");
  if (*o->health_address && strcmp(o->health_address, o->metrics_address) == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--health-address '%s': same as --metrics-address",
                    o->health_address);
  /* bounds keep MHD's option values (unsigned int) and poll timeouts sane */
  const struct {
    int id;
    const char *name;
    uint64_t max;
    unsigned *out;
  } nums[] = {{OPT_HTTP_TIMEOUT, "--http-request-timeout", 3600, &o->http_timeout_s},
              {OPT_HTTP_CONNS, "--http-max-connections", 65536, &o->http_max_conns},
              {OPT_HTTP_CONNS_IP, "--http-max-connections-per-ip", 65536,
               &o->http_max_conns_per_ip}};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    uint64_t n;
    if (ioq_parse_u64(VAL(nums[i].id), &n) < 0 || n == 0 || n > nums[i].max)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s '%s': must be 1-%llu", nums[i].name,
                      VAL(nums[i].id), (unsigned long long)nums[i].max);
    *nums[i].out = (unsigned)n;
  }
#undef VAL
  return 0;
}
