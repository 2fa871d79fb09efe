// SPDX-License-Identifier: Apache-2.0
/* A pod's grant from the units kubelet lists for it (podgrant.h). */
#include "podgrant.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Containers of the List entry in pod spec order, with their kinds (unknown
 * names, e.g. the API object is older than kubelet's view, count as apps). */
struct ctr_order {
  struct ioq_ctr_units u;
  size_t spec_index;
};

static int by_spec_index(const void *a, const void *b) {
  const struct ctr_order *x = a, *y = b;
  return x->spec_index < y->spec_index ? -1 : x->spec_index > y->spec_index;
}

int podgrant_compute(const struct podres_pod *pr, const struct pod_info *pi,
                     char *const *init_ids, size_t n_init, struct ioq_pod_grant *g, ioq_err *e) {
  size_t n = pr->n_ctrs + (n_init ? 1 : 0);
  struct ctr_order *co = calloc(n ? n : 1, sizeof *co);
  if (!co)
    return ioq_fail(e, ENOMEM, "out of memory (container order of pod %s/%s)", pr->ns, pr->name);
  if (n_init) {
    /* Its place among the init containers is unknown: after every sidecar
     * (each running sidecar adds to an init container's need, so this is the
     * larger grant), before the app containers. Spec indexes are doubled to
     * leave room for it. */
    size_t n_spec_init = 0;
    for (size_t k = 0; pi && k < pi->n_ctrs; k++)
      n_spec_init += pi->ctrs[k].kind != IOQ_CTR_APP;
    co[pr->n_ctrs].u.name = "(init container)";
    co[pr->n_ctrs].u.kind = IOQ_CTR_INIT;
    co[pr->n_ctrs].u.ids = (const char *const *)init_ids;
    co[pr->n_ctrs].u.n_ids = n_init;
    co[pr->n_ctrs].spec_index = 2 * n_spec_init + 1;
  }
  for (size_t i = 0; i < pr->n_ctrs; i++) {
    co[i].u.name = pr->ctrs[i].name;
    co[i].u.kind = IOQ_CTR_APP;
    co[i].u.ids = (const char *const *)pr->ctrs[i].ids;
    co[i].u.n_ids = pr->ctrs[i].n_ids;
    co[i].spec_index = 2 * (POD_CTRS_MAX + i);
    for (size_t k = 0; pi && k < pi->n_ctrs; k++)
      if (strcmp(pi->ctrs[k].name, pr->ctrs[i].name) == 0) {
        co[i].u.kind = pi->ctrs[k].kind;
        co[i].spec_index = 2 * k;
        break;
      }
  }
  qsort(co, n, sizeof *co, by_spec_index);
  struct ioq_ctr_units *u = calloc(n ? n : 1, sizeof *u);
  int rc = -1;
  if (!u) {
    ioq_fail(e, ENOMEM, "out of memory (container units of pod %s/%s)", pr->ns, pr->name);
  } else {
    for (size_t i = 0; i < n; i++)
      u[i] = co[i].u;
    rc = ioq_grant_compute(u, n, g, e);
  }
  free(u);
  free(co);
  return rc;
}

bool podgrant_eq(const struct ioq_pod_grant *a, const struct ioq_pod_grant *b) {
  if (a->n != b->n)
    return false;
  for (size_t i = 0; i < a->n; i++) {
    const struct ioq_disk_grant *o = ioq_grant_find(b, a->disks[i].disk);
    if (!o || memcmp(o->units, a->disks[i].units, sizeof o->units) != 0)
      return false;
  }
  return true;
}
