// SPDX-License-Identifier: Apache-2.0
/* A JSON request body read incrementally as the HTTP server receives it:
 * json-c's tokener is fed each chunk, so a large body is never held twice
 * (as text and as a tree). Enforces the size limit and tells truncated,
 * malformed, trailing-garbage and oversized bodies apart.
 *
 * The parsed tree is what costs memory: json-c spends ~800 bytes on every
 * object, so 64 MiB of "{},{},..." would become 17 GiB. Each chunk's tree
 * cost is estimated from its bytes before it is parsed and reserved from a
 * budget shared by all requests in progress; a body that alone needs more
 * than the budget is refused (413), one that would need memory other
 * requests hold right now gets 503 (kube-scheduler retries).
 *
 * The last 1/EXT_BUDGET_SMALL_SHARE of the budget is kept for small bodies:
 * large bodies together never hold any of it, so an ordinary scheduling
 * request (a pod and node names, some KiB) is served while attack-sized
 * bodies in progress get 503. A body is small only while
 *   - it announced its length (Content-Length; kube-scheduler always does)
 *     and that many bytes of text fit the per-body cap, and
 *   - its estimate so far fits that cap: 1/EXT_BUDGET_SMALL_BODIES of the
 *     small share, so one stalled body cannot hold all of it.
 * A body announced large, or of unknown length (chunked), is large from
 * its first byte: otherwise each attack body in its first chunks drew on
 * the small share, and a valid filter sent meanwhile got 503 (seen in CI
 * with four attack bodies in progress). A small body that outgrows the cap
 * keeps what it holds and grows on as a large one. */
#ifndef IOQOS_EXT_BODY_H
#define IOQOS_EXT_BODY_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"

/* 1/N of the budget is reserved for small bodies (see above). */
#define EXT_BUDGET_SMALL_SHARE 8
/* A small body holds at most 1/N of that share. */
#define EXT_BUDGET_SMALL_BODIES 4
/* ext_body_init's `announced` when the length is not known in advance. */
#define EXT_BODY_LENGTH_UNKNOWN ((size_t)-1)

/* Memory shared by the parse trees of all requests in progress. */
struct ext_budget {
  _Atomic size_t used;
  size_t max;
};

/* Where the estimator is in the text: inside a string or not. */
struct ext_json_scan {
  bool in_str, esc;
};

struct ext_body {
  struct ext_budget *budget;
  struct ext_json_scan scan;
  size_t reserved; /* this body's share of the budget */
  size_t announced; /* Content-Length, or EXT_BODY_LENGTH_UNKNOWN */
  json_tokener *tok;
  json_object *value; /* the parsed value once complete (NULL for JSON null) */
  bool complete;
  size_t received, max;
  unsigned err_status; /* 0, 400, 413 or 503 */
  enum ext_reject err_kind;
  char err[300];
};

/* max: body bytes; announced: the length the client announced, or
 * EXT_BODY_LENGTH_UNKNOWN; budget may be NULL (no tree limit). Returns -1
 * on OOM. */
int ext_body_init(struct ext_body *b, size_t max, size_t announced, struct ext_budget *budget);
/* Feeds one chunk; after an error the rest is only counted. */
void ext_body_feed(struct ext_body *b, const char *data, size_t n);
/* End of input: completes a bare value or reports truncation. */
void ext_body_finish(struct ext_body *b);
/* Takes the value out (the caller puts it). */
json_object *ext_body_take(struct ext_body *b);
/* Frees the tokener and any value not taken, and returns the reservation:
 * call it once the taken value (and anything sharing it) is gone too. */
void ext_body_free(struct ext_body *b);

/* Parses a whole text already in memory (a reply from the API server)
 * under the same budget: check b->err_status, take the value, and
 * ext_body_free once it is gone. -1 only on OOM. */
int ext_body_parse_text(struct ext_body *b, const char *text, size_t len,
                        struct ext_budget *budget);

/* The most one small body may hold of the budget. */
size_t ext_budget_small_each(const struct ext_budget *budget);

/* Upper estimate of the json-c tree size for the next bytes of JSON text
 * (s carries the string state across chunks; start zeroed). */
size_t ext_json_tree_estimate(struct ext_json_scan *s, const char *data, size_t n);

#endif
