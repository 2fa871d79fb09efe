// SPDX-License-Identifier: Apache-2.0
#include "nvmet/nvmetplan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "grant/grant.h"

const char *ioq_nvmet_verdict_name(enum ioq_nvmet_verdict v) {
  switch (v) {
  case IOQ_NVMET_NS_ENFORCED: return "enforced";
  case IOQ_NVMET_NS_UNCHARGED: return "uncharged";
  case IOQ_NVMET_NS_REFUSED: return "refused";
  }
  return "?";
}

int ioq_nvmet_cgroup_name(const char *subsystem, uint32_t nsid, char *buf, size_t len, ioq_err *e) {
  const char *why = ioq_nvmet_nqn_problem(subsystem);
  if (why)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "nvmet subsystem '%.80s' cannot name a cgroup: %s",
                    subsystem, why);
  int n = snprintf(buf, len, "%s-%" PRIu32, subsystem, nsid);
  if (n < 0 || (size_t)n >= len)
    return ioq_fail(e, ENAMETOOLONG, "cgroup name of nvmet namespace %.80s/%" PRIu32 " too long",
                    subsystem, nsid);
  return 0;
}

/* the first entry selecting the namespace, or -1 */
static long entry_of(const struct ioq_config *c, const struct ioq_nvmet_ns *ns) {
  for (size_t i = 0; i < c->nvmet.n; i++)
    if (!strcmp(c->nvmet.ns[i].subsystem, ns->subsystem) &&
        (!c->nvmet.ns[i].nsid || c->nvmet.ns[i].nsid == ns->nsid))
      return (long)i;
  return -1;
}

static struct ioq_disk *disk_of(struct ioq_disk *disks, size_t n, const struct ioq_blockdev *bd,
                                size_t *idx) {
  for (size_t i = 0; i < n; i++)
    if ((disks[i].dev.major == bd->major && disks[i].dev.minor == bd->minor) ||
        !strcmp(disks[i].dev.name, bd->name)) {
      *idx = i;
      return &disks[i];
    }
  return NULL;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

/* Units, limits and weights of a matched namespace on disk d, whose units
 * before any namespace are total[]. false + why when the entry cannot be
 * counted against the disk. */
static bool size_entry(const struct ioq_config *c, const struct ioq_nvmet_ns_config *ec,
                       const struct ioq_disk *d, const uint64_t total[IOQ_RES_COUNT],
                       struct ioq_nvmet_plan_ns *pn) {
  struct ioq_disk_grant g = {{0}, {0}};
  ioq_copy_trunc(g.disk, sizeof g.disk, d->dev.name);
  if (ec->raw) {
    pn->limits = ec->limits;
    uint64_t top[IOQ_RES_COUNT] = {
        [IOQ_RES_BANDWIDTH] = ec->limits.rbps > ec->limits.wbps ? ec->limits.rbps : ec->limits.wbps,
        [IOQ_RES_IOPS] = ec->limits.riops > ec->limits.wiops ? ec->limits.riops : ec->limits.wiops};
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      g.units[r] = top[r] ? ceil_div(top[r], c->units.size[r]) : 0;
  } else {
    for (int r = 0; r < IOQ_RES_COUNT; r++)
      g.units[r] = ec->units[r];
  }
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (g.units[r] && !total[r]) {
      snprintf(pn->why, sizeof pn->why,
               "disk %s has no %s capacity known, so nvmet.namespaces[%zu] cannot be counted "
               "against it (set devices[].capacity)",
               d->dev.name, r == IOQ_RES_BANDWIDTH ? "bandwidth" : "IOPS", pn->cfg_index);
      return false;
    }
  ioq_err e;
  /* units as a pod's grant would be written: an IOPS-only grant also capped in bandwidth at the
   * same share of the disk (docs/enforcement.md, "A grant of one resource") */
  if (!ec->raw && ioq_grant_limits_on_disk(&g, &c->units, total, &pn->limits, &e) < 0) {
    snprintf(pn->why, sizeof pn->why, "%s", e.msg);
    return false;
  }
  unsigned w = 0, bw = 0;
  if (ioq_grant_weights(&g, total, &w, &bw, &e) < 0) {
    snprintf(pn->why, sizeof pn->why, "%s", e.msg);
    return false;
  }
  pn->weight = ec->weight ? ec->weight : w;
  pn->bfq_weight = ec->weight ? (ec->weight > 1000 ? 1000 : ec->weight) : bw;
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    pn->units[r] = g.units[r];
  return true;
}

static void plan_one(const struct ioq_config *c, const struct ioq_nvmet_ns *ns,
                     struct ioq_disk *disks, size_t n_disks, uint64_t (*total)[IOQ_RES_COUNT],
                     struct ioq_nvmet_plan_ns *pn) {
  const struct ioq_nvmet_ns_config *ec = &c->nvmet.ns[pn->cfg_index];
  pn->verdict = IOQ_NVMET_NS_REFUSED;
  if (ns->buffered_io == 1) {
    snprintf(pn->why, sizeof pn->why,
             "buffered_io is set: the kernel refuses to enable a namespace with a cgroup_id and "
             "buffered I/O (page-cache writeback is not charged to the namespace); set buffered_io "
             "to 0");
    return;
  }
  if (!ns->backed) {
    snprintf(pn->why, sizeof pn->why, "its disk is not known: %s", ns->backing);
    return;
  }
  size_t di;
  struct ioq_disk *d = disk_of(disks, n_disks, &ns->disk, &di);
  if (!d) {
    snprintf(pn->why, sizeof pn->why,
             "its I/O lands on disk %s (%u:%u), which ioqos does not manage (add it to devices[])",
             ns->disk.name, ns->disk.major, ns->disk.minor);
    return;
  }
  pn->disk_index = di;
  ioq_copy_trunc(pn->disk, sizeof pn->disk, d->dev.name);
  pn->dev = (struct ioq_devno){d->dev.major, d->dev.minor};
  if (d->fault[0] || !d->enforceable) {
    snprintf(pn->why, sizeof pn->why, "disk %s advertises no units: %.300s", d->dev.name,
             d->fault[0] ? d->fault : d->not_enforceable_reason);
    return;
  }
  if (!size_entry(c, ec, d, total[di], pn))
    return;
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (pn->units[r] > d->units[r]) {
      snprintf(pn->why, sizeof pn->why,
               "needs %" PRIu64 " %s units of disk %s, which has %" PRIu64 " (%" PRIu64
               " taken by namespaces before it)",
               pn->units[r], ioq_resource_short(r), d->dev.name, d->units[r],
               total[di][r] - d->units[r]);
      return;
    }
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    d->units[r] -= pn->units[r];
    d->nvmet_units[r] += pn->units[r];
  }
  if (ns->has_cgroup_id) {
    pn->verdict = IOQ_NVMET_NS_ENFORCED;
    snprintf(pn->why, sizeof pn->why,
             "nvmet.namespaces[%zu]: %" PRIu64 " bandwidth and %" PRIu64
             " IOPS units of disk %s, charged to its cgroup through cgroup_id",
             pn->cfg_index, pn->units[IOQ_RES_BANDWIDTH], pn->units[IOQ_RES_IOPS], d->dev.name);
  } else {
    pn->verdict = IOQ_NVMET_NS_UNCHARGED;
    snprintf(pn->why, sizeof pn->why,
             "nvmet.namespaces[%zu]: %" PRIu64 " bandwidth and %" PRIu64
             " IOPS units of disk %s reserved, not enforced: this kernel has no nvmet cgroup_id "
             "attribute (Linux 7.5+), so the namespace's I/O is not charged to its cgroup",
             pn->cfg_index, pn->units[IOQ_RES_BANDWIDTH], pn->units[IOQ_RES_IOPS], d->dev.name);
  }
}

static int note_unmatched(const struct ioq_config *c, const struct ioq_nvmet_inventory *inv,
                          const bool *used, struct ioq_nvmet_plan *out, ioq_err *e) {
  size_t n = 0;
  for (size_t i = 0; i < c->nvmet.n; i++)
    n += !used[i];
  if (!n)
    return 0;
  out->unmatched = calloc(n, sizeof *out->unmatched);
  if (!out->unmatched)
    return ioq_fail(e, ENOMEM, "out of memory (nvmet plan)");
  for (size_t i = 0; i < c->nvmet.n; i++) {
    if (used[i])
      continue;
    const struct ioq_nvmet_ns_config *ec = &c->nvmet.ns[i];
    bool sub = false;
    for (size_t k = 0; k < inv->n && !sub; k++)
      sub = !strcmp(inv->ns[k].subsystem, ec->subsystem);
    char *m = out->unmatched[out->n_unmatched++];
    if (inv->state != IOQ_NVMET_PRESENT)
      snprintf(m, sizeof out->unmatched[0], "nvmet.namespaces[%zu] (%.120s): %.180s", i,
               ec->subsystem, inv->reason);
    else if (!sub)
      snprintf(m, sizeof out->unmatched[0],
               "nvmet.namespaces[%zu]: the target has no subsystem %.200s with namespaces", i,
               ec->subsystem);
    else if (ec->nsid)
      snprintf(m, sizeof out->unmatched[0],
               "nvmet.namespaces[%zu]: subsystem %.200s has no namespace %" PRIu32, i,
               ec->subsystem, ec->nsid);
    else
      snprintf(m, sizeof out->unmatched[0],
               "nvmet.namespaces[%zu]: every namespace of %.200s is selected by an earlier entry",
               i, ec->subsystem);
  }
  return 0;
}

int ioq_nvmet_plan_build(const struct ioq_config *c, enum ioq_cg_version io_version,
                         const struct ioq_nvmet_inventory *inv, struct ioq_disk *disks,
                         size_t n_disks, struct ioq_nvmet_plan *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!c->nvmet.n)
    return 0;
  bool *used = calloc(c->nvmet.n, sizeof *used);
  uint64_t(*total)[IOQ_RES_COUNT] = calloc(n_disks ? n_disks : 1, sizeof *total);
  if (inv->n)
    out->ns = calloc(inv->n, sizeof *out->ns);
  if (!used || !total || (inv->n && !out->ns)) {
    free(used);
    free(total);
    free(out->ns);
    out->ns = NULL;
    return ioq_fail(e, ENOMEM, "out of memory (nvmet plan)");
  }
  /* built again on the same disks: what an earlier plan took goes back first */
  for (size_t i = 0; i < n_disks; i++)
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      disks[i].units[r] += disks[i].nvmet_units[r];
      disks[i].nvmet_units[r] = 0;
      total[i][r] = disks[i].units[r];
    }
  for (size_t i = 0; i < inv->n; i++) {
    long ci = entry_of(c, &inv->ns[i]);
    if (ci < 0)
      continue;
    used[ci] = true;
    struct ioq_nvmet_plan_ns *pn = &out->ns[out->n++];
    ioq_copy_trunc(pn->subsystem, sizeof pn->subsystem, inv->ns[i].subsystem);
    pn->nsid = inv->ns[i].nsid;
    pn->cfg_index = (size_t)ci;
    if (io_version != IOQ_CGV2) {
      pn->verdict = IOQ_NVMET_NS_REFUSED;
      snprintf(pn->why, sizeof pn->why,
               "this node limits I/O through cgroup v1 (blkio); nvmet charges a namespace to a "
               "cgroup v2 cgroup only");
      continue;
    }
    plan_one(c, &inv->ns[i], disks, n_disks, total, pn);
  }
  int rc = note_unmatched(c, inv, used, out, e);
  free(used);
  free(total);
  if (rc < 0)
    ioq_nvmet_plan_free(out);
  return rc;
}

static json_object *units_json(const uint64_t u[IOQ_RES_COUNT]) {
  json_object *o = json_object_new_object();
  if (o) {
    json_object_object_add(o, "bandwidth", json_object_new_int64((int64_t)u[IOQ_RES_BANDWIDTH]));
    json_object_object_add(o, "iops", json_object_new_int64((int64_t)u[IOQ_RES_IOPS]));
  }
  return o;
}

/* the namespaces array entry of subsystem/nsid, or NULL */
static json_object *ns_entry(json_object *arr, const char *subsystem, uint32_t nsid) {
  size_t n = json_object_array_length(arr);
  for (size_t i = 0; i < n; i++) {
    json_object *j = json_object_array_get_idx(arr, i), *s, *id;
    if (json_object_object_get_ex(j, "subsystem", &s) &&
        json_object_object_get_ex(j, "nsid", &id) &&
        !strcmp(json_object_get_string(s), subsystem) && json_object_get_int64(id) == (int64_t)nsid)
      return j;
  }
  return NULL;
}

int ioq_nvmet_plan_json(const struct ioq_nvmet_plan *p, json_object *nv, json_object **objs) {
  json_object *arr;
  if (!json_object_object_get_ex(nv, "namespaces", &arr) ||
      !json_object_is_type(arr, json_type_array))
    return -1;
  for (size_t i = 0; i < p->n; i++) {
    const struct ioq_nvmet_plan_ns *pn = &p->ns[i];
    json_object *j = ns_entry(arr, pn->subsystem, pn->nsid), *q = json_object_new_object();
    if (objs)
      objs[i] = NULL;
    if (!q)
      return -1;
    if (!j) {
      json_object_put(q);
      continue;
    }
    char entry[48];
    snprintf(entry, sizeof entry, "nvmet.namespaces[%zu]", pn->cfg_index);
    json_object_object_add(q, "entry", json_object_new_string(entry));
    json_object_object_add(q, "verdict",
                           json_object_new_string(ioq_nvmet_verdict_name(pn->verdict)));
    json_object_object_add(q, "why", json_object_new_string(pn->why));
    if (pn->verdict != IOQ_NVMET_NS_REFUSED) {
      json_object_object_add(q, "disk", json_object_new_string(pn->disk));
      json_object_object_add(q, "units", units_json(pn->units));
    }
    json_object_object_add(j, "ioqos", q);
    if (objs)
      objs[i] = q;
  }
  json_object *um = json_object_new_array();
  if (!um)
    return -1;
  for (size_t i = 0; i < p->n_unmatched; i++)
    json_object_array_add(um, json_object_new_string(p->unmatched[i]));
  json_object_object_add(nv, "unmatched", um);
  return 0;
}

void ioq_nvmet_plan_free(struct ioq_nvmet_plan *p) {
  free(p->ns);
  free(p->unmatched);
  memset(p, 0, sizeof *p);
}
