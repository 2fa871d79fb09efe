// SPDX-License-Identifier: Apache-2.0
#include "refusal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/lograte.h"
#include "base/monoclock.h"

#define WINDOW_NS ((uint64_t)EXT_REFUSAL_LOG_WINDOW_S * 1000000000u)

/* Refusals a client error causes stay at debug, one line each (as every
 * request at that level); the others are logged at warn, rate-limited. */
static const bool g_warn[EXT_REJECT_COUNT] = {
    [EXT_REJECT_BUSY] = true,             [EXT_REJECT_DEADLINE] = true,
    [EXT_REJECT_CLIENT_CERT] = true,      [EXT_REJECT_OUT_OF_MEMORY] = true,
    [EXT_REJECT_CONNECTION_LIMIT] = true, [EXT_REJECT_TLS_HANDSHAKE] = true,
    [EXT_REJECT_BAD_HTTP] = true,         [EXT_REJECT_CLIENT_CLOSED] = true,
};

struct ext_refusals {
  struct ext_metrics *m;
  pthread_mutex_t lock; /* guards rate */
  struct ioq_lograte rate[EXT_REJECT_COUNT];
};

struct ext_refusals *ext_refusals_new(struct ext_metrics *m) {
  struct ext_refusals *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->m = m;
  pthread_mutex_init(&r->lock, NULL);
  return r;
}

static void log_summary(enum ext_reject why, uint64_t held, uint64_t since_ns) {
  ioq_warn("more requests refused reason=%s suppressed=%llu since_s=%llu", ext_reject_name(why),
           (unsigned long long)held, (unsigned long long)(since_ns / 1000000000u));
}

void ext_refusals_free(struct ext_refusals *r) {
  if (!r)
    return;
  uint64_t now = ioq_mono_ns();
  for (int i = 0; i < EXT_REJECT_COUNT; i++) {
    uint64_t held = ioq_lograte_take(&r->rate[i]);
    if (held)
      log_summary((enum ext_reject)i, held, now - r->rate[i].last);
  }
  pthread_mutex_destroy(&r->lock);
  free(r);
}

/* Whether this refusal gets its warn line, and the count held back before it. */
static bool allow(struct ext_refusals *r, enum ext_reject why, uint64_t *held) {
  pthread_mutex_lock(&r->lock);
  bool ok = ioq_lograte_allow(&r->rate[why], ioq_mono_ns(), WINDOW_NS, held);
  pthread_mutex_unlock(&r->lock);
  return ok;
}

void ext_refused(struct ext_refusals *r, enum ext_reject why, enum ext_verb verb, unsigned status,
                 const char *error) {
  if ((unsigned)why >= EXT_REJECT_COUNT)
    why = EXT_REJECT_BAD_REQUEST;
  ext_metrics_reject(r->m, why);
  uint64_t held = 0;
  if (g_warn[why] && allow(r, why, &held))
    ioq_warn("request refused reason=%s verb=%s status=%u error=\"%s\" suppressed=%llu",
             ext_reject_name(why), ext_verb_name(verb), status, error, (unsigned long long)held);
  else
    ioq_debug("request refused reason=%s verb=%s status=%u error=\"%s\"", ext_reject_name(why),
              ext_verb_name(verb), status, error);
}

void ext_refusals_tick(struct ext_refusals *r) {
  uint64_t now = ioq_mono_ns();
  for (int i = 0; i < EXT_REJECT_COUNT; i++) {
    uint64_t held = 0, last;
    pthread_mutex_lock(&r->lock);
    last = r->rate[i].last;
    bool due = ioq_lograte_due(&r->rate[i], now, WINDOW_NS, &held);
    pthread_mutex_unlock(&r->lock);
    if (due)
      log_summary((enum ext_reject)i, held, now - last);
  }
}

/* libmicrohttpd 0.9.75's messages for what a client causes, one or more
 * per connection. A message not here (a newer wording, a server fault) is
 * logged at warn every time, as before. */
static const struct {
  const char *text;
  enum ext_mhd_msg kind;
  enum ext_reject why;
} g_mhd[] = {
    {"Server reached connection limit", EXT_MHD_REFUSAL, EXT_REJECT_CONNECTION_LIMIT},
    {"received handshake message out of context", EXT_MHD_REFUSAL, EXT_REJECT_TLS_HANDSHAKE},
    /* the reply libmicrohttpd sends itself (400, 413, 431), after a detail */
    {"Error processing request (HTTP response code", EXT_MHD_REFUSAL, EXT_REJECT_BAD_HTTP},
    {"Content-Length' header", EXT_MHD_DETAIL, EXT_REJECT_BAD_HTTP},
    {"request without `Host' header", EXT_MHD_DETAIL, EXT_REJECT_BAD_HTTP},
    {"closed by remote side with incomplete request", EXT_MHD_REFUSAL, EXT_REJECT_CLIENT_CLOSED},
    {"disconnected when reading request", EXT_MHD_REFUSAL, EXT_REJECT_CLIENT_CLOSED},
    {"closed when reading request", EXT_MHD_REFUSAL, EXT_REJECT_CLIENT_CLOSED},
    {"Failed to send the ", EXT_MHD_REFUSAL, EXT_REJECT_CLIENT_CLOSED},
};

/* The status of the reply libmicrohttpd sent, when the message names it. */
static unsigned mhd_status(const char *msg) {
  const char *p = strstr(msg, "HTTP response code is ");
  if (!p)
    return 0;
  unsigned long v = strtoul(p + strlen("HTTP response code is "), NULL, 10);
  return v >= 100 && v <= 599 ? (unsigned)v : 0;
}

enum ext_mhd_msg ext_refusal_mhd_kind(const char *msg, enum ext_reject *why, unsigned *status) {
  *status = 0;
  for (size_t i = 0; i < sizeof g_mhd / sizeof g_mhd[0]; i++)
    if (strstr(msg, g_mhd[i].text)) {
      *why = g_mhd[i].why;
      *status = mhd_status(msg);
      return g_mhd[i].kind;
    }
  return EXT_MHD_OTHER;
}
