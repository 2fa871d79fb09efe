// SPDX-License-Identifier: Apache-2.0
/* Writes one log record as a logfmt line or as one JSON object per line. */
#include "log_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

static const char *const g_levels[] = {"error", "warn", "info", "debug"};

/* Bounded appender: never writes past cap-2, so '\n' and NUL always fit. */
struct out {
  char *p;
  size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n) {
  if (o->len + n > o->cap - 2)
    n = o->cap - 2 - o->len;
  memcpy(o->p + o->len, s, n);
  o->len += n;
}

static bool needs_quotes(const char *s, size_t n) {
  if (!n)
    return true;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f)
      return true;
  }
  return false;
}

/* A logfmt value: bare when it can be, otherwise "..." with \" \\ \n \r \t
 * and \u00XX for the other control bytes. UTF-8 passes through. */
static void put_value(struct out *o, const char *s, size_t n, bool quote) {
  if (!quote && !needs_quotes(s, n)) {
    put(o, s, n);
    return;
  }
  put(o, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                    : c == '\t' ? "\\t" : NULL;
    if (!e && (c < 0x20 || c == 0x7f)) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      e = esc;
    }
    if (e)
      put(o, e, strlen(e));
    else
      put(o, s + i, 1);
  }
  put(o, "\"", 1);
}

static size_t render_text(struct out *o, const char *time, enum ioq_log_level lvl,
                          const struct ioq_log_record *rec) {
  put(o, "time=", 5);
  put(o, time, strlen(time));
  put(o, " level=", 7);
  put(o, g_levels[lvl], strlen(g_levels[lvl]));
  put(o, " msg=", 5);
  put_value(o, rec->msg, rec->msg_len, true);
  for (size_t i = 0; i < rec->n_fields; i++) {
    const struct ioq_log_field *f = &rec->fields[i];
    put(o, " ", 1);
    put(o, f->key, f->key_len);
    put(o, "=", 1);
    put_value(o, f->val, f->val_len, f->quoted);
  }
  if (rec->cut)
    put(o, " log_cut=true", 13);
  return o->len;
}

static int add(json_object *obj, const char *key, const char *val, size_t n) {
  json_object *s = json_object_new_string_len(val, (int)n);
  if (!s)
    return -1;
  json_object_object_add(obj, key, s);
  return 0;
}

/* JSON through json-c; every value is a string (numbers as written by the
 * call site), so the two formats carry the same text. */
static size_t render_json(struct out *o, const char *time, enum ioq_log_level lvl,
                          const struct ioq_log_record *rec) {
  json_object *obj = json_object_new_object();
  int rc = obj ? 0 : -1;
  if (!rc)
    rc = add(obj, "time", time, strlen(time)) | add(obj, "level", g_levels[lvl], strlen(g_levels[lvl])) |
         add(obj, "msg", rec->msg, rec->msg_len);
  for (size_t i = 0; !rc && i < rec->n_fields; i++)
    rc = add(obj, rec->fields[i].key, rec->fields[i].val, rec->fields[i].val_len);
  if (!rc && rec->cut)
    rc = add(obj, "log_cut", "true", 4);
  const char *s = rc ? NULL : json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
                                                                      JSON_C_TO_STRING_NOSLASHESCAPE);
  if (s)
    put(o, s, strlen(s));
  else { /* the record is lost; say so on its own line rather than drop it unseen */
    static const char oom[] = "{\"level\":\"error\",\"msg\":\"log line dropped: out of memory\"}";
    put(o, oom, sizeof oom - 1);
  }
  json_object_put(obj);
  return o->len;
}

size_t ioq_log_render(char *out, size_t cap, enum ioq_log_format format, const char *time,
                      enum ioq_log_level lvl, const struct ioq_log_record *rec) {
  struct out o = {.p = out, .cap = cap};
  if (format == IOQ_LOG_JSON)
    render_json(&o, time, lvl, rec);
  else
    render_text(&o, time, lvl, rec);
  out[o.len++] = '\n';
  out[o.len] = 0;
  return o.len;
}
