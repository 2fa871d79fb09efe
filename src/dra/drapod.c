// SPDX-License-Identifier: Apache-2.0
#include "dra/drapod.h"

#include <string.h>

#include "base/fsutil.h"
#include "base/jsonfield.h"
#include "base/k8sname.h"

static int add_claim(struct ioq_dra_pod *out, const char *name, ioq_err *e) {
  if (!ioq_k8s_subdomain_valid(name))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s/%s: claim name '%.80s' is not an object name",
                    out->ns, out->name, name);
  for (size_t i = 0; i < out->n_claims; i++)
    if (strcmp(out->claims[i], name) == 0)
      return 0;
  if (out->n_claims == IOQ_DRA_POD_CLAIMS_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod %s/%s: more than %d resource claims", out->ns,
                    out->name, IOQ_DRA_POD_CLAIMS_MAX);
  ioq_copy_trunc(out->claims[out->n_claims++], sizeof out->claims[0], name);
  return 0;
}

/* the resourceClaimName of each element of obj.key (an array); elements
 * without one (a template whose claim is not made yet) are skipped */
static int add_claims_of(struct ioq_dra_pod *out, json_object *obj, const char *key, ioq_err *e) {
  json_object *a = ioq_json_field(obj, key);
  if (!a || !json_object_is_type(a, json_type_array))
    return 0;
  for (size_t i = 0; i < json_object_array_length(a); i++) {
    const char *n = ioq_json_str(json_object_array_get_idx(a, i), "resourceClaimName");
    if (n && add_claim(out, n, e) < 0)
      return -1;
  }
  return 0;
}

static bool all_terminated(json_object *status) {
  json_object *a = ioq_json_field(status, "containerStatuses");
  size_t n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
  for (size_t i = 0; i < n; i++)
    if (!ioq_json_field(ioq_json_field(json_object_array_get_idx(a, i), "state"), "terminated"))
      return false;
  return n > 0;
}

static int take(char *dst, size_t dstsz, json_object *meta, const char *key, ioq_err *e) {
  const char *v = ioq_json_str(meta, key);
  if (!v || !*v || strlen(v) >= dstsz)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod: metadata.%s missing, empty or too long", key);
  memcpy(dst, v, strlen(v) + 1);
  return 0;
}

int ioq_dra_pod_parse(json_object *pod, struct ioq_dra_pod *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!pod || !json_object_is_type(pod, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "pod: not an object");
  json_object *meta = ioq_json_field(pod, "metadata");
  if (take(out->ns, sizeof out->ns, meta, "namespace", e) < 0 ||
      take(out->name, sizeof out->name, meta, "name", e) < 0 ||
      take(out->uid, sizeof out->uid, meta, "uid", e) < 0)
    return -1;
  json_object *status = ioq_json_field(pod, "status");
  if (add_claims_of(out, ioq_json_field(pod, "spec"), "resourceClaims", e) < 0 ||
      add_claims_of(out, status, "resourceClaimStatuses", e) < 0)
    return -1;
  const char *phase = ioq_json_str(status, "phase");
  out->may_hold = phase && (strcmp(phase, "Pending") == 0 || strcmp(phase, "Running") == 0) &&
                  !all_terminated(status);
  return 0;
}
