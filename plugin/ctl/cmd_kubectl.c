// SPDX-License-Identifier: Apache-2.0
/* kubectl ioqos nodes / pods (also ioqosctl nodes / pods): the cluster's
 * ioqos state as the node and pod annotations tell it, read with the
 * user's own credentials (kclient.h). Rows come from knodes.c / kpods.c,
 * tables from ktable.c; this file parses flags, lists and prints. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "base/fsutil.h"
#include "base/k8sname.h"
#include "kclient.h"
#include "knodes.h"
#include "kpods.h"
#include "ktable.h"
#include "util.h"
#include "base/grow.h"

#define PERMS_TEXT                                                                                  \
  "Permissions (RBAC of YOUR user, not of the plugin): 'list' on 'nodes' (cluster-wide) for\n"      \
  "nodes and for the DISK/GRANT columns of pods; 'list' on 'pods' in the namespace (cluster-wide\n" \
  "with -A). docs/operations.md has a ClusterRole (ioqos-viewer) that grants exactly these.\n"

#define CRED_TEXT                                                                                   \
  "Credentials, as kubectl: --kubeconfig FILE, else $KUBECONFIG (one file), else\n"                 \
  "~/.kube/config, else the in-cluster service account; --context NAME picks a context.\n"

#define COMMON_OPTS                                                                                 \
  "  --kubeconfig FILE       kubeconfig to use\n"                                                   \
  "  --context NAME          kubeconfig context (default: its current-context)\n"                   \
  "  -o, --output FORMAT     'json' for scripts; default: a table\n"                                \
  "  --chunk-size N          items per list request (limit/continue), default 500; 0 = one request\n" \
  "  --request-timeout T     per request: seconds, or 30s, 2m (default 10s)\n"                                    \
  "  -h, --help              this help\n"

#define EXIT_TEXT "Exit status: 0 listed, 1 the API failed (credentials, permission, unreachable), 2 usage.\n"

enum { OPT_KUBECONFIG = 1000, OPT_CONTEXT, OPT_CHUNK, OPT_TIMEOUT };

struct kargs {
  struct ctl_kflags kf;
  bool json;
  const char *ns;
  bool all_ns;
};

/* Parses the options both commands share (and -n/-A for pods); returns -1
 * when done, 0 to go on, or an exit status (help, usage error) in *rc. */
static int parse_args(int argc, char **argv, const char *cmd, bool pods, void (*help)(FILE *),
                      struct kargs *a, int *rc) {
  static const struct option lo[] = {{"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
                                     {"context", required_argument, NULL, OPT_CONTEXT},
                                     {"output", required_argument, NULL, 'o'},
                                     {"chunk-size", required_argument, NULL, OPT_CHUNK},
                                     {"request-timeout", required_argument, NULL, OPT_TIMEOUT},
                                     {"namespace", required_argument, NULL, 'n'},
                                     {"all-namespaces", no_argument, NULL, 'A'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};
  memset(a, 0, sizeof *a);
  a->kf.chunk = CTL_CHUNK_DEFAULT;
  optind = 1;
  int c;
  uint64_t v;
  while ((c = ctl_getopt(argc, argv, pods ? "o:n:Ah" : "o:h", lo, cmd)) != -1) {
    switch (c) {
    case OPT_KUBECONFIG:
      a->kf.kubeconfig = optarg;
      break;
    case OPT_CONTEXT:
      a->kf.context = optarg;
      break;
    case 'o':
      if (strcmp(optarg, "json") == 0)
        a->json = true;
      else if (strcmp(optarg, "table") != 0) {
        *rc = ctl_usage_error(cmd, "--output: '%s' is not 'json' or 'table'", optarg);
        return 1;
      }
      break;
    case OPT_CHUNK:
      if (ctl_parse_u64(cmd, "--chunk-size", optarg, 0, 100000, &v) < 0) {
        *rc = 2;
        return 1;
      }
      a->kf.chunk = (unsigned)v;
      break;
    case OPT_TIMEOUT: {
      /* kubectl's spelling too: 30, 30s, 2m */
      char num[32];
      size_t l = strlen(optarg);
      unsigned mult = 1;
      snprintf(num, sizeof num, "%s", optarg);
      if (l > 1 && l < sizeof num && (num[l - 1] == 's' || num[l - 1] == 'm')) {
        mult = num[l - 1] == 'm' ? 60 : 1;
        num[l - 1] = '\0';
      }
      if (ctl_parse_u64(cmd, "--request-timeout", num, 1, 3600 / mult, &v) < 0) {
        *rc = 2;
        return 1;
      }
      a->kf.timeout_ms = (long)(v * mult) * 1000;
      break;
    }
    case 'n':
      if (!pods)
        goto unknown;
      if (!ioq_k8s_label_valid(optarg)) {
        *rc = ctl_usage_error(cmd, "--namespace: '%s' is not a namespace name", optarg);
        return 1;
      }
      a->ns = optarg;
      break;
    case 'A':
      if (!pods)
        goto unknown;
      a->all_ns = true;
      break;
    case 'h':
      help(stdout);
      *rc = 0;
      return 1;
    default:
    unknown:
      *rc = 2;
      return 1;
    }
  }
  if (optind < argc) {
    *rc = ctl_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    return 1;
  }
  if (a->ns && a->all_ns) {
    *rc = ctl_usage_error(cmd, "--namespace and --all-namespaces exclude each other");
    return 1;
  }
  return 0;
}

static int fail(const char *cmd, const ioq_err *e) {
  fprintf(stderr, "%s %s: %s\n", ctl_prog, cmd, e->msg);
  return 1;
}

/* -o json, written item by item as text into memory (a tenth of what the
 * json-c tree of a big cluster would cost) and printed only once the whole
 * list was read: a script gets one complete document or none. */
struct jout {
  char *buf;
  size_t len;
  FILE *f;
  size_t items;
};

static int jout_open(struct jout *j, const char *head) {
  memset(j, 0, sizeof *j);
  if (!(j->f = open_memstream(&j->buf, &j->len)))
    return -1;
  fprintf(j->f, "{\n%s", head);
  return 0;
}

/* appends each element of arr (then empties it) to the open list */
static void jout_items(struct jout *j, json_object *arr) {
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    const char *t = json_object_to_json_string_ext(json_object_array_get_idx(arr, i),
                                                   JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
    fputs(j->items++ ? ",\n    " : "\n    ", j->f);
    for (; *t; t++)
      *t == '\n' ? fputs("\n    ", j->f) : fputc(*t, j->f);
  }
  json_object_array_del_idx(arr, 0, json_object_array_length(arr));
}

/* closes the list and the document; prints it when print is true */
static int jout_close(struct jout *j, bool print) {
  if (!j->f)
    return -1;
  fputs(j->items ? "\n  ]\n}\n" : "]\n}\n", j->f);
  int rc = fclose(j->f) == 0 ? 0 : -1;
  j->f = NULL;
  if (print && rc == 0)
    fwrite(j->buf, 1, j->len, stdout);
  free(j->buf);
  j->buf = NULL;
  return rc;
}

/* ---- nodes ---- */

static void nodes_help(FILE *f) {
  fprintf(f,
          "usage: %s nodes [OPTIONS]\n\n"
          "Every node's ioqos disks, from the node annotation %s the plugin publishes:\n"
          "class, bandwidth (MiB/s) and IOPS advertised (CAP), held by pods (ALLOC) and FREE,\n"
          "HEALTHY (with the plugin's REASON when not), and how long ago the plugin PUBLISHED it\n"
          "(\"stale\" past %d s: the plugin stopped refreshing it). A node without the annotation\n"
          "is listed as \"no ioqos plugin\"; an annotation that does not parse names the error.\n\n"
          "Options:\n" COMMON_OPTS "\n" CRED_TEXT PERMS_TEXT EXIT_TEXT,
          ctl_prog, IOQ_NODE_ANNOTATION, CTL_ANNO_STALE_S);
}

struct nodes_ud {
  struct ctl_table *t;
  json_object *arr; /* -o json: one node at a time, then into js */
  struct jout *js;
  int64_t now;
  size_t n;
};

static int node_item(void *ud, json_object *item, bool truncated, ioq_err *e) {
  struct nodes_ud *x = ud;
  struct ctl_node *n = malloc(sizeof *n);
  if (!n)
    return ioq_fail(e, ENOMEM, "out of memory reading a node");
  ioq_err ne = {0};
  if (ctl_node_from_json(item, truncated, n, &ne) < 0) {
    free(n);
    if (ne.code == ENOMEM) {
      *e = ne;
      return -1;
    }
    fprintf(stderr, "%s nodes: warning: skipped: %s\n", ctl_prog, ne.msg);
    return 0;
  }
  int rc = ctl_node_render(n, x->now, x->t, x->arr);
  if (x->arr)
    jout_items(x->js, x->arr);
  ctl_node_free(n);
  free(n);
  x->n++;
  return rc < 0 ? ioq_fail(e, ENOMEM, "out of memory rendering a node") : 0;
}

int cmd_knodes(int argc, char **argv) {
  struct kargs a;
  int rc;
  if (parse_args(argc, argv, "nodes", false, nodes_help, &a, &rc))
    return rc;
  ioq_err e = {0};
  struct ioq_kube *k;
  char source[4200];
  if (ctl_kube_open(&a.kf, &k, source, sizeof source, &e) < 0)
    return fail("nodes", &e);
  struct ctl_table t;
  ctl_table_init(&t, CTL_NODES_COLS, ctl_nodes_headers);
  json_object *arr = json_object_new_array();
  struct jout js = {0};
  struct nodes_ud x = {.t = a.json ? NULL : &t, .arr = a.json ? arr : NULL, .js = &js, .now = time(NULL)};
  long status;
  rc = 0;
  if (!arr || (a.json && jout_open(&js, "  \"nodes\": [") < 0)) {
    ioq_fail(&e, ENOMEM, "out of memory starting the node list");
    json_object_put(arr);
    ctl_table_free(&t);
    ioq_kube_free(k);
    return fail("nodes", &e);
  }
  const char *nodes_path = "/api/v1/nodes";
  if (ctl_kube_list(k, nodes_path, &a.kf, ctl_node_rules, CTL_NODE_COST_MAX, node_item, &x, &status,
                    NULL, &e) < 0) {
    ctl_kube_explain("list nodes", "'list' on 'nodes' (cluster-wide)", status, ioq_kube_server(k),
                     source, &e);
    rc = fail("nodes", &e);
  } else if (a.json) {
    if (jout_close(&js, true) < 0) {
      ioq_fail(&e, ENOMEM, "out of memory ending the node list");
      rc = fail("nodes", &e);
    }
  } else if (x.n == 0) {
    fprintf(stderr, "No nodes found.\n");
  } else {
    ctl_table_print(&t, stdout);
  }
  jout_close(&js, false);
  json_object_put(arr);
  ctl_table_free(&t);
  ioq_kube_free(k);
  return rc;
}

/* ---- pods ---- */

static void pods_help(FILE *f) {
  fprintf(f,
          "usage: %s pods [-n NAMESPACE | -A] [OPTIONS]\n\n"
          "The ioqos pods (requesting %s or %s) with their grants: the units\n"
          "requested per resource (and what they are worth on the node), the device CLASS\n"
          "(%s), the DISK (the pod annotation %s the extender writes at bind,\n"
          "else the only disk of the class on the node) and the GRANT: \"held\" once the\n"
          "node's plugin counts the pod's units (the node annotation's pods), \"not reported\n"
          "yet\" before, or why it is not known.\n\n"
          "Options:\n"
          "  -n, --namespace NS      the namespace (default: the context's, else 'default')\n"
          "  -A, --all-namespaces    every namespace\n" COMMON_OPTS "\n" CRED_TEXT PERMS_TEXT EXIT_TEXT,
          ctl_prog, IOQ_RESOURCE_BANDWIDTH, IOQ_RESOURCE_IOPS, IOQ_POD_CLASS_ANNOTATION,
          IOQ_POD_DISK_ANNOTATION);
}

struct pods_ud {
  struct ctl_pod *pods;
  size_t n, cap;
};

static int pod_item(void *ud, json_object *item, bool truncated, ioq_err *e) {
  struct pods_ud *x = ud;
  struct ctl_pod *p = ioq_grow(x->pods, &x->cap, x->n + 1, sizeof *p, 64);
  if (!p)
    return ioq_fail(e, ENOMEM, "out of memory growing the pod list");
  x->pods = p;
  ioq_err pe = {0};
  int rc = ctl_pod_from_json(item, truncated, &x->pods[x->n], &pe);
  if (rc < 0)
    fprintf(stderr, "%s pods: warning: skipped: %s\n", ctl_prog, pe.msg);
  if (rc == 1)
    x->n++;
  return 0;
}

/* the nodes the pods are on, sorted, and their decoded annotations */
struct node_index {
  char **want; /* sorted, unique */
  size_t n_want;
  struct ctl_node *nodes; /* sorted by name once listed */
  size_t n, cap;
};

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}
static int cmp_node(const void *a, const void *b) {
  return strcmp(((const struct ctl_node *)a)->name, ((const struct ctl_node *)b)->name);
}

static int index_item(void *ud, json_object *item, bool truncated, ioq_err *e) {
  struct node_index *x = ud;
  json_object *m, *nm;
  if (!json_object_object_get_ex(item, "metadata", &m) || !json_object_object_get_ex(m, "name", &nm) ||
      !json_object_is_type(nm, json_type_string))
    return 0;
  const char *name = json_object_get_string(nm);
  if (!bsearch(&name, x->want, x->n_want, sizeof *x->want, cmp_str))
    return 0; /* no ioqos pod listed there */
  struct ctl_node *p = ioq_grow(x->nodes, &x->cap, x->n + 1, sizeof *p, 16);
  if (!p)
    return ioq_fail(e, ENOMEM, "out of memory growing the node list");
  x->nodes = p;
  ioq_err ne = {0};
  if (ctl_node_from_json(item, truncated, &x->nodes[x->n], &ne) < 0) {
    if (ne.code == ENOMEM) {
      *e = ne;
      return -1;
    }
    return 0;
  }
  x->n++;
  return 0;
}

static void index_free(struct node_index *x) {
  for (size_t i = 0; i < x->n; i++)
    ctl_node_free(&x->nodes[i]);
  free(x->nodes);
  free(x->want);
}

int cmd_kpods(int argc, char **argv) {
  struct kargs a;
  int rc;
  if (parse_args(argc, argv, "pods", true, pods_help, &a, &rc))
    return rc;
  ioq_err e = {0};
  struct ioq_kube *k;
  char source[4200];
  if (ctl_kube_open(&a.kf, &k, source, sizeof source, &e) < 0)
    return fail("pods", &e);
  const char *ns = a.all_ns ? NULL : a.ns ? a.ns : ioq_kube_namespace(k) ? ioq_kube_namespace(k) : "default";
  char path[128], what[128], rbac[160];
  if (ns) {
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    snprintf(what, sizeof what, "list pods in namespace %s", ns);
    snprintf(rbac, sizeof rbac, "'list' on 'pods' in namespace %s", ns);
  } else {
    snprintf(path, sizeof path, "/api/v1/pods");
    snprintf(what, sizeof what, "list pods in all namespaces");
    snprintf(rbac, sizeof rbac, "'list' on 'pods' (cluster-wide, for --all-namespaces)");
  }
  struct pods_ud pods = {0};
  struct node_index idx = {0};
  struct ctl_table t;
  ctl_table_init(&t, CTL_PODS_COLS, ctl_pods_headers);
  json_object *arr = json_object_new_array();
  struct jout js = {0};
  long status;
  rc = 1;
  if (!arr) {
    ioq_fail(&e, ENOMEM, "out of memory starting the pod list");
    fail("pods", &e);
    goto out;
  }
  if (ctl_kube_list(k, path, &a.kf, ctl_pod_rules, CTL_POD_COST_MAX, pod_item, &pods, &status, NULL,
                    &e) < 0) {
    ctl_kube_explain(what, rbac, status, ioq_kube_server(k), source, &e);
    fail("pods", &e);
    goto out;
  }
  /* the nodes of those pods: one list of every node (no per-node GET, so
   * 'list nodes' is the only node permission needed) */
  idx.want = calloc(pods.n ? pods.n : 1, sizeof *idx.want);
  if (!idx.want) {
    ioq_fail(&e, ENOMEM, "out of memory indexing the pods' nodes");
    fail("pods", &e);
    goto out;
  }
  for (size_t i = 0; i < pods.n; i++)
    if (pods.pods[i].node[0])
      idx.want[idx.n_want++] = pods.pods[i].node;
  if (idx.n_want) /* qsort's array may not be NULL, even for 0 items */
    qsort(idx.want, idx.n_want, sizeof *idx.want, cmp_str);
  size_t u = 0;
  for (size_t i = 0; i < idx.n_want; i++)
    if (u == 0 || strcmp(idx.want[u - 1], idx.want[i]) != 0)
      idx.want[u++] = idx.want[i];
  idx.n_want = u;
  bool no_access = false;
  const char *nodes_path = "/api/v1/nodes";
  if (idx.n_want && ctl_kube_list(k, nodes_path, &a.kf, ctl_node_rules, CTL_NODE_COST_MAX,
                                  index_item, &idx, &status, NULL, &e) < 0) {
    ctl_kube_explain("list nodes", "'list' on 'nodes' (cluster-wide)", status, ioq_kube_server(k),
                     source, &e);
    if (status != 403) {
      fail("pods", &e);
      goto out;
    }
    no_access = true; /* the pods are still worth listing */
    fprintf(stderr, "%s pods: warning: %s\n%s pods: warning: DISK comes from the pod annotation only, "
                    "GRANT is unknown\n", ctl_prog, e.msg, ctl_prog);
    for (size_t i = 0; i < idx.n; i++)
      ctl_node_free(&idx.nodes[i]);
    idx.n = 0;
  }
  if (idx.n) /* qsort's array may not be NULL, even for 0 items */
    qsort(idx.nodes, idx.n, sizeof *idx.nodes, cmp_node);
  if (a.json) {
    char head[256];
    snprintf(head, sizeof head, "  \"namespace\": %s%s%s,\n  \"nodesListed\": %s,\n  \"pods\": [",
             ns ? "\"" : "", ns ? ns : "null", ns ? "\"" : "", no_access ? "false" : "true");
    if (jout_open(&js, head) < 0) {
      ioq_fail(&e, ENOMEM, "out of memory starting the pod list");
      fail("pods", &e);
      goto out;
    }
  }
  for (size_t i = 0; i < pods.n; i++) {
    const struct ctl_pod *p = &pods.pods[i];
    struct ctl_node key;
    snprintf(key.name, sizeof key.name, "%s", p->node);
    const struct ctl_node *node =
        p->node[0] && idx.n ? bsearch(&key, idx.nodes, idx.n, sizeof *idx.nodes, cmp_node) : NULL;
    enum ctl_node_view view = no_access ? CTL_VIEW_NO_ACCESS : node ? CTL_VIEW_NODE : CTL_VIEW_NOT_FOUND;
    if (ctl_pod_render(p, view, node, a.json ? NULL : &t, a.json ? arr : NULL) < 0) {
      ioq_fail(&e, ENOMEM, "out of memory rendering pod %s/%s", p->need.ns, p->need.name);
      fail("pods", &e);
      goto out;
    }
    if (a.json)
      jout_items(&js, arr);
  }
  rc = 0;
  if (a.json) {
    if (jout_close(&js, true) < 0) {
      ioq_fail(&e, ENOMEM, "out of memory ending the pod list");
      rc = fail("pods", &e);
    }
  } else if (pods.n == 0) {
    if (ns)
      fprintf(stderr, "No ioqos pods found in %s namespace.\n", ns);
    else
      fprintf(stderr, "No ioqos pods found.\n");
  } else {
    ctl_table_print(&t, stdout);
  }
out:
  if (js.f)
    jout_close(&js, false);
  json_object_put(arr);
  ctl_table_free(&t);
  index_free(&idx);
  free(pods.pods);
  ioq_kube_free(k);
  return rc;
}
