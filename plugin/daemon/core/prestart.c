// SPDX-License-Identifier: Apache-2.0
/* PreStartContainer: the last moment before the container exists. Find the
 * pod holding the units (pod resources List, by name + namespace), learn its
 * UID and QoS class (pod cache, GET on a miss), write the pod-level grant
 * into its cgroup and read it back, and only then answer. kubelet starts the
 * container after our answer, so its first I/O is already limited.
 *
 * Failure: a gRPC error saying why plus an Event on the pod. Fail-closed by
 * default (kubelet does not start the container and retries with backoff);
 * with enforcement.failOpen the container starts unthrottled, loudly. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/catalog.h"
#include "deviceplugin/v1beta1/api.pb-c.h"
#include "podtable.h"
#include "support/events.h"
#include "support/grpcs.h"
#include "initpick.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "support/metrics.h"
#include "base/monoclock.h"
#include "plugin.h"
#include "state/podcache.h"
#include "state/podres.h"
#include "prestart.h"
#include "reconcile.h"
#include "ungranted.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* Answers OK (fail-open) or with the error; logs and counts either way. */
static void fail(struct plugin *p, enum ioq_resource r, struct grpcs_reply *out,
                 grpc_status_code code, enum fail_reason why, const char *pod_ns,
                 const char *pod_name, const char *uid, const char *msg) {
  metrics_err(p->metrics, why);
  bool open = plugin_cfg(p)->enforcement.fail_open && why != FAIL_INVALID_IDS;
  ioq_error("prestart failed resource=%s pod=%s/%s reason=%s fail_open=%s error=\"%s\"",
            ioq_resource_name(r), pod_ns ? pod_ns : "?", pod_name ? pod_name : "?",
            fail_reason_name(why), open ? "true" : "false", msg);
  if (pod_ns && pod_name)
    events_post(p->events, pod_ns, pod_name, uid ? uid : "", "Warning",
                open ? "IoqosEnforceFailedOpen" : "IoqosEnforceFailed",
                "%s limits not applied (%s): %s%s", ioq_resource_name(r), fail_reason_name(why),
                msg,
                open ? "; failOpen is set, so the container starts WITHOUT I/O limits"
                     : "; the container will not start until this is fixed (kubelet retries)");
  else
    events_post(p->events, NULL, NULL, NULL, "Warning", "IoqosEnforceFailed",
                "%s limits not applied (%s): %s", ioq_resource_name(r), fail_reason_name(why), msg);
  if (open) {
    metrics_inc(p->metrics, C_FAIL_OPEN);
    V1beta1__PreStartContainerResponse ok = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
    grpcs_reply_pack(out, &ok.base);
    return;
  }
  grpcs_reply_error(out, code, "ioqos: %s", msg);
}

/* Tries of the List after which a PreStart whose IDs no listed pod holds is
 * taken for a regular init container of a pod whose other containers do not
 * ask for this resource (kubelet lists sidecars and app containers only). */
#define INIT_ONLY_AFTER_TRIES 2

/* The pods whose regular init container may be asking for these n units of
 * r when no listed container holds any of them (initpick.h judges each
 * listed pod): the asker alone when one is certain. Nothing
 * kubelet says tells the others apart, and guessing one would leave the
 * asker unthrottled whenever the guess is wrong (a decoy pod whose init image
 * never pulls is never corrected by its own PreStart): the caller writes the
 * limit to every candidate, each asking for exactly n by its own spec, until
 * the pod status shows which one runs (reconcile.c). *out (malloc'd) holds
 * pointers into l; returns how many. */
static size_t init_only_pods(struct plugin *p, const struct podres_list *l, enum ioq_resource r,
                             char *const *ids, size_t n, const struct podres_pod ***out) {
  *out = NULL;
  struct ioq_unit_id u;
  /* a cache still listing would miss the asker and name another pod */
  if (!p->pods || !podcache_synced(p->pods) || ioq_unit_id_parse(ids[0], &u, NULL) < 0)
    return 0;
  struct pod_info *pi = malloc(sizeof *pi);
  const struct podres_pod **c = calloc(l->n ? l->n : 1, sizeof *c);
  if (!pi || !c) {
    free(pi);
    free(c);
    return 0;
  }
  size_t nc = 0;
  for (size_t i = 0; i < l->n; i++) {
    const struct podres_pod *pr = &l->pods[i];
    uint64_t listed = podres_pod_count(pr, r);
    if (listed || !podcache_peek(p->pods, pr->ns, pr->name, pi) ||
        !initpick_may_ask(pi, listed, u.disk, r, n))
      continue;
    int held = podtable_init_held(p->table, pr->ns, pr->name, pi->uid, (int)r, ids, n);
    enum initpick j = initpick_judge(pi, listed, u.disk, r, n, held);
    if (j == INITPICK_ASKER) {
      c[0] = pr;
      nc = 1;
      break;
    }
    if (j == INITPICK_MAYBE)
      c[nc++] = pr;
  }
  free(pi);
  if (!nc)
    free(c);
  else
    *out = c;
  return nc;
}

/* Writes the init container's units to every candidate pod (see
 * init_only_pods); a candidate without a pod cgroup cannot be starting a
 * container and is skipped. Answers OK once every other one has its limit. */
static void apply_to_candidates(struct plugin *p, enum ioq_resource r, char *const *ids, size_t n,
                                const struct podres_pod **c, size_t nc, struct grpcs_reply *out) {
  struct pod_info *pi = calloc(1, sizeof *pi);
  if (!pi) {
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED,
                      "out of memory (pod info of init container candidates)");
    return;
  }
  size_t applied = 0;
  for (size_t i = 0; i < nc; i++) {
    ioq_err e;
    struct podtable_result res;
    if (podcache_get(p->pods, c[i]->ns, c[i]->name, pi, &e) < 0) {
      fail(p, r, out, e.code == IOQ_ENOTFOUND ? GRPC_STATUS_NOT_FOUND : GRPC_STATUS_UNAVAILABLE,
           FAIL_POD_LOOKUP, c[i]->ns, c[i]->name, NULL, e.msg);
      free(pi);
      return;
    }
    if (podtable_apply(p->table, c[i], pi, r, ids, n, PODTABLE_PRESTART | PODTABLE_GUESS, &res,
                      &e) < 0) {
      if (res.fail == FAIL_CGROUP) {
        ioq_info("ambiguous init container start: candidate without a pod cgroup skipped "
                 "pod=%s/%s error=\"%s\"",
                 c[i]->ns, c[i]->name, e.msg);
        continue;
      }
      fail(p, r, out, GRPC_STATUS_INTERNAL, fail_reason_counted(res.fail), c[i]->ns, c[i]->name,
           pi->uid, e.msg);
      free(pi);
      return;
    }
    applied++;
    ioq_info("prestart done (ambiguous init container, limit written to candidate) resource=%s "
             "pod=%s/%s uid=%s cgroup=%s disks=%zu writes=%u",
             ioq_resource_name(r), c[i]->ns, c[i]->name, pi->uid, res.cgroup, res.grant.n,
             res.writes);
  }
  free(pi);
  if (!applied) {
    fail(p, r, out, GRPC_STATUS_FAILED_PRECONDITION, FAIL_CGROUP, NULL, NULL, NULL,
         "no candidate pod of an init container start has a pod cgroup");
    return;
  }
  metrics_inc(p->metrics, C_ENFORCE_OK);
  ungranted_sync(p->ug);
  V1beta1__PreStartContainerResponse ok = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
  grpcs_reply_pack(out, &ok.base);
  reconciler_kick(p->rec);
}

void prestart_handle(struct plugin *p, enum ioq_resource r, char *const *ids, size_t n,
                     struct grpcs_reply *out) {
  ioq_err e;
  struct id_tally t;
  if (catalog_check_ids(p->catalog, r, ids, n, &t, &e) < 0) {
    fail(p, r, out, GRPC_STATUS_INVALID_ARGUMENT, FAIL_INVALID_IDS, NULL, NULL, NULL, e.msg);
    return;
  }
  id_tally_free(&t);

  /* kubelet lists the pod's IDs once admission allocated them, which is
   * before PreStart; still, allow a short grace for a racing List. */
  struct podres_list list = {0};
  const struct podres_pod *pr = NULL;
  size_t missing = 0, n_cands = 0;
  const struct podres_pod **cands = NULL;
  char last_err[IOQ_ERR_MSG_MAX] = "";
  double give_up = ioq_mono_s() + PRESTART_LIST_BUDGET_MS / 1000.0;
  int attempt = 0;
  for (; attempt < PRESTART_LIST_TRIES && !atomic_load(&p->stopping); attempt++) {
    double left_ms = (give_up - ioq_mono_s()) * 1000.0;
    if (attempt && left_ms < PRESTART_LIST_RETRY_MS + 100)
      break;
    if (attempt)
      sleep_ms(PRESTART_LIST_RETRY_MS);
    long timeout = PODRES_TIMEOUT_MS;
    if (attempt && (long)left_ms - PRESTART_LIST_RETRY_MS < timeout)
      timeout = (long)left_ms - PRESTART_LIST_RETRY_MS;
    podres_list_free(&list);
    if (podres_list(p->opts.pod_resources_socket, timeout, &list, &e) < 0) {
      snprintf(last_err, sizeof last_err, "%s", e.msg);
      continue;
    }
    last_err[0] = '\0';
    if ((pr = podres_find_ids(&list, ids, n, &missing)))
      break;
    if (attempt + 1 >= INIT_ONLY_AFTER_TRIES &&
        (n_cands = init_only_pods(p, &list, r, ids, n, &cands))) {
      missing = n;
      pr = cands[0];
      break;
    }
  }
  if (n_cands > 1) {
    ioq_warn("prestart of a regular init container: %zu pending pods have one asking for exactly "
             "%zu %s units and kubelet does not say which asks; limiting every one of them until "
             "the pod status shows which runs",
             n_cands, n, ioq_resource_name(r));
    apply_to_candidates(p, r, ids, n, cands, n_cands, out);
    free(cands);
    podres_list_free(&list);
    return;
  }
  free(cands);
  if (!pr) {
    char msg[IOQ_ERR_MSG_MAX];
    if (last_err[0]) {
      snprintf(msg, sizeof msg, "pod resources API: %s", last_err);
      fail(p, r, out, GRPC_STATUS_UNAVAILABLE, FAIL_PODRES, NULL, NULL, NULL, msg);
    } else {
      snprintf(msg, sizeof msg,
               "no pod holds units %s%s (%zu IDs) in kubelet's pod resources List after %d tries",
               ids[0], n > 1 ? ",..." : "", n, attempt);
      fail(p, r, out, GRPC_STATUS_NOT_FOUND, FAIL_NOT_LISTED, NULL, NULL, NULL, msg);
    }
    podres_list_free(&list);
    return;
  }

  struct pod_info *pi = calloc(1, sizeof *pi);
  if (!pi) {
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED,
                      "out of memory (pod info of the PreStart)");
    podres_list_free(&list);
    return;
  }
  if (!p->pods) {
    fail(p, r, out, GRPC_STATUS_UNAVAILABLE, FAIL_POD_LOOKUP, pr->ns, pr->name, NULL,
         "no Kubernetes API client: cannot learn the pod's UID and QoS class");
  } else if (podcache_get(p->pods, pr->ns, pr->name, pi, &e) < 0) {
    fail(p, r, out, e.code == IOQ_ENOTFOUND ? GRPC_STATUS_NOT_FOUND : GRPC_STATUS_UNAVAILABLE,
         FAIL_POD_LOOKUP, pr->ns, pr->name, NULL, e.msg);
  } else {
    /* Some IDs the pod holds but no listed container does: this is a
     * regular init container (kubelet lists sidecars and app containers
     * only), and the request carries all of its units of this resource. */
    char *const *init_ids = missing ? ids : NULL;
    size_t n_init = missing ? n : 0;
    if (n_init)
      ioq_info("prestart of a container kubelet does not list (init container) resource=%s "
               "pod=%s/%s units=%zu",
               ioq_resource_name(r), pr->ns, pr->name, n_init);
    struct podtable_result res;
    if (podtable_apply(p->table, pr, pi, r, init_ids, n_init, PODTABLE_PRESTART, &res, &e) < 0) {
      fail(p, r, out, res.fail == FAIL_CGROUP ? GRPC_STATUS_FAILED_PRECONDITION
                                            : GRPC_STATUS_INTERNAL,
           fail_reason_counted(res.fail), pr->ns, pr->name, pi->uid, e.msg);
    } else {
      metrics_inc(p->metrics, C_ENFORCE_OK);
      /* the held units grew: shrink the pool of the pods without a grant
       * before this container's first I/O */
      ungranted_sync(p->ug);
      ioq_info("prestart done resource=%s pod=%s/%s uid=%s cgroup=%s disks=%zu writes=%u",
               ioq_resource_name(r), pr->ns, pr->name, pi->uid, res.cgroup, res.grant.n,
               res.writes);
      V1beta1__PreStartContainerResponse ok = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
      grpcs_reply_pack(out, &ok.base);
      reconciler_kick(p->rec); /* allocated units changed: republish soon */
    }
  }
  free(pi);
  podres_list_free(&list);
}
