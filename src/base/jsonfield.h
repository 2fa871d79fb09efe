// SPDX-License-Identifier: Apache-2.0
/* Small json-c field accessors for Kubernetes objects, shared by the plugin,
 * ioqosctl and the extender. Field names match as Go's encoding/json does
 * (exact, else ignoring ASCII case); nothing here allocates or fails. */
#ifndef IOQOS_JSONFIELD_H
#define IOQOS_JSONFIELD_H

#include <json-c/json.h>

/* Go encoding/json field lookup: exact key, else the first key that matches
 * ignoring ASCII case. NULL if obj is not an object or has no such field. A
 * JSON null value is returned as NULL too (Go treats it as absent). */
json_object *ioq_json_field(json_object *obj, const char *key);

/* The string value of obj.key; NULL when absent, null or not a string. */
const char *ioq_json_str(json_object *obj, const char *key);

/* The string value of obj.a.b (metadata.name); NULL when either level is
 * absent, null or of another type. */
const char *ioq_json_str_at(json_object *obj, const char *a, const char *b);

#endif
