// SPDX-License-Identifier: Apache-2.0
/* An HTTP reply built by a handler and sent by the server. */
#ifndef IOQOS_EXT_REPLY_H
#define IOQOS_EXT_REPLY_H

#include <json-c/json.h>
#include <stddef.h>

struct ext_reply {
  unsigned status;
  const char *body; /* owned by `owner` when set, else malloc'd */
  size_t len;
  const char *content_type; /* static string */
  json_object *owner;       /* keeps a serialised JSON body alive (no copy) */
};

/* Serialises obj and takes over the caller's reference to it. */
void ext_reply_json(struct ext_reply *r, unsigned status, json_object *obj);
/* {"Error":"<message>"}: the field kube-scheduler reads in filter and bind
 * results, also used as the body of 4xx/5xx replies so people see why. */
void ext_reply_error(struct ext_reply *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Takes ownership of body (NUL-terminated). */
void ext_reply_text(struct ext_reply *r, unsigned status, const char *content_type, char *body);
/* Frees what the reply holds. The server hands body and owner to the HTTP
 * library and frees them with ext_reply_body_free once sent. */
void ext_reply_free(struct ext_reply *r);
void ext_reply_body_free(json_object *owner, const char *body);

#endif
