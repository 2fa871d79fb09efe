// SPDX-License-Identifier: Apache-2.0
/* POST /bind: choose the disk, annotate the pod with it, bind the pod
 * through pods/binding, and remember the placement until the node reports
 * it. Binds to one node are serialised so they see each other.
 *
 * Defence in depth behind mutual TLS: bind acts with the extender's
 * pods/binding permission, so it binds only what kube-scheduler would ask it
 * to: a pod of a scheduler this extender serves (--scheduler-name), that
 * requests ioqos resources (kube-scheduler calls a binder extender only for
 * pods with its managedResources), onto a node in the node cache. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "decide.h"
#include "extender.h"
#include "podsync.h"
#include "base/log.h"

static void fail(struct extender *x, struct ext_reply *r, const char *fmt, const char *a,
                 const char *b, const char *msg) {
  ext_metrics_bind(x->metrics, 0);
  char head[600];
  snprintf(head, sizeof head, fmt, a, b);
  ioq_warn("bind failed %s error=\"%s\"", head, msg);
  ext_reply_error(r, 200, "ioqos extender: %s: %s", head, msg);
}

/* GET the pod and check it is the one kube-scheduler means. Its tree is
 * charged to the parse budget like a request body (*held keeps the charge
 * until ext_body_free, after the pod is put). */
static json_object *get_pod(struct extender *x, const struct ext_bind_args *b,
                            struct ext_body *held, ioq_err *e) {
  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", b->pod_namespace, b->pod_name);
  struct ioq_kube_resp resp;
  if (ioq_kube_do(x->kube, "GET", path, NULL, NULL, &resp, e) < 0)
    return NULL;
  if (resp.status < 200 || resp.status > 299) {
    ioq_fail(e, resp.status == 404 ? IOQ_ENOTFOUND : EIO, "GET %s: HTTP %ld: %.300s", path,
             resp.status, resp.len ? resp.body : "(empty reply)");
    ioq_kube_resp_free(&resp);
    return NULL;
  }
  int rc = ext_body_parse_text(held, resp.body, resp.len, x->budget);
  ioq_kube_resp_free(&resp);
  if (rc < 0) {
    ioq_fail(e, ENOMEM, "out of memory parsing the pod");
    return NULL;
  }
  if (held->err_status) {
    ioq_fail(e, held->err_status == 503 ? EAGAIN : IOQ_EINVAL_INPUT, "GET %s: %s", path, held->err);
    return NULL;
  }
  json_object *pod = ext_body_take(held);
  json_object *uid = ioq_json_field(ioq_json_field(pod, "metadata"), "uid");
  const char *u = uid && json_object_is_type(uid, json_type_string) ? json_object_get_string(uid) : "";
  if (b->pod_uid[0] && strcmp(u, b->pod_uid) != 0) {
    ioq_fail(e, IOQ_ECONFLICT, "pod has UID %s, the binding is for UID %s (pod was recreated)", u,
             b->pod_uid);
    json_object_put(pod);
    return NULL;
  }
  return pod;
}

/* The node's state, from the node cache (list+watch). Bind never GETs a
 * node: the extender's RBAC is nodes list/watch only (least privilege). The
 * entry stays owned by the cache and valid while *cache_locked. */
static const struct ext_nodeinfo *node_state(struct extender *x, const char *node,
                                             struct ext_nodeinfo *own, bool *cache_locked,
                                             ioq_err *e) {
  (void)own;
  *cache_locked = false;
  if (!x->cache) {
    ioq_fail(e, IOQ_EUNSUPPORTED, "bind needs the node cache (run with --node-cache=true)");
    return NULL;
  }
  if (!ext_nodecache_synced(x->cache)) {
    ioq_fail(e, EAGAIN, "the node cache has not listed nodes yet; retry");
    return NULL;
  }
  ext_nodecache_rdlock(x->cache);
  const struct ext_nodeinfo *ni = ext_nodecache_find(x->cache, node);
  if (!ni) {
    ext_nodecache_unlock(x->cache);
    ioq_fail(e, IOQ_ENOTFOUND, "node %s is not in the node cache (deleted, or not seen yet)", node);
    return NULL;
  }
  *cache_locked = true;
  return ni;
}

/* Chooses the disk and records the placement, under the node's bind lock.
 * Returns 0 with disk set, -1 with *e explaining why nothing fits. */
static int choose_and_assume(struct extender *x, const struct ext_bind_args *b,
                             const struct ioq_pod_need *pn, char *disk, size_t disksz, int *score,
                             ioq_err *e) {
  struct ext_node_lock *lk = ext_assumed_lock_node(x->assumed, b->node, e);
  if (!lk)
    return -1;
  struct ext_nodeinfo own = {0};
  bool cache_locked;
  int rc = -1;
  const struct ext_nodeinfo *ni = node_state(x, b->node, &own, &cache_locked, e);
  if (ni) {
    struct ioq_need need;
    ioq_pod_need_placement(pn, &need);
    char key[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 2];
    snprintf(key, sizeof key, "%s/%s", b->pod_namespace, b->pod_name);
    const char *self = pn->uid[0] ? pn->uid : key;
    struct ext_verdict v;
    /* its own earlier placement (a bind whose outcome was unknown) is
     * replaced below, so it does not count against this one */
    ext_decide(x->assumed, x->policy, &need, self, b->node, ni, &v);
    if (v.kind != EXT_FITS) {
      ioq_fail(e, IOQ_ECONFLICT, "no disk fits any more: %s", v.reason);
    } else {
      snprintf(disk, disksz, "%s", ni->st.disks[v.disk].name);
      *score = v.score;
      rc = ext_assumed_add(x->assumed, b->node, self, key, disk, pn->units, e);
    }
  }
  if (cache_locked)
    ext_nodecache_unlock(x->cache);
  ext_nodeinfo_free(&own);
  ext_assumed_unlock_node(lk);
  return rc;
}

static int annotate(struct extender *x, const struct ext_bind_args *b, const char *uid,
                    const char *disk, ioq_err *e) {
  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", b->pod_namespace, b->pod_name);
  json_object *patch = json_object_new_object(), *meta = json_object_new_object(),
              *ann = json_object_new_object();
  json_object_object_add(ann, IOQ_POD_DISK_ANNOTATION, json_object_new_string(disk));
  /* uid is immutable: naming it makes the patch fail on a recreated pod */
  if (uid[0])
    json_object_object_add(meta, "uid", json_object_new_string(uid));
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(patch, "metadata", meta);
  int rc = ioq_kube_merge_patch(x->kube, path, patch, NULL, NULL, e);
  json_object_put(patch);
  return rc;
}

static int post_binding(struct extender *x, const struct ext_bind_args *b, const char *uid,
                        long *status, ioq_err *e) {
  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s/binding", b->pod_namespace,
           b->pod_name);
  json_object *binding = json_object_new_object(), *meta = json_object_new_object(),
              *target = json_object_new_object();
  json_object_object_add(binding, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(binding, "kind", json_object_new_string("Binding"));
  json_object_object_add(meta, "name", json_object_new_string(b->pod_name));
  json_object_object_add(meta, "namespace", json_object_new_string(b->pod_namespace));
  if (uid[0]) /* the API server refuses the binding if the pod's UID differs */
    json_object_object_add(meta, "uid", json_object_new_string(uid));
  json_object_object_add(binding, "metadata", meta);
  json_object_object_add(target, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(target, "kind", json_object_new_string("Node"));
  json_object_object_add(target, "name", json_object_new_string(b->node));
  json_object_object_add(binding, "target", target);
  int rc = ioq_kube_send_json(x->kube, "POST", path, NULL, binding, NULL, status, e);
  json_object_put(binding);
  return rc;
}

void ext_bind(struct extender *x, json_object *body, struct ext_reply *r) {
  struct ext_bind_args b;
  ioq_err e = {0};
  if (ext_bind_args_parse(body, &b, &e) < 0) {
    ext_metrics_reject(x->metrics, EXT_REJECT_BAD_REQUEST);
    ext_metrics_pod(x->metrics, EXT_VERB_BIND, EXT_POD_INVALID);
    ext_reply_error(r, 400, "%s", e.msg);
    return;
  }
  if (!x->kube) {
    fail(x, r, "bind pod %s/%s", b.pod_namespace, b.pod_name,
         "this extender runs without Kubernetes API access, so it cannot bind; remove bindVerb "
         "or give it API access");
    return;
  }
  struct ext_body held = {0};
  json_object *pod = get_pod(x, &b, &held, &e);
  if (!pod) {
    ext_body_free(&held);
    fail(x, r, "bind pod %s/%s", b.pod_namespace, b.pod_name, e.msg);
    return;
  }
  /* a bound pod keeps its node and its disk: never re-place it (a retried
   * bind whose first reply was lost would otherwise move its annotation) */
  json_object *bound = ioq_json_field(ioq_json_field(pod, "spec"), "nodeName");
  if (bound && json_object_is_type(bound, json_type_string) && json_object_get_string_len(bound)) {
    char msg[320];
    snprintf(msg, sizeof msg, "pod is already bound to node %s", json_object_get_string(bound));
    json_object_put(pod);
    ext_body_free(&held);
    fail(x, r, "bind pod %s/%s", b.pod_namespace, b.pod_name, msg);
    return;
  }
  /* the API server defaults spec.schedulerName; absent only in a pod that
   * did not come from it */
  json_object *sn = ioq_json_field(ioq_json_field(pod, "spec"), "schedulerName");
  const char *sched = sn && json_object_is_type(sn, json_type_string) ? json_object_get_string(sn)
                                                                      : "default-scheduler";
  bool served = false;
  for (size_t i = 0; i < x->n_scheduler_names && !served; i++)
    served = strcmp(sched, x->scheduler_names[i]) == 0;
  if (!served) {
    char msg[400];
    snprintf(msg, sizeof msg,
             "pod has schedulerName %.253s, which this extender does not serve (--scheduler-name)",
             sched);
    json_object_put(pod);
    ext_body_free(&held);
    fail(x, r, "bind pod %s/%s", b.pod_namespace, b.pod_name, msg);
    return;
  }
  struct ioq_pod_need pn;
  int rc = ioq_pod_need_from_json(pod, &pn, &e);
  json_object_put(pod);
  ext_body_free(&held);
  if (rc < 0) {
    ext_metrics_pod(x->metrics, EXT_VERB_BIND, EXT_POD_INVALID);
    fail(x, r, "bind pod %s/%s", b.pod_namespace, b.pod_name, e.msg);
    return;
  }
  const char *uid = b.pod_uid[0] ? b.pod_uid : pn.uid;
  bool ioqos = ioq_pod_need_any(&pn);
  ext_metrics_pod(x->metrics, EXT_VERB_BIND, ioqos ? EXT_POD_IOQOS : EXT_POD_PASSTHROUGH);
  if (!ioqos) { /* nothing to place: never bind it */
    fail(x, r, "bind pod %s/%s", b.pod_namespace, b.pod_name,
         "pod requests no ioqos resource; this extender binds only pods that do (list them in "
         "the extender's managedResources)");
    return;
  }
  char disk[IOQ_DISK_NAME_MAX + 1] = "";
  int score = 0;
  char key[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 2];
  snprintf(key, sizeof key, "%s/%s", b.pod_namespace, b.pod_name);
  const char *assumed_id = pn.uid[0] ? pn.uid : key;

  if (!ext_podsync_ready(x->sync)) {
    fail(x, r, "bind pod %s to node %s", key, b.node,
         "the extender restarted and is still rebuilding its assumed placements from bound pods; "
         "retry");
    return;
  }
  /* fails for a node not in the node cache */
  if (choose_and_assume(x, &b, &pn, disk, sizeof disk, &score, &e) < 0) {
    fail(x, r, "bind pod %s to node %s", key, b.node, e.msg);
    return;
  }
  if (annotate(x, &b, uid, disk, &e) < 0) {
    ext_assumed_remove(x->assumed, b.node, assumed_id);
    ioq_err_prefix(&e, "annotate pod with %s=%s", IOQ_POD_DISK_ANNOTATION, disk);
    fail(x, r, "bind pod %s to node %s", key, b.node, e.msg);
    return;
  }
  long status = 0;
  if (post_binding(x, &b, uid, &status, &e) < 0) {
    /* No reply (a timeout, a reset connection): the binding may have been
     * committed, and then the pod will run on this disk. Keep the
     * assumption until the node reports the pod or the sweep sees it was
     * not bound, so no other pod is placed on those units meanwhile. */
    if (status == 0)
      ioq_warn("binding outcome unknown, keeping the assumed placement until the node reports "
               "the pod or it expires pod=%s node=%s disk=%s error=\"%s\"",
               key, b.node, disk, e.msg);
    else
      ext_assumed_remove(x->assumed, b.node, assumed_id);
    fail(x, r, "bind pod %s to node %s", key, b.node, e.msg);
    return;
  }
  ext_metrics_bind(x->metrics, 1);
  ioq_info("pod bound pod=%s node=%s disk=%s class=%s bandwidth=%llu iops=%llu score=%d", key,
           b.node, disk, pn.class_name, (unsigned long long)pn.units[IOQ_RES_BANDWIDTH],
           (unsigned long long)pn.units[IOQ_RES_IOPS], score);
  ext_reply_error(r, 200, "%s", "");
}
