// SPDX-License-Identifier: Apache-2.0
/* GET /v1/nvmet on the explain socket (explain.h): the NVMe-oF namespaces'
 * state as core/nvmetns.c last computed it (nvmetns_state), narrowed to one
 * subsystem or namespace. */
#include "explain.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "core/nvmetns.h"
#include "nvmet/nvmet.h"
#include "plugin.h"

unsigned explain_nvmet(struct plugin *p, const char *filter, char **body) {
  *body = NULL;
  char sub[IOQ_NVMET_NQN_MAX + 1] = "";
  uint64_t nsid = 0;
  if (filter) {
    const char *slash = strrchr(filter, '/');
    size_t n = slash ? (size_t)(slash - filter) : strlen(filter);
    if (n == 0 || n > IOQ_NVMET_NQN_MAX ||
        (slash && (ioq_parse_u64(slash + 1, &nsid) < 0 || nsid == 0 || nsid > UINT32_MAX)))
      return explain_error_body(400, body, "namespace: want NQN or NQN/NSID (NSID 1..4294967295)");
    memcpy(sub, filter, n);
    sub[n] = '\0';
  }
  json_object *st = nvmetns_state(p);
  if (!st)
    return explain_error_body(404, body,
                              "nothing to explain: the nvmet module is not loaded on this node and "
                              "config nvmet.namespaces is empty");
  /* a copy narrowed to the filter: the shared state is not changed */
  json_object *out = NULL;
  if (json_object_deep_copy(st, &out, NULL) < 0) {
    json_object_put(st);
    return explain_error_body(500, body, "out of memory (nvmet state)");
  }
  json_object_put(st);
  json_object *arr;
  if (filter && json_object_object_get_ex(out, "namespaces", &arr)) {
    json_object *kept = json_object_new_array();
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; kept && i < n; i++) {
      json_object *j = json_object_array_get_idx(arr, i), *s, *id;
      if (json_object_object_get_ex(j, "subsystem", &s) &&
          json_object_object_get_ex(j, "nsid", &id) && !strcmp(json_object_get_string(s), sub) &&
          (!nsid || (uint64_t)json_object_get_int64(id) == nsid))
        json_object_array_add(kept, json_object_get(j));
    }
    if (!kept || !json_object_array_length(kept)) {
      json_object_put(kept);
      json_object_put(out);
      return explain_error_body(404, body, "the nvmet target has no namespace %.240s", filter);
    }
    json_object_object_add(out, "namespaces", kept);
  }
  *body = strdup(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
  json_object_put(out);
  return *body ? 200 : 500;
}
