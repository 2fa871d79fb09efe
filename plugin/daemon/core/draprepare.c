// SPDX-License-Identifier: Apache-2.0
#include "draprepare.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state/catalog.h"
#include "support/failreason.h"
#include "dra/draclaim.h"
#include "base/fsutil.h"
#include "base/k8sname.h"
#include "kube/kube.h"
#include "base/log.h"
#include "support/metrics.h"
#include "plugin.h"
#include "state/podcache.h"
#include "podtable.h"

#define CLAIM_PATH "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s"

/* kubelet's Claim fields become a URL path: only valid names pass. */
static int check_ref(const char *ns, const char *uid, const char *name, ioq_err *e) {
  if (!ns || !ioq_k8s_label_valid(ns))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim namespace '%.80s' is not a namespace name",
                    ns ? ns : "");
  if (!name || !ioq_k8s_subdomain_valid(name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim name '%.80s' is not a ResourceClaim name",
                    name ? name : "");
  if (!uid || !*uid || strlen(uid) > IOQ_DRA_UID_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim %s/%s: kubelet sent no usable UID", ns, name);
  return 0;
}

int dra_fetch_claim(struct plugin *p, const char *ns, const char *uid, const char *name,
                    struct ioq_dra_claim *c, struct ioq_disk **disks, size_t *n_disks,
                    ioq_err *e) {
  char path[sizeof CLAIM_PATH + IOQ_DRA_NS_MAX + IOQ_DRA_OBJ_NAME_MAX];
  snprintf(path, sizeof path, CLAIM_PATH, ns, name);
  struct ioq_kube_resp r = {0};
  if (ioq_kube_do(p->kube_rpc, "GET", path, NULL, NULL, &r, e) < 0) {
    ioq_err_prefix(e, "claim %s/%s: reading it from the API server", ns, name);
    return -1;
  }
  int rc = -1;
  if (r.status == 404) {
    ioq_fail(e, IOQ_ENOTFOUND, "claim %s/%s does not exist in the API server", ns, name);
    goto out;
  }
  if (r.status != 200) {
    char snippet[160];
    ioq_copy_trunc(snippet, sizeof snippet, r.body ? r.body : "");
    for (char *s = snippet; *s; s++)
      if (*s < 0x20 || *s == 0x7f)
        *s = ' ';
    ioq_fail(e, EIO, "claim %s/%s: GET %s answered HTTP %ld: %s", ns, name, path, r.status,
             snippet);
    goto out;
  }
  /* what the slice offers: the parser refuses the unpublishable ones */
  *n_disks = catalog_healthy_disks(p->catalog, disks);
  if (!*disks) {
    ioq_fail(e, ENOMEM, "out of memory (disks of the slice)");
    goto out;
  }
  struct ioq_dra_claim_want want = {.uid = uid,
                                    .driver = IOQ_DRA_DRIVER,
                                    .pool = p->opts.node_name,
                                    .disks = *disks,
                                    .n_disks = *n_disks};
  rc = ioq_dra_claim_parse(r.body, r.len, &want, c, e);
out:
  ioq_kube_resp_free(&r);
  return rc;
}

/* The pod the claim is for, as the pod cache (API server) shows it. */
static int claim_pod(struct plugin *p, const struct ioq_dra_claim *c, struct pod_info *pi,
                     ioq_err *e) {
  if (c->n_pods != 1)
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "claim %s/%s is reserved for %zu pods: an ioqos grant is per pod and kubelet "
                    "prepares a claim once per node, so the other pods would run unlimited; give "
                    "each pod its own claim (a ResourceClaimTemplate)",
                    c->ns, c->name, c->n_pods);
  if (!p->pods)
    return ioq_fail(e, EAGAIN, "claim %s/%s: the pod cache is not running", c->ns, c->name);
  if (podcache_get(p->pods, c->ns, c->pod_names[0], pi, e) < 0) {
    ioq_err_prefix(e, "claim %s/%s: its pod %s", c->ns, c->name, c->pod_names[0]);
    return -1;
  }
  if (strcmp(pi->uid, c->pods[0]) != 0)
    return ioq_fail(e, IOQ_EMISMATCH,
                    "claim %s/%s is reserved for pod %s with UID %s, the pod of that name has UID "
                    "%s (deleted and recreated?)",
                    c->ns, c->name, c->pod_names[0], c->pods[0], pi->uid);
  return 0;
}

void dra_rec_of(const struct ioq_dra_claim *c, const struct ioq_disk *disks, struct dra_rec *r) {
  memset(r, 0, sizeof *r);
  /* the parser bounds every field to these sizes */
  ioq_copy_trunc(r->claim_uid, sizeof r->claim_uid, c->uid);
  ioq_copy_trunc(r->ns, sizeof r->ns, c->ns);
  ioq_copy_trunc(r->name, sizeof r->name, c->name);
  ioq_copy_trunc(r->pod_uid, sizeof r->pod_uid, c->pods[0]);
  ioq_copy_trunc(r->pod_name, sizeof r->pod_name, c->pod_names[0]);
  for (size_t i = 0; i < c->n_shares; i++) {
    struct dra_share_rec *x = &r->shares[r->n_shares++];
    const struct ioq_dra_share *s = &c->shares[i];
    ioq_copy_trunc(x->disk, sizeof x->disk, disks[s->disk].dev.name);
    ioq_copy_trunc(x->device, sizeof x->device, s->device);
    ioq_copy_trunc(x->request, sizeof x->request, s->request);
    ioq_copy_trunc(x->share_id, sizeof x->share_id, s->share_id);
    memcpy(x->units, s->units, sizeof x->units);
  }
}

/* The pod's grant applied again from the pod table's sources (its claims
 * among them). DRA mode sells no device-plugin units, so kubelet's List
 * carries none for the pod: its entry is just the name. */
static int apply_pod(struct plugin *p, const struct pod_info *pi, struct podtable_result *res,
                     ioq_err *e) {
  struct podres_pod pr = {0};
  ioq_copy_trunc(pr.ns, sizeof pr.ns, pi->ns);
  ioq_copy_trunc(pr.name, sizeof pr.name, pi->name);
  return podtable_apply(p->table, &pr, pi, IOQ_RES_BANDWIDTH, NULL, 0, PODTABLE_PRESTART, res, e);
}

int dra_prepare_claim(struct plugin *p, const char *ns, const char *uid, const char *name,
                      struct dra_rec *out, ioq_err *e) {
  if (check_ref(ns, uid, name, e) < 0)
    return -1;
  struct ioq_dra_claim *c = calloc(1, sizeof *c);
  struct pod_info *pi = calloc(1, sizeof *pi);
  struct dra_rec *old = calloc(1, sizeof *old);
  struct podtable_result *res = calloc(1, sizeof *res);
  struct ioq_disk *disks = NULL;
  size_t n_disks = 0;
  int rc = -1;
  if (!c || !pi || !old || !res) {
    ioq_fail(e, ENOMEM, "out of memory (claim %s/%s)", ns, name);
    goto out;
  }
  if (dra_fetch_claim(p, ns, uid, name, c, &disks, &n_disks, e) < 0 || claim_pod(p, c, pi, e) < 0)
    goto out;
  dra_rec_of(c, disks, out);
  bool had = drastate_get(p->dra, uid, old);
  if (drastate_put(p->dra, out, e) < 0) {
    ioq_err_prefix(e, "claim %s/%s", ns, name);
    goto out;
  }
  if (apply_pod(p, pi, res, e) < 0) {
    metrics_err(p->metrics, fail_reason_counted(res->fail));
    ioq_err undo;
    /* fail closed: the claim is not prepared, as before this call */
    if ((had ? drastate_put(p->dra, old, &undo) : drastate_take(p->dra, uid, NULL, &undo)) < 0)
      ioq_error("dra claim state not rolled back claim=%s/%s uid=%s error=\"%s\"", ns, name, uid,
                undo.msg);
    ioq_err_prefix(e, "claim %s/%s", ns, name);
    goto out;
  }
  for (size_t i = 0; i < out->n_shares; i++)
    ioq_info("dra claim prepared claim=%s/%s uid=%s pod=%s/%s pod_uid=%s cgroup=%s disk=%s "
             "device=%s request=%s share_id=%s bandwidth_units=%llu iops_units=%llu writes=%u",
             ns, name, uid, ns, out->pod_name, out->pod_uid, res->cgroup, out->shares[i].disk,
             out->shares[i].device, out->shares[i].request,
             out->shares[i].share_id[0] ? out->shares[i].share_id : "-",
             (unsigned long long)out->shares[i].units[IOQ_RES_BANDWIDTH],
             (unsigned long long)out->shares[i].units[IOQ_RES_IOPS], res->writes);
  rc = 0;
out:
  free(c);
  free(pi);
  free(old);
  free(res);
  free(disks);
  return rc;
}

int dra_unprepare_claim(struct plugin *p, const char *ns, const char *uid, const char *name,
                        ioq_err *e) {
  if (check_ref(ns, uid, name, e) < 0)
    return -1;
  struct dra_rec *r = calloc(1, sizeof *r);
  struct pod_info *pi = calloc(1, sizeof *pi);
  struct podtable_result *res = calloc(1, sizeof *res);
  int rc = -1;
  if (!r || !pi || !res) {
    ioq_fail(e, ENOMEM, "out of memory (claim %s/%s)", ns, name);
    goto out;
  }
  int t = drastate_take(p->dra, uid, r, e);
  if (t < 0) {
    ioq_err_prefix(e, "claim %s/%s", ns, name);
    goto out;
  }
  if (t == 0) {
    ioq_debug("dra claim not prepared here, nothing to undo claim=%s/%s uid=%s", ns, name, uid);
    rc = 0;
    goto out;
  }
  /* the pod as the cache shows it; gone from the API (a deleted pod is
   * unprepared after its containers stopped): its UID finds the cgroup */
  ioq_err pe;
  if (!p->pods || podcache_get(p->pods, r->ns, r->pod_name, pi, &pe) < 0 ||
      strcmp(pi->uid, r->pod_uid) != 0) {
    memset(pi, 0, sizeof *pi);
    ioq_copy_trunc(pi->ns, sizeof pi->ns, r->ns);
    ioq_copy_trunc(pi->name, sizeof pi->name, r->pod_name);
    ioq_copy_trunc(pi->uid, sizeof pi->uid, r->pod_uid);
  }
  if (apply_pod(p, pi, res, e) < 0) {
    if (res->fail == FAIL_CGROUP) {
      /* no pod cgroup: the kernel dropped its limits with it */
      ioq_info("dra claim unprepared claim=%s/%s uid=%s pod=%s/%s reason=\"pod cgroup gone (%s)\"",
               ns, name, uid, r->ns, r->pod_name, e->msg);
      rc = 1;
      goto out;
    }
    ioq_err undo;
    if (drastate_put(p->dra, r, &undo) < 0)
      ioq_error("dra claim state not rolled back claim=%s/%s uid=%s error=\"%s\"", ns, name, uid,
                undo.msg);
    ioq_err_prefix(e, "claim %s/%s", ns, name);
    goto out;
  }
  ioq_info("dra claim unprepared claim=%s/%s uid=%s pod=%s/%s cgroup=%s writes=%u", ns, name, uid,
           r->ns, r->pod_name, res->cgroup, res->writes);
  rc = 1;
out:
  free(r);
  free(pi);
  free(res);
  return rc;
}
