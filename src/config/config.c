// SPDX-License-Identifier: Apache-2.0
/* Reading a config: YAML or JSON text to a validated struct ioq_config (config.h's entries). */
#include "config/config.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/yamljson.h"

#include "config_internal.h"

/* A JSON validation error gets the line of its field: json-c keeps no
 * positions, but JSON is YAML, so on the error path only the text is read
 * again by the YAML reader, which does. Nothing changes when that fails
 * (a duplicate key, a construct libyaml reads differently). */
static void add_json_line(struct ctx *x, const char *text, ioq_err *e) {
  size_t sl = strlen(x->src);
  if (strncmp(e->msg, x->src, sl) != 0 || strncmp(e->msg + sl, ": ", 2) != 0 ||
      !strncmp(e->msg + sl + 2, "line ", 5))
    return;
  json_object *y = NULL;
  ioq_err ye = {0};
  if (ioq_yaml_to_json(text, strlen(text), x->src, IOQ_CONFIG_MAX_NODES, &y, &ye) < 0)
    return;
  struct ctx yx = {.src = x->src, .yaml = true};
  unsigned line = cfg_path_line(&yx, y, x->err_path[0] ? x->err_path : "(top level)");
  json_object_put(y);
  if (!line)
    return;
  char msg[sizeof e->msg];
  snprintf(msg, sizeof msg, "%s: line %u: %s", x->src, line, e->msg + sl + 2);
  snprintf(e->msg, sizeof e->msg, "%s", msg);
}

/* json-c keeps the last of two equal keys and has no budget of values; YAML
 * files refuse both, and so do JSON files: the YAML reader reads the JSON
 * text first (JSON is YAML) and its tree is dropped at once, so json-c's
 * tree (the larger: 167 MB for a 4 MiB list) is only built within the
 * budget. Its other complaints are not JSON's business (json-c judges the
 * syntax; libyaml refuses a few exotic JSON texts, such as a key over 1024
 * characters, which then get no budget). */
static int json_no_duplicates(struct ctx *x, const char *text) {
  json_object *y = NULL;
  ioq_err ye = {0};
  if (ioq_yaml_to_json(text, strlen(text), x->src, IOQ_CONFIG_MAX_NODES, &y, &ye) == 0) {
    json_object_put(y);
    return 0;
  }
  if (ye.code == IOQ_EINVAL_INPUT &&
      (strstr(ye.msg, ": duplicate key: ") || strstr(ye.msg, ": more than "))) {
    *x->e = ye;
    return -1;
  }
  return 0;
}

/* YAML by the file's extension, else by content (JSON starts with '{'). */
static bool looks_like_yaml(const char *text, const char *source) {
  const char *dot = source ? strrchr(source, '.') : NULL;
  if (dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml")))
    return true;
  if (dot && !strcmp(dot, ".json"))
    return false;
  text += strspn(text, " \t\r\n");
  return *text != '{';
}

static int parse_json_text(struct ctx *x, const char *text, json_object **out) {
  *out = NULL;
  json_tokener *tok = json_tokener_new();
  if (!tok)
    return ioq_fail(x->e, ENOMEM, "%s: out of memory for the JSON parser", x->src);
  /* strict JSON, as the docs promise (without the flag json-c accepts
   * trailing commas); trailing whitespace is checked below to say what is
   * wrong */
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  size_t len = strlen(text);
  json_object *root = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t consumed = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (!root || jerr != json_tokener_success) {
    /* report the line of the parse error */
    int line = 1;
    for (size_t i = 0; i < consumed && i < len; i++)
      if (text[i] == '\n')
        line++;
    json_object_put(root);
    return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: line %d: invalid JSON: %s", x->src, line,
                    jerr != json_tokener_success ? json_tokener_error_desc(jerr)
                                                 : "unexpected end of input");
  }
  for (size_t i = consumed; i < len; i++)
    if (text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r') {
      json_object_put(root);
      return ioq_fail(x->e, IOQ_EINVAL_INPUT, "%s: trailing data after the JSON object", x->src);
    }
  *out = root;
  return 0;
}

int ioq_config_parse_node(const char *text, const char *source, json_object *node_labels,
                          struct ioq_config *c, ioq_err *e) {
  if (ioq_config_defaults(c, e) < 0)
    return -1;
  free(c->source);
  c->source = strdup(source ? source : "(config)");
  if (!c->source) {
    ioq_config_free(c);
    return ioq_fail(e, ENOMEM, "config: out of memory for the source name");
  }
  /* the messages name the source: keep a copy that outlives *c */
  char src[256];
  snprintf(src, sizeof src, "%s", c->source);
  char err_path[ERR_PATH_MAX] = "";
  struct ctx x = {src, e, NULL, NULL, 0, looks_like_yaml(text, source), err_path};
  json_object *root = NULL;
  /* JSON: duplicates first, so the two trees never exist at once */
  int rc = x.yaml ? ioq_yaml_to_json(text, strlen(text), src, IOQ_CONFIG_MAX_NODES, &root, e)
                  : json_no_duplicates(&x, text) < 0 ? -1
                                                     : parse_json_text(&x, text, &root);
  if (rc == 0) {
    x.root = root;
    rc = cfg_parse_doc(&x, root, node_labels, c);
  }
  json_object_put(root); /* first: add_json_line builds a tree of its own */
  if (rc < 0 && !x.yaml && e && e->code == IOQ_EINVAL_INPUT)
    add_json_line(&x, text, e);
  if (rc < 0)
    ioq_config_free(c);
  return rc;
}

int ioq_config_parse(const char *text, const char *source, struct ioq_config *c, ioq_err *e) {
  return ioq_config_parse_node(text, source, NULL, c, e);
}

int ioq_config_load_node(const char *path, json_object *node_labels, struct ioq_config *c,
                         ioq_err *e) {
  if (!path)
    return ioq_config_defaults(c, e);
  char *text;
  if (ioq_read_file(path, &text, NULL, 4u << 20, e) < 0) {
    ioq_err_prefix(e, "config");
    return -1;
  }
  int rc = ioq_config_parse_node(text, path, node_labels, c, e);
  free(text);
  if (rc == 0 && !c->versioned)
    ioq_warn("config %s has no apiVersion/kind: read as %s %s; add both lines to make the "
             "version explicit", path, IOQ_CONFIG_API_VERSION, IOQ_CONFIG_KIND);
  return rc;
}

int ioq_config_load(const char *path, struct ioq_config *c, ioq_err *e) {
  return ioq_config_load_node(path, NULL, c, e);
}
