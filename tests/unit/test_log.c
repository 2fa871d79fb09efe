// SPDX-License-Identifier: Apache-2.0
/* The logger's two formats (issue 14 item 4): the fields are split by the
 * format string, not by what the arguments hold, and written as valid logfmt
 * (quoted and escaped) or as one JSON object, with the same fields. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/log_internal.h"

static struct ioq_log_record g_rec;
static char g_line[8 * IOQ_LOG_MSG_MAX];

__attribute__((format(printf, 2, 3))) static const char *line(enum ioq_log_format f,
                                                              const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ioq_log_split(&g_rec, fmt, ap);
  va_end(ap);
  size_t n = ioq_log_render(g_line, sizeof g_line, f, "T", IOQ_LOG_INFO, &g_rec);
  cr_assert_eq(n, strlen(g_line));
  cr_assert_eq(g_line[n - 1], '\n', "one line, ending in a newline");
  cr_assert_null(memchr(g_line, '\n', n - 1), "no newline inside the line: %s", g_line);
  return g_line;
}

#define TEXT(...) line(IOQ_LOG_TEXT, __VA_ARGS__)

Test(log, plain_fields_stay_bare) {
  cr_assert_str_eq(TEXT("prestart done resource=%s pod=%s/%s writes=%u", "ioqos/bandwidth",
                        "default", "db", 3u),
                   "time=T level=info msg=\"prestart done\" resource=ioqos/bandwidth pod=default/db "
                   "writes=3\n");
}

Test(log, values_with_spaces_equals_and_quotes_are_quoted_and_escaped) {
  cr_assert_str_eq(TEXT("x reason=%s", "a b"), "time=T level=info msg=\"x\" reason=\"a b\"\n");
  cr_assert_str_eq(TEXT("x reason=%s", "a=b"), "time=T level=info msg=\"x\" reason=\"a=b\"\n");
  cr_assert_str_eq(TEXT("x reason=%s", "say \"hi\""),
                   "time=T level=info msg=\"x\" reason=\"say \\\"hi\\\"\"\n");
  cr_assert_str_eq(TEXT("x reason=%s", "c:\\dir"), "time=T level=info msg=\"x\" reason=\"c:\\\\dir\"\n");
  cr_assert_str_eq(TEXT("x reason=%s", ""), "time=T level=info msg=\"x\" reason=\"\"\n");
  cr_assert_str_eq(TEXT("x reason=%s", "l1\nl2\r\tz\x01\x7f"),
                   "time=T level=info msg=\"x\" reason=\"l1\\nl2\\r\\tz\\u0001\\u007f\"\n");
}

/* An argument that looks like more fields stays inside its own value. */
Test(log, arguments_cannot_invent_fields) {
  cr_assert_str_eq(TEXT("x pod=%s uid=%s", "evil uid=forged level=error", "u1"),
                   "time=T level=info msg=\"x\" pod=\"evil uid=forged level=error\" uid=u1\n");
  /* a caller-quoted value that holds quotes and ` key=` */
  cr_assert_str_eq(TEXT("x error=\"%s\" disk=%s", "bad \"q\" disk=sdz", "sda"),
                   "time=T level=info msg=\"x\" error=\"bad \\\"q\\\" disk=sdz\" disk=sda\n");
  /* the message prose itself from an argument: no fields come out of it */
  cr_assert_str_eq(TEXT("node policy: not yet: %s", "k=v \"x\""),
                   "time=T level=info msg=\"node policy: not yet: k=v \\\"x\\\"\"\n");
}

Test(log, call_site_quotes_are_kept_as_logfmt_quotes) {
  cr_assert_str_eq(TEXT("x select=\"%s\" wrote='%s' n=%d", "sda", "8:0 rbps=1", 2),
                   "time=T level=info msg=\"x\" select=\"sda\" wrote=\"8:0 rbps=1\" n=2\n");
}

Test(log, dynamic_keys_and_prose_after_fields) {
  cr_assert_str_eq(TEXT("allocate ids=%zu %s=%s", (size_t)2, "IOQOS_DISKS", "sda"),
                   "time=T level=info msg=\"allocate\" ids=2 IOQOS_DISKS=sda\n");
  cr_assert_str_eq(TEXT("%s=%s", "bad key", "v"), "time=T level=info msg=\"\" bad_key=v\n");
  cr_assert_str_eq(TEXT("a k=%d and then more", 1), "time=T level=info msg=\"a and then more\" k=1\n");
  cr_assert_str_eq(TEXT("a %d%% k=%d", 50, 1), "time=T level=info msg=\"a 50%\" k=1\n");
}

Test(log, unicode_passes_invalid_utf8_is_replaced) {
  cr_assert_str_eq(TEXT("x name=%s", "d\xc3\xa9j\xc3\xa0 \xe2\x9c\x93"),
                   "time=T level=info msg=\"x\" name=\"d\xc3\xa9j\xc3\xa0 \xe2\x9c\x93\"\n");
  cr_assert_str_eq(TEXT("x name=%s", "a\xff\xc3(b\xed\xa0\x80"),
                   "time=T level=info msg=\"x\" name=a?\?(b?\?\?\n");
}

/* Arguments holding every control byte leave no free marker: the line is
 * still valid, the whole text in msg. */
Test(log, every_control_byte_in_arguments) {
  char all[40];
  for (int i = 1; i < 32; i++)
    all[i - 1] = (char)i;
  all[31] = 0;
  const char *l = TEXT("x a=%s b=%s", all, "z");
  cr_assert_eq(g_rec.n_fields, 0);
  cr_assert(strncmp(l, "time=T level=info msg=\"x a=\\u0001", 33) == 0, "%s", l);
  cr_assert(strstr(l, " b=z\"\n"), "%s", l);
}

/* Bounded: a 1 MiB value is cut at IOQ_LOG_MSG_MAX, flagged, and the
 * fields before it survive; the line stays one valid line. */
Test(log, very_long_value_is_cut_and_flagged) {
  static char big[1 << 20];
  memset(big, '"', sizeof big - 1);
  const char *l = TEXT("x a=%s big=%s after=%s", "1", big, "2");
  cr_assert(g_rec.cut);
  cr_assert_eq(g_rec.n_fields, 2, "after= is beyond the cut");
  cr_assert_str_eq(g_rec.fields[0].val, "1");
  cr_assert_eq(g_rec.fields[1].val_len, IOQ_LOG_MSG_MAX - 1 - strlen("x a=1 big="));
  cr_assert(strlen(l) < 8 * IOQ_LOG_MSG_MAX);
  cr_assert(strstr(l, "\\\"\" log_cut=true\n"), "%.40s", l + strlen(l) - 40);

  json_object *o = json_tokener_parse(line(IOQ_LOG_JSON, "x a=%s big=%s after=%s", "1", big, "2"));
  cr_assert_not_null(o, "the cut line is valid JSON");
  json_object *v;
  cr_assert(json_object_object_get_ex(o, "log_cut", &v));
  cr_assert(json_object_object_get_ex(o, "big", &v));
  cr_assert_eq(json_object_get_string_len(v), IOQ_LOG_MSG_MAX - 1 - strlen("x a=1 big="));
  json_object_put(o);
}

static const char *get(json_object *o, const char *k) {
  json_object *v;
  cr_assert(json_object_object_get_ex(o, k, &v), "no %s", k);
  cr_assert(json_object_is_type(v, json_type_string), "%s is a string", k);
  return json_object_get_string(v);
}

/* JSON carries the same fields, every value a string, hostile bytes escaped. */
Test(log, json_has_the_same_fields_as_strings) {
  const char *l = line(IOQ_LOG_JSON, "disk health changed disk=%s healthy=%s reason=\"%s\" n=%d",
                       "sda", "false", "gone \"x\"\n\\ y=1 \x01 \xc3\xa9", 7);
  cr_assert_str_eq(l, "{\"time\":\"T\",\"level\":\"info\",\"msg\":\"disk health changed\","
                      "\"disk\":\"sda\",\"healthy\":\"false\",\"reason\":\"gone \\\"x\\\"\\n\\\\ y=1 "
                      "\\u0001 \xc3\xa9\",\"n\":\"7\"}\n");
  json_object *o = json_tokener_parse(l);
  cr_assert_not_null(o);
  cr_assert_str_eq(get(o, "msg"), "disk health changed");
  cr_assert_str_eq(get(o, "reason"), "gone \"x\"\n\\ y=1 \x01 \xc3\xa9");
  cr_assert_str_eq(get(o, "n"), "7");
  json_object_put(o);
}

Test(log, parse_format) {
  enum ioq_log_format f = IOQ_LOG_JSON;
  cr_assert_eq(ioq_log_parse_format("text", &f), 0);
  cr_assert_eq(f, IOQ_LOG_TEXT);
  cr_assert_eq(ioq_log_parse_format("json", &f), 0);
  cr_assert_eq(f, IOQ_LOG_JSON);
  cr_assert_eq(ioq_log_parse_format("JSON", &f), -1);
  cr_assert_eq(ioq_log_parse_format("logfmt", &f), -1);
  cr_assert_eq(ioq_log_parse_format(NULL, &f), -1);
}

/* The marker byte is one the arguments lack: with \x01 and \x02 in a value
 * the split is still exact. */
Test(log, marker_avoids_argument_bytes) {
  cr_assert_str_eq(TEXT("x a=%s b=%s", "\x01\x02", "z"),
                   "time=T level=info msg=\"x\" a=\"\\u0001\\u0002\" b=z\n");
  cr_assert_eq(g_rec.n_fields, 2);
}

/* ioq_log end to end: level filter, format switch, one line each. */
Test(log, ioq_log_writes_the_chosen_format, .init = cr_redirect_stderr) {
  ioq_log_set_level(IOQ_LOG_INFO);
  ioq_log_set_format(IOQ_LOG_TEXT);
  ioq_info("started pod=%s", "a b");
  ioq_debug("not shown x=%d", 1);
  ioq_log_set_format(IOQ_LOG_JSON);
  ioq_warn("stopped pod=%s", "a b");
  fflush(stderr);
  FILE *f = cr_get_redirected_stderr();
  char l1[256] = "", l2[256] = "", l3[256] = "";
  cr_assert_not_null(fgets(l1, sizeof l1, f));
  cr_assert_not_null(fgets(l2, sizeof l2, f));
  cr_assert_null(fgets(l3, sizeof l3, f), "debug line filtered: %s", l3);
  cr_assert(strncmp(l1, "time=", 5) == 0 && strstr(l1, " level=info msg=\"started\" pod=\"a b\"\n"), "%s", l1);
  json_object *o = json_tokener_parse(l2);
  cr_assert_not_null(o, "%s", l2);
  cr_assert_str_eq(get(o, "level"), "warn");
  cr_assert_str_eq(get(o, "pod"), "a b");
  cr_assert_eq(strlen(get(o, "time")), strlen("2026-12-01T03:25:29.443Z"));
  json_object_put(o);
}
