// SPDX-License-Identifier: Apache-2.0
#include "base/jsonfield.h"

#include <strings.h>

json_object *ioq_json_field(json_object *obj, const char *key) {
  if (!obj || !json_object_is_type(obj, json_type_object))
    return NULL;
  json_object *v = NULL;
  if (json_object_object_get_ex(obj, key, &v))
    return v; /* NULL when the value is JSON null */
  json_object_object_foreach(obj, k, val) {
    if (strcasecmp(k, key) == 0)
      return val;
  }
  return NULL;
}

const char *ioq_json_str(json_object *obj, const char *key) {
  json_object *v = ioq_json_field(obj, key);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

const char *ioq_json_str_at(json_object *obj, const char *a, const char *b) {
  return ioq_json_str(ioq_json_field(obj, a), b);
}
