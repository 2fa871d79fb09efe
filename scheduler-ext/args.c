// SPDX-License-Identifier: Apache-2.0
#include "args.h"

#include "base/k8sname.h"

#include <stdio.h>
#include <string.h>

static int bad(ioq_err *e, const char *field, const char *what) {
  return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: %s", field, what);
}

/* The shared DNS-1123 checks (src/base/k8sname.c: no empty label, so no "a..b"),
 * then the field's own length bound. */
bool ext_dns_subdomain_valid(const char *s, size_t max) {
  return s && strlen(s) <= max && (max <= 63 ? ioq_k8s_label_valid(s) : ioq_k8s_subdomain_valid(s));
}

int ext_args_parse(json_object *root, struct ext_args *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!root || !json_object_is_type(root, json_type_object))
    return bad(e, "request", "must be a JSON object (ExtenderArgs)");
  out->pod = ioq_json_field(root, "Pod");
  if (!out->pod)
    return bad(e, "Pod", "is missing");
  if (!json_object_is_type(out->pod, json_type_object))
    return bad(e, "Pod", "must be a Pod object");
  if (ioq_pod_need_from_json(out->pod, &out->need, e) < 0)
    return -1;

  json_object *nodes = ioq_json_field(root, "Nodes");
  json_object *names = ioq_json_field(root, "NodeNames");
  if (nodes && names)
    return bad(e, "request", "has both Nodes and NodeNames; kube-scheduler sends one of them");
  if (!nodes && !names)
    return bad(e, "request", "has neither Nodes nor NodeNames");
  if (names) {
    if (!json_object_is_type(names, json_type_array))
      return bad(e, "NodeNames", "must be an array of node names");
    out->names_mode = true;
    out->names = names;
    out->n = json_object_array_length(names);
    for (size_t i = 0; i < out->n; i++) {
      json_object *v = json_object_array_get_idx(names, i);
      if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0 ||
          json_object_get_string_len(v) > IOQ_NODE_NAME_MAX ||
          strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
        char f[48];
        snprintf(f, sizeof f, "NodeNames[%zu]", i);
        return bad(e, f, "must be a node name (string of 1-253 characters)");
      }
    }
    return 0;
  }
  if (!json_object_is_type(nodes, json_type_object))
    return bad(e, "Nodes", "must be a NodeList object");
  json_object *items = ioq_json_field(nodes, "items");
  if (items && !json_object_is_type(items, json_type_array))
    return bad(e, "Nodes.items", "must be an array of Node objects");
  out->items = items;
  out->n = items ? json_object_array_length(items) : 0;
  for (size_t i = 0; i < out->n; i++)
    if (!json_object_is_type(json_object_array_get_idx(items, i), json_type_object)) {
      char f[48];
      snprintf(f, sizeof f, "Nodes.items[%zu]", i);
      return bad(e, f, "must be a Node object");
    }
  return 0;
}

const char *ext_args_name(const struct ext_args *a, size_t i) {
  return json_object_get_string(json_object_array_get_idx(a->names, i));
}

json_object *ext_args_node(const struct ext_args *a, size_t i) {
  return json_object_array_get_idx(a->items, i);
}

static int name_field(json_object *root, const char *key, char *out, size_t outsz, size_t max,
                      bool required, ioq_err *e) {
  out[0] = '\0';
  json_object *v = ioq_json_field(root, key);
  if (!v) {
    if (required)
      return bad(e, key, "is missing");
    return 0;
  }
  if (!json_object_is_type(v, json_type_string))
    return bad(e, key, "must be a string");
  const char *s = json_object_get_string(v);
  if (!ext_dns_subdomain_valid(s, max) || strlen(s) >= outsz) {
    char what[160];
    snprintf(what, sizeof what, "'%.64s' is not a valid Kubernetes name (a-z, 0-9, '-', '.', at most %zu)",
             s, max);
    return bad(e, key, what);
  }
  strcpy(out, s);
  return 0;
}

int ext_bind_args_parse(json_object *root, struct ext_bind_args *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!root || !json_object_is_type(root, json_type_object))
    return bad(e, "request", "must be a JSON object (ExtenderBindingArgs)");
  if (name_field(root, "PodName", out->pod_name, sizeof out->pod_name, IOQ_POD_NAME_MAX, true, e) < 0 ||
      name_field(root, "PodNamespace", out->pod_namespace, sizeof out->pod_namespace,
                 IOQ_POD_NAMESPACE_MAX, true, e) < 0 ||
      name_field(root, "Node", out->node, sizeof out->node, IOQ_NODE_NAME_MAX, true, e) < 0)
    return -1;
  json_object *uid = ioq_json_field(root, "PodUID");
  if (uid) {
    if (!json_object_is_type(uid, json_type_string) ||
        (size_t)json_object_get_string_len(uid) >= sizeof out->pod_uid)
      return bad(e, "PodUID", "must be a UID string");
    const char *s = json_object_get_string(uid);
    for (const char *p = s; *p; p++)
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
        return bad(e, "PodUID", "must contain only letters, digits and '-'");
    strcpy(out->pod_uid, s);
  }
  return 0;
}
