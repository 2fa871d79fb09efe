// SPDX-License-Identifier: Apache-2.0
/* kubectl ioqos: credentials found as kubectl finds them, paginated lists,
 * and API failures turned into what the user can act on.
 *
 * Credentials, first that applies: --kubeconfig FILE; the KUBECONFIG
 * environment variable (one file); ~/.kube/config if it exists; the
 * in-cluster service account (KUBERNETES_SERVICE_HOST/PORT). --context picks
 * a context of the kubeconfig instead of its current-context. The API
 * client is src/kube (kube/kube.h); this only chooses what to hand it.
 *
 * Lists are read page by page (limit + continue, as kubectl's --chunk-size)
 * through the streaming filter (kube_jfilter.h): memory holds one item's
 * kept fields at a time, never a whole reply, and an item is cut at its
 * cost budget.
 */
#ifndef IOQOSCTL_KCLIENT_H
#define IOQOSCTL_KCLIENT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "kube/kube.h"

#define CTL_CHUNK_DEFAULT 500
#define CTL_CONTINUE_MAX 4096

struct ctl_kflags {
  const char *kubeconfig; /* --kubeconfig; NULL = the chain above */
  const char *context;    /* --context; NULL = current-context */
  long timeout_ms;        /* --request-timeout; 0 = 10 s */
  unsigned chunk;         /* --chunk-size: items per page; 0 = one page */
};

/* Opens the client; *source (n bytes) names where the credentials came
 * from, for messages ("kubeconfig /home/u/.kube/config, context prod").
 * -1 with a message that says what to do when there are none. */
int ctl_kube_open(const struct ctl_kflags *f, struct ioq_kube **out, char *source, size_t n,
                  ioq_err *e);

/* Each item of the list; return -1 (after filling e) to stop the list. */
typedef int (*ctl_item_fn)(void *ud, json_object *item, bool truncated, ioq_err *e);

/* GETs every page of the collection `path` (may carry a query: more
 * parameters are appended with '&'), handing items to fn. *status gets the
 * HTTP status of a failed request (0: none received). *pages (may be NULL)
 * counts the pages read. */
int ctl_kube_list(struct ioq_kube *k, const char *path, const struct ctl_kflags *f,
                  const struct ioq_jf_rule *item_rules, size_t item_cost_max, ctl_item_fn fn,
                  void *ud, long *status, unsigned *pages, ioq_err *e);

/* Rewrites e (from a failed ctl_kube_list) for the user: what = "list
 * nodes", "list pods in namespace x"...; names the missing permission on
 * 403, the credentials on 401, the server when unreachable. */
void ctl_kube_explain(const char *what, const char *rbac, long status, const char *server,
                      const char *source, ioq_err *e);

#endif
