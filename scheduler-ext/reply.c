// SPDX-License-Identifier: Apache-2.0
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char g_oom[] = "{\"Error\":\"ioqos extender out of memory building the reply\"}";

static void set_oom(struct ext_reply *r) {
  r->status = 500;
  r->owner = NULL;
  r->body = strdup(g_oom);
  r->len = r->body ? strlen(r->body) : 0;
  r->content_type = "application/json";
}

void ext_reply_json(struct ext_reply *r, unsigned status, json_object *obj) {
  size_t len = 0;
  /* the text lives in obj's print buffer until obj is put: no copy of what
   * can be tens of MiB in full-node mode */
  const char *txt =
      obj ? json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len)
          : NULL;
  if (!txt) {
    json_object_put(obj);
    set_oom(r);
    return;
  }
  r->status = status;
  r->body = txt;
  r->len = len;
  r->content_type = "application/json";
  r->owner = obj;
}

void ext_reply_error(struct ext_reply *r, unsigned status, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_object *o = json_object_new_object();
  if (!o) {
    set_oom(r);
    return;
  }
  json_object_object_add(o, "Error", json_object_new_string(msg));
  ext_reply_json(r, status, o);
}

void ext_reply_text(struct ext_reply *r, unsigned status, const char *content_type, char *body) {
  if (!body) {
    set_oom(r);
    return;
  }
  r->status = status;
  r->owner = NULL;
  r->body = body;
  r->len = strlen(body);
  r->content_type = content_type;
}

void ext_reply_body_free(json_object *owner, const char *body) {
  if (owner)
    json_object_put(owner);
  else
    free((char *)body);
}

void ext_reply_free(struct ext_reply *r) {
  ext_reply_body_free(r->owner, r->body);
  r->owner = NULL;
  r->body = NULL;
  r->len = 0;
}
