// SPDX-License-Identifier: Apache-2.0
#include "prefer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"

/* One offered ID, parsed. */
struct offer {
  const char *id;
  int disk;       /* index into groups */
  uint32_t index; /* unit index */
  bool taken;     /* already in the answer (must_include) */
};

/* Offered IDs per disk name. */
struct group {
  char name[IOQ_DISK_NAME_MAX + 1];
  size_t free; /* offered and not taken */
};

struct work {
  struct offer *offers;
  size_t n_offers;
  size_t skipped; /* offered IDs of disks or indexes this plugin does not know */
  struct group *groups;
  size_t n_groups;
};

static int by_disk_index(const void *a, const void *b) {
  const struct offer *x = a, *y = b;
  if (x->disk != y->disk)
    return x->disk < y->disk ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int group_by_name(const struct work *w, const char *name) {
  for (size_t i = 0; i < w->n_groups; i++)
    if (strcmp(w->groups[i].name, name) == 0)
      return (int)i;
  return -1;
}

/* Parses the offered IDs. A malformed one or one of the other resource
 * makes the request invalid (kubelet never sends such). An ID of a disk or
 * an index this plugin does not know is skipped, not an error: the answer is
 * only a hint, and kubelet's view can briefly lag ours (e.g. right after a
 * restart with a changed config). Groups are the node's disks, in ctx order. */
static int parse_offers(const struct prefer_req *req, const struct prefer_ctx *ctx, struct work *w,
                        ioq_err *e) {
  w->offers = calloc(req->n_available ? req->n_available : 1, sizeof *w->offers);
  w->groups = calloc(ctx->n_disks ? ctx->n_disks : 1, sizeof *w->groups);
  if (!w->offers || !w->groups)
    return ioq_fail(e, ENOMEM, "out of memory for %zu available IDs", req->n_available);
  w->n_groups = ctx->n_disks;
  for (size_t i = 0; i < ctx->n_disks; i++)
    /* same-size fields: fits */
    ioq_copy_trunc(w->groups[i].name, sizeof w->groups[i].name, ctx->disks[i].name);
  int last = -1;
  for (size_t i = 0; i < req->n_available; i++) {
    struct ioq_unit_id u;
    ioq_err pe;
    const char *id = req->available[i] ? req->available[i] : "";
    if (ioq_unit_id_parse(id, &u, &pe) < 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "available ID #%zu: %s", i + 1, pe.msg);
    if (u.res != req->res)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "available ID '%s' is a %s unit, not %s", id,
                      ioq_resource_name(u.res), ioq_resource_name(req->res));
    if (last < 0 || strcmp(w->groups[last].name, u.disk) != 0)
      last = group_by_name(w, u.disk);
    if (last < 0 || u.index >= ctx->disks[last].capacity[req->res]) {
      w->skipped++;
      continue;
    }
    w->offers[w->n_offers++] = (struct offer){id, last, u.index, false};
  }
  qsort(w->offers, w->n_offers, sizeof *w->offers, by_disk_index);
  for (size_t i = 1; i < w->n_offers; i++)
    if (w->offers[i].disk == w->offers[i - 1].disk && w->offers[i].index == w->offers[i - 1].index)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "available ID '%s' appears more than once",
                      w->offers[i].id);
  for (size_t i = 0; i < w->n_offers; i++)
    w->groups[w->offers[i].disk].free++;
  return 0;
}

static struct offer *find_offer(struct work *w, int g, uint32_t index) {
  struct offer key = {NULL, g, index, false};
  return bsearch(&key, w->offers, w->n_offers, sizeof *w->offers, by_disk_index);
}

/* Placement over the disks the node has, with this resource's free units
 * taken from the offer. class NULL = every class is acceptable. */
static int place(const struct prefer_req *req, const struct prefer_ctx *ctx, const struct work *w,
                 uint64_t remaining, struct ioq_choice *best, ioq_err *e) {
  struct ioq_disk_state *ds = calloc(ctx->n_disks ? ctx->n_disks : 1, sizeof *ds);
  if (!ds)
    return ioq_fail(e, ENOMEM, "out of memory (disk states for placement)");
  for (size_t i = 0; i < ctx->n_disks; i++) {
    ds[i] = ctx->disks[i];
    int g = group_by_name(w, ds[i].name);
    uint64_t free = g >= 0 ? w->groups[g].free : 0;
    ds[i].allocated[req->res] = free >= ds[i].capacity[req->res] ? 0 : ds[i].capacity[req->res] - free;
    if (free > ds[i].capacity[req->res]) /* kubelet offers more than we know: trust kubelet */
      ds[i].capacity[req->res] = free;
  }
  struct ioq_need need = {0};
  if (ctx->need)
    need = *ctx->need;
  need.units[req->res] = remaining;
  best->disk = -1;
  best->score = -1;
  if (ctx->need) {
    ioq_place(ds, ctx->n_disks, NULL, &need, ctx->policy, best);
  } else {
    /* class unknown: the best fit over every class present */
    for (size_t i = 0; i < ctx->n_disks; i++) {
      bool seen = false;
      for (size_t k = 0; k < i && !seen; k++)
        seen = strcmp(ds[k].class_name, ds[i].class_name) == 0;
      if (seen)
        continue;
      need.class_name = ds[i].class_name;
      struct ioq_choice c;
      if (ioq_place(ds, ctx->n_disks, NULL, &need, ctx->policy, &c) == 1 && c.score > best->score)
        *best = c;
    }
  }
  free(ds);
  return 0;
}

/* Takes up to `count` free offers of group g (lowest indexes first). */
static size_t take(struct work *w, int g, size_t count, struct prefer_result *out) {
  size_t got = 0;
  for (size_t i = 0; i < w->n_offers && got < count; i++) {
    struct offer *o = &w->offers[i];
    if (o->disk != g || o->taken)
      continue;
    o->taken = true;
    out->ids[out->n++] = o->id;
    w->groups[g].free--;
    got++;
  }
  return got;
}

int prefer_choose(const struct prefer_req *req, const struct prefer_ctx *ctx,
                  struct prefer_result *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (req->size <= 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "allocation_size %d: must be at least 1", req->size);
  struct work w = {0};
  int rc = -1;
  if (parse_offers(req, ctx, &w, e) < 0)
    goto done;
  out->ids = calloc(req->n_must + (size_t)req->size + 1, sizeof *out->ids);
  if (!out->ids) {
    ioq_fail(e, ENOMEM, "out of memory (preferred unit IDs)");
    goto done;
  }
  /* must_include first, always */
  int must_disk = -1;
  for (size_t i = 0; i < req->n_must; i++) {
    const char *id = req->must[i] ? req->must[i] : "";
    struct ioq_unit_id u;
    ioq_err pe;
    if (ioq_unit_id_parse(id, &u, &pe) < 0) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "must_include ID #%zu: %s", i + 1, pe.msg);
      goto done;
    }
    int mg = group_by_name(&w, u.disk);
    struct offer *o = mg >= 0 && u.res == req->res ? find_offer(&w, mg, u.index) : NULL;
    if (o && o->taken) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "must_include ID '%s' appears more than once", id);
      goto done;
    }
    if (o) {
      o->taken = true;
      w.groups[o->disk].free--;
    }
    out->ids[out->n++] = o ? o->id : id;
    if (must_disk < 0)
      must_disk = mg;
    if (i == 0)
      ioq_copy_trunc(out->disk, sizeof out->disk, u.disk); /* same-size fields: fits */
  }
  if (out->n >= (size_t)req->size) {
    out->how = "must-include";
    rc = 0;
    goto done;
  }
  size_t remaining = (size_t)req->size - out->n;
  size_t total_free = 0;
  for (size_t g = 0; g < w.n_groups; g++)
    total_free += w.groups[g].free;
  if (total_free < remaining) {
    ioq_fail(e, IOQ_EINVAL_INPUT,
             "allocation_size %d needs %zu more IDs but only %zu are available%s", req->size,
             remaining, total_free, w.skipped ? " (IDs of unknown disks or units skipped)" : "");
    goto done;
  }
  if (w.skipped)
    snprintf(out->note, sizeof out->note,
             "%zu offered IDs name disks or units this plugin does not advertise; skipped",
             w.skipped);

  int g = -1;
  if (req->n_must > 0 && must_disk >= 0 && w.groups[must_disk].free >= remaining) {
    g = must_disk;
    out->how = "must-include";
  }
  if (g < 0 && req->n_must == 0 && ctx->hint_disk && *ctx->hint_disk) {
    int h = group_by_name(&w, ctx->hint_disk);
    if (h >= 0 && w.groups[h].free >= remaining) {
      g = h;
      out->how = "annotation";
    } else {
      snprintf(out->note, sizeof out->note, "annotated disk %s has %zu free units, %zu needed",
               ctx->hint_disk, h >= 0 ? w.groups[h].free : 0, remaining);
    }
  }
  if (g < 0) {
    struct ioq_choice c;
    if (place(req, ctx, &w, remaining, &c, e) < 0)
      goto done;
    if (c.disk >= 0) {
      g = group_by_name(&w, ctx->disks[c.disk].name);
      if (g >= 0 && w.groups[g].free >= remaining)
        out->how = "placement";
      else
        g = -1;
    } else if (!out->note[0]) {
      snprintf(out->note, sizeof out->note, "placement: %s", c.reason);
    }
  }
  if (g < 0) {
    for (size_t k = 0; k < w.n_groups; k++)
      if (w.groups[k].free >= remaining && (g < 0 || w.groups[k].free > w.groups[g].free))
        g = (int)k;
    if (g >= 0)
      out->how = "largest-free";
  }
  if (g >= 0) {
    ioq_copy_trunc(out->disk, sizeof out->disk, w.groups[g].name); /* same-size fields: fits */
    take(&w, g, remaining, out);
    rc = 0;
    goto done;
  }
  /* no single disk holds it: fullest-free first */
  out->how = "spread";
  out->disk[0] = '\0';
  while (remaining > 0) {
    int best = -1;
    for (size_t k = 0; k < w.n_groups; k++)
      if (w.groups[k].free > 0 && (best < 0 || w.groups[k].free > w.groups[best].free))
        best = (int)k;
    remaining -= take(&w, best, remaining, out);
  }
  rc = 0;
done:
  free(w.offers);
  free(w.groups);
  if (rc < 0)
    prefer_result_free(out);
  return rc;
}

void prefer_result_free(struct prefer_result *r) {
  free(r->ids);
  r->ids = NULL;
  r->n = 0;
}
