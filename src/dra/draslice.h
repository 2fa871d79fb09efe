// SPDX-License-Identifier: Apache-2.0
/* The ResourceSlice (resource.k8s.io/v1) a node publishes in DRA mode, built
 * from the managed disks (docs/dra.md, "Design"):
 *  - one slice per node and driver; pool name = node name, resourceSliceCount 1;
 *  - owned by the Node object (ownerReference, controller), spec.nodeName set;
 *  - one device per publishable disk, named by ioq_dra_device_name(), with
 *    attributes (disk, class, rotational, major, minor, unit sizes, one bool
 *    per capability) and the consumable capacities "bandwidth" and "iops" in
 *    advertised units (the same units as ioqos/bandwidth and ioqos/iops),
 *    requestPolicy {default 0, validRange {min 0, max = capacity, step 1}},
 *    allowMultipleAllocations true.
 * Pure functions: nothing here talks to the API server. */
#ifndef IOQOS_DRASLICE_H
#define IOQOS_DRASLICE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/disk.h"
#include "base/error.h"
#include "units/units.h"

#define IOQ_DRA_DRIVER "ioqos.io"
#define IOQ_DRA_API_VERSION "resource.k8s.io/v1"
#define IOQ_DRA_CAP_BANDWIDTH "bandwidth"
#define IOQ_DRA_CAP_IOPS "iops"
#define IOQ_DRA_DEVICE_NAME_MAX 63   /* a DNS label */
#define IOQ_DRA_MAX_DEVICES 128      /* per ResourceSlice (API limit) */
#define IOQ_DRA_MAX_ATTRS_CAPS 32    /* attributes + capacities per device (API limit) */

/* The capacity name of a resource ("bandwidth", "iops"). */
const char *ioq_dra_capacity_name(enum ioq_resource r);

/* The device name of a disk: the disk name in lower case with '.', '_', '!'
 * and '+' turned into '-'; it must then be a DNS label (1-63 characters of
 * a-z, 0-9 and '-', alphanumeric at both ends), else an error says why.
 * Distinct disks can map to one name ("sda.1", "sda-1"): the slice builder
 * and the claim parser refuse such a disk list. */
IOQ_MUST_CHECK
int ioq_dra_device_name(const char *disk, char out[IOQ_DRA_DEVICE_NAME_MAX + 1], ioq_err *e);

/* Whether a disk is offered as a device: no fault, enforceable, and at least
 * one unit of some resource. *why (static or the disk's own text) says why
 * not when false. */
bool ioq_dra_disk_publishable(const struct ioq_disk *d, const char **why);

struct ioq_dra_slice_in {
  const char *driver;        /* IOQ_DRA_DRIVER */
  const char *node_name;     /* also the pool name */
  const char *node_uid;      /* for the ownerReference */
  int64_t generation;        /* pool generation, >= 0 */
  const struct ioq_unit_sizes *units; /* published as attributes */
  const struct ioq_disk *disks;
  size_t n_disks;
};

/* Builds the slice object (no metadata.name: metadata.generateName is
 * "<node>-<driver>-" as the Go helper does). Disks that are not publishable
 * are left out; *n_devices (if non-NULL) = the devices listed. Fails on bad
 * input (invalid node name or UID, driver, negative generation, device name
 * clash, more than IOQ_DRA_MAX_DEVICES devices), *out untouched then. */
IOQ_MUST_CHECK
int ioq_dra_slice_build(const struct ioq_dra_slice_in *in, json_object **out, size_t *n_devices,
                        ioq_err *e);

/* True when two slices publish the same content: driver, nodeName, pool name
 * and slice count, and devices (in order) with equal attributes and
 * capacities, quantities compared by value ("1000" == "1k", as the API
 * server may return them canonicalised). Metadata and pool.generation are
 * ignored: the publisher bumps the generation only when this is false.
 * Anything malformed compares unequal. The owner is not compared either: the
 * publisher checks metadata.ownerReferences[].uid against the Node's UID
 * itself (a node re-created under the same name has a new UID, and the
 * garbage collector deletes slices owned by the old one). */
bool ioq_dra_slice_same_content(json_object *a, json_object *b);

#endif
