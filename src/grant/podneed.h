// SPDX-License-Identifier: Apache-2.0
/* What a pod needs from ioqos, read from a Pod JSON object (json-c) as the
 * API server or kube-scheduler sends it. Shared by the scheduler extender and
 * the device plugin, so it knows nothing about HTTP.
 *
 * Effective request per ioqos resource (Kubernetes' PodRequests rule,
 * component-helpers/resource AggregateContainerRequests):
 *   running = sum over app containers
 *   for each init container in order:
 *     sidecar (restartPolicy Always): running += c; sidecars += c; use = sidecars
 *     otherwise:                      use = c + sidecars
 *     init_max = max(init_max, use)
 *   effective = max(running, init_max)
 * A container's amount is its limit, or its request when no limit is given;
 * extended resources cannot be overcommitted, so both present and different
 * is an invalid pod (the API server rejects it too).
 *
 * Class: annotation `ioqos.io/class` (default "default"). The pod's chosen
 * disk, if any: annotation `ioqos.io/disk`. The opt-in burst: annotation
 * `ioqos.io/burst` ("true" or "false").
 *
 * Field lookup follows Go's encoding/json: an exact key match first, then a
 * case-insensitive one (kube-scheduler's Go decoder accepts any casing, so do
 * we). Map keys (annotation and resource names) are matched exactly.
 */
#ifndef IOQOS_PODNEED_H
#define IOQOS_PODNEED_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "base/error.h"
#include "base/jsonfield.h" /* ioq_json_field, which the pod-need readers use */
#include "grant/placement.h"
#include "units/units.h"

#define IOQ_POD_NAME_MAX 253
#define IOQ_POD_NAMESPACE_MAX 63
#define IOQ_POD_UID_MAX 128

struct ioq_pod_need {
  char ns[IOQ_POD_NAMESPACE_MAX + 1]; /* "" if the object has none */
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  uint64_t units[IOQ_RES_COUNT];              /* effective request, 0 = not requested */
  char class_name[IOQ_CLASS_NAME_MAX + 1];    /* never empty */
  char disk[IOQ_DISK_NAME_MAX + 1];           /* annotation ioqos.io/disk, "" = none */
  /* annotation ioqos.io/burst "true"; a value other than "true" or "false"
   * sets burst_invalid instead of failing the need: a typo in an opt-in must
   * not cost the pod its grant (explain says why it does not burst) */
  bool burst, burst_invalid;
};

/* Reads the needs of `pod` (a JSON object). Errors name the field:
 * "spec.containers[1] (db): resources.limits[\"ioqos/bandwidth\"]: quantity 'x' ...". */
IOQ_MUST_CHECK
int ioq_pod_need_from_json(json_object *pod, struct ioq_pod_need *out, ioq_err *e);

/* Same from JSON text (len bytes, need not be NUL-terminated). */
IOQ_MUST_CHECK
int ioq_pod_need_parse(const char *text, size_t len, struct ioq_pod_need *out, ioq_err *e);

/* True if the pod requests any ioqos resource. */
bool ioq_pod_need_any(const struct ioq_pod_need *n);

/* The placement view of the need (class_name points into n). */
void ioq_pod_need_placement(const struct ioq_pod_need *n, struct ioq_need *out);

#endif
