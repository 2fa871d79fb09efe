// SPDX-License-Identifier: Apache-2.0
/* Strict parsing of one JSON document from a byte buffer: the whole buffer
 * must be exactly one value (trailing whitespace allowed), within a size cap
 * the caller chooses, or the parse fails with a message naming `what`. */
#ifndef IOQOS_JSONPARSE_H
#define IOQOS_JSONPARSE_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/error.h"

/* *out = the parsed value (caller puts it) on success; on failure *out is
 * NULL and e says "<what>: ..." (empty, larger than max_len, invalid JSON
 * with json-c's reason, truncated, trailing data). */
IOQ_MUST_CHECK
int ioq_json_parse_strict(const char *text, size_t len, size_t max_len, const char *what,
                          json_object **out, ioq_err *e);

#endif
