// SPDX-License-Identifier: Apache-2.0
#include "explain_nvmet.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static const char *str(json_object *o, const char *key, const char *dflt) {
  json_object *v;
  return o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : dflt;
}

static bool has(json_object *o, const char *key, json_object **v) {
  return o && json_object_object_get_ex(o, key, v);
}

static void one(FILE *f, json_object *ns) {
  json_object *v, *q = NULL, *u;
  int64_t nsid = has(ns, "nsid", &v) ? json_object_get_int64(v) : 0;
  bool enabled = has(ns, "enabled", &v) && json_object_get_boolean(v);
  const char *bio = !has(ns, "bufferedIO", &v)   ? "(none)"
                    : json_object_get_boolean(v) ? "on"
                                                 : "off";
  fprintf(f, "\nnamespace %s/%lld: %s, buffered_io %s, %s\n", str(ns, "subsystem", "?"),
          (long long)nsid, enabled ? "enabled" : "disabled", bio, str(ns, "backing", ""));
  if (has(ns, "cgroupID", &v))
    fprintf(f, "  cgroup_id:  %lld (in configfs now)\n", (long long)json_object_get_int64(v));
  else
    fprintf(f, "  cgroup_id:  (this kernel has no such attribute)\n");
  if (!has(ns, "ioqos", &q)) {
    fprintf(f, "  ioqos:      not configured (no nvmet.namespaces entry selects it)\n");
    return;
  }
  fprintf(f, "  config:     %s\n", str(q, "entry", "?"));
  fprintf(f, "  verdict:    %s: %s\n", str(q, "verdict", "?"), str(q, "why", ""));
  if (has(q, "units", &u)) {
    json_object *b = NULL, *i = NULL;
    json_object_object_get_ex(u, "bandwidth", &b);
    json_object_object_get_ex(u, "iops", &i);
    fprintf(f, "  units:      %lld bandwidth, %lld IOPS of disk %s (not offered to pods)\n",
            (long long)json_object_get_int64(b), (long long)json_object_get_int64(i),
            str(q, "disk", "?"));
  }
  if (has(q, "cgroup", &v))
    fprintf(f, "  cgroup:     %s\n", json_object_get_string(v));
  fprintf(f, "  state:      %s\n", str(q, "state", "(not applied: the plugin had no pass yet)"));
}

int explain_nvmet_render(FILE *f, json_object *doc, char *err, size_t errsz) {
  json_object *arr, *um;
  if (!json_object_is_type(doc, json_type_object) || !has(doc, "state", &arr) ||
      !has(doc, "namespaces", &arr) || !json_object_is_type(arr, json_type_array)) {
    snprintf(err, errsz, "the plugin's answer is not an nvmet state (no state/namespaces)");
    return -1;
  }
  fprintf(f, "nvmet target: %s (cgroup_id: %s)\n  %s\n", str(doc, "state", "?"),
          str(doc, "cgroupID", "?"), str(doc, "reason", ""));
  size_t n = json_object_array_length(arr);
  for (size_t i = 0; i < n; i++)
    one(f, json_object_array_get_idx(arr, i));
  if (has(doc, "unmatched", &um) && json_object_is_type(um, json_type_array) &&
      json_object_array_length(um)) {
    fprintf(f, "\nconfig entries that select nothing:\n");
    for (size_t i = 0; i < json_object_array_length(um); i++)
      fprintf(f, "  ! %s\n", json_object_get_string(json_object_array_get_idx(um, i)));
  }
  return 0;
}
