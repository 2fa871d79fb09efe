// SPDX-License-Identifier: Apache-2.0
#include "catalog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin/v1beta1/api.pb-c.h"
#include "base/fsutil.h"
#include "base/log.h"

#define HEALTHY "Healthy"
#define UNHEALTHY "Unhealthy"

struct packed_cache {
  uint64_t gen; /* generation the bytes reflect; 0 = none */
  uint8_t *data;
  size_t len;
};

struct catalog {
  pthread_mutex_t lock;
  struct cat_disk *disks;
  size_t n;
  uint64_t gen[IOQ_RES_COUNT];
  struct packed_cache cache[IOQ_RES_COUNT];
  struct ioq_select_fault *faults; /* selectors of the last probe that gave no disk */
  size_t n_faults;
};

struct catalog *catalog_new(void) {
  struct catalog *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_mutex_init(&c->lock, NULL);
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    c->gen[r] = 1;
  return c;
}

void catalog_free(struct catalog *c) {
  if (!c)
    return;
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    free(c->cache[r].data);
  free(c->disks);
  free(c->faults);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

static struct cat_disk *find_locked(struct catalog *c, const char *name) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->disks[i].disk.dev.name, name) == 0)
      return &c->disks[i];
  return NULL;
}

static void bump(struct catalog *c, bool changed[IOQ_RES_COUNT]) {
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (changed[r])
      c->gen[r]++;
}

/* What a disk contributes to the lists: units and health. */
static void note_change(const struct cat_disk *before, const struct cat_disk *after,
                        bool changed[IOQ_RES_COUNT]) {
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    uint64_t ub = before ? before->units[r] : 0, ua = after ? after->units[r] : 0;
    bool hb = before && before->healthy, ha = after && after->healthy;
    if (ub != ua || ((ub || ua) && hb != ha))
      changed[r] = true;
  }
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct cat_disk *)a)->disk.dev.name,
                ((const struct cat_disk *)b)->disk.dev.name);
}

const struct ioq_select_fault *catalog_fault_of(const struct ioq_select_fault *f, size_t n,
                                                const struct ioq_disk *d) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(f[i].select, d->selected_by) == 0 || strncmp(d->selected_by, "default:", 8) == 0)
      return &f[i];
  return NULL;
}

static const struct ioq_select_fault *fault_of_locked(struct catalog *c, const struct ioq_disk *d) {
  return catalog_fault_of(c->faults, c->n_faults, d);
}

bool catalog_forget(struct catalog *c, const char *name) {
  pthread_mutex_lock(&c->lock);
  struct cat_disk *d = find_locked(c, name);
  if (!d) {
    pthread_mutex_unlock(&c->lock);
    return false;
  }
  bool changed[IOQ_RES_COUNT] = {false};
  note_change(d, NULL, changed);
  size_t i = (size_t)(d - c->disks);
  memmove(d, d + 1, (c->n - i - 1) * sizeof *d); /* stays sorted by name */
  c->n--;
  bump(c, changed);
  pthread_mutex_unlock(&c->lock);
  return true;
}

bool catalog_update(struct catalog *c, const struct ioq_disk *disks, size_t n,
                    const char *missing_reason) {
  pthread_mutex_lock(&c->lock);
  size_t cap = c->n + n;
  struct cat_disk *next = calloc(cap ? cap : 1, sizeof *next);
  if (!next) {
    pthread_mutex_unlock(&c->lock);
    ioq_error("catalog update failed reason=out-of-memory");
    return false;
  }
  bool changed[IOQ_RES_COUNT] = {false};
  bool *kept = calloc(cap ? cap : 1, sizeof *kept); /* units carried over, not probed */
  if (!kept) {
    free(next);
    pthread_mutex_unlock(&c->lock);
    ioq_error("catalog update failed reason=out-of-memory");
    return false;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    struct cat_disk *d = &next[m++];
    d->disk = disks[i];
    d->dev.major = disks[i].dev.major;
    d->dev.minor = disks[i].dev.minor;
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      d->units[r] = disks[i].units[r];
    d->healthy = disks[i].enforceable && !disks[i].fault[0];
    const struct cat_disk *old = find_locked(c, d->disk.dev.name);
    if (disks[i].fault[0])
      snprintf(d->why, sizeof d->why, "%s", disks[i].fault);
    else if (!d->healthy)
      snprintf(d->why, sizeof d->why, "cannot enforce limits on %s: %s", disks[i].dev.name,
               disks[i].not_enforceable_reason[0] ? disks[i].not_enforceable_reason
                                                  : "(no reason given by the probe)");
    if (!d->healthy) {
      /* The probe advertises nothing for such a disk; units that kubelet
       * already knows stay listed, as Unhealthy. */
      if (old)
        for (int r = 0; r < IOQ_RES_COUNT; r++)
          if (!d->units[r] && old->units[r]) {
            d->units[r] = old->units[r];
            kept[m - 1] = true;
          }
    }
    note_change(old, d, changed);
    if (old && old->healthy == d->healthy && !d->healthy && strcmp(old->why, d->why) != 0) {
      ioq_warn("disk unhealthy reason changed disk=%s reason=\"%s\"", d->disk.dev.name, d->why);
    }
    if (old && old->healthy != d->healthy && d->healthy)
      ioq_info("disk health changed disk=%s healthy=true", d->disk.dev.name);
    else if (old && old->healthy != d->healthy)
      ioq_warn("disk health changed disk=%s healthy=false reason=\"%s\"", d->disk.dev.name,
               d->why);
    else if (!old)
      ioq_info("disk managed disk=%s dev=%u:%u class=%s units_bandwidth=%llu units_iops=%llu "
               "healthy=%s%s%s",
               d->disk.dev.name, d->dev.major, d->dev.minor, d->disk.class_name,
               (unsigned long long)d->units[IOQ_RES_BANDWIDTH],
               (unsigned long long)d->units[IOQ_RES_IOPS], d->healthy ? "true" : "false",
               d->healthy ? "" : " reason=", d->healthy ? "" : d->why);
  }
  /* Disks the probe lost keep their units, unhealthy. */
  for (size_t i = 0; i < c->n; i++) {
    bool found = false;
    for (size_t j = 0; j < n && !found; j++)
      found = strcmp(disks[j].dev.name, c->disks[i].disk.dev.name) == 0;
    if (found)
      continue;
    kept[m] = true;
    struct cat_disk *d = &next[m++];
    *d = c->disks[i];
    d->healthy = false;
    const struct ioq_select_fault *f = fault_of_locked(c, &d->disk);
    if (f)
      snprintf(d->why, sizeof d->why, "disk %s is gone: %s", d->disk.dev.name, f->reason);
    else
      snprintf(d->why, sizeof d->why, "%s", missing_reason ? missing_reason
                                                           : "not found by the last probe");
    note_change(&c->disks[i], d, changed);
    if (c->disks[i].healthy)
      ioq_warn("disk health changed disk=%s healthy=false reason=\"%s\"", d->disk.dev.name, d->why);
  }
  /* Units carried over from an earlier probe must not take the list past the
   * node bound (units.h: kubelet's 4 MiB message) next to what the probe
   * gives now: those go first, said in the log. */
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    uint64_t total = 0;
    for (size_t i = 0; i < m; i++)
      total += next[i].units[r];
    for (size_t i = 0; i < m && total > IOQ_MAX_UNITS_PER_NODE; i++)
      if (kept[i] && next[i].units[r]) {
        ioq_warn("unhealthy disk units dropped from the list disk=%s resource=%s units=%llu "
                 "reason=\"the node would list more than %u units\"",
                 next[i].disk.dev.name, ioq_resource_name(r),
                 (unsigned long long)next[i].units[r], IOQ_MAX_UNITS_PER_NODE);
        total -= next[i].units[r];
        next[i].units[r] = 0;
        changed[r] = true;
      }
  }
  free(kept);
  qsort(next, m, sizeof *next, by_name);
  free(c->disks);
  c->disks = next;
  c->n = m;
  bump(c, changed);
  pthread_mutex_unlock(&c->lock);
  return changed[0] || changed[1];
}

bool catalog_set_health(struct catalog *c, const char *disk, bool healthy, const char *why) {
  pthread_mutex_lock(&c->lock);
  struct cat_disk *d = find_locked(c, disk);
  bool changed[IOQ_RES_COUNT] = {false};
  if (d && d->healthy != healthy) {
    struct cat_disk before = *d;
    d->healthy = healthy;
    snprintf(d->why, sizeof d->why, "%s", healthy ? "" : why ? why : "unhealthy");
    note_change(&before, d, changed);
    bump(c, changed);
    ioq_log(healthy ? IOQ_LOG_INFO : IOQ_LOG_WARN, "disk health changed disk=%s healthy=%s%s%s%s",
            disk, healthy ? "true" : "false", healthy ? "" : " reason=\"", healthy ? "" : d->why,
            healthy ? "" : "\"");
  }
  pthread_mutex_unlock(&c->lock);
  return changed[0] || changed[1];
}

bool catalog_set_faults(struct catalog *c, const struct ioq_select_fault *f, size_t n) {
  struct ioq_select_fault *copy = NULL;
  if (n && !(copy = malloc(n * sizeof *copy))) {
    ioq_error("catalog faults update failed reason=out-of-memory");
    return false;
  }
  if (n)
    memcpy(copy, f, n * sizeof *copy);
  pthread_mutex_lock(&c->lock);
  bool changed = n != c->n_faults || (n && memcmp(copy, c->faults, n * sizeof *copy) != 0);
  free(c->faults);
  c->faults = copy;
  c->n_faults = n;
  pthread_mutex_unlock(&c->lock);
  return changed;
}

size_t catalog_faults(struct catalog *c, struct ioq_select_fault **out) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->n_faults;
  *out = malloc((n ? n : 1) * sizeof **out);
  if (*out && n)
    memcpy(*out, c->faults, n * sizeof **out);
  else if (!*out)
    n = 0;
  pthread_mutex_unlock(&c->lock);
  return n;
}

uint64_t catalog_generation(struct catalog *c, enum ioq_resource r) {
  pthread_mutex_lock(&c->lock);
  uint64_t g = c->gen[r];
  pthread_mutex_unlock(&c->lock);
  return g;
}

void catalog_totals(struct catalog *c, enum ioq_resource r, uint64_t *all, uint64_t *healthy) {
  uint64_t a = 0, h = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->n; i++) {
    a += c->disks[i].units[r];
    if (c->disks[i].healthy)
      h += c->disks[i].units[r];
  }
  pthread_mutex_unlock(&c->lock);
  if (all)
    *all = a;
  if (healthy)
    *healthy = h;
}

size_t catalog_snapshot(struct catalog *c, struct cat_disk **out) {
  pthread_mutex_lock(&c->lock);
  size_t n = c->n;
  *out = malloc((n ? n : 1) * sizeof **out);
  if (*out && n)
    memcpy(*out, c->disks, n * sizeof **out);
  else if (!*out)
    n = 0;
  pthread_mutex_unlock(&c->lock);
  return n;
}

bool catalog_get(struct catalog *c, const char *name, struct cat_disk *out) {
  pthread_mutex_lock(&c->lock);
  struct cat_disk *d = find_locked(c, name);
  if (d)
    *out = *d;
  pthread_mutex_unlock(&c->lock);
  return d != NULL;
}

/* Builds the packed list for r from the locked catalog. */
static int build_list_locked(struct catalog *c, enum ioq_resource r, uint8_t **data, size_t *len) {
  size_t total = 0;
  for (size_t i = 0; i < c->n; i++)
    total += c->disks[i].units[r];
  V1beta1__Device *devs = calloc(total ? total : 1, sizeof *devs);
  V1beta1__Device **ptrs = calloc(total ? total : 1, sizeof *ptrs);
  char *ids = calloc(total ? total : 1, IOQ_UNIT_ID_MAX + 1);
  int rc = -1;
  if (!devs || !ptrs || !ids)
    goto out;
  size_t k = 0;
  for (size_t i = 0; i < c->n; i++) {
    const struct cat_disk *d = &c->disks[i];
    for (uint64_t u = 0; u < d->units[r]; u++, k++) {
      char *id = ids + k * (IOQ_UNIT_ID_MAX + 1);
      ioq_err e;
      if (ioq_unit_id_format(id, IOQ_UNIT_ID_MAX + 1, d->disk.dev.name, r, (uint32_t)u, &e) < 0) {
        ioq_error("unit id format failed disk=%s error=\"%s\"", d->disk.dev.name, e.msg);
        goto out;
      }
      v1beta1__device__init(&devs[k]);
      devs[k].id = id;
      devs[k].health = d->healthy ? HEALTHY : UNHEALTHY;
      ptrs[k] = &devs[k];
    }
  }
  V1beta1__ListAndWatchResponse msg = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
  msg.n_devices = total;
  msg.devices = ptrs;
  *len = v1beta1__list_and_watch_response__get_packed_size(&msg);
  *data = malloc(*len ? *len : 1);
  if (!*data)
    goto out;
  v1beta1__list_and_watch_response__pack(&msg, *data);
  rc = 0;
out:
  free(devs);
  free(ptrs);
  free(ids);
  return rc;
}

int catalog_list_packed(struct catalog *c, enum ioq_resource r, uint8_t **data, size_t *len,
                        uint64_t *gen) {
  pthread_mutex_lock(&c->lock);
  struct packed_cache *pc = &c->cache[r];
  int rc = 0;
  if (pc->gen != c->gen[r]) {
    uint8_t *d = NULL;
    size_t l = 0;
    rc = build_list_locked(c, r, &d, &l);
    if (rc == 0) {
      free(pc->data);
      pc->data = d;
      pc->len = l;
      pc->gen = c->gen[r];
    }
  }
  if (rc == 0) {
    *data = malloc(pc->len ? pc->len : 1);
    if (*data) {
      if (pc->len)
        memcpy(*data, pc->data, pc->len);
      *len = pc->len;
      *gen = pc->gen;
    } else {
      rc = -1;
    }
  }
  pthread_mutex_unlock(&c->lock);
  return rc;
}

void id_tally_free(struct id_tally *t) {
  free(t->d);
  t->d = NULL;
  t->n = 0;
}

int catalog_check_ids(struct catalog *c, enum ioq_resource r, char *const *ids, size_t n,
                      struct id_tally *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (n == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "no device IDs given");
  pthread_mutex_lock(&c->lock);
  int rc = -1;
  uint8_t **seen = calloc(c->n ? c->n : 1, sizeof *seen); /* per-disk bitmaps of used indexes */
  uint64_t *count = calloc(c->n ? c->n : 1, sizeof *count);
  uint64_t total = 0;
  for (size_t i = 0; i < c->n; i++)
    total += c->disks[i].units[r];
  if (!seen || !count) {
    ioq_fail(e, ENOMEM, "out of memory checking %zu IDs", n);
    goto out;
  }
  if (n > total) {
    ioq_fail(e, IOQ_EINVAL_INPUT, "%zu IDs given but this node has only %llu %s units", n,
             (unsigned long long)total, ioq_resource_name(r));
    goto out;
  }
  size_t last = (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    const char *id = ids[i] ? ids[i] : "";
    size_t l = strnlen(id, IOQ_UNIT_ID_MAX + 1);
    if (l > IOQ_UNIT_ID_MAX) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "ID #%zu ('%.40s...') is longer than %d characters", i + 1, id,
               IOQ_UNIT_ID_MAX);
      goto out;
    }
    struct ioq_unit_id u;
    ioq_err pe;
    if (ioq_unit_id_parse(id, &u, &pe) < 0) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "ID #%zu: %s", i + 1, pe.msg);
      goto out;
    }
    if (u.res != r) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "ID '%s' is a %s unit, not %s", id, ioq_resource_name(u.res),
               ioq_resource_name(r));
      goto out;
    }
    if (last == (size_t)-1 || strcmp(c->disks[last].disk.dev.name, u.disk) != 0) {
      last = (size_t)-1;
      for (size_t k = 0; k < c->n; k++)
        if (strcmp(c->disks[k].disk.dev.name, u.disk) == 0)
          last = k;
      if (last == (size_t)-1) {
        ioq_fail(e, IOQ_EINVAL_INPUT, "ID '%s' names disk %s, which this node does not manage", id,
                 u.disk);
        goto out;
      }
    }
    const struct cat_disk *d = &c->disks[last];
    if (u.index >= d->units[r]) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "ID '%s' does not exist: disk %s has %llu %s units (0-%lld)",
               id, u.disk, (unsigned long long)d->units[r], ioq_resource_short(r),
               (long long)d->units[r] - 1);
      goto out;
    }
    if (!seen[last] && !(seen[last] = calloc(d->units[r] / 8 + 1, 1))) {
      ioq_fail(e, ENOMEM, "out of memory checking %zu IDs", n);
      goto out;
    }
    uint8_t bit = (uint8_t)(1u << (u.index % 8));
    if (seen[last][u.index / 8] & bit) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "ID '%s' appears more than once", id);
      goto out;
    }
    seen[last][u.index / 8] |= bit;
    count[last]++;
  }
  size_t used = 0;
  for (size_t k = 0; k < c->n; k++)
    used += count[k] > 0;
  out->d = calloc(used ? used : 1, sizeof *out->d);
  if (!out->d) {
    ioq_fail(e, ENOMEM, "out of memory checking %zu IDs", n);
    goto out;
  }
  for (size_t k = 0; k < c->n; k++) {
    if (!count[k])
      continue;
    struct id_tally_entry *t = &out->d[out->n++];
    ioq_copy_trunc(t->disk, sizeof t->disk, c->disks[k].disk.dev.name); /* same-size fields: fits */
    t->dev = c->disks[k].dev;
    t->count = count[k];
    t->healthy = c->disks[k].healthy;
  }
  rc = 0;
out:
  if (seen)
    for (size_t k = 0; k < c->n; k++)
      free(seen[k]);
  free(seen);
  free(count);
  pthread_mutex_unlock(&c->lock);
  return rc;
}

size_t catalog_healthy_disks(struct catalog *c, struct ioq_disk **out) {
  struct cat_disk *cd;
  size_t n = catalog_snapshot(c, &cd), k = 0;
  *out = calloc(n ? n : 1, sizeof **out);
  for (size_t i = 0; *out && i < n; i++)
    if (cd[i].healthy)
      (*out)[k++] = cd[i].disk;
  free(cd);
  return *out ? k : 0;
}
