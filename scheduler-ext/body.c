// SPDX-License-Identifier: Apache-2.0
#include "body.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Nesting kube-scheduler's objects need (NodeList > Node > managedFields >
 * fieldsV1 ...) is well below this; it bounds hostile input. */
#define JSON_MAX_DEPTH 128

/* json-c 0.16 (Debian 12, x86-64), measured with mallinfo2 around parses of
 * 200000-element arrays (tests/extender/bench_parse.c style), bytes each:
 *   {} 792 (object + its 16-slot hash table)   [] 152   1 or true 72
 *   "" 88   null 0   array slot 8 (doubling: up to 16)
 *   one more member of an object ("k":0) 200 with its value (key copy,
 *   hash entry, table growth)
 *   string text: 1x in the tree, and while it is read the tokener's buffer
 *   holds it again (doubling): a 50 MB string peaked at 97 MB of RSS.
 * So every byte costs 2 (text twice), every value (first in a container,
 * then one per ',') COST_VALUE, every ':' COST_MEMBER, every '{' / '['
 * COST_OBJECT / COST_ARRAY on top. Structure inside strings is text only.
 * Worst case per byte is "{}," at ~330 estimated (267 real): 2 MB of it
 * is ~660 MiB, refused by any budget below that. */
#define COST_BYTE 2u
#define COST_VALUE 96u
#define COST_MEMBER 128u
#define COST_OBJECT 800u
#define COST_ARRAY 160u

size_t ext_json_tree_estimate(struct ext_json_scan *s, const char *data, size_t n) {
  size_t cost = n * COST_BYTE;
  for (size_t i = 0; i < n; i++) {
    char c = data[i];
    if (s->in_str) {
      if (s->esc)
        s->esc = false;
      else if (c == '\\')
        s->esc = true;
      else if (c == '"')
        s->in_str = false;
      continue;
    }
    switch (c) {
    case '"':
      s->in_str = true;
      break;
    case '{':
      cost += COST_OBJECT + COST_VALUE;
      break;
    case '[':
      cost += COST_ARRAY + COST_VALUE;
      break;
    case ',':
      cost += COST_VALUE;
      break;
    case ':':
      cost += COST_MEMBER;
      break;
    default:
      break;
    }
  }
  return cost;
}

/* Reserves this chunk's estimated tree from the shared budget. */
static bool reserve(struct ext_body *b, size_t est);

int ext_body_init(struct ext_body *b, size_t max, size_t announced, struct ext_budget *budget) {
  memset(b, 0, sizeof *b);
  b->max = max;
  b->announced = announced;
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

size_t ext_budget_small_each(const struct ext_budget *budget) {
  return budget->max / EXT_BUDGET_SMALL_SHARE / EXT_BUDGET_SMALL_BODIES;
}

/* May this body, after `est` more, still draw on the small share? Also
 * not once it sent more than it announced (Content-Length next to
 * chunked encoding). */
static bool stays_small(const struct ext_body *b, size_t est) {
  size_t each = ext_budget_small_each(b->budget);
  return b->announced != EXT_BODY_LENGTH_UNKNOWN && b->announced <= each / COST_BYTE &&
         b->received <= b->announced && b->reserved + est <= each;
}

static bool reserve(struct ext_body *b, size_t est) {
  if (!b->budget)
    return true;
  size_t small = b->budget->max / EXT_BUDGET_SMALL_SHARE;
  size_t limit = stays_small(b, est) ? b->budget->max : b->budget->max - small;
  if (b->reserved + est > b->budget->max - small) {
    set_err(b, 413, EXT_REJECT_TOO_LARGE,
            "request body needs more than %zu bytes of memory to parse "
            "(--max-request-memory less the 1/%d kept for small requests)",
            b->budget->max - small, EXT_BUDGET_SMALL_SHARE);
    return false;
  }
  size_t used = atomic_load(&b->budget->used);
  do {
    if (used + est > limit) {
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
  if (!b->complete && !reserve(b, ext_json_tree_estimate(&b->scan, data, n)))
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

int ext_body_parse_text(struct ext_body *b, const char *text, size_t len,
                        struct ext_budget *budget) {
  if (ext_body_init(b, len, len, budget) < 0)
    return -1;
  /* fed in pieces so the tokener never sees more than it was charged for */
  for (size_t off = 0; off < len && !b->err_status; off += 65536)
    ext_body_feed(b, text + off, len - off < 65536 ? len - off : 65536);
  ext_body_finish(b);
  return 0;
}
