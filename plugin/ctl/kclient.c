// SPDX-License-Identifier: Apache-2.0
#include "kclient.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "kube/kubeconfig.h"

int ctl_kube_open(const struct ctl_kflags *f, struct ioq_kube **out, char *source, size_t n,
                  ioq_err *e) {
  *out = NULL;
  struct ioq_kube_opts o = {.timeout_ms = f->timeout_ms, .user_agent = "kubectl-ioqos/" IOQOS_VERSION};
  char home_kc[4096] = "";
  const char *env = getenv(IOQ_KUBECONFIG_ENV);
  if (f->kubeconfig && *f->kubeconfig) {
    o.kubeconfig = f->kubeconfig;
    snprintf(source, n, "kubeconfig %s (--kubeconfig)", f->kubeconfig);
  } else if (env && *env) {
    /* the client reads KUBECONFIG itself (and refuses a list of files) */
    snprintf(source, n, "kubeconfig %s (%s)", env, IOQ_KUBECONFIG_ENV);
  } else {
    const char *home = getenv("HOME");
    if (home && *home)
      snprintf(home_kc, sizeof home_kc, "%s/.kube/config", home);
    if (home_kc[0] && ioq_path_exists(home_kc)) {
      o.kubeconfig = home_kc;
      snprintf(source, n, "kubeconfig %s", home_kc);
    } else if (getenv("KUBERNETES_SERVICE_HOST") && *getenv("KUBERNETES_SERVICE_HOST")) {
      snprintf(source, n, "the in-cluster service account");
    } else {
      return ioq_fail(e, IOQ_ENOTFOUND,
                      "no Kubernetes credentials: no --kubeconfig, %s is not set, %s does not "
                      "exist and this is not a pod in a cluster; pass --kubeconfig FILE",
                      IOQ_KUBECONFIG_ENV, home_kc[0] ? home_kc : "~/.kube/config ($HOME unset)");
    }
  }
  o.context = f->context;
  if (!(*out = ioq_kube_new(&o, e)))
    return -1;
  const char *ctx = ioq_kube_context(*out);
  if (ctx) {
    size_t l = strlen(source);
    snprintf(source + l, n > l ? n - l : 0, ", context %s", ctx);
  }
  return 0;
}

struct list_ctx {
  ctl_item_fn fn;
  void *ud;
  bool failed;
  ioq_err err;
};

static void on_unit(void *ud, json_object *unit, bool truncated) {
  struct list_ctx *x = ud;
  if (!x->failed && x->fn(x->ud, unit, truncated, &x->err) < 0)
    x->failed = true;
}

static const struct ioq_jf_rule R_LIST_META[] = {{"continue", 0, NULL}, {NULL, 0, NULL}};

int ctl_kube_list(struct ioq_kube *k, const char *path, const struct ctl_kflags *f,
                  const struct ioq_jf_rule *item_rules, size_t item_cost_max, ctl_item_fn fn,
                  void *ud, long *status, unsigned *pages, ioq_err *e) {
  const struct ioq_jf_rule kids[] = {{"metadata", 0, R_LIST_META},
                                     {"items", IOQ_JF_UNIT, item_rules},
                                     {NULL, 0, NULL}};
  const struct ioq_jf_rule root = {"", 0, kids};
  char cont[CTL_CONTINUE_MAX + 1] = "", prev[CTL_CONTINUE_MAX + 1] = "";
  struct list_ctx x = {.fn = fn, .ud = ud};
  *status = 0;
  if (pages)
    *pages = 0;
  const char *sep = strchr(path, '?') ? "&" : "?";
  for (;;) {
    char *cesc = cont[0] ? ioq_kube_escape(cont) : NULL, *p;
    char lim[32] = "";
    if (f->chunk)
      snprintf(lim, sizeof lim, "limit=%u", f->chunk);
    int rc = asprintf(&p, "%s%s%s%s%s", path, (f->chunk || cesc) ? sep : "", lim,
                      cesc ? (f->chunk ? "&continue=" : "continue=") : "", cesc ? cesc : "");
    free(cesc);
    if (rc < 0)
      return ioq_fail(e, ENOMEM, "out of memory building the list URL for %s", path);
    json_object *page = NULL;
    rc = ioq_kube_get_filtered(k, p, NULL, &root, item_cost_max, on_unit, &x, &page, status, e);
    free(p);
    if (pages)
      (*pages)++;
    if (rc < 0) {
      json_object_put(page);
      return -1;
    }
    if (x.failed) {
      json_object_put(page);
      *e = x.err;
      return -1;
    }
    json_object *meta, *c;
    snprintf(prev, sizeof prev, "%s", cont);
    cont[0] = '\0';
    if (json_object_object_get_ex(page, "metadata", &meta) &&
        json_object_object_get_ex(meta, "continue", &c) && json_object_is_type(c, json_type_string)) {
      if (!ioq_copy(cont, sizeof cont, json_object_get_string(c))) {
        json_object_put(page);
        return ioq_fail(e, IOQ_EINVAL_INPUT, "GET %s: a continue token longer than %d bytes", path,
                        CTL_CONTINUE_MAX);
      }
    }
    json_object_put(page);
    if (!cont[0])
      return 0;
    if (strcmp(cont, prev) == 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "GET %s: the server answered the same continue token twice",
                      path);
  }
}

void ctl_kube_explain(const char *what, const char *rbac, long status, const char *server,
                      const char *source, ioq_err *e) {
  char orig[IOQ_ERR_MSG_MAX];
  snprintf(orig, sizeof orig, "%s", e->msg);
  if (status == 401)
    ioq_fail(e, EACCES,
             "cannot %s: unauthorized (HTTP 401): the API server %s did not accept the credentials "
             "of %s (expired token or certificate?)",
             what, server, source);
  else if (status == 403)
    ioq_fail(e, EACCES,
             "cannot %s: forbidden (HTTP 403): your user lacks the permission %s (see 'kubectl "
             "ioqos --help' or docs/operations.md, section kubectl ioqos); the server said: %.300s",
             what, rbac, orig);
  else if (status == 410)
    ioq_fail(e, EAGAIN, "cannot %s: the list changed too much while it was read page by page "
                        "(continue token expired, HTTP 410): run again", what);
  else if (status == 0 && e->code == EIO)
    ioq_fail(e, EIO, "cannot %s: API server %s (from %s) not reachable: %.400s",
             what, server, source, orig);
  else
    ioq_fail(e, e->code ? e->code : EIO, "cannot %s: %.600s", what, orig);
}
