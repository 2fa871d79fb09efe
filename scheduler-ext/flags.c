// SPDX-License-Identifier: Apache-2.0
#include "flags.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "units/units.h"

enum {
  OPT_LISTEN = 256,
  OPT_TLS_CERT,
  OPT_TLS_KEY,
  OPT_TLS_CLIENT_CA,
  OPT_TLS_CLIENT_SUBJECT,
  OPT_METRICS_LISTEN,
  OPT_SCHEDULER_NAME,
  OPT_POLICY,
  OPT_ASSUME_TTL,
  OPT_MAX_REQUEST_BYTES,
  OPT_MAX_REQUEST_MEMORY,
  OPT_THREADS,
  OPT_MAX_CONNECTIONS,
  OPT_IDLE_TIMEOUT,
  OPT_MAX_CONNECTIONS_PER_IP,
  OPT_REQUEST_DEADLINE,
  OPT_ANNOTATION_MAX_AGE,
  OPT_SHUTDOWN_GRACE,
  OPT_KUBE_API_SERVER,
  OPT_KUBE_TOKEN_FILE,
  OPT_KUBE_CA_FILE,
  OPT_KUBECONFIG,
  OPT_KUBE_TIMEOUT,
  OPT_NO_KUBE,
  OPT_NODE_CACHE,
  OPT_LOG_LEVEL,
  OPT_LOG_FORMAT,
  OPT_HELP,
  OPT_VERSION,
};

static void env_usage(FILE *out);

void ext_flags_usage(FILE *out) {
  fputs(
      "Usage: ioqos-scheduler-ext [FLAGS]\n"
      "\n"
      "HTTP scheduler extender for ioqos: kube-scheduler asks it to filter and score nodes\n"
      "by the free ioqos/bandwidth and ioqos/iops units of their disks, and (optionally) to\n"
      "bind pods, recording the chosen disk in the pod annotation ioqos.io/disk.\n"
      "\n"
      "Endpoints: POST .../filter, .../prioritize, .../bind on --listen (matched by the\n"
      "last path segment, so any urlPrefix works); GET /healthz, /readyz, /metrics on\n"
      "--metrics-listen only.\n"
      "\n"
      "Server:\n"
      "  --listen ADDR:PORT          scheduling address (default :8888 = all IPv4\n"
      "                              addresses; [::]:8888 for IPv6 and IPv4)\n"
      "  --tls-cert FILE             serve HTTPS with this PEM certificate (chain)\n"
      "  --tls-key FILE              PEM private key for --tls-cert\n"
      "  --tls-client-ca FILE        require a client certificate issued by this PEM CA\n"
      "                              (mutual TLS; kube-scheduler's extender tlsConfig)\n"
      "  --tls-client-subject NAME   and require its CN to be NAME (or, if NAME has '=',\n"
      "                              its whole subject, e.g. CN=ioqos-scheduler,O=ioqos)\n"
      "                              TLS files are re-read when they change\n"
      "  --metrics-listen ADDR:PORT  plain-HTTP address of /healthz, /readyz and /metrics\n"
      "                              (default :9465; not the --listen port)\n"
      "  --threads N                 worker threads serving requests (default 4)\n"
      "  --max-connections N         open connections at most (default 256)\n"
      "  --max-connections-per-ip N  open connections from one client address at most\n"
      "                              (default 32)\n"
      "  --max-request-bytes SIZE    largest request body, e.g. 256Mi (default 256Mi; full\n"
      "                              Node objects are 5-30 KiB each)\n"
      "  --max-request-memory SIZE   memory the parsed bodies of all requests in progress\n"
      "                              may use, e.g. 256Mi (default: a quarter of the\n"
      "                              container's memory limit, 8Mi..1Gi; 1Gi without a\n"
      "                              limit; a parsed Node takes ~16x its JSON size)\n"
      "  --idle-timeout SECONDS      close a connection that sends nothing this long\n"
      "                              (default 30; slow clients cannot hold workers)\n"
      "  --request-deadline SECONDS  a request must be received whole within this time\n"
      "                              of its start, however steadily it trickles in\n"
      "                              (default 10)\n"
      "  --shutdown-grace SECONDS    on SIGTERM, stop accepting and let requests in\n"
      "                              progress finish this long (default 10)\n"
      "\n"
      "Decisions:\n"
      "  --policy NAME               disk scoring: least-allocated (default, spread),\n"
      "                              most-allocated (pack) or balanced\n"
      "  --scheduler-name NAME       bind only pods with this spec.schedulerName; repeat\n"
      "                              for several (default ioqos-scheduler)\n"
      "  --assume-ttl SECONDS        safety bound on how long a placement made by bind\n"
      "                              counts against its disk when neither the node's\n"
      "                              annotation lists the pod nor the pod ends (default\n"
      "                              3600)\n"
      "  --annotation-max-age SECONDS  a node annotation published longer ago than this\n"
      "                              is stale: the node is unknown until its plugin\n"
      "                              publishes again (default 900; 0 = never stale)\n"
      "\n"
      "Kubernetes API (needed for bind and for nodeCacheCapable: true):\n"
      "  --kube-api-server URL       API server (default: in-cluster service account)\n"
      "  --kube-token-file FILE      bearer token file (re-read when it changes)\n"
      "  --kube-ca-file FILE         CA bundle for the API server's certificate\n"
      "  --kubeconfig FILE           kubeconfig: its current context's server and credentials\n"
      "                              (default: KUBECONFIG if set, else in-cluster)\n"
      "  --kube-timeout SECONDS      timeout of each API request (default 10)\n"
      "  --no-kube                   no API access at all: full-node filter/prioritize only\n"
      "  --node-cache BOOL           keep a node cache by list+watch, for NodeNames-only\n"
      "                              requests (default true when the API is reachable)\n"
      "\n"
      "Other:\n"
      "  --log-level LEVEL           error, warn, info (default) or debug\n"
      "  --log-format FORMAT         text (logfmt, default) or json; env IOQOS_LOG_FORMAT\n"
      "  --help                      this text\n"
      "  --version                   print the version\n",
      out);
  env_usage(out);
}

static int parse_uint(const char *flag, const char *s, unsigned lo, unsigned hi, unsigned *out,
                      ioq_err *e) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || errno || s[0] == '-' || v < lo || v > hi)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: '%s' is not a whole number in %u..%u", flag, s, lo, hi);
  *out = (unsigned)v;
  return 0;
}

static int parse_bool(const char *flag, const char *s, int *out, ioq_err *e) {
  if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0) {
    *out = 1;
    return 0;
  }
  if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0) {
    *out = 0;
    return 0;
  }
  return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: '%s' is not true or false", flag, s);
}

static int nonempty(const char *flag, const char *s, const char **out, ioq_err *e) {
  if (!s || !*s)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s needs a non-empty value", flag);
  *out = s;
  return 0;
}

static int log_format(const char *flag, const char *s, enum ioq_log_format *out, ioq_err *e) {
  if (ioq_log_parse_format(s, out) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: '%s' is not text or json", flag, s);
  return 0;
}

/* Applies one flag's value (from argv or its environment variable). */
static int apply(struct ext_flags *f, int id, const char *val, ioq_err *e) {
  int rc = 0;
  uint64_t bytes;
  switch (id) {
  case OPT_LISTEN:
    rc = nonempty("--listen", val, &f->listen, e);
    break;
  case OPT_TLS_CERT:
    rc = nonempty("--tls-cert", val, &f->tls_cert, e);
    break;
  case OPT_TLS_KEY:
    rc = nonempty("--tls-key", val, &f->tls_key, e);
    break;
  case OPT_TLS_CLIENT_CA:
    rc = nonempty("--tls-client-ca", val, &f->tls_client_ca, e);
    break;
  case OPT_TLS_CLIENT_SUBJECT:
    rc = nonempty("--tls-client-subject", val, &f->tls_client_subject, e);
    break;
  case OPT_METRICS_LISTEN:
    rc = nonempty("--metrics-listen", val, &f->metrics_listen, e);
    break;
  case OPT_SCHEDULER_NAME:
    if (f->scheduler_names_from_env) { /* the flags replace the env's list */
      f->n_scheduler_names = 0;
      f->scheduler_names_from_env = false;
    }
    if (f->n_scheduler_names == EXT_MAX_SCHEDULER_NAMES)
      rc = ioq_fail(e, IOQ_EINVAL_INPUT, "--scheduler-name: at most %d names",
                    EXT_MAX_SCHEDULER_NAMES);
    else
      rc = nonempty("--scheduler-name", val, &f->scheduler_names[f->n_scheduler_names++], e);
    break;
  case OPT_POLICY:
    if (ioq_policy_parse(val, &f->policy) < 0)
      rc = ioq_fail(e, IOQ_EINVAL_INPUT,
                    "--policy: '%s' is not least-allocated, most-allocated or balanced", val);
    break;
  case OPT_ASSUME_TTL:
    rc = parse_uint("--assume-ttl", val, 1, 86400, &f->assume_ttl_s, e);
    break;
  case OPT_MAX_REQUEST_BYTES:
    if (ioq_parse_quantity_int(val, &bytes, e) < 0) {
      ioq_err_prefix(e, "--max-request-bytes");
      rc = -1;
    } else if (bytes < 4096 || bytes > (4ull << 30)) {
      rc = ioq_fail(e, IOQ_EINVAL_INPUT, "--max-request-bytes: '%s' must be between 4Ki and 4Gi",
                    val);
    } else {
      f->max_request_bytes = (size_t)bytes;
    }
    break;
  case OPT_MAX_REQUEST_MEMORY:
    if (ioq_parse_quantity_int(val, &bytes, e) < 0) {
      ioq_err_prefix(e, "--max-request-memory");
      rc = -1;
    } else if (bytes < (1ull << 20) || bytes > (1ull << 40)) {
      rc = ioq_fail(e, IOQ_EINVAL_INPUT, "--max-request-memory: '%s' must be between 1Mi and 1Ti",
                    val);
    } else {
      f->max_request_memory = (size_t)bytes;
    }
    break;
  case OPT_THREADS:
    rc = parse_uint("--threads", val, 1, 256, &f->threads, e);
    break;
  case OPT_MAX_CONNECTIONS:
    rc = parse_uint("--max-connections", val, 1, 65536, &f->max_connections, e);
    break;
  case OPT_IDLE_TIMEOUT:
    rc = parse_uint("--idle-timeout", val, 1, 3600, &f->idle_timeout_s, e);
    break;
  case OPT_MAX_CONNECTIONS_PER_IP:
    rc = parse_uint("--max-connections-per-ip", val, 1, 65536, &f->max_connections_per_ip, e);
    break;
  case OPT_REQUEST_DEADLINE:
    rc = parse_uint("--request-deadline", val, 1, 3600, &f->request_deadline_s, e);
    break;
  case OPT_ANNOTATION_MAX_AGE:
    rc = parse_uint("--annotation-max-age", val, 0, 30 * 86400, &f->annotation_max_age_s, e);
    break;
  case OPT_SHUTDOWN_GRACE:
    rc = parse_uint("--shutdown-grace", val, 0, 3600, &f->shutdown_grace_s, e);
    break;
  case OPT_KUBE_API_SERVER:
    rc = nonempty("--kube-api-server", val, &f->kube_api_server, e);
    break;
  case OPT_KUBE_TOKEN_FILE:
    rc = nonempty("--kube-token-file", val, &f->kube_token_file, e);
    break;
  case OPT_KUBE_CA_FILE:
    rc = nonempty("--kube-ca-file", val, &f->kube_ca_file, e);
    break;
  case OPT_KUBE_TIMEOUT:
    rc = parse_uint("--kube-timeout", val, 1, 600, &f->kube_timeout_s, e);
    break;
  case OPT_KUBECONFIG:
    rc = nonempty("--kubeconfig", val, &f->kubeconfig, e);
    break;
  case OPT_NO_KUBE:
    f->no_kube = true;
    break;
  case OPT_NODE_CACHE:
    rc = parse_bool("--node-cache", val, &f->node_cache, e);
    break;
  case OPT_LOG_LEVEL:
    if (ioq_log_parse_level(val, &f->log_level) < 0)
      rc = ioq_fail(e, IOQ_EINVAL_INPUT, "--log-level: '%s' is not error, warn, info or debug",
                    val);
    break;
  case OPT_LOG_FORMAT:
    rc = log_format("--log-format", val, &f->log_format, e);
    break;
  default:
    abort(); /* every id with a value is above */
  }
  return rc;
}

/* IOQOS_SCHEDULER_NAME: a comma-separated list, copied (the pointers must
 * outlive getenv's string) and bounded by the buffer. */
static int env_scheduler_names(struct ext_flags *f, const char *env, const char *val, ioq_err *e) {
  if (strlen(val) >= sizeof f->scheduler_names_buf)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: longer than %zu bytes", env,
                    sizeof f->scheduler_names_buf - 1);
  strcpy(f->scheduler_names_buf, val);
  char *p = f->scheduler_names_buf;
  f->n_scheduler_names = 0;
  for (;;) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = '\0';
    if (apply(f, OPT_SCHEDULER_NAME, p, e) < 0) {
      ioq_err_prefix(e, "%s", env);
      return -1;
    }
    if (!comma)
      break;
    p = comma + 1;
  }
  f->scheduler_names_from_env = true;
  return 0;
}

/* Every flag with a value (and --no-kube) has an environment variable: the
 * plugin's convention, IOQOS_ and the flag's name. Flags given win. No name
 * ends in _PORT, _PORT_* or _SERVICE_HOST/_PORT: the variables kubelet adds for
 * each Service of the namespace (service links, e.g. IOQOS_SCHEDULER_EXT_PORT)
 * cannot be mistaken for a flag. */
static const struct env_flag {
  int id;
  const char *flag, *env;
} g_env[] = {
    {OPT_LISTEN, "--listen", "IOQOS_LISTEN"},
    {OPT_TLS_CERT, "--tls-cert", "IOQOS_TLS_CERT"},
    {OPT_TLS_KEY, "--tls-key", "IOQOS_TLS_KEY"},
    {OPT_TLS_CLIENT_CA, "--tls-client-ca", "IOQOS_TLS_CLIENT_CA"},
    {OPT_TLS_CLIENT_SUBJECT, "--tls-client-subject", "IOQOS_TLS_CLIENT_SUBJECT"},
    {OPT_METRICS_LISTEN, "--metrics-listen", "IOQOS_METRICS_LISTEN"},
    {OPT_THREADS, "--threads", "IOQOS_THREADS"},
    {OPT_MAX_CONNECTIONS, "--max-connections", "IOQOS_MAX_CONNECTIONS"},
    {OPT_MAX_CONNECTIONS_PER_IP, "--max-connections-per-ip", "IOQOS_MAX_CONNECTIONS_PER_IP"},
    {OPT_MAX_REQUEST_BYTES, "--max-request-bytes", "IOQOS_MAX_REQUEST_BYTES"},
    {OPT_MAX_REQUEST_MEMORY, "--max-request-memory", "IOQOS_MAX_REQUEST_MEMORY"},
    {OPT_IDLE_TIMEOUT, "--idle-timeout", "IOQOS_IDLE_TIMEOUT"},
    {OPT_REQUEST_DEADLINE, "--request-deadline", "IOQOS_REQUEST_DEADLINE"},
    {OPT_SHUTDOWN_GRACE, "--shutdown-grace", "IOQOS_SHUTDOWN_GRACE"},
    {OPT_POLICY, "--policy", "IOQOS_POLICY"},
    {OPT_SCHEDULER_NAME, "--scheduler-name", "IOQOS_SCHEDULER_NAME"},
    {OPT_ASSUME_TTL, "--assume-ttl", "IOQOS_ASSUME_TTL"},
    {OPT_ANNOTATION_MAX_AGE, "--annotation-max-age", "IOQOS_ANNOTATION_MAX_AGE"},
    {OPT_KUBE_API_SERVER, "--kube-api-server", "IOQOS_KUBE_API_SERVER"},
    {OPT_KUBE_TOKEN_FILE, "--kube-token-file", "IOQOS_KUBE_TOKEN_FILE"},
    {OPT_KUBE_CA_FILE, "--kube-ca-file", "IOQOS_KUBE_CA_FILE"},
    {OPT_KUBE_TIMEOUT, "--kube-timeout", "IOQOS_KUBE_TIMEOUT"},
    {OPT_KUBECONFIG, "--kubeconfig", "IOQOS_KUBECONFIG"},
    {OPT_NO_KUBE, "--no-kube", "IOQOS_NO_KUBE"},
    {OPT_NODE_CACHE, "--node-cache", "IOQOS_NODE_CACHE"},
    {OPT_LOG_LEVEL, "--log-level", "IOQOS_LOG_LEVEL"},
    {OPT_LOG_FORMAT, "--log-format", "IOQOS_LOG_FORMAT"},
};

static void env_usage(FILE *out) {
  fputs("\nEnvironment (a flag given on the command line wins over its variable):\n", out);
  for (size_t i = 0; i < sizeof g_env / sizeof g_env[0]; i++)
    fprintf(out, "  %-30s %s%s\n", g_env[i].env, g_env[i].flag,
            g_env[i].id == OPT_SCHEDULER_NAME ? " (comma-separated names)"
            : g_env[i].id == OPT_NO_KUBE     ? " (true or false)"
                                              : "");
}

static int apply_env(struct ext_flags *f, ioq_err *e) {
  for (size_t i = 0; i < sizeof g_env / sizeof g_env[0]; i++) {
    const struct env_flag *ef = &g_env[i];
    const char *val = getenv(ef->env);
    if (!val)
      continue;
    int rc;
    if (ef->id == OPT_SCHEDULER_NAME)
      rc = env_scheduler_names(f, ef->env, val, e);
    else if (ef->id == OPT_NO_KUBE) {
      int b = 0;
      rc = parse_bool(ef->env, val, &b, e);
      f->no_kube = b == 1;
    } else if ((rc = apply(f, ef->id, val, e)) < 0)
      ioq_err_prefix(e, "%s", ef->env);
    if (rc < 0)
      return -1;
  }
  return 0;
}

int ext_flags_parse(int argc, char **argv, struct ext_flags *f, ioq_err *e) {
  *f = (struct ext_flags){
      .listen = ":8888",
      .metrics_listen = ":9465",
      .policy = IOQ_POLICY_LEAST_ALLOCATED,
      .assume_ttl_s = 3600,
      .max_request_bytes = 256u << 20,
      .max_request_memory = 0,
      .threads = 4,
      .max_connections = 256,
      .idle_timeout_s = 30,
      .max_connections_per_ip = 32,
      .request_deadline_s = 10,
      .annotation_max_age_s = 900,
      .shutdown_grace_s = 10,
      .kube_timeout_s = 10,
      .node_cache = -1,
      .log_level = IOQ_LOG_INFO,
  };
  static const struct option opts[] = {
      {"listen", required_argument, NULL, OPT_LISTEN},
      {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
      {"tls-key", required_argument, NULL, OPT_TLS_KEY},
      {"tls-client-ca", required_argument, NULL, OPT_TLS_CLIENT_CA},
      {"tls-client-subject", required_argument, NULL, OPT_TLS_CLIENT_SUBJECT},
      {"metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN},
      {"scheduler-name", required_argument, NULL, OPT_SCHEDULER_NAME},
      {"policy", required_argument, NULL, OPT_POLICY},
      {"assume-ttl", required_argument, NULL, OPT_ASSUME_TTL},
      {"max-request-bytes", required_argument, NULL, OPT_MAX_REQUEST_BYTES},
      {"max-request-memory", required_argument, NULL, OPT_MAX_REQUEST_MEMORY},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
      {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
      {"max-connections-per-ip", required_argument, NULL, OPT_MAX_CONNECTIONS_PER_IP},
      {"request-deadline", required_argument, NULL, OPT_REQUEST_DEADLINE},
      {"annotation-max-age", required_argument, NULL, OPT_ANNOTATION_MAX_AGE},
      {"shutdown-grace", required_argument, NULL, OPT_SHUTDOWN_GRACE},
      {"kube-api-server", required_argument, NULL, OPT_KUBE_API_SERVER},
      {"kube-token-file", required_argument, NULL, OPT_KUBE_TOKEN_FILE},
      {"kube-ca-file", required_argument, NULL, OPT_KUBE_CA_FILE},
      {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
      {"kube-timeout", required_argument, NULL, OPT_KUBE_TIMEOUT},
      {"no-kube", no_argument, NULL, OPT_NO_KUBE},
      {"node-cache", required_argument, NULL, OPT_NODE_CACHE},
      {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
      {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
      {"help", no_argument, NULL, OPT_HELP},
      {"version", no_argument, NULL, OPT_VERSION},
      {NULL, 0, NULL, 0},
  };
  if (apply_env(f, e) < 0)
    return -1;
  optind = 1;
  opterr = 0; /* we word the errors ourselves */
  int c;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    int rc = 0;
    switch (c) {
    case 'h':
    case OPT_HELP:
      f->help = true;
      break;
    case OPT_VERSION:
      f->version = true;
      break;
    case ':':
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s needs a value", argv[optind - 1]);
    case '?':
      return ioq_fail(e, IOQ_EINVAL_INPUT, "unknown flag '%s'", argv[optind - 1]);
    default:
      rc = apply(f, c, optarg, e);
    }
    if (rc < 0)
      return -1;
  }
  if (optind < argc)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "unexpected argument '%s' (flags only)", argv[optind]);
  if (f->help || f->version)
    return 0;
  if ((f->tls_cert != NULL) != (f->tls_key != NULL))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--tls-cert and --tls-key go together");
  if (f->tls_client_ca && !f->tls_cert)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--tls-client-ca needs --tls-cert and --tls-key");
  if (f->tls_client_subject && !f->tls_client_ca)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--tls-client-subject needs --tls-client-ca");
  if (f->n_scheduler_names == 0)
    f->scheduler_names[f->n_scheduler_names++] = EXT_DEFAULT_SCHEDULER_NAME;
  if (f->no_kube && (f->kube_api_server || f->kube_token_file || f->kube_ca_file || f->kubeconfig))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--no-kube conflicts with --kube-* flags");
  if (f->no_kube && f->node_cache == 1)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--node-cache=true needs Kubernetes API access (drop --no-kube)");
  if (f->max_connections < f->threads)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "--max-connections (%u) must be at least --threads (%u)",
                    f->max_connections, f->threads);
  return 0;
}
