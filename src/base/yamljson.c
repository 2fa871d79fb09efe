// SPDX-License-Identifier: Apache-2.0
/* YAML -> json-c tree, one libyaml event at a time (yamljson.h). */
#include "base/yamljson.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct frame {
  json_object *node; /* object or array */
  char *key;         /* mapping: the key read, waiting for its value */
  unsigned key_line;
};

struct builder {
  const char *src;
  ioq_err *e;
  json_object *root;
  bool have_root;
  struct frame stack[IOQ_YAML_MAX_DEPTH];
  int depth;
  int documents;
  size_t nodes, max_nodes;
};

unsigned ioq_yaml_line(json_object *o) {
  return o ? (unsigned)(uintptr_t)json_object_get_userdata(o) : 0;
}

static void set_line(json_object *o, unsigned line) {
  if (o) /* json null is a NULL pointer: no line, the parent's is used */
    json_object_set_userdata(o, (void *)(uintptr_t)line, NULL);
}

static int fail_at(struct builder *b, unsigned line, const char *what, const char *detail) {
  return ioq_fail(b->e, IOQ_EINVAL_INPUT, "%s: line %u: %s%.100s", b->src, line, what,
                  detail ? detail : "");
}

static bool is_digits(const char *s, int base) {
  if (!*s)
    return false;
  for (; *s; s++) {
    bool ok = base == 16 ? ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') ||
                            (*s >= 'A' && *s <= 'F'))
              : base == 8 ? (*s >= '0' && *s <= '7')
                          : (*s >= '0' && *s <= '9');
    if (!ok)
      return false;
  }
  return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? (YAML 1.2 core schema) */
static bool is_float(const char *s) {
  if (*s == '-' || *s == '+')
    s++;
  size_t ip = strspn(s, "0123456789");
  s += ip;
  size_t fp = 0;
  if (*s == '.') {
    s++;
    fp = strspn(s, "0123456789");
    s += fp;
  }
  if (ip == 0 && fp == 0)
    return false;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '-' || *s == '+')
      s++;
    size_t ep = strspn(s, "0123456789");
    if (!ep)
      return false;
    s += ep;
  }
  return *s == '\0';
}

/* A plain scalar's value by the core schema; *out NULL for null. */
static int resolve_plain(struct builder *b, const char *s, unsigned line, json_object **out) {
  *out = NULL;
  if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
    return 0;
  if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE") || !strcmp(s, "false") ||
      !strcmp(s, "False") || !strcmp(s, "FALSE")) {
    *out = json_object_new_boolean(s[0] == 't' || s[0] == 'T');
    goto made;
  }
  const char *d = s + (*s == '-' || *s == '+');
  int base = 0;
  if (is_digits(d, 10))
    base = 10;
  else if (s[0] == '0' && s[1] == 'x' && is_digits(s + 2, 16))
    base = 16;
  else if (s[0] == '0' && s[1] == 'o' && is_digits(s + 2, 8))
    base = 8;
  if (base) {
    const char *num = base == 10 ? s : s + 2;
    errno = 0;
    char *end;
    long long v = strtoll(num, &end, base);
    if (errno == 0) {
      *out = json_object_new_int64(v);
      goto made;
    }
    errno = 0;
    unsigned long long u = *s == '-' ? 0 : strtoull(num + (*num == '+'), &end, base);
    if (*s == '-' || errno)
      return fail_at(b, line, "integer out of range: ", s);
    *out = json_object_new_uint64(u);
    goto made;
  }
  if (is_float(s) || !strcmp(s, ".inf") || !strcmp(s, "+.inf") || !strcmp(s, "-.inf") ||
      !strcmp(s, ".nan") || !strcmp(s, ".Inf") || !strcmp(s, "-.Inf") || !strcmp(s, ".NaN")) {
    double v = !strcmp(s, ".nan") || !strcmp(s, ".NaN") ? NAN
               : strstr(s, "inf") || strstr(s, "Inf")   ? (*s == '-' ? -INFINITY : INFINITY)
                                                        : strtod(s, NULL);
    *out = json_object_new_double(v);
    goto made;
  }
  *out = json_object_new_string(s);
made:
  if (!*out)
    return ioq_fail(b->e, ENOMEM, "%s: out of memory for a JSON value (line %u)", b->src,
                    line);
  return 0;
}

/* Puts a new node in its parent (or as the root); takes the reference. */
static int attach(struct builder *b, json_object *v, unsigned line) {
  if (b->depth == 0) {
    b->root = v;
    b->have_root = true;
    set_line(v, line);
    return 0;
  }
  struct frame *f = &b->stack[b->depth - 1];
  if (json_object_is_type(f->node, json_type_array)) {
    set_line(v, line);
    if (json_object_array_add(f->node, v) < 0) {
      json_object_put(v);
      return ioq_fail(b->e, ENOMEM, "%s: out of memory for an array item (line %u)", b->src,
                      line);
    }
    return 0;
  }
  set_line(v, f->key_line);
  int rc = json_object_object_add(f->node, f->key, v);
  free(f->key);
  f->key = NULL;
  if (rc < 0) {
    json_object_put(v);
    return ioq_fail(b->e, ENOMEM, "%s: out of memory for a mapping entry", b->src);
  }
  return 0;
}

/* true when the next node of the innermost mapping is a key */
static bool wants_key(struct builder *b) {
  return b->depth > 0 && json_object_is_type(b->stack[b->depth - 1].node, json_type_object) &&
         !b->stack[b->depth - 1].key;
}

static int on_event(struct builder *b, yaml_event_t *ev) {
  unsigned line = (unsigned)ev->start_mark.line + 1;
  const yaml_char_t *anchor = NULL, *tag = NULL;
  bool implicit = true;
  switch (ev->type) {
  case YAML_DOCUMENT_START_EVENT:
    if (++b->documents > 1)
      return fail_at(b, line, "more than one YAML document (one configuration per file)", NULL);
    return 0;
  case YAML_ALIAS_EVENT:
    /* an alias can repeat a subtree exponentially (billion laughs) */
    return fail_at(b, line, "aliases are not supported (write the value out): *",
                   (const char *)ev->data.alias.anchor);
  case YAML_SCALAR_EVENT:
    anchor = ev->data.scalar.anchor;
    tag = ev->data.scalar.tag;
    implicit = ev->data.scalar.plain_implicit || ev->data.scalar.quoted_implicit;
    break;
  case YAML_SEQUENCE_START_EVENT:
    anchor = ev->data.sequence_start.anchor;
    tag = ev->data.sequence_start.tag;
    implicit = ev->data.sequence_start.implicit;
    break;
  case YAML_MAPPING_START_EVENT:
    anchor = ev->data.mapping_start.anchor;
    tag = ev->data.mapping_start.tag;
    implicit = ev->data.mapping_start.implicit;
    break;
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    b->depth--;
    return 0;
  default:
    return 0;
  }
  if (anchor)
    return fail_at(b, line, "anchors are not supported (write the value out): &",
                   (const char *)anchor);
  if (tag && !implicit)
    return fail_at(b, line, "tags are not supported: ", (const char *)tag);

  /* each node costs a json-c object (~100-600 bytes): the budget bounds
   * memory before the text's size does */
  if (++b->nodes > b->max_nodes) {
    char n[64];
    snprintf(n, sizeof n, "%zu values", b->max_nodes);
    return fail_at(b, line, "more than ", n);
  }
  if (ev->type == YAML_SCALAR_EVENT) {
    const char *s = (const char *)ev->data.scalar.value;
    if (strlen(s) != ev->data.scalar.length)
      return fail_at(b, line, "a NUL character in a scalar", NULL);
    if (wants_key(b)) {
      struct frame *f = &b->stack[b->depth - 1];
      if (json_object_object_get_ex(f->node, s, NULL))
        return fail_at(b, line, "duplicate key: ", s);
      if (!(f->key = strdup(s)))
        return ioq_fail(b->e, ENOMEM, "%s: out of memory for a key (line %u)", b->src, line);
      f->key_line = line;
      return 0;
    }
    json_object *v;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
      if (resolve_plain(b, s, line, &v) < 0)
        return -1;
    } else if (!(v = json_object_new_string_len(s, (int)ev->data.scalar.length))) {
      return ioq_fail(b->e, ENOMEM, "%s: out of memory for a string (line %u)", b->src, line);
    }
    return attach(b, v, line);
  }
  if (wants_key(b))
    return fail_at(b, line, "a key must be a plain value, not a list or a mapping", NULL);
  if (b->depth >= IOQ_YAML_MAX_DEPTH)
    return fail_at(b, line, "nested too deep (more than 64 levels)", NULL);
  json_object *c = ev->type == YAML_MAPPING_START_EVENT ? json_object_new_object()
                                                         : json_object_new_array();
  if (!c)
    return ioq_fail(b->e, ENOMEM, "%s: out of memory for a mapping or list (line %u)", b->src,
                    line);
  if (attach(b, c, line) < 0)
    return -1;
  b->stack[b->depth++] = (struct frame){.node = c};
  return 0;
}

int ioq_yaml_to_json(const char *text, size_t len, const char *source, size_t max_nodes,
                     json_object **out, ioq_err *e) {
  *out = NULL;
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p))
    return ioq_fail(e, ENOMEM, "%s: out of memory for the YAML parser", source);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  struct builder b = {.src = source, .e = e, .max_nodes = max_nodes};
  int rc = 0;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) {
      rc = ioq_fail(e, IOQ_EINVAL_INPUT, "%s: line %u: invalid YAML: %s%s%s", source,
                    (unsigned)p.problem_mark.line + 1, p.problem ? p.problem : "parse error",
                    p.context ? " " : "", p.context ? p.context : "");
      break;
    }
    bool end = ev.type == YAML_STREAM_END_EVENT;
    rc = on_event(&b, &ev);
    yaml_event_delete(&ev);
    if (rc < 0 || end)
      break;
  }
  yaml_parser_delete(&p);
  for (int i = 0; i < IOQ_YAML_MAX_DEPTH; i++)
    free(b.stack[i].key);
  if (rc < 0) {
    json_object_put(b.root);
    return -1;
  }
  *out = b.root; /* NULL for an empty document or a null one */
  return 0;
}
