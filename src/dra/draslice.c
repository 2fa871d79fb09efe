// SPDX-License-Identifier: Apache-2.0
/* ResourceSlice content for DRA mode (dra/draslice.h). */
#include "dra/draslice.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonfield.h"
#include "base/k8sname.h"
#include "grant/placement.h"

#define UID_MAX 128

const char *ioq_dra_capacity_name(enum ioq_resource r) {
  return r == IOQ_RES_BANDWIDTH ? IOQ_DRA_CAP_BANDWIDTH : IOQ_DRA_CAP_IOPS;
}

int ioq_dra_device_name(const char *disk, char out[IOQ_DRA_DEVICE_NAME_MAX + 1], ioq_err *e) {
  size_t n = disk ? strlen(disk) : 0;
  if (n == 0 || n > IOQ_DRA_DEVICE_NAME_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "disk name '%s' cannot be a DRA device name: %s",
                    disk ? disk : "", n ? "longer than 63 characters" : "empty");
  char name[IOQ_DRA_DEVICE_NAME_MAX + 1];
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)disk[i];
    if (c == '.' || c == '_' || c == '!' || c == '+')
      c = '-';
    name[i] = (char)tolower(c);
  }
  name[n] = '\0';
  if (!ioq_k8s_label_valid(name))
    return ioq_fail(e, IOQ_EINVAL_INPUT,
                    "disk name '%s' gives DRA device name '%s', which is not a DNS label "
                    "(a-z, 0-9 and '-', alphanumeric at both ends)",
                    disk, name);
  memcpy(out, name, n + 1);
  return 0;
}

bool ioq_dra_disk_publishable(const struct ioq_disk *d, const char **why) {
  const char *w = NULL;
  if (d->fault[0])
    w = d->fault;
  else if (!d->enforceable)
    w = d->not_enforceable_reason[0] ? d->not_enforceable_reason : "no limit can be enforced";
  else if (d->units[IOQ_RES_BANDWIDTH] == 0 && d->units[IOQ_RES_IOPS] == 0)
    w = "no units to offer (capacity unknown or allocatable fraction 0)";
  if (why)
    *why = w;
  return w == NULL;
}

/* "io.bfq.weight" -> "ioBfqWeight": attribute names are C identifiers. */
static void cap_attr_name(const char *cap, char *out, size_t outsz) {
  size_t o = 0;
  bool upper = false;
  for (const char *p = cap; *p && o + 1 < outsz; p++) {
    if (*p == '.' || *p == '-') {
      upper = true;
      continue;
    }
    out[o++] = upper ? (char)toupper((unsigned char)*p) : *p;
    upper = false;
  }
  out[o] = '\0';
}

static json_object *attr(const char *type, json_object *v) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, type, v);
  return o;
}

static json_object *quantity(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return json_object_new_string(buf);
}

static json_object *capacity(uint64_t units) {
  json_object *c = json_object_new_object();
  json_object_object_add(c, "value", quantity(units));
  /* min + step must not exceed the value: a resource with 0 units gets no
   * policy (then a request naming no amount takes all of it: 0). */
  if (units > 0) {
    json_object *range = json_object_new_object();
    json_object_object_add(range, "min", quantity(0));
    json_object_object_add(range, "max", quantity(units));
    json_object_object_add(range, "step", quantity(1));
    json_object *pol = json_object_new_object();
    json_object_object_add(pol, "default", quantity(0));
    json_object_object_add(pol, "validRange", range);
    json_object_object_add(c, "requestPolicy", pol);
  }
  return c;
}

static json_object *device(const struct ioq_disk *d, const char *name,
                           const struct ioq_unit_sizes *u) {
  json_object *attrs = json_object_new_object();
  json_object_object_add(attrs, "disk", attr("string", json_object_new_string(d->dev.name)));
  json_object_object_add(attrs, "class", attr("string", json_object_new_string(d->class_name)));
  json_object_object_add(attrs, "rotational", attr("bool", json_object_new_boolean(d->dev.rotational)));
  json_object_object_add(attrs, "major", attr("int", json_object_new_int64(d->dev.major)));
  json_object_object_add(attrs, "minor", attr("int", json_object_new_int64(d->dev.minor)));
  json_object_object_add(attrs, "bandwidthUnitBytesPerSecond",
                         attr("int", json_object_new_int64((int64_t)u->size[IOQ_RES_BANDWIDTH])));
  json_object_object_add(attrs, "iopsUnit",
                         attr("int", json_object_new_int64((int64_t)u->size[IOQ_RES_IOPS])));
  for (unsigned i = 0; i < IOQ_CAP_COUNT_; i++) {
    char an[40];
    cap_attr_name(ioq_cap_name(1u << i), an, sizeof an);
    json_object_object_add(attrs, an, attr("bool", json_object_new_boolean((d->caps >> i) & 1u)));
  }
  json_object *caps = json_object_new_object();
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    json_object_object_add(caps, ioq_dra_capacity_name((enum ioq_resource)r), capacity(d->units[r]));

  json_object *dev = json_object_new_object();
  json_object_object_add(dev, "name", json_object_new_string(name));
  json_object_object_add(dev, "attributes", attrs);
  json_object_object_add(dev, "capacity", caps);
  json_object_object_add(dev, "allowMultipleAllocations", json_object_new_boolean(1));
  return dev;
}
_Static_assert(7 + IOQ_CAP_COUNT_ + IOQ_RES_COUNT <= IOQ_DRA_MAX_ATTRS_CAPS,
               "attributes + capacities of a device exceed the API's 32");

static bool uid_valid(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > UID_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '-')
      return false;
  return true;
}

int ioq_dra_slice_build(const struct ioq_dra_slice_in *in, json_object **out, size_t *n_devices,
                        ioq_err *e) {
  if (!in->driver || !ioq_k8s_subdomain_valid(in->driver) || strlen(in->driver) > 63)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "DRA driver name '%s' is not a DNS subdomain of at most 63 characters",
                    in->driver ? in->driver : "");
  if (!in->node_name || !ioq_k8s_subdomain_valid(in->node_name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "node name '%s' is not a DNS subdomain",
                    in->node_name ? in->node_name : "");
  if (!uid_valid(in->node_uid))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "node UID '%s' is not a UID (1-%d of [A-Za-z0-9-])",
                    in->node_uid ? in->node_uid : "", UID_MAX);
  if (in->generation < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pool generation %" PRId64 " is negative", in->generation);
  if (in->n_disks && !in->disks)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%zu disks but no disk list", in->n_disks);

  /* names first, so a clash fails before anything is built */
  char (*names)[IOQ_DRA_DEVICE_NAME_MAX + 1] = in->n_disks ? calloc(in->n_disks, sizeof *names) : NULL;
  if (in->n_disks && !names)
    return ioq_fail(e, ENOMEM, "out of memory for %zu device names", in->n_disks);
  size_t listed = 0;
  for (size_t i = 0; i < in->n_disks; i++) {
    if (ioq_dra_device_name(in->disks[i].dev.name, names[i], e) < 0) {
      free(names);
      return -1;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0) {
        ioq_fail(e, IOQ_ECONFLICT, "disks '%s' and '%s' both give DRA device name '%s'",
                 in->disks[j].dev.name, in->disks[i].dev.name, names[i]);
        free(names);
        return -1;
      }
    if (ioq_dra_disk_publishable(&in->disks[i], NULL))
      listed++;
  }
  if (listed > IOQ_DRA_MAX_DEVICES) {
    free(names);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%zu devices, more than the %d one ResourceSlice holds",
                    listed, IOQ_DRA_MAX_DEVICES);
  }

  json_object *devices = json_object_new_array();
  for (size_t i = 0; i < in->n_disks; i++)
    if (ioq_dra_disk_publishable(&in->disks[i], NULL))
      json_object_array_add(devices, device(&in->disks[i], names[i], in->units));
  free(names);

  char gen_name[512];
  snprintf(gen_name, sizeof gen_name, "%s-%s-", in->node_name, in->driver);
  json_object *owner = json_object_new_object();
  json_object_object_add(owner, "apiVersion", json_object_new_string("v1"));
  json_object_object_add(owner, "kind", json_object_new_string("Node"));
  json_object_object_add(owner, "name", json_object_new_string(in->node_name));
  json_object_object_add(owner, "uid", json_object_new_string(in->node_uid));
  json_object_object_add(owner, "controller", json_object_new_boolean(1));
  json_object *owners = json_object_new_array();
  json_object_array_add(owners, owner);
  json_object *meta = json_object_new_object();
  json_object_object_add(meta, "generateName", json_object_new_string(gen_name));
  json_object_object_add(meta, "ownerReferences", owners);

  json_object *pool = json_object_new_object();
  json_object_object_add(pool, "name", json_object_new_string(in->node_name));
  json_object_object_add(pool, "generation", json_object_new_int64(in->generation));
  json_object_object_add(pool, "resourceSliceCount", json_object_new_int64(1));
  json_object *spec = json_object_new_object();
  json_object_object_add(spec, "driver", json_object_new_string(in->driver));
  json_object_object_add(spec, "pool", pool);
  json_object_object_add(spec, "nodeName", json_object_new_string(in->node_name));
  json_object_object_add(spec, "devices", devices);

  json_object *slice = json_object_new_object();
  json_object_object_add(slice, "apiVersion", json_object_new_string(IOQ_DRA_API_VERSION));
  json_object_object_add(slice, "kind", json_object_new_string("ResourceSlice"));
  json_object_object_add(slice, "metadata", meta);
  json_object_object_add(slice, "spec", spec);
  *out = slice;
  if (n_devices)
    *n_devices = listed;
  return 0;
}

/* ---- content comparison ---- */

/* Replaces the quantity string at obj[key] (if present) by its value as an
 * int64; false if it is not a whole, non-negative quantity below 2^63. */
static bool norm_quantity(json_object *obj, const char *key) {
  json_object *q = ioq_json_field(obj, key);
  if (!q)
    return true;
  if (!json_object_is_type(q, json_type_string))
    return false;
  uint64_t v;
  ioq_err e;
  if (ioq_parse_quantity_int(json_object_get_string(q), &v, &e) < 0 || v > INT64_MAX)
    return false;
  json_object_object_add(obj, key, json_object_new_int64((int64_t)v));
  return true;
}

static bool norm_capacity(json_object *cap) {
  if (!json_object_is_type(cap, json_type_object) || !norm_quantity(cap, "value"))
    return false;
  json_object *pol = ioq_json_field(cap, "requestPolicy");
  if (!pol)
    return true;
  if (!json_object_is_type(pol, json_type_object) || !norm_quantity(pol, "default"))
    return false;
  json_object *range = ioq_json_field(pol, "validRange");
  if (range && (!json_object_is_type(range, json_type_object) || !norm_quantity(range, "min") ||
                !norm_quantity(range, "max") || !norm_quantity(range, "step")))
    return false;
  json_object *vals = ioq_json_field(pol, "validValues");
  if (vals) {
    if (!json_object_is_type(vals, json_type_array))
      return false;
    for (size_t i = 0; i < json_object_array_length(vals); i++) {
      json_object *box = json_object_new_object();
      json_object_object_add(box, "v", json_object_get(json_object_array_get_idx(vals, i)));
      bool ok = norm_quantity(box, "v");
      json_object_array_put_idx(vals, i, json_object_get(ioq_json_field(box, "v")));
      json_object_put(box);
      if (!ok)
        return false;
    }
  }
  return true;
}

/* A copy of the slice's spec with pool.generation dropped and quantities as
 * numbers; NULL when malformed. */
static json_object *normalised_spec(json_object *slice) {
  json_object *spec = ioq_json_field(slice, "spec");
  if (!spec || !json_object_is_type(spec, json_type_object))
    return NULL;
  json_object *copy = NULL;
  if (json_object_deep_copy(spec, &copy, NULL) != 0)
    return NULL;
  json_object *pool = ioq_json_field(copy, "pool");
  json_object *devices = ioq_json_field(copy, "devices");
  if (!pool || !json_object_is_type(pool, json_type_object) || !devices ||
      !json_object_is_type(devices, json_type_array))
    goto bad;
  json_object_object_del(pool, "generation");
  for (size_t i = 0; i < json_object_array_length(devices); i++) {
    json_object *caps = ioq_json_field(json_object_array_get_idx(devices, i), "capacity");
    if (!caps)
      continue;
    if (!json_object_is_type(caps, json_type_object))
      goto bad;
    json_object_object_foreach(caps, name, cap) {
      (void)name;
      if (!norm_capacity(cap))
        goto bad;
    }
  }
  return copy;
bad:
  json_object_put(copy);
  return NULL;
}

bool ioq_dra_slice_same_content(json_object *a, json_object *b) {
  json_object *na = normalised_spec(a), *nb = normalised_spec(b);
  bool same = na && nb && json_object_equal(na, nb);
  json_object_put(na);
  json_object_put(nb);
  return same;
}
