// SPDX-License-Identifier: Apache-2.0
/* ExtenderArgs as kube-scheduler marshals it (Go field names, any casing):
 *   {"Pod":{...},"Nodes":{"metadata":{},"items":[Node...]},"NodeNames":null}
 *   {"Pod":{...},"Nodes":null,"NodeNames":["node-a",...]}   (nodeCacheCapable)
 * and ExtenderBindingArgs {"PodName","PodNamespace","PodUID","Node"}. */
#ifndef IOQOS_EXT_ARGS_H
#define IOQOS_EXT_ARGS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "grant/nodeanno.h"
#include "grant/podneed.h"

struct ext_args {
  json_object *pod; /* borrowed from the request */
  struct ioq_pod_need need;
  bool names_mode;
  json_object *items; /* full mode: Nodes.items (NULL = no nodes) */
  json_object *names; /* names mode: NodeNames */
  size_t n;           /* number of nodes */
};

/* Fails with a message naming the field for anything kube-scheduler would
 * never send: not an object, no Pod, wrong types, both or neither node form,
 * a node name that is not a string, an invalid pod. */
int ext_args_parse(json_object *root, struct ext_args *out, ioq_err *e);

/* Names mode: the i-th node name (validated by ext_args_parse). */
const char *ext_args_name(const struct ext_args *a, size_t i);
/* Full mode: the i-th Node object. */
json_object *ext_args_node(const struct ext_args *a, size_t i);

struct ext_bind_args {
  char pod_name[IOQ_POD_NAME_MAX + 1];
  char pod_namespace[IOQ_POD_NAMESPACE_MAX + 1];
  char pod_uid[IOQ_POD_UID_MAX + 1]; /* may be "" */
  char node[IOQ_NODE_NAME_MAX + 1];
};

/* Names are checked as Kubernetes names (lower-case DNS labels/subdomains),
 * so they are safe to put in an API path. */
int ext_bind_args_parse(json_object *root, struct ext_bind_args *out, ioq_err *e);

/* DNS-1123 subdomain (pod and node names): [a-z0-9.-], alnum at both ends. */
bool ext_dns_subdomain_valid(const char *s, size_t max);

#endif
