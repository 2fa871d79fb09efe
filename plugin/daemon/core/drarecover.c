// SPDX-License-Identifier: Apache-2.0
#include "drarecover.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draprepare.h"
#include "state/drastate.h"
#include "dra/drapod.h"
#include "base/fsutil.h"
#include "kube/kube.h"
#include "kube/kube_jfilter.h"
#include "base/log.h"
#include "support/metrics.h"
#include "plugin.h"
#include "base/grow.h"

/* What a pod costs here: the fields ioq_dra_pod_parse reads, never the
 * whole object (a tenant's pod may be megabytes of env and managedFields). */
#define SCALAR(k) {k, IOQ_JF_ICASE, NULL}
#define POD_UNIT_COST (64u * 1024u) /* 32 claim names of 253 bytes fit many times */
static const struct ioq_jf_rule R_NOTHING[] = {{NULL, 0, NULL}};
static const struct ioq_jf_rule R_META[] = {SCALAR("name"), SCALAR("namespace"), SCALAR("uid"),
                                            {NULL, 0, NULL}};
static const struct ioq_jf_rule R_CLAIMREF[] = {SCALAR("name"), SCALAR("resourceClaimName"),
                                                {NULL, 0, NULL}};
static const struct ioq_jf_rule R_SPEC[] = {{"resourceClaims", IOQ_JF_ICASE, R_CLAIMREF},
                                            {NULL, 0, NULL}};
static const struct ioq_jf_rule R_STATE[] = {{"running", IOQ_JF_ICASE, R_NOTHING},
                                             {"terminated", IOQ_JF_ICASE, R_NOTHING},
                                             {"waiting", IOQ_JF_ICASE, R_NOTHING},
                                             {NULL, 0, NULL}};
static const struct ioq_jf_rule R_CTR_STATUS[] = {{"state", IOQ_JF_ICASE, R_STATE},
                                                  {NULL, 0, NULL}};
static const struct ioq_jf_rule R_STATUS[] = {SCALAR("phase"),
                                              {"resourceClaimStatuses", IOQ_JF_ICASE, R_CLAIMREF},
                                              {"containerStatuses", IOQ_JF_ICASE, R_CTR_STATUS},
                                              {NULL, 0, NULL}};
static const struct ioq_jf_rule R_POD[] = {{"metadata", IOQ_JF_ICASE, R_META},
                                           {"spec", IOQ_JF_ICASE, R_SPEC},
                                           {"status", IOQ_JF_ICASE, R_STATUS},
                                           {NULL, 0, NULL}};
static const struct ioq_jf_rule R_LIST[] = {{"items", IOQ_JF_UNIT, R_POD}, {NULL, 0, NULL}};

/* one claim of one pod that kubelet may hold prepared */
struct candidate {
  char ns[IOQ_DRA_NS_MAX + 1];
  char claim[IOQ_DRA_OBJ_NAME_MAX + 1];
  char pod_name[IOQ_DRA_OBJ_NAME_MAX + 1];
  char pod_uid[IOQ_DRA_UID_MAX + 1];
};

struct gather {
  struct candidate *c;
  size_t n, cap;
  size_t pods;
  ioq_err err;
  bool failed;
};

static int add_candidates(struct gather *g, const struct ioq_dra_pod *pod) {
  for (size_t i = 0; i < pod->n_claims; i++) {
    if (g->n == DRASTATE_MAX_CLAIMS)
      return ioq_fail(&g->err, IOQ_EINVAL_INPUT,
                      "the node's pods name more than %d claims (the most kept)",
                      DRASTATE_MAX_CLAIMS);
    struct candidate *x = ioq_grow(g->c, &g->cap, g->n + 1, sizeof *x, 16);
    if (!x)
      return ioq_fail(&g->err, ENOMEM, "out of memory (claims of the node's pods)");
    g->c = x;
    struct candidate *c = &g->c[g->n++];
    ioq_copy_trunc(c->ns, sizeof c->ns, pod->ns);
    ioq_copy_trunc(c->claim, sizeof c->claim, pod->claims[i]);
    ioq_copy_trunc(c->pod_name, sizeof c->pod_name, pod->name);
    ioq_copy_trunc(c->pod_uid, sizeof c->pod_uid, pod->uid);
  }
  return 0;
}

static void on_pod(void *ud, json_object *unit, bool truncated) {
  struct gather *g = ud;
  if (g->failed)
    return;
  struct ioq_dra_pod *pod = malloc(sizeof *pod);
  ioq_err e;
  if (!pod) {
    g->failed = true;
    ioq_fail(&g->err, ENOMEM, "out of memory (a pod of the node)");
    return;
  }
  if (ioq_dra_pod_parse(unit, pod, &e) < 0) {
    /* a tenant's odd pod is no reason to give up on the others */
    ioq_warn("dra claim recovery: pod skipped reason=\"%s\"", e.msg);
  } else if (truncated) {
    ioq_warn("dra claim recovery: pod skipped pod=%s/%s reason=\"the fields read are larger than "
             "%u bytes: its claims are not all known\"",
             pod->ns, pod->name, POD_UNIT_COST);
  } else if (pod->may_hold && pod->n_claims) {
    g->pods++;
    if (add_candidates(g, pod) < 0)
      g->failed = true;
  }
  free(pod);
}

static int list_pods(struct plugin *p, struct gather *g, ioq_err *e) {
  char sel[300];
  snprintf(sel, sizeof sel, "spec.nodeName=%s", p->opts.node_name);
  char *esc = ioq_kube_escape(sel), path[700];
  if (!esc)
    return ioq_fail(e, ENOMEM, "out of memory (pod list path)");
  snprintf(path, sizeof path, "/api/v1/pods?fieldSelector=%s", esc);
  free(esc);
  const struct ioq_jf_rule root = {"", 0, R_LIST};
  long status = 0;
  if (ioq_kube_get_filtered(p->kube_rpc, path, &p->stopping, &root, POD_UNIT_COST, on_pod, g,
                            NULL, &status, e) < 0) {
    ioq_err_prefix(e, "list the node's pods");
    return -1;
  }
  if (g->failed) {
    *e = g->err;
    return -1;
  }
  return 0;
}

/* The claim of c read and recorded if it is this pod's alone and the file
 * lacks it: 1 recorded, 0 left alone (known, or kubelet done with it), 2
 * skipped (not this node's to enforce; logged), -1 + *e (the API server did
 * not answer, or the state file could not be saved). */
static int recover_one(struct plugin *p, const struct candidate *c, ioq_err *e) {
  struct ioq_dra_claim *claim = malloc(sizeof *claim);
  struct dra_rec *rec = malloc(sizeof *rec);
  struct ioq_disk *disks = NULL;
  size_t n_disks = 0;
  int rc = -1;
  ioq_err ce;
  if (!claim || !rec) {
    ioq_fail(e, ENOMEM, "out of memory (claim %s/%s)", c->ns, c->claim);
    goto out;
  }
  if (dra_fetch_claim(p, c->ns, NULL, c->claim, claim, &disks, &n_disks, &ce) < 0) {
    if (ce.code != IOQ_ENOTFOUND && ce.code != IOQ_EMISMATCH && ce.code != IOQ_EINVAL_INPUT) {
      *e = ce;
      goto out;
    }
    ioq_log(ce.code == IOQ_ENOTFOUND ? IOQ_LOG_DEBUG : IOQ_LOG_INFO,
            "dra claim recovery: claim skipped claim=%s/%s pod=%s/%s reason=\"%s\"", c->ns,
            c->claim, c->ns, c->pod_name, ce.msg);
    rc = 2;
    goto out;
  }
  if (claim->n_pods != 1 || strcmp(claim->pods[0], c->pod_uid) != 0) {
    ioq_info("dra claim recovery: claim skipped claim=%s/%s pod=%s/%s reason=\"reserved for %zu "
             "pods%s, prepare takes a claim of one pod only\"",
             c->ns, c->claim, c->ns, c->pod_name, claim->n_pods,
             claim->n_pods == 1 ? " (another UID)" : "");
    rc = 2;
    goto out;
  }
  dra_rec_of(claim, disks, rec);
  int a = drastate_adopt(p->dra, rec, e);
  if (a < 0) {
    ioq_err_prefix(e, "claim %s/%s", c->ns, c->claim);
    goto out;
  }
  for (size_t i = 0; a == 1 && i < rec->n_shares; i++)
    ioq_warn("dra claim recovered from the API server (the state file did not hold it) "
             "claim=%s/%s uid=%s pod=%s/%s pod_uid=%s disk=%s bandwidth_units=%llu iops_units=%llu",
             c->ns, c->claim, rec->claim_uid, c->ns, c->pod_name, c->pod_uid, rec->shares[i].disk,
             (unsigned long long)rec->shares[i].units[IOQ_RES_BANDWIDTH],
             (unsigned long long)rec->shares[i].units[IOQ_RES_IOPS]);
  if (a == 1)
    metrics_inc(p->metrics, C_DRA_RECOVERED);
  rc = a;
out:
  free(claim);
  free(rec);
  free(disks);
  return rc;
}

int dra_recover(struct plugin *p, struct dra_recover_stats *st, ioq_err *e) {
  memset(st, 0, sizeof *st);
  struct gather g = {0};
  int rc = -1;
  if (list_pods(p, &g, e) < 0)
    goto out;
  st->pods = g.pods;
  st->claims = g.n;
  for (size_t i = 0; i < g.n; i++) {
    int r = recover_one(p, &g.c[i], e);
    if (r < 0)
      goto out;
    st->recovered += r == 1;
    st->skipped += r == 2;
  }
  rc = 0;
out:
  free(g.c);
  return rc;
}
