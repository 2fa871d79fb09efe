// SPDX-License-Identifier: Apache-2.0
/* The shared JSON field accessors (base/jsonfield.h): Go's field matching,
 * null as absent, strings only. */
#include <criterion/criterion.h>

#include "base/jsonfield.h"

static json_object *parse(const char *s) {
  json_object *o = json_tokener_parse(s);
  cr_assert_not_null(o, "bad test JSON: %s", s);
  return o;
}

Test(jsonfield, exact_then_any_case) {
  json_object *o = parse("{\"Name\":\"b\",\"name\":\"a\",\"UID\":\"u\"}");
  cr_assert_str_eq(ioq_json_str(o, "name"), "a");
  cr_assert_str_eq(ioq_json_str(o, "uid"), "u");
  cr_assert_null(ioq_json_field(o, "nam"));
  json_object_put(o);
}

Test(jsonfield, null_and_other_types_are_absent) {
  json_object *o = parse("{\"a\":null,\"n\":5,\"o\":{},\"s\":\"\"}");
  cr_assert_null(ioq_json_field(o, "a"));
  cr_assert_null(ioq_json_str(o, "a"));
  cr_assert_null(ioq_json_str(o, "n"));
  cr_assert_null(ioq_json_str(o, "o"));
  cr_assert_str_eq(ioq_json_str(o, "s"), "");
  cr_assert_null(ioq_json_field(NULL, "a"));
  cr_assert_null(ioq_json_str(NULL, "a"));
  json_object_put(o);
  o = parse("[1,2]");
  cr_assert_null(ioq_json_field(o, "a"), "an array has no fields");
  json_object_put(o);
}

Test(jsonfield, two_levels) {
  json_object *o = parse("{\"metadata\":{\"name\":\"p\",\"uid\":7},\"spec\":null,"
                         "\"status\":\"x\"}");
  cr_assert_str_eq(ioq_json_str_at(o, "metadata", "name"), "p");
  cr_assert_str_eq(ioq_json_str_at(o, "Metadata", "Name"), "p");
  cr_assert_null(ioq_json_str_at(o, "metadata", "uid"));
  cr_assert_null(ioq_json_str_at(o, "spec", "nodeName"));
  cr_assert_null(ioq_json_str_at(o, "status", "phase"));
  cr_assert_null(ioq_json_str_at(o, "nothing", "name"));
  cr_assert_null(ioq_json_str_at(NULL, "metadata", "name"));
  json_object_put(o);
}
