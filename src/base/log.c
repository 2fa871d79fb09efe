// SPDX-License-Identifier: Apache-2.0
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log_internal.h"

static enum ioq_log_level g_level = IOQ_LOG_INFO;
static enum ioq_log_format g_format = IOQ_LOG_TEXT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
/* Used under g_lock only: one line at a time, no large stack frames in the
 * threads that log. The line holds the worst case of escaping (6 bytes per
 * message byte) so it is never cut. */
static struct ioq_log_record g_rec;
static char g_line[8 * IOQ_LOG_MSG_MAX];

void ioq_log_set_level(enum ioq_log_level lvl) { g_level = lvl; }
enum ioq_log_level ioq_log_get_level(void) { return g_level; }
void ioq_log_set_format(enum ioq_log_format f) { g_format = f; }

int ioq_log_parse_level(const char *s, enum ioq_log_level *out) {
  static const char *const lower[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (s && strcmp(s, lower[i]) == 0) {
      *out = (enum ioq_log_level)i;
      return 0;
    }
  return -1;
}

int ioq_log_parse_format(const char *s, enum ioq_log_format *out) {
  if (s && strcmp(s, "text") == 0)
    *out = IOQ_LOG_TEXT;
  else if (s && strcmp(s, "json") == 0)
    *out = IOQ_LOG_JSON;
  else
    return -1;
  return 0;
}

void ioq_log(enum ioq_log_level lvl, const char *fmt, ...) {
  if (lvl > g_level)
    return;
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char when[40];
  size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1000000);

  pthread_mutex_lock(&g_lock);
  va_list ap;
  va_start(ap, fmt);
  ioq_log_split(&g_rec, fmt, ap);
  va_end(ap);
  size_t len = ioq_log_render(g_line, sizeof g_line, g_format, when, lvl, &g_rec);
  fwrite(g_line, 1, len, stderr);
  fflush(stderr);
  pthread_mutex_unlock(&g_lock);
}
