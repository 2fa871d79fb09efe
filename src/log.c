// SPDX-License-Identifier: Apache-2.0
#include "ioqos/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum ioq_log_level g_level = IOQ_LOG_INFO;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const g_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void ioq_log_set_level(enum ioq_log_level lvl) { g_level = lvl; }
enum ioq_log_level ioq_log_get_level(void) { return g_level; }

int ioq_log_parse_level(const char *s, enum ioq_log_level *out) {
  static const char *const lower[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (s && strcmp(s, lower[i]) == 0) {
      *out = (enum ioq_log_level)i;
      return 0;
    }
  return -1;
}

void ioq_log(enum ioq_log_level lvl, const char *fmt, ...) {
  if (lvl > g_level)
    return;
  char line[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);

  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

  pthread_mutex_lock(&g_lock);
  fprintf(stderr, "%s.%03ldZ %-5s %s\n", when, ts.tv_nsec / 1000000, g_names[lvl], line);
  fflush(stderr);
  pthread_mutex_unlock(&g_lock);
}
