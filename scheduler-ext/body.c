#include "body.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Nesting kube-scheduler's objects need (NodeList > Node > managedFields >
 * fieldsV1 ...) is well below this; it bounds hostile input. */
#define JSON_MAX_DEPTH 128

/* json-c 0.16 on x86-64, measured with mallinfo2: an object with its hash
 * table ~784 bytes, an array ~144, a number ~64, a short string ~80; a value
 * follows every ',' and the first one in each container. A real NodeList
 * estimates ~1.25x its actual tree (JSON text inside strings counts too). */
size_t ext_json_tree_estimate(const char *data, size_t n) {
  size_t objects = 0, arrays = 0, values = 0;
  for (size_t i = 0; i < n; i++) {
    switch (data[i]) {
    case '{':
      objects++;
      break;
    case '[':
      arrays++;
      break;
    case ',':
      values++;
      break;
    default:
      break;
    }
  }
  return n + objects * 880 + arrays * 240 + values * 80;
}

/* Reserves this chunk's estimated tree from the shared budget. */
static bool reserve(struct ext_body *b, size_t est);

int ext_body_init(struct ext_body *b, size_t max, struct ext_budget *budget) {
  memset(b, 0, sizeof *b);
  b->max = max;
  b->budget = budget;
  b->tok = json_tokener_new_ex(JSON_MAX_DEPTH);
  if (!b->tok)
    return -1;
  /* strict JSON; trailing bytes are checked here to say what is wrong */
  json_tokener_set_flags(b->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  return 0;
}

static void set_err(struct ext_body *b, unsigned status, enum ext_reject kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_err(struct ext_body *b, unsigned status, enum ext_reject kind, const char *fmt,
                    ...) {
  if (b->err_status)
    return;
  b->err_status = status;
  b->err_kind = kind;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->err, sizeof b->err, fmt, ap);
  va_end(ap);
  /* nothing more of this body is needed */
  json_object_put(b->value);
  b->value = NULL;
  if (b->tok)
    json_tokener_free(b->tok);
  b->tok = NULL;
  if (b->budget && b->reserved)
    atomic_fetch_sub(&b->budget->used, b->reserved);
  b->reserved = 0;
}

static bool reserve(struct ext_body *b, size_t est) {
  if (!b->budget)
    return true;
  if (b->reserved + est > b->budget->max) {
    set_err(b, 413, EXT_REJECT_TOO_LARGE,
            "request body needs more than %zu bytes of memory to parse "
            "(--max-request-memory)",
            b->budget->max);
    return false;
  }
  size_t used = atomic_load(&b->budget->used);
  do {
    if (used + est > b->budget->max) {
      set_err(b, 503, EXT_REJECT_BUSY,
              "too many large requests in progress: parsing this one needs memory other "
              "requests hold (--max-request-memory); retry");
      return false;
    }
  } while (!atomic_compare_exchange_weak(&b->budget->used, &used, used + est));
  b->reserved += est;
  return true;
}

static bool all_space(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
      return false;
  return true;
}

void ext_body_feed(struct ext_body *b, const char *data, size_t n) {
  size_t before = b->received;
  b->received += n;
  if (b->err_status)
    return;
  if (b->received > b->max) {
    set_err(b, 413, EXT_REJECT_TOO_LARGE,
            "request body is larger than %zu bytes (--max-request-bytes)", b->max);
    return;
  }
  if (!b->complete && !reserve(b, ext_json_tree_estimate(data, n)))
    return;
  if (b->complete) {
    if (!all_space(data, n))
      set_err(b, 400, EXT_REJECT_INVALID_JSON,
              "request body has data after the JSON value (at byte %zu)", before);
    return;
  }
  while (n > 0) {
    /* json-c takes an int length; chunks are far smaller, but be exact */
    int part = n > (1u << 30) ? (1 << 30) : (int)n;
    json_object *o = json_tokener_parse_ex(b->tok, data, part);
    enum json_tokener_error je = json_tokener_get_error(b->tok);
    if (je == json_tokener_continue) {
      data += part;
      n -= (size_t)part;
      before += (size_t)part;
      continue;
    }
    size_t end = json_tokener_get_parse_end(b->tok);
    if (je != json_tokener_success) {
      set_err(b, 400, EXT_REJECT_INVALID_JSON, "request body is not valid JSON: %s (at byte %zu)",
              json_tokener_error_desc(je), before + end);
      return;
    }
    b->value = o;
    b->complete = true;
    if (!all_space(data + end, n - end))
      set_err(b, 400, EXT_REJECT_INVALID_JSON,
              "request body has data after the JSON value (at byte %zu)", before + end);
    return;
  }
}

void ext_body_finish(struct ext_body *b) {
  if (b->err_status || b->complete)
    return;
  if (b->received == 0) {
    set_err(b, 400, EXT_REJECT_INVALID_JSON, "request body is empty");
    return;
  }
  /* a bare literal or number is only known complete at a delimiter */
  json_object *o = json_tokener_parse_ex(b->tok, " ", 1);
  if (json_tokener_get_error(b->tok) == json_tokener_success) {
    b->value = o;
    b->complete = true;
    return;
  }
  json_object_put(o);
  set_err(b, 400, EXT_REJECT_INVALID_JSON, "request body is truncated JSON (%zu bytes received)",
          b->received);
}

json_object *ext_body_take(struct ext_body *b) {
  json_object *v = b->value;
  b->value = NULL;
  return v;
}

void ext_body_free(struct ext_body *b) {
  if (b->tok)
    json_tokener_free(b->tok);
  b->tok = NULL;
  json_object_put(b->value);
  b->value = NULL;
  if (b->budget && b->reserved)
    atomic_fetch_sub(&b->budget->used, b->reserved);
  b->reserved = 0;
}
