// SPDX-License-Identifier: Apache-2.0
#include "grant/grant.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_name(enum ioq_ctr_kind k) {
  return k == IOQ_CTR_INIT ? "init container" : k == IOQ_CTR_SIDECAR ? "sidecar" : "container";
}

static int disk_index(struct ioq_pod_grant *g, const char *disk, ioq_err *e) {
  for (size_t i = 0; i < g->n; i++)
    if (strcmp(g->disks[i].disk, disk) == 0)
      return (int)i;
  if (g->n >= IOQ_POD_DISKS_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod holds units of more than %d disks",
                    IOQ_POD_DISKS_MAX);
  snprintf(g->disks[g->n].disk, sizeof g->disks[g->n].disk, "%s", disk);
  return (int)g->n++;
}

/* Per-container counts: [disk][res]. */
typedef uint64_t counts_t[IOQ_POD_DISKS_MAX][IOQ_RES_COUNT];

static bool concurrent(enum ioq_ctr_kind a, enum ioq_ctr_kind b) {
  /* Init containers run alone (before the apps); apps and sidecars run
   * together. Sidecars started before an init container run alongside it
   * too. */
  return a != IOQ_CTR_INIT && b != IOQ_CTR_INIT;
}

/* One listed ID and the container listing it; sorted by ID, then
 * container, equal IDs end up next to each other. */
struct held {
  const char *id;
  size_t ctr;
};

static int by_id_ctr(const void *a, const void *b) {
  const struct held *x = a, *y = b;
  int c = strcmp(x->id, y->id);
  return c ? c : (x->ctr > y->ctr) - (x->ctr < y->ctr);
}

/* The same ID twice in one container, or in two containers that run at the
 * same time (it would be counted twice: kubelet never does that). One sort
 * instead of comparing every pair: a pod may hold 100 k units. */
static int check_duplicates(const struct ioq_ctr_units *ctrs, size_t n, size_t total, ioq_err *e) {
  struct held *h = malloc((total ? total : 1) * sizeof *h);
  if (!h)
    return ioq_fail(e, ENOMEM, "out of memory for %zu unit IDs", total);
  size_t m = 0;
  for (size_t c = 0; c < n; c++)
    for (size_t i = 0; i < ctrs[c].n_ids; i++)
      h[m++] = (struct held){ctrs[c].ids[i], c};
  qsort(h, m, sizeof *h, by_id_ctr);
  int rc = 0;
  for (size_t i = 0; i < m && rc == 0;) {
    size_t j = i + 1;
    while (j < m && strcmp(h[j].id, h[i].id) == 0)
      j++;
    /* h[i..j) hold one ID, containers ascending; a run is at most as long
     * as the pod has containers once a repeat within one is refused */
    for (size_t a = i; a < j && rc == 0; a++)
      for (size_t b = a + 1; b < j && rc == 0; b++) {
        const struct ioq_ctr_units *x = &ctrs[h[a].ctr], *y = &ctrs[h[b].ctr];
        if (h[a].ctr == h[b].ctr)
          rc = ioq_fail(e, IOQ_EINVAL_INPUT, "%s %s: unit %s listed twice", kind_name(x->kind),
                        x->name ? x->name : "?", h[a].id);
        else if (concurrent(x->kind, y->kind))
          rc = ioq_fail(e, IOQ_ECONFLICT,
                        "unit %s is held by %s %s and %s %s, which run at the same time", h[a].id,
                        kind_name(x->kind), x->name ? x->name : "?", kind_name(y->kind),
                        y->name ? y->name : "?");
      }
    i = j;
  }
  free(h);
  return rc;
}

int ioq_grant_compute(const struct ioq_ctr_units *ctrs, size_t n, struct ioq_pod_grant *out,
                      ioq_err *e) {
  memset(out, 0, sizeof *out);
  counts_t *per = calloc(n ? n : 1, sizeof *per);
  if (!per)
    return ioq_fail(e, ENOMEM, "out of memory for the unit counts of %zu containers", n);
  int rc = -1;

  size_t total = 0;
  for (size_t c = 0; c < n; c++) {
    const struct ioq_ctr_units *ct = &ctrs[c];
    const char *cname = ct->name ? ct->name : "?";
    total += ct->n_ids;
    for (size_t i = 0; i < ct->n_ids; i++) {
      struct ioq_unit_id u;
      if (ioq_unit_id_parse(ct->ids[i], &u, e) < 0) {
        ioq_err_prefix(e, "%s %s", kind_name(ct->kind), cname);
        goto out;
      }
      int d = disk_index(out, u.disk, e);
      if (d < 0)
        goto out;
      per[c][d][u.res]++;
    }
  }
  if (check_duplicates(ctrs, n, total, e) < 0)
    goto out;

  for (size_t d = 0; d < out->n; d++)
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      uint64_t steady = 0, sidecars_so_far = 0, init_max = 0;
      for (size_t c = 0; c < n; c++) {
        uint64_t v = per[c][d][r];
        switch (ctrs[c].kind) {
        case IOQ_CTR_APP: steady += v; break;
        case IOQ_CTR_SIDECAR:
          steady += v;
          sidecars_so_far += v;
          break;
        case IOQ_CTR_INIT:
          if (v + sidecars_so_far > init_max)
            init_max = v + sidecars_so_far;
          break;
        }
      }
      out->disks[d].units[r] = steady > init_max ? steady : init_max;
    }
  rc = 0;
out:
  free(per);
  return rc;
}

const struct ioq_disk_grant *ioq_grant_find(const struct ioq_pod_grant *g, const char *disk) {
  for (size_t i = 0; i < g->n; i++)
    if (strcmp(g->disks[i].disk, disk) == 0)
      return &g->disks[i];
  return NULL;
}

int ioq_grant_limits(const struct ioq_disk_grant *g, const struct ioq_unit_sizes *u,
                     struct ioq_io_limits *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  uint64_t bw = g->units[IOQ_RES_BANDWIDTH], io = g->units[IOQ_RES_IOPS];
  uint64_t bsz = u->size[IOQ_RES_BANDWIDTH], isz = u->size[IOQ_RES_IOPS];
  if (bw && (bsz == 0 || bw > IOQ_BPS_LIMIT_MAX / bsz))
    return ioq_fail(e, ERANGE, "disk %s: %" PRIu64 " bandwidth units of %" PRIu64
                               " bytes/s do not fit a limit", g->disk, bw, bsz);
  if (io && (isz == 0 || io > IOQ_IOPS_LIMIT_MAX / isz))
    return ioq_fail(e, ERANGE, "disk %s: %" PRIu64 " iops units of %" PRIu64
                               " IOPS exceed the kernel's IOPS limit range", g->disk, io, isz);
  out->rbps = out->wbps = bw * bsz;
  out->riops = out->wiops = io * isz;
  /* The kernel refuses 1 (and 0 means no limit here). */
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++)
    if (ioq_limits_get(out, k) == 1)
      ioq_limits_set(out, k, IOQ_LIMIT_MIN);
  return 0;
}

int ioq_grant_limits_on_disk(const struct ioq_disk_grant *g, const struct ioq_unit_sizes *u,
                             const uint64_t disk_units[IOQ_RES_COUNT], struct ioq_io_limits *out,
                             ioq_err *e) {
  if (ioq_grant_limits(g, u, out, e) < 0)
    return -1;
  uint64_t io = g->units[IOQ_RES_IOPS], dbw = disk_units[IOQ_RES_BANDWIDTH],
           dio = disk_units[IOQ_RES_IOPS], bsz = u->size[IOQ_RES_BANDWIDTH];
  if (!io || g->units[IOQ_RES_BANDWIDTH] || !dbw || !dio || !bsz)
    return 0;
  /* the same share of the disk's bandwidth, rounded up to whole units */
  unsigned __int128 q = ((unsigned __int128)io * dbw + dio - 1) / dio;
  uint64_t units = q > dbw ? dbw : (uint64_t)q;
  if (units > IOQ_BPS_LIMIT_MAX / bsz)
    return ioq_fail(e, ERANGE, "disk %s: the bandwidth cap of an IOPS grant (%" PRIu64
                               " units of %" PRIu64 " bytes/s) does not fit a limit",
                    g->disk, units, bsz);
  out->rbps = out->wbps = units * bsz < IOQ_LIMIT_MIN ? IOQ_LIMIT_MIN : units * bsz;
  return 0;
}

int ioq_grant_weights(const struct ioq_disk_grant *g, const uint64_t disk_units[IOQ_RES_COUNT],
                      unsigned *io_weight, unsigned *bfq_weight, ioq_err *e) {
  *io_weight = *bfq_weight = 0;
  /* share as the fraction num/den with the largest value */
  uint64_t num = 0, den = 1;
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (!g->units[r])
      continue;
    if (!disk_units[r])
      return ioq_fail(e, IOQ_EINVAL_INPUT, "disk %s: %" PRIu64 " %s units granted but the disk "
                                           "advertises none", g->disk, g->units[r],
                      ioq_resource_short(r));
    uint64_t gr = g->units[r] < disk_units[r] ? g->units[r] : disk_units[r];
    /* gr/disk_units[r] > num/den ? (both below 2^40 in practice; use 128-bit) */
    if ((unsigned __int128)gr * den > (unsigned __int128)num * disk_units[r]) {
      num = gr;
      den = disk_units[r];
    }
  }
  if (!num)
    return 0;
  *io_weight = 100u + (unsigned)(((unsigned __int128)9900 * num + den - 1) / den);
  *bfq_weight = 100u + (unsigned)(((unsigned __int128)900 * num + den - 1) / den);
  return 0;
}
