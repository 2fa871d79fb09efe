// SPDX-License-Identifier: Apache-2.0
#include "podcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "base/k8sname.h"
#include "base/log.h"
#include "grant/nodeanno.h"
#include "base/grow.h"

/* What a pod costs the cache is the fields below, never the whole object:
 * the pods of the node are read through the streaming filter with these
 * rules (a tenant's pod of 22 000 env entries and their managedFields is
 * 1.4 MB of JSON and ~80 MB as a whole json-c tree). They name every field
 * pod_info_from_json and ioq_pod_need_from_json read; struct fields match
 * ignoring case as Go's decoder (and ioq_json_field) do, map keys exactly.
 * A field either of them starts to read needs a rule here (and a place in
 * tests/unit/test_plugin_podcache.c's RICH_POD, which checks the two agree). */
#define SCALAR(k) {k, IOQ_JF_ICASE, NULL}
static const struct ioq_jf_rule R_ANNOTATIONS[] = {
    {IOQ_POD_CLASS_ANNOTATION, 0, NULL}, {IOQ_POD_DISK_ANNOTATION, 0, NULL},
    {IOQ_POD_BURST_ANNOTATION, 0, NULL},  {NULL, 0, NULL}};
static const struct ioq_jf_rule R_META[] = {
    SCALAR("name"), SCALAR("namespace"), SCALAR("uid"), SCALAR("resourceVersion"),
    SCALAR("creationTimestamp"), SCALAR("deletionTimestamp"),
    {"annotations", IOQ_JF_ICASE, R_ANNOTATIONS}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_RESLIST[] = {
    {IOQ_RESOURCE_BANDWIDTH, 0, NULL}, {IOQ_RESOURCE_IOPS, 0, NULL}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_RESOURCES[] = {
    {"limits", IOQ_JF_ICASE, R_RESLIST}, {"requests", IOQ_JF_ICASE, R_RESLIST}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_CTR[] = {
    SCALAR("name"), SCALAR("restartPolicy"), {"resources", IOQ_JF_ICASE, R_RESOURCES},
    {NULL, 0, NULL}};
static const struct ioq_jf_rule R_SPEC[] = {
    {"containers", IOQ_JF_ICASE, R_CTR}, {"initContainers", IOQ_JF_ICASE, R_CTR}, {NULL, 0, NULL}};
/* an init container's state: which of running/terminated/waiting is set,
 * none of their contents (a terminated message alone may be 4 KiB) */
static const struct ioq_jf_rule R_NOTHING[] = {{NULL, 0, NULL}};
static const struct ioq_jf_rule R_STATE[] = {
    {"running", IOQ_JF_ICASE, R_NOTHING}, {"terminated", IOQ_JF_ICASE, R_NOTHING},
    {"waiting", IOQ_JF_ICASE, R_NOTHING}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_CTR_STATUS[] = {
    SCALAR("name"), {"state", IOQ_JF_ICASE, R_STATE}, {NULL, 0, NULL}};
static const struct ioq_jf_rule R_STATUS[] = {
    SCALAR("phase"), SCALAR("qosClass"), {"initContainerStatuses", IOQ_JF_ICASE, R_CTR_STATUS},
    {NULL, 0, NULL}};
const struct ioq_jf_rule podcache_pod_rules[] = {
    {"metadata", IOQ_JF_ICASE, R_META}, {"spec", IOQ_JF_ICASE, R_SPEC},
    {"status", IOQ_JF_ICASE, R_STATUS}, {NULL, 0, NULL}};

struct podcache {
  struct ioq_kube *k_rpc;
  struct ioq_kube_informer *inf;
  pthread_mutex_t lock;
  struct pod_info *pods;
  size_t n, cap;
  /* the list being gathered page by page (informer thread only) */
  struct pod_info *fresh;
  size_t fresh_n, fresh_cap;
  bool fresh_oom;
  void (*on_change)(void *ud);
  void *ud;
  atomic_ulong oversized; /* pod objects cut at their cost budget */
};

/* limit, else request, of resource r in a container ("0" when absent or not
 * a whole number: ioq_pod_need_from_json reports invalid specs) */
static uint64_t ctr_amount(json_object *ctr, enum ioq_resource r) {
  json_object *res = ioq_json_field(ctr, "resources");
  static const char *const lists[] = {"limits", "requests"};
  for (int i = 0; i < 2; i++) {
    json_object *l = ioq_json_field(res, lists[i]), *q = NULL;
    if (!l || !json_object_is_type(l, json_type_object) ||
        !json_object_object_get_ex(l, ioq_resource_name(r), &q) || !q)
      continue;
    uint64_t v;
    if (json_object_is_type(q, json_type_int))
      return json_object_get_int64(q) > 0 ? (uint64_t)json_object_get_int64(q) : 0;
    if (json_object_is_type(q, json_type_string) &&
        ioq_parse_quantity_int(json_object_get_string(q), &v, NULL) == 0)
      return v;
    return 0;
  }
  return 0;
}

static void read_ctrs(json_object *spec, const char *key, bool init, struct pod_info *out) {
  json_object *arr = ioq_json_field(spec, key);
  if (!arr || !json_object_is_type(arr, json_type_array))
    return;
  size_t n = json_object_array_length(arr);
  for (size_t i = 0; i < n && out->n_ctrs < POD_CTRS_MAX; i++) {
    json_object *c = json_object_array_get_idx(arr, i);
    struct pod_ctr *pc = &out->ctrs[out->n_ctrs++];
    const char *name = ioq_json_str(c, "name");
    if (!ioq_copy(pc->name, sizeof pc->name, name ? name : "")) {
      /* a cut name would match another container: this one is not listed */
      ioq_warn("pod %s/%s: container name too long, skipped name=%.80s", out->ns, out->name, name);
      memset(pc, 0, sizeof *pc);
      out->n_ctrs--;
      continue;
    }
    const char *rp = ioq_json_str(c, "restartPolicy");
    pc->kind = !init ? IOQ_CTR_APP : (rp && strcmp(rp, "Always") == 0) ? IOQ_CTR_SIDECAR
                                                                       : IOQ_CTR_INIT;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      pc->units[r] = ctr_amount(c, (enum ioq_resource)r);
  }
}

/* Which init containers run or ran (tells the asker of an ambiguous
 * init-only PreStart, prestart.c). */
static void read_init_states(json_object *status, struct pod_info *out) {
  json_object *arr = ioq_json_field(status, "initContainerStatuses");
  if (!arr || !json_object_is_type(arr, json_type_array))
    return;
  size_t n = json_object_array_length(arr);
  for (size_t i = 0; i < n && i < POD_CTRS_MAX; i++) {
    json_object *cs = json_object_array_get_idx(arr, i), *st = ioq_json_field(cs, "state");
    const char *name = ioq_json_str(cs, "name");
    for (size_t k = 0; name && st && k < out->n_ctrs; k++)
      if (out->ctrs[k].kind != IOQ_CTR_APP && strcmp(out->ctrs[k].name, name) == 0)
        out->ctrs[k].state = ioq_json_field(st, "running")      ? PCS_RUNNING
                             : ioq_json_field(st, "terminated") ? PCS_TERMINATED
                             : ioq_json_field(st, "waiting")    ? PCS_WAITING
                                                                : PCS_UNKNOWN;
  }
}

int pod_info_from_json(json_object *pod, struct pod_info *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  json_object *meta = ioq_json_field(pod, "metadata");
  json_object *spec = ioq_json_field(pod, "spec");
  json_object *status = ioq_json_field(pod, "status");
  const char *ns = ioq_json_str(meta, "namespace"), *name = ioq_json_str(meta, "name"),
             *uid = ioq_json_str(meta, "uid");
  if (!ns || !name)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod object without metadata.namespace/name");
  if (!ioq_copy(out->ns, sizeof out->ns, ns) || !ioq_copy(out->name, sizeof out->name, name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %.80s/%.80s: name too long", ns, name);
  if (!ioq_copy(out->uid, sizeof out->uid, uid ? uid : ""))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %.80s/%.80s: uid too long: %.80s", ns, name, uid);
  if (json_object_object_get_ex(pod, IOQ_JF_TRUNCATED_KEY, NULL)) {
    /* what we have of its spec may be partial: nothing is decided from it */
    out->oversized = true;
    ioq_warn("pod too large to read: the fields ioqos reads exceed %d KiB, its ioqos containers "
             "will not start here pod=%s/%s uid=%s",
             POD_COST_MAX / 1024, ns, name, out->uid);
    return 0;
  }
  const char *created = ioq_json_str(meta, "creationTimestamp");
  ioq_copy_trunc(out->created, sizeof out->created, created ? created : ""); /* a record */
  const char *phase = ioq_json_str(status, "phase");
  ioq_copy_trunc(out->phase, sizeof out->phase, phase ? phase : ""); /* a record */
  out->terminating = ioq_json_field(meta, "deletionTimestamp") != NULL;
  const char *qos = ioq_json_str(status, "qosClass");
  out->has_qos = qos && ioq_qos_parse(qos, &out->qos, NULL) == 0;
  ioq_err ne;
  out->need_ok = ioq_pod_need_from_json(pod, &out->need, &ne) == 0;
  if (!out->need_ok)
    ioq_debug("pod spec has invalid ioqos resources pod=%s/%s error=\"%s\"", ns, name, ne.msg);
  read_ctrs(spec, "initContainers", true, out);
  read_ctrs(spec, "containers", false, out);
  read_init_states(status, out);
  return 0;
}

/* ---- cache ---- */

static struct pod_info *find_locked(struct podcache *c, const char *ns, const char *name) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->pods[i].name, name) == 0 && strcmp(c->pods[i].ns, ns) == 0)
      return &c->pods[i];
  return NULL;
}

static int put_locked(struct podcache *c, const struct pod_info *p) {
  struct pod_info *old = find_locked(c, p->ns, p->name);
  if (old) {
    *old = *p;
    return 0;
  }
  struct pod_info *np = ioq_grow(c->pods, &c->cap, c->n + 1, sizeof *np, 64);
  if (!np)
    return -1;
  c->pods = np;
  c->pods[c->n++] = *p;
  return 0;
}

static void del_locked(struct podcache *c, const char *ns, const char *name) {
  struct pod_info *p = find_locked(c, ns, name);
  if (p)
    *p = c->pods[--c->n];
}

/* pod_info_from_json, counting the pods cut at their budget */
static int read_pod(struct podcache *c, json_object *obj, struct pod_info *out, ioq_err *e) {
  int rc = pod_info_from_json(obj, out, e);
  if (rc == 0 && out->oversized)
    atomic_fetch_add(&c->oversized, 1);
  return rc;
}

static void list_begin(void *ud) {
  struct podcache *c = ud;
  free(c->fresh);
  c->fresh = NULL;
  c->fresh_n = c->fresh_cap = 0;
  c->fresh_oom = false;
}

static void list_page(void *ud, json_object *items) {
  struct podcache *c = ud;
  size_t n = json_object_array_length(items);
  if (c->fresh_oom)
    return;
  if (c->fresh_n + n > c->fresh_cap) { /* (an empty page needs no room: fresh may stay NULL) */
    struct pod_info *np = ioq_grow(c->fresh, &c->fresh_cap, c->fresh_n + n, sizeof *np, 64);
    if (!np) {
      c->fresh_oom = true;
      return;
    }
    c->fresh = np;
  }
  for (size_t i = 0; i < n; i++) {
    ioq_err e;
    if (read_pod(c, json_object_array_get_idx(items, i), &c->fresh[c->fresh_n], &e) == 0)
      c->fresh_n++;
    else
      ioq_warn("pod cache skipped object error=\"%s\"", e.msg);
  }
}

static void list_end(void *ud, bool complete) {
  struct podcache *c = ud;
  if (!complete || c->fresh_oom) {
    if (c->fresh_oom)
      ioq_error("pod cache list dropped reason=out-of-memory pods=%zu", c->fresh_n);
    free(c->fresh);
    c->fresh = NULL;
    c->fresh_n = c->fresh_cap = 0;
    return;
  }
  size_t listed = c->fresh_n;
  pthread_mutex_lock(&c->lock);
  free(c->pods);
  c->pods = c->fresh;
  c->n = c->fresh_n;
  c->cap = c->fresh_cap;
  pthread_mutex_unlock(&c->lock);
  c->fresh = NULL;
  c->fresh_n = c->fresh_cap = 0;
  ioq_info("pod cache listed pods=%zu", listed);
  if (c->on_change)
    c->on_change(c->ud);
}

static void on_event(void *ud, const char *type, json_object *obj) {
  struct podcache *c = ud;
  struct pod_info *p = malloc(sizeof *p);
  ioq_err e;
  if (!p) {
    ioq_error("pod cache event dropped reason=out-of-memory");
    return;
  }
  if (read_pod(c, obj, p, &e) < 0) {
    ioq_warn("pod cache skipped event type=%s error=\"%s\"", type, e.msg);
    free(p);
    return;
  }
  pthread_mutex_lock(&c->lock);
  if (strcmp(type, "DELETED") == 0)
    del_locked(c, p->ns, p->name);
  else if (put_locked(c, p) < 0)
    ioq_error("pod cache event dropped reason=out-of-memory pod=%s/%s", p->ns, p->name);
  pthread_mutex_unlock(&c->lock);
  ioq_debug("pod event type=%s pod=%s/%s uid=%s phase=%s", type, p->ns, p->name, p->uid, p->phase);
  free(p);
  if (c->on_change)
    c->on_change(c->ud);
}

struct podcache *podcache_start(struct ioq_kube *k, struct ioq_kube *k_rpc, const char *node,
                                void (*on_change)(void *ud), void *ud, ioq_err *e) {
  struct podcache *c = calloc(1, sizeof *c);
  if (!c)
    return ioq_fail(e, ENOMEM, "pod cache: out of memory allocating the cache"), NULL;
  pthread_mutex_init(&c->lock, NULL);
  c->k_rpc = k_rpc;
  c->on_change = on_change;
  c->ud = ud;
  char sel[300];
  snprintf(sel, sizeof sel, "spec.nodeName=%s", node);
  static const struct ioq_kube_informer_cb cb = {.list_begin = list_begin,
                                                 .list_page = list_page,
                                                 .list_end = list_end,
                                                 .on_event = on_event,
                                                 .filter = podcache_pod_rules,
                                                 .item_cost_max = POD_COST_MAX,
                                                 .page_limit = POD_PAGE_LIMIT};
  c->inf = ioq_kube_informer_start(k, "/api/v1/pods", sel, &cb, c, e);
  if (!c->inf) {
    ioq_err_prefix(e, "pod cache");
    pthread_mutex_destroy(&c->lock);
    free(c);
    return NULL;
  }
  return c;
}

void podcache_stop(struct podcache *c) {
  if (!c)
    return;
  ioq_kube_informer_stop(c->inf);
  pthread_mutex_destroy(&c->lock);
  free(c->pods);
  free(c->fresh);
  free(c);
}

bool podcache_synced(struct podcache *c) { return c && ioq_kube_informer_synced(c->inf); }

unsigned long podcache_lists(struct podcache *c) { return c ? ioq_kube_informer_lists(c->inf) : 0; }

unsigned long podcache_oversized(struct podcache *c) { return c ? atomic_load(&c->oversized) : 0; }

bool podcache_peek(struct podcache *c, const char *ns, const char *name, struct pod_info *out) {
  if (!c)
    return false;
  pthread_mutex_lock(&c->lock);
  struct pod_info *p = find_locked(c, ns, name);
  if (p)
    *out = *p;
  pthread_mutex_unlock(&c->lock);
  return p != NULL;
}

static int refuse_oversized(const struct pod_info *p, ioq_err *e) {
  return ioq_fail(e, EFBIG,
                  "pod %s/%s: the fields ioqos reads exceed %d KiB (thousands of containers or "
                  "huge ioqos annotations); not acting on a partial spec",
                  p->ns, p->name, POD_COST_MAX / 1024);
}

/* on_unit of a single pod GET */
static void keep_unit(void *ud, json_object *unit, bool truncated) {
  (void)truncated; /* marked in the object */
  json_object **slot = ud;
  json_object_put(*slot);
  *slot = json_object_get(unit);
}

int podcache_get(struct podcache *c, const char *ns, const char *name, struct pod_info *out,
                 ioq_err *e) {
  if (podcache_peek(c, ns, name, out))
    return out->oversized ? refuse_oversized(out, e) : 0;
  /* ns and name come from kubelet (pod resources): checked before they
   * become a URL path, so ".." cannot make the GET reach another object */
  if (!ioq_k8s_label_valid(ns) || !ioq_k8s_subdomain_valid(name))
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "pod %.80s/%.80s: not a valid namespace (DNS-1123 label) and pod name "
                    "(DNS-1123 subdomain)",
                    ns, name);
  char path[600];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
  json_object *obj = NULL;
  long status = 0;
  static const struct ioq_jf_rule root = {"", IOQ_JF_UNIT, podcache_pod_rules};
  if (ioq_kube_get_filtered(c->k_rpc, path, NULL, &root, POD_COST_MAX, keep_unit, &obj, NULL,
                            &status, e) < 0) {
    json_object_put(obj);
    if (status == 404)
      e->code = IOQ_ENOTFOUND;
    ioq_err_prefix(e, "pod %s/%s not in the cache; GET", ns, name);
    return -1;
  }
  if (!obj) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s/%s not in the cache; GET: reply is not an object", ns,
             name);
    return -1;
  }
  int rc = read_pod(c, obj, out, e);
  json_object_put(obj);
  if (rc < 0)
    return -1;
  pthread_mutex_lock(&c->lock);
  if (!find_locked(c, ns, name)) /* the watch may have brought it meanwhile */
    put_locked(c, out);
  pthread_mutex_unlock(&c->lock);
  ioq_info("pod fetched on cache miss pod=%s/%s uid=%s", ns, name, out->uid);
  return out->oversized ? refuse_oversized(out, e) : 0;
}

size_t podcache_candidates(struct podcache *c, enum ioq_resource r, uint64_t size,
                           bool (*skip)(void *ud, const struct pod_info *p, enum ioq_resource r),
                           void *ud, struct pod_info *out, size_t max) {
  size_t found = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->n; i++) {
    const struct pod_info *p = &c->pods[i];
    if (strcmp(p->phase, "Pending") != 0 || p->terminating)
      continue;
    bool asks = false;
    for (size_t k = 0; k < p->n_ctrs && !asks; k++)
      asks = p->ctrs[k].units[r] == size;
    if (!asks || (skip && skip(ud, p, r)))
      continue;
    if (found < max)
      out[found] = *p;
    found++;
  }
  pthread_mutex_unlock(&c->lock);
  return found;
}

size_t podcache_snapshot(struct podcache *c, struct pod_info **out) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->n;
  *out = malloc((n ? n : 1) * sizeof **out);
  if (*out && n)
    memcpy(*out, c->pods, n * sizeof **out);
  else if (!*out)
    n = 0;
  pthread_mutex_unlock(&c->lock);
  return n;
}

bool pod_phase_terminal(const char *phase) {
  return strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
}

size_t podcache_drop_terminal(struct podcache *c, struct podres_list *l) {
  if (!c)
    return 0;
  size_t kept = 0, dropped = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < l->n; i++) {
    struct podres_pod *pp = &l->pods[i];
    const struct pod_info *pi = find_locked(c, pp->ns, pp->name);
    if (pi && pod_phase_terminal(pi->phase)) {
      if (pp->n_ctrs)
        ioq_debug("pod resources List: skipping a %s pod pod=%s/%s", pi->phase, pp->ns, pp->name);
      podres_pod_free(pp);
      dropped++;
      continue;
    }
    l->pods[kept++] = *pp;
  }
  l->n = kept;
  pthread_mutex_unlock(&c->lock);
  return dropped;
}
