// SPDX-License-Identifier: Apache-2.0
#include "podres.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "podresources/v1/api.pb-c.h"
#include "support/rpc_client.h"

#define LIST_METHOD "/v1.PodResourcesLister/List"

static bool is_ioqos(const char *resource_name) {
  enum ioq_resource r;
  return resource_name && ioq_resource_from_name(resource_name, &r) == 0;
}

static void ctr_free(struct podres_ctr *c) {
  for (size_t i = 0; i < c->n_ids; i++)
    free(c->ids[i]);
  free(c->ids);
}

void podres_pod_free(struct podres_pod *p) {
  for (size_t k = 0; k < p->n_ctrs; k++)
    ctr_free(&p->ctrs[k]);
  free(p->ctrs);
  p->ctrs = NULL;
  p->n_ctrs = 0;
}

void podres_list_free(struct podres_list *l) {
  for (size_t i = 0; i < l->n; i++)
    podres_pod_free(&l->pods[i]);
  free(l->pods);
  l->pods = NULL;
  l->n = 0;
}

/* Copies a container's ioqos IDs; 0 with n_ids = 0 if it has none. */
static int copy_ctr(const V1__ContainerResources *src, struct podres_ctr *dst, ioq_err *e) {
  size_t n = 0;
  for (size_t d = 0; d < src->n_devices; d++)
    if (is_ioqos(src->devices[d]->resource_name))
      n += src->devices[d]->n_device_ids;
  memset(dst, 0, sizeof *dst);
  if (!ioq_copy(dst->name, sizeof dst->name, src->name ? src->name : ""))
    return ioq_fail(e, ENAMETOOLONG, "pod resources: container name too long: %.80s", src->name);
  if (!n)
    return 0;
  dst->ids = calloc(n, sizeof *dst->ids);
  if (!dst->ids)
    return ioq_fail(e, ENOMEM, "pod resources: out of memory for a container's IDs");
  for (size_t d = 0; d < src->n_devices; d++) {
    const V1__ContainerDevices *cd = src->devices[d];
    if (!is_ioqos(cd->resource_name))
      continue;
    for (size_t k = 0; k < cd->n_device_ids; k++) {
      if (!(dst->ids[dst->n_ids] = strdup(cd->device_ids[k] ? cd->device_ids[k] : "")))
        return ioq_fail(e, ENOMEM, "pod resources: out of memory copying a device ID");
      dst->n_ids++;
    }
  }
  return 0;
}

int podres_list(const char *socket, long timeout_ms, struct podres_list *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  double asked_at = ioq_mono_s();
  V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
  ProtobufCMessage *resp_msg = NULL;
  if (rpc_call_unary(socket, LIST_METHOD, &req.base, &v1__list_pod_resources_response__descriptor,
                     &resp_msg, timeout_ms, NULL, e) < 0)
    return -1;
  V1__ListPodResourcesResponse *resp = (V1__ListPodResourcesResponse *)resp_msg;
  out->asked_at = asked_at;
  int rc = -1;
  out->pods = calloc(resp->n_pod_resources ? resp->n_pod_resources : 1, sizeof *out->pods);
  if (!out->pods) {
    ioq_fail(e, ENOMEM, "pod resources: out of memory for the pod list");
    goto done;
  }
  for (size_t i = 0; i < resp->n_pod_resources; i++) {
    const V1__PodResources *pr = resp->pod_resources[i];
    struct podres_pod *p = &out->pods[out->n];
    memset(p, 0, sizeof *p);
    p->ctrs = calloc(pr->n_containers ? pr->n_containers : 1, sizeof *p->ctrs);
    if (!p->ctrs) {
      ioq_fail(e, ENOMEM, "pod resources: out of memory for a pod's containers");
      goto done;
    }
    out->n++; /* owned from here on, freed with the list */
    if (!ioq_copy(p->ns, sizeof p->ns, pr->namespace_ ? pr->namespace_ : "") ||
        !ioq_copy(p->name, sizeof p->name, pr->name ? pr->name : "")) {
      ioq_fail(e, ENAMETOOLONG, "pod resources: pod name too long: %.80s/%.80s",
               pr->namespace_ ? pr->namespace_ : "", pr->name ? pr->name : "");
      goto done;
    }
    for (size_t k = 0; k < pr->n_containers; k++) {
      struct podres_ctr c;
      if (copy_ctr(pr->containers[k], &c, e) < 0) {
        ctr_free(&c);
        goto done;
      }
      if (c.n_ids)
        p->ctrs[p->n_ctrs++] = c;
    }
  }
  rc = 0;
done:
  protobuf_c_message_free_unpacked(resp_msg, NULL);
  if (rc < 0)
    podres_list_free(out);
  return rc;
}

static bool ctr_has(const struct podres_ctr *c, const char *id) {
  for (size_t i = 0; i < c->n_ids; i++)
    if (strcmp(c->ids[i], id) == 0)
      return true;
  return false;
}

bool podres_pod_has(const struct podres_pod *p, const char *id) {
  for (size_t k = 0; k < p->n_ctrs; k++)
    if (ctr_has(&p->ctrs[k], id))
      return true;
  return false;
}

/* The asked IDs are sorted once and every listed ID is looked up in them:
 * O((n + listed) log n), so a pod holding 100 k units is found in
 * milliseconds (a scan per asked ID took minutes). */
const struct podres_pod *podres_find_ids(const struct podres_list *l, char *const *ids, size_t n,
                                         size_t *missing) {
  const struct podres_pod *best = NULL;
  size_t best_n = 0;
  const char **asked = malloc((n ? n : 1) * sizeof *asked);
  size_t *stamp = calloc(n ? n : 1, sizeof *stamp); /* pod index + 1 that matched it */
  if (!asked || !stamp) {
    ioq_error("pod resources match failed reason=out-of-memory ids=%zu", n);
    free(asked);
    free(stamp);
    if (missing)
      *missing = n;
    return NULL;
  }
  for (size_t j = 0; j < n; j++)
    asked[j] = ids[j] ? ids[j] : "";
  ioq_ids_sort(asked, n);
  for (size_t i = 0; i < l->n; i++) {
    size_t held = 0;
    const struct podres_pod *p = &l->pods[i];
    for (size_t k = 0; k < p->n_ctrs; k++)
      for (size_t q = 0; q < p->ctrs[k].n_ids; q++) {
        long at = ioq_ids_find(asked, n, p->ctrs[k].ids[q]);
        if (at < 0)
          continue;
        /* an asked ID repeated counts as often as it was asked (as before);
         * an ID in two containers of the pod counts once */
        size_t lo = (size_t)at, hi = (size_t)at + 1;
        while (lo > 0 && strcmp(asked[lo - 1], asked[at]) == 0)
          lo--;
        while (hi < n && strcmp(asked[hi], asked[at]) == 0)
          hi++;
        if (stamp[lo] == i + 1)
          continue;
        for (size_t s = lo; s < hi; s++)
          stamp[s] = i + 1;
        held += hi - lo;
      }
    if (held > best_n) {
      best = p;
      best_n = held;
    }
  }
  free(asked);
  free(stamp);
  if (missing)
    *missing = n - best_n;
  return best;
}

const struct podres_pod *podres_find_pod(const struct podres_list *l, const char *ns,
                                         const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->pods[i].ns, ns) == 0 && strcmp(l->pods[i].name, name) == 0)
      return &l->pods[i];
  return NULL;
}

size_t podres_pod_count(const struct podres_pod *p, enum ioq_resource r) {
  size_t total = 0;
  for (size_t k = 0; k < p->n_ctrs; k++)
    total += p->ctrs[k].n_ids;
  const char **ids = malloc((total ? total : 1) * sizeof *ids);
  if (!ids) {
    ioq_error("pod resources count failed reason=out-of-memory pod=%s/%s", p->ns, p->name);
    return 0;
  }
  size_t m = 0;
  for (size_t k = 0; k < p->n_ctrs; k++)
    for (size_t i = 0; i < p->ctrs[k].n_ids; i++) {
      struct ioq_unit_id u;
      if (ioq_unit_id_parse(p->ctrs[k].ids[i], &u, NULL) == 0 && u.res == r)
        ids[m++] = p->ctrs[k].ids[i];
    }
  /* an init container's IDs are handed on to app containers: count once
   * (sorted, so repeats are neighbours) */
  ioq_ids_sort(ids, m);
  size_t n = 0;
  for (size_t i = 0; i < m; i++)
    n += i == 0 || strcmp(ids[i], ids[i - 1]) != 0;
  free(ids);
  return n;
}
