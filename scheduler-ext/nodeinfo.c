// SPDX-License-Identifier: Apache-2.0
#include "nodeinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant/podneed.h"

const char *ext_node_name(json_object *node) {
  json_object *name = ioq_json_field(ioq_json_field(node, "metadata"), "name");
  if (!name || !json_object_is_type(name, json_type_string))
    return NULL;
  return json_object_get_string(name);
}

int ext_node_annotation(json_object *node, const char **text, size_t *len, ioq_err *e) {
  *text = NULL;
  *len = 0;
  json_object *ann = ioq_json_field(ioq_json_field(node, "metadata"), "annotations");
  if (!ann)
    return 0;
  if (!json_object_is_type(ann, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "metadata.annotations must be an object of strings");
  json_object *v;
  if (!json_object_object_get_ex(ann, IOQ_NODE_ANNOTATION, &v) || !v)
    return 0;
  if (!json_object_is_type(v, json_type_string))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "annotation %s must be a string", IOQ_NODE_ANNOTATION);
  *text = json_object_get_string(v);
  *len = (size_t)json_object_get_string_len(v);
  return 0;
}

static void set_error(struct ext_nodeinfo *ni, enum ext_node_status st, const char *msg) {
  ni->status = st;
  free(ni->error);
  ni->error = strdup(msg);
}

void ext_nodeinfo_from_anno(const char *name, const char *anno, size_t len,
                            struct ext_nodeinfo *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", name);
  if (!anno) {
    set_error(out, EXT_NODE_NO_ANNOTATION,
              "node has no " IOQ_NODE_ANNOTATION " annotation (is ioqos-plugin running there?)");
    return;
  }
  out->anno = malloc(len + 1);
  if (out->anno) {
    memcpy(out->anno, anno, len);
    out->anno[len] = '\0';
  }
  ioq_err e = {0};
  if (ioq_node_anno_parse(anno, len, &out->st, &e) < 0) {
    ioq_node_state_free(&out->st);
    set_error(out, EXT_NODE_MALFORMED, e.msg);
    return;
  }
  out->status = EXT_NODE_OK;
}

int ext_nodeinfo_from_json(json_object *node, struct ext_nodeinfo *out, ioq_err *e) {
  memset(out, 0, sizeof *out);
  if (!node || !json_object_is_type(node, json_type_object))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "node must be a JSON object");
  const char *name = ext_node_name(node);
  if (!name || !*name)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "node has no metadata.name");
  if (strlen(name) > IOQ_NODE_NAME_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "node name '%.64s...' is longer than %d characters",
                    name, IOQ_NODE_NAME_MAX);
  const char *text;
  size_t len;
  ioq_err ae = {0};
  if (ext_node_annotation(node, &text, &len, &ae) < 0) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    set_error(out, EXT_NODE_MALFORMED, ae.msg);
    return 0;
  }
  ext_nodeinfo_from_anno(name, text, len, out);
  return 0;
}

void ext_nodeinfo_free(struct ext_nodeinfo *ni) {
  if (!ni)
    return;
  ioq_node_state_free(&ni->st);
  free(ni->error);
  free(ni->anno);
  memset(ni, 0, sizeof *ni);
}
