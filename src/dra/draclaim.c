// SPDX-License-Identifier: Apache-2.0
/* ResourceClaim -> validated allocation of this driver (dra/draclaim.h). */
#include "dra/draclaim.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonfield.h"
#include "base/jsonparse.h"
#include "base/k8sname.h"
#include "cgroup/podcg.h"

/* Copies the string obj.key into dst (size dstsz). Absent: "" when optional,
 * else an error; present but not a string or too long: an error. */
static int take_str(json_object *obj, const char *key, char *dst, size_t dstsz, bool required,
                    const char *where, ioq_err *e) {
  json_object *v = ioq_json_field(obj, key);
  dst[0] = '\0';
  if (!v) {
    if (required)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s is missing", where, key);
    return 0;
  }
  if (!json_object_is_type(v, json_type_string))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s is not a string", where, key);
  const char *s = json_object_get_string(v);
  size_t n = (size_t)json_object_get_string_len(v);
  if (n >= dstsz)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s is %zu characters, more than %zu", where, key, n,
                    dstsz - 1);
  if (strlen(s) != n)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s contains a NUL character", where, key);
  if (required && n == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s is empty", where, key);
  memcpy(dst, s, n + 1);
  return 0;
}

static bool printable(const char *s) {
  for (; *s; s++)
    if (!isgraph((unsigned char)*s))
      return false;
  return true;
}

/* *out = the array obj.key (NULL when absent); an error when it is not an
 * array or longer than max. */
static int array_field(json_object *obj, const char *key, const char *where, size_t max,
                       json_object **out, ioq_err *e) {
  json_object *a = ioq_json_field(obj, key);
  *out = NULL;
  if (!a)
    return 0;
  if (!json_object_is_type(a, json_type_array))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s is not an array", where, key);
  if (json_object_array_length(a) > max)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.%s has %zu entries, more than the %zu allowed", where,
                    key, json_object_array_length(a), max);
  *out = a;
  return 0;
}

/* The disk of a device name among want's disks. */
static int find_disk(const struct ioq_dra_claim_want *want, const char *device, size_t *idx,
                     ioq_err *e) {
  bool found = false;
  for (size_t i = 0; i < want->n_disks; i++) {
    char name[IOQ_DRA_DEVICE_NAME_MAX + 1];
    if (ioq_dra_device_name(want->disks[i].dev.name, name, e) < 0)
      return -1;
    if (strcmp(name, device) != 0)
      continue;
    if (found)
      return ioq_fail(e, IOQ_ECONFLICT, "device '%s' names two disks of this node", device);
    found = true;
    *idx = i;
  }
  if (!found)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "device '%s' is not a disk of this node", device);
  const char *why;
  if (!ioq_dra_disk_publishable(&want->disks[*idx], &why))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "device '%s' (disk %s) is not offered: %s", device,
                    want->disks[*idx].dev.name, why);
  return 0;
}

static int take_consumed(json_object *res, const char *where, const struct ioq_disk *disk,
                         struct ioq_dra_share *sh, ioq_err *e) {
  json_object *cc = ioq_json_field(res, "consumedCapacity");
  if (!cc)
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "%s has no consumedCapacity: the device was allocated whole, which ioqos does "
                    "not offer (the scheduler needs consumable capacity, DRAConsumableCapacity, "
                    "beta from Kubernetes 1.36)",
                    where);
  if (!json_object_is_type(cc, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.consumedCapacity is not an object", where);
  json_object_object_foreach(cc, key, val) {
    int r;
    if (strcmp(key, IOQ_DRA_CAP_BANDWIDTH) == 0)
      r = IOQ_RES_BANDWIDTH;
    else if (strcmp(key, IOQ_DRA_CAP_IOPS) == 0)
      r = IOQ_RES_IOPS;
    else
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "%s.consumedCapacity names '%.64s', not a capacity of this driver "
                      "(bandwidth, iops)",
                      where, key);
    if (!json_object_is_type(val, json_type_string))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.consumedCapacity.%s is not a quantity string",
                      where, key);
    if (ioq_parse_quantity_int(json_object_get_string(val), &sh->units[r], e) < 0) {
      ioq_err_prefix(e, "%s.consumedCapacity.%s", where, key);
      return -1;
    }
    if (sh->units[r] > disk->units[r])
      return ioq_fail(e, IOQ_EINVAL_INPUT,
                      "%s.consumedCapacity.%s is %llu units, more than the %llu device '%s' has",
                      where, key, (unsigned long long)sh->units[r],
                      (unsigned long long)disk->units[r], sh->device);
  }
  return 0;
}

static int take_result(json_object *res, const char *where, const struct ioq_dra_claim_want *want,
                       struct ioq_dra_share *sh, ioq_err *e) {
  char pool[IOQ_DRA_OBJ_NAME_MAX + 1];
  if (take_str(res, "request", sh->request, sizeof sh->request, true, where, e) < 0 ||
      take_str(res, "pool", pool, sizeof pool, true, where, e) < 0 ||
      take_str(res, "device", sh->device, sizeof sh->device, true, where, e) < 0 ||
      take_str(res, "shareID", sh->share_id, sizeof sh->share_id, false, where, e) < 0)
    return -1;
  if (!printable(sh->request))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.request has unprintable characters", where);
  if (!printable(sh->share_id))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.shareID has unprintable characters", where);
  if (strcmp(pool, want->pool) != 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s is from pool '%.253s', this node serves pool '%s'",
                    where, pool, want->pool);
  if (find_disk(want, sh->device, &sh->disk, e) < 0) {
    ioq_err_prefix(e, "%s", where);
    return -1;
  }
  return take_consumed(res, where, &want->disks[sh->disk], sh, e);
}

static int take_results(json_object *claim, const char *who, const struct ioq_dra_claim_want *want,
                        struct ioq_dra_claim *out, ioq_err *e) {
  json_object *status = ioq_json_field(claim, "status");
  json_object *alloc = status ? ioq_json_field(status, "allocation") : NULL;
  if (status && !json_object_is_type(status, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim %s: status is not an object", who);
  if (!alloc)
    return ioq_fail(e, IOQ_ENOTFOUND, "claim %s is not allocated (no status.allocation)", who);
  if (!json_object_is_type(alloc, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim %s: status.allocation is not an object", who);
  json_object *devs = ioq_json_field(alloc, "devices");
  if (devs && !json_object_is_type(devs, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim %s: status.allocation.devices is not an object", who);
  char where[96];
  snprintf(where, sizeof where, "claim %.40s: status.allocation.devices", who);
  json_object *results = NULL;
  if (devs && array_field(devs, "results", where, IOQ_DRA_MAX_RESULTS, &results, e) < 0)
    return -1;
  size_t n = results ? json_object_array_length(results) : 0;
  char others[160] = "";
  for (size_t i = 0; i < n; i++) {
    json_object *res = json_object_array_get_idx(results, i);
    snprintf(where, sizeof where, "claim %.40s: result %zu", who, i);
    if (!json_object_is_type(res, json_type_object))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s is not an object", where);
    char driver[IOQ_DRA_OBJ_NAME_MAX + 1];
    if (take_str(res, "driver", driver, sizeof driver, true, where, e) < 0)
      return -1;
    if (strcmp(driver, want->driver) != 0) {
      if (!strstr(others, driver) && strlen(others) + strlen(driver) + 3 < sizeof others)
        snprintf(others + strlen(others), sizeof others - strlen(others), "%s%s",
                 others[0] ? ", " : "", driver);
      continue;
    }
    struct ioq_dra_share *sh = &out->shares[out->n_shares];
    if (take_result(res, where, want, sh, e) < 0)
      return -1;
    out->n_shares++;
  }
  if (out->n_shares == 0)
    return ioq_fail(e, IOQ_ENOTFOUND, "claim %s has no device of driver %s%s%s%s", who,
                    want->driver, others[0] ? " (only of " : "", others, others[0] ? ")" : "");
  /* one claim cannot hold more of a device than the device has */
  for (size_t i = 0; i < out->n_shares; i++)
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      unsigned __int128 sum = 0;
      for (size_t j = 0; j < out->n_shares; j++)
        if (out->shares[j].disk == out->shares[i].disk)
          sum += out->shares[j].units[r];
      const struct ioq_disk *d = &want->disks[out->shares[i].disk];
      if (sum > d->units[r])
        return ioq_fail(e, IOQ_EINVAL_INPUT,
                        "claim %s: its results on device '%s' consume %llu %s units in all, more "
                        "than the %llu the device has",
                        who, out->shares[i].device, (unsigned long long)sum,
                        ioq_dra_capacity_name((enum ioq_resource)r),
                        (unsigned long long)d->units[r]);
    }
  return 0;
}

static int take_reserved(json_object *claim, const char *who, struct ioq_dra_claim *out, ioq_err *e) {
  char where[96];
  snprintf(where, sizeof where, "claim %.40s: status", who);
  json_object *rf;
  if (array_field(ioq_json_field(claim, "status"), "reservedFor", where, IOQ_DRA_MAX_RESERVED, &rf,
                  e) < 0)
    return -1;
  size_t n = rf ? json_object_array_length(rf) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *ref = json_object_array_get_idx(rf, i);
    snprintf(where, sizeof where, "claim %.40s: status.reservedFor[%zu]", who, i);
    if (!json_object_is_type(ref, json_type_object))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s is not an object", where);
    char group[IOQ_DRA_OBJ_NAME_MAX + 1], resource[IOQ_DRA_OBJ_NAME_MAX + 1];
    if (take_str(ref, "apiGroup", group, sizeof group, false, where, e) < 0 ||
        take_str(ref, "resource", resource, sizeof resource, true, where, e) < 0)
      return -1;
    if (group[0] || strcmp(resource, "pods") != 0)
      continue; /* reserved for something other than a pod: not ours to enforce */
    char *uid = out->pods[out->n_pods], *name = out->pod_names[out->n_pods];
    if (take_str(ref, "uid", uid, IOQ_DRA_UID_MAX + 1, true, where, e) < 0 ||
        take_str(ref, "name", name, IOQ_DRA_OBJ_NAME_MAX + 1, true, where, e) < 0)
      return -1;
    if (!ioq_k8s_subdomain_valid(name))
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s.name '%.80s' is not a pod name", where, name);
    /* it names a cgroup directory later: the pod UID form or nothing */
    if (ioq_pod_uid_check(uid, e) < 0) {
      ioq_err_prefix(e, "%s.uid", where);
      return -1;
    }
    out->n_pods++;
  }
  if (out->n_pods == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim %s is reserved for no pod (status.reservedFor)", who);
  return 0;
}

static int from_json(json_object *claim, const struct ioq_dra_claim_want *want,
                     struct ioq_dra_claim *out, ioq_err *e) {
  if (!json_object_is_type(claim, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim: not a JSON object");
  const char *kind = ioq_json_str(claim, "kind");
  const char *api = ioq_json_str(claim, "apiVersion");
  if ((kind && strcmp(kind, "ResourceClaim") != 0) ||
      (api && strncmp(api, "resource.k8s.io/", 16) != 0))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim: the object is a %.64s of %.64s, not a ResourceClaim",
                    kind ? kind : "(no kind)", api ? api : "(no apiVersion)");
  json_object *meta = ioq_json_field(claim, "metadata");
  if (!meta || !json_object_is_type(meta, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim: metadata is missing or not an object");
  if (take_str(meta, "namespace", out->ns, sizeof out->ns, true, "claim: metadata", e) < 0 ||
      take_str(meta, "name", out->name, sizeof out->name, true, "claim: metadata", e) < 0 ||
      take_str(meta, "uid", out->uid, sizeof out->uid, true, "claim: metadata", e) < 0)
    return -1;
  if (!ioq_k8s_label_valid(out->ns) || !ioq_k8s_subdomain_valid(out->name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim: '%s/%s' is not a valid namespace/name", out->ns,
                    out->name);
  char who[IOQ_DRA_NS_MAX + IOQ_DRA_OBJ_NAME_MAX + 2];
  snprintf(who, sizeof who, "%s/%s", out->ns, out->name);
  if (want->uid && strcmp(out->uid, want->uid) != 0)
    return ioq_fail(e, IOQ_EMISMATCH,
                    "claim %s has UID %.128s, kubelet asked for UID %.128s (deleted and recreated?)",
                    who, printable(out->uid) ? out->uid : "(unprintable)", want->uid);
  if (take_results(claim, who, want, out, e) < 0)
    return -1;
  return take_reserved(claim, who, out, e);
}

int ioq_dra_claim_parse(const char *text, size_t len, const struct ioq_dra_claim_want *want,
                        struct ioq_dra_claim *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!want || (want->uid && !*want->uid) || !want->driver || !want->pool || (want->n_disks && !want->disks))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "claim: incomplete expectations (uid, driver, pool, disks)");
  json_object *root;
  if (ioq_json_parse_strict(text, len, IOQ_DRA_CLAIM_MAX_BYTES, "claim", &root, e) < 0)
    return -1;
  int rc = from_json(root, want, out, e);
  json_object_put(root);
  if (rc < 0)
    memset(out, 0, sizeof *out);
  return rc;
}
