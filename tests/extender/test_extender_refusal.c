// SPDX-License-Identifier: Apache-2.0
/* Refused requests (refusal.h): every one counted in the metric, the warn
 * lines of one reason rate-limited with the count held back logged at exit,
 * client errors at debug only, and libmicrohttpd's messages (0.9.75 texts)
 * told apart: refusals with their reason and status, details, the rest. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "metrics.h"
#include "refusal.h"

/* The metric's sample line for one reason is in the exposition. */
static bool counted(struct ext_metrics *m, const char *reason, unsigned n) {
  char want[160];
  snprintf(want, sizeof want, "ioqos_extender_rejected_requests_total{reason=\"%s\"} %u\n", reason,
           n);
  struct ext_gauges g = {0};
  char *t = ext_metrics_render(m, &g);
  bool ok = t && strstr(t, want);
  free(t);
  return ok;
}

#define MAX_LINES 8
#define LINE_MAX_LEN 512

/* The lines written to the redirected stderr so far (at most MAX_LINES). */
static int logged(char lines[MAX_LINES][LINE_MAX_LEN]) {
  fflush(stderr);
  FILE *f = cr_get_redirected_stderr();
  int n = 0;
  while (n < MAX_LINES && fgets(lines[n], LINE_MAX_LEN, f))
    n++;
  return n;
}

Test(refusal, every_refusal_counted_one_warn_line_per_reason, .init = cr_redirect_stderr) {
  ioq_log_set_level(IOQ_LOG_INFO);
  ioq_log_set_format(IOQ_LOG_TEXT);
  struct ext_metrics *m = ext_metrics_new();
  struct ext_refusals *r = ext_refusals_new(m);
  cr_assert_not_null(r);
  for (int i = 0; i < 200; i++)
    ext_refused(r, EXT_REJECT_CLIENT_CERT, EXT_VERB_OTHER, 403, "no client certificate presented");
  for (int i = 0; i < 3; i++) /* a client error: debug, not shown at info */
    ext_refused(r, EXT_REJECT_INVALID_JSON, EXT_VERB_FILTER, 400, "request body is empty");
  cr_assert(counted(m, "client_cert", 200));
  cr_assert(counted(m, "invalid_json", 3));
  cr_assert(counted(m, "connection_limit", 0), "each reason has its sample");
  ext_refusals_free(r); /* the 199 held back are logged now */
  ext_metrics_free(m);
  char l[MAX_LINES][LINE_MAX_LEN];
  cr_assert_eq(logged(l), 2, "one line and the summary only");
  cr_assert(strstr(l[0], " level=warn msg=\"request refused\" reason=client_cert verb=other "
                         "status=403 error=\"no client certificate presented\" suppressed=0\n"),
            "%s", l[0]);
  cr_assert(strstr(l[1], " level=warn msg=\"more requests refused\" reason=client_cert "
                         "suppressed=199 since_s=0\n"),
            "%s", l[1]);
}

Test(refusal, debug_level_keeps_a_line_for_every_refusal, .init = cr_redirect_stderr) {
  ioq_log_set_level(IOQ_LOG_DEBUG);
  ioq_log_set_format(IOQ_LOG_TEXT);
  struct ext_metrics *m = ext_metrics_new();
  struct ext_refusals *r = ext_refusals_new(m);
  for (int i = 0; i < 3; i++)
    ext_refused(r, EXT_REJECT_BUSY, EXT_VERB_FILTER, 503, "too many large requests");
  ext_refusals_free(r);
  ext_metrics_free(m);
  char l[MAX_LINES][LINE_MAX_LEN];
  cr_assert_eq(logged(l), 4, "the warn line, two at debug, the summary");
  cr_assert(strstr(l[0], "level=warn msg=\"request refused\" reason=busy verb=filter status=503"));
  for (int i = 1; i < 3; i++)
    cr_assert(strstr(l[i], "level=debug msg=\"request refused\" reason=busy verb=filter "
                           "status=503 error=\"too many large requests\"\n"),
              "%s", l[i]);
  cr_assert(strstr(l[3], "msg=\"more requests refused\" reason=busy suppressed=2 "), "%s", l[3]);
  ioq_log_set_level(IOQ_LOG_INFO);
}

/* The messages as libmicrohttpd 0.9.75 prints them (trailing newline cut). */
Test(refusal, libmicrohttpd_messages) {
  static const struct {
    const char *msg;
    enum ext_mhd_msg kind;
    enum ext_reject why;
    unsigned status;
  } cases[] = {
      {"Server reached connection limit. Closing inbound connection.", EXT_MHD_REFUSAL,
       EXT_REJECT_CONNECTION_LIMIT, 0},
      {"Error: received handshake message out of context.", EXT_MHD_REFUSAL,
       EXT_REJECT_TLS_HANDSHAKE, 0},
      {"Error processing request (HTTP response code is 431 ('<html><head><title>Request too "
       "big</title></head></html>')). Closing connection.",
       EXT_MHD_REFUSAL, EXT_REJECT_BAD_HTTP, 431},
      {"Failed to parse `Content-Length' header. Closing connection.", EXT_MHD_DETAIL,
       EXT_REJECT_BAD_HTTP, 0},
      {"Too large value of 'Content-Length' header. Closing connection.", EXT_MHD_DETAIL,
       EXT_REJECT_BAD_HTTP, 0},
      {"Received HTTP/1.1 request without `Host' header.", EXT_MHD_DETAIL, EXT_REJECT_BAD_HTTP, 0},
      {"Connection was closed by remote side with incomplete request.", EXT_MHD_REFUSAL,
       EXT_REJECT_CLIENT_CLOSED, 0},
      {"Socket has been disconnected when reading request.", EXT_MHD_REFUSAL,
       EXT_REJECT_CLIENT_CLOSED, 0},
      {"Connection socket is closed when reading request due to the error: Connection reset by "
       "peer",
       EXT_MHD_REFUSAL, EXT_REJECT_CLIENT_CLOSED, 0},
      {"Failed to send the response headers for the request for `/filter'. Error: Broken pipe",
       EXT_MHD_REFUSAL, EXT_REJECT_CLIENT_CLOSED, 0},
      {"Failed to bind to port 8888: Address already in use", EXT_MHD_OTHER, EXT_REJECT_COUNT, 0},
      {"Failed to create a thread: Resource temporarily unavailable", EXT_MHD_OTHER,
       EXT_REJECT_COUNT, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    enum ext_reject why = EXT_REJECT_COUNT;
    unsigned status = 99;
    enum ext_mhd_msg kind = ext_refusal_mhd_kind(cases[i].msg, &why, &status);
    cr_assert_eq(kind, cases[i].kind, "%s", cases[i].msg);
    cr_assert_eq(why, cases[i].why, "%s", cases[i].msg);
    cr_assert_eq(status, cases[i].status, "%s", cases[i].msg);
  }
}
