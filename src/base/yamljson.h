// SPDX-License-Identifier: Apache-2.0
/* YAML -> json-c: the node configuration as operators write it.
 *
 * One YAML document becomes the json-c tree a JSON file would give, so both
 * syntaxes go through the same validation. Plain scalars resolve by the
 * YAML 1.2 core schema (null/~, true/false, integers, floats; "yes" and "on"
 * stay strings), quoted scalars are strings. Hostile input is bounded:
 * aliases (billion laughs), tags, more than one document, complex keys,
 * duplicate keys, nesting deeper than IOQ_YAML_MAX_DEPTH and more nodes than
 * the caller allows are errors with the line, so memory stays bounded.
 *
 * Every object, array, string and number carries the 1-based line it starts
 * on (of its key, for a mapping member) as json-c userdata:
 * ioq_yaml_line() reads it back for error messages.
 */
#ifndef IOQOS_YAMLJSON_H
#define IOQOS_YAMLJSON_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/error.h"

#define IOQ_YAML_MAX_DEPTH 64

/* Parses `len` bytes of YAML into *out (caller puts it). More than
 * max_nodes keys and values in all is an error (memory: a json-c node takes
 * 100-600 bytes, so a few MiB of text could take hundreds of MiB). Errors:
 * IOQ_EINVAL_INPUT "SOURCE: line N: ...". */
IOQ_MUST_CHECK
int ioq_yaml_to_json(const char *text, size_t len, const char *source, size_t max_nodes,
                     json_object **out, ioq_err *e);
/* The line a node of such a tree starts on; 0 = unknown (JSON trees, null). */
unsigned ioq_yaml_line(json_object *o);

#endif
