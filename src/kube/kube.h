// SPDX-License-Identifier: Apache-2.0
/* Kubernetes API client (libcurl + json-c), shared by ioqos-plugin and
 * ioqos-scheduler-ext.
 *
 * Credentials: a kubeconfig file (kubeconfig.h), or an explicit server URL (plain http:// is allowed, for local
 * testing, but a bearer token is never sent over it unless the caller or
 * the environment opts in: see allow_insecure_token) with optional
 * bearer-token and CA files, or, with no server given,
 * the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT, the token and
 * CA under /var/run/secrets/kubernetes.io/serviceaccount). The token file is
 * re-read when it changes, since bound service-account tokens rotate.
 *
 * Every call is synchronous with a bounded timeout; a struct ioq_kube may be
 * used from several threads at once (each request has its own curl handle).
 */
#ifndef IOQOS_KUBE_H
#define IOQOS_KUBE_H

#include <json-c/json.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "kube/kube_jfilter.h"

#define IOQ_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct ioq_kube_opts {
  /* Where the credentials come from, first that applies: server (with
   * token_file, ca_file); kubeconfig; the KUBECONFIG environment variable
   * (one file); in-cluster. kubeconfig with server, token_file or ca_file is
   * an error (two sources of one setting). */
  const char *kubeconfig; /* NULL/"" = none (then KUBECONFIG, if set) */
  /* the kubeconfig context to use (kubectl --context); NULL/"" = its
   * current-context. Without a kubeconfig to read it from, an error. */
  const char *context;
  const char *server;     /* NULL/"" = in-cluster */
  const char *token_file; /* NULL = none (in-cluster: the service account token) */
  const char *ca_file;    /* NULL = system CAs (in-cluster: the service account CA) */
  long timeout_ms;        /* per request; 0 = 10000 */
  const char *user_agent; /* NULL = "ioqos/VERSION" */
  const char *sa_dir;     /* NULL = IOQ_KUBE_SA_DIR (tests point it at a temp dir) */
  /* Send the token over plain http:// anyway (test set-ups). Also turned on
   * by IOQ_KUBE_INSECURE_TOKEN_ENV=1 in the environment, so both binaries
   * take the opt-in without a flag of their own. Otherwise a token file
   * with an http:// server is an error at ioq_kube_new. */
  bool allow_insecure_token;
};

#define IOQ_KUBE_INSECURE_TOKEN_ENV "IOQOS_KUBE_ALLOW_INSECURE_TOKEN"

/* TCP keepalive of every connection (idle seconds, probe interval) */
#define IOQ_KUBE_KEEPIDLE_S 10
#define IOQ_KUBE_KEEPINTVL_S 5
/* A watch that brings no byte for this long is dead, even if TCP is not:
 * the API server sends a BOOKMARK about every minute to a watch with
 * allowWatchBookmarks (k8s.io/apiserver cacher, defaultBookmarkFrequency),
 * so a healthy idle watch always beats it. */
#define IOQ_KUBE_WATCH_SILENCE_S 75

struct ioq_kube;

struct ioq_kube *ioq_kube_new(const struct ioq_kube_opts *o, ioq_err *e)
    __attribute__((warn_unused_result));
void ioq_kube_free(struct ioq_kube *k);
const char *ioq_kube_server(const struct ioq_kube *k);
/* the kubeconfig context in use (NULL without a kubeconfig) */
const char *ioq_kube_context(const struct ioq_kube *k);
/* kubectl's default namespace: the kubeconfig context's namespace, or in a
 * cluster the service account's (SA_DIR/namespace); NULL = none given */
const char *ioq_kube_namespace(const struct ioq_kube *k);

struct ioq_kube_resp {
  long status; /* HTTP status */
  char *body;  /* NUL-terminated, malloc'd */
  size_t len;
};
void ioq_kube_resp_free(struct ioq_kube_resp *r);

/* One request. Returns -1 only for transport failures (connect, TLS,
 * timeout); any HTTP status is returned in resp->status. `path` starts with
 * '/' and may carry a query string. body may be NULL. */
int ioq_kube_do(struct ioq_kube *k, const char *method, const char *path,
                const char *content_type, const char *body, struct ioq_kube_resp *resp, ioq_err *e)
    __attribute__((warn_unused_result));

/* JSON convenience wrappers: -1 on transport failure, non-2xx status (the
 * message carries the status and the API's Status.message) or unparsable
 * JSON. *status (may be NULL) receives the HTTP status in all cases where
 * one was received (0 otherwise). *out (may be NULL) gets the parsed reply. */
int ioq_kube_get_json(struct ioq_kube *k, const char *path, json_object **out, long *status,
                      ioq_err *e)
    __attribute__((warn_unused_result));
/* The same, abandoned (ECANCELED) as soon as *stop turns true: a thread
 * being stopped does not wait out the request timeout. */
int ioq_kube_get_json_until(struct ioq_kube *k, const char *path, atomic_bool *stop,
                            json_object **out, long *status, ioq_err *e)
    __attribute__((warn_unused_result));
/* GET whose reply goes through the streaming JSON filter (kube_jfilter.h)
 * as it arrives, never held whole: units go to on_unit, the rest to *out
 * (may be NULL). Errors as ioq_kube_get_json. */
int ioq_kube_get_filtered(struct ioq_kube *k, const char *path, atomic_bool *stop,
                          const struct ioq_jf_rule *root, size_t unit_cost_max,
                          void (*on_unit)(void *ud, json_object *unit, bool truncated), void *ud,
                          json_object **out, long *status, ioq_err *e)
    __attribute__((warn_unused_result));
int ioq_kube_send_json(struct ioq_kube *k, const char *method, const char *path,
                       const char *content_type, json_object *body, json_object **out,
                       long *status, ioq_err *e)
    __attribute__((warn_unused_result));
/* PATCH with application/merge-patch+json. */
int ioq_kube_merge_patch(struct ioq_kube *k, const char *path, json_object *patch,
                         json_object **out, long *status, ioq_err *e)
    __attribute__((warn_unused_result));

/* Percent-encodes a query value (field selectors contain '=' and ','):
 * a string to free, NULL when out of memory. */
char *ioq_kube_escape(const char *s)
    __attribute__((warn_unused_result));

/* Event on an object (core/v1 Event). */
struct ioq_kube_event {
  const char *ns;          /* namespace of the event and the object */
  const char *kind;        /* "Pod", "Node" */
  const char *name;
  const char *uid;         /* may be NULL */
  const char *type;        /* "Normal" or "Warning" */
  const char *reason;      /* CamelCase, e.g. "IoqosEnforceFailed" */
  const char *message;
  const char *component;   /* reporting component, e.g. "ioqos-plugin" */
  const char *host;        /* node name, may be NULL */
};
int ioq_kube_post_event(struct ioq_kube *k, const struct ioq_kube_event *ev, ioq_err *e)
    __attribute__((warn_unused_result));

/* ---- list + watch ----
 * A background thread lists `path` (paginated, 500 per page unless
 * page_limit says otherwise), then watches
 * from the list's resourceVersion with bookmarks. A 410 Gone (or an ERROR
 * event) triggers a fresh list; transport errors back off exponentially
 * (0.5 s .. 30 s). Callbacks run on the informer thread; json objects are
 * only valid during the call (take a ref to keep one).
 *
 * A list is delivered page by page, so memory peaks at one parsed page, not
 * the whole collection (a parsed Node is ~13x its JSON: thousands of nodes
 * would be hundreds of MiB at once): list_begin, list_page for each page,
 * then list_end(complete). On complete=false (the list failed midway and
 * will be retried) the consumer drops what it gathered and keeps its old
 * state; on true, what it gathered replaces everything it knew. */
struct ioq_kube_informer_cb {
  void (*list_begin)(void *ud);
  void (*list_page)(void *ud, json_object *items); /* items: JSON array */
  void (*list_end)(void *ud, bool complete);
  /* type: "ADDED", "MODIFIED", "DELETED" */
  void (*on_event)(void *ud, const char *type, json_object *obj);
  /* Optional. filter: the rules for one item's members (kube_jfilter.h);
   * items are then read by the streaming filter, never whole: list_page
   * gets them one at a time (a one-element array) and on_event the
   * filtered object; an item cut at item_cost_max (0: 256 KiB) carries
   * IOQ_JF_TRUNCATED_KEY. NULL: whole objects. page_limit: items per list
   * page (0: 500). */
  const struct ioq_jf_rule *filter;
  size_t item_cost_max;
  unsigned page_limit;
  /* seconds without a byte after which a watch is dropped and re-opened
   * from its resourceVersion (0: IOQ_KUBE_WATCH_SILENCE_S) */
  unsigned watch_silence_s;
};

struct ioq_kube_informer;

/* path: collection, e.g. "/api/v1/pods"; field_selector may be NULL
 * (e.g. "spec.nodeName=node-a"). */
struct ioq_kube_informer *ioq_kube_informer_start(struct ioq_kube *k, const char *path,
                                                  const char *field_selector,
                                                  const struct ioq_kube_informer_cb *cb, void *ud,
                                                  ioq_err *e)
    __attribute__((warn_unused_result));
/* true once the first list has been delivered */
bool ioq_kube_informer_synced(struct ioq_kube_informer *inf);
/* number of (re)lists done, for metrics and tests */
unsigned long ioq_kube_informer_lists(struct ioq_kube_informer *inf);
/* Stops the thread (returns within about a second) and frees. */
void ioq_kube_informer_stop(struct ioq_kube_informer *inf);

#endif
