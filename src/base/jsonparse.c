// SPDX-License-Identifier: Apache-2.0
#include "base/jsonparse.h"

#include <errno.h>
#include <stdint.h>

int ioq_json_parse_strict(const char *text, size_t len, size_t max_len, const char *what,
                          json_object **out, ioq_err *e) {
  *out = NULL;
  if (!text || len == 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: empty input", what);
  if (len > max_len || len > INT32_MAX)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: %zu bytes, more than the %zu accepted", what, len,
                    max_len < INT32_MAX ? max_len : (size_t)INT32_MAX);
  json_tokener *tok = json_tokener_new();
  if (!tok)
    return ioq_fail(e, ENOMEM, "%s: out of memory for the JSON parser", what);
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  json_object *root = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  if (jerr == json_tokener_continue) {
    /* a bare literal or number is only known complete at a delimiter */
    root = json_tokener_parse_ex(tok, " ", 1);
    jerr = json_tokener_get_error(tok);
    end = len;
  }
  json_tokener_free(tok);
  while (end < len &&
         (text[end] == ' ' || text[end] == '\t' || text[end] == '\n' || text[end] == '\r'))
    end++;
  if (jerr != json_tokener_success || end != len) {
    json_object_put(root);
    return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: invalid JSON: %s", what,
                    jerr == json_tokener_continue ? "truncated"
                    : jerr != json_tokener_success ? json_tokener_error_desc(jerr)
                                                   : "trailing data after the value");
  }
  *out = root;
  return 0;
}
