// SPDX-License-Identifier: Apache-2.0
/* The error-reply capture the filtered GET and the watch share
 * (src/kube/kube_errbody.c, kube_internal.h): what is kept, the bound, and
 * which reason is reported. The HTTP paths are covered end to end by
 * integration.kube_client (an injected 403 on a watch, a 404 on a GET). */
#include <criterion/criterion.h>
#include <string.h>

#include "kube_internal.h"

Test(errbody, error_reply_kept_up_to_the_bound) {
  struct ioq_kube_errbody b;
  ioq_kube_errbody_reset(&b);
  CURL *c = curl_easy_init(); /* no transfer: status 0, not a 2xx */
  cr_assert_not_null(c);
  char chunk[700];
  memset(chunk, 'x', sizeof chunk);
  cr_assert(ioq_kube_errbody_take(&b, c, chunk, sizeof chunk));
  cr_assert(ioq_kube_errbody_take(&b, c, chunk, sizeof chunk));
  cr_assert_eq(b.http, -1);
  cr_assert_eq(b.len, sizeof b.buf - 1);
  cr_assert_eq(strlen(b.buf), sizeof b.buf - 1);
  curl_easy_cleanup(c);
}

Test(errbody, success_reply_passes_through) {
  struct ioq_kube_errbody b;
  ioq_kube_errbody_reset(&b);
  b.http = 1; /* as after a 2xx status line */
  cr_assert_not(ioq_kube_errbody_take(&b, NULL, "{}", 2));
  cr_assert_eq(b.len, 0);
}

static const char *message_of(const char *body) {
  static char out[1100];
  struct ioq_kube_errbody b;
  ioq_kube_errbody_reset(&b);
  b.http = -1;
  cr_assert(ioq_kube_errbody_take(&b, NULL, body, strlen(body)));
  json_object *hold;
  snprintf(out, sizeof out, "%s", ioq_kube_errbody_message(&b, &hold));
  json_object_put(hold);
  return out;
}

Test(errbody, reason_status_message_else_text_else_empty) {
  cr_assert_str_eq(
      message_of("{\"kind\":\"Status\",\"message\":\"pods is forbidden\",\"code\":403}"),
      "pods is forbidden");
  cr_assert_str_eq(message_of("  upstream connect error\n"), "upstream connect error");
  cr_assert_str_eq(message_of("{\"message\":7}"), "{\"message\":7}");
  cr_assert_str_eq(message_of("[\"message\"]"), "[\"message\"]");
  cr_assert_str_eq(message_of(""), "(empty reply)");
  cr_assert_str_eq(message_of(" \r\n"), "(empty reply)");
}
