// SPDX-License-Identifier: Apache-2.0
/* Internal pieces of the logger (log.c): the split of a formatted message
 * into its prose and its key=value fields (log_split.c), and the writers of
 * one line in logfmt or JSON (log_emit.c). Exposed for the unit tests. */
#ifndef IOQOS_LOG_INTERNAL_H
#define IOQOS_LOG_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/log.h"

/* Longest formatted message kept; the rest is cut (bounded time and memory
 * per line whatever the arguments hold). */
#define IOQ_LOG_MSG_MAX 16384
#define IOQ_LOG_FIELDS_MAX 32

struct ioq_log_field {
  const char *key; /* NUL-terminated, inside the caller's buffer */
  const char *val;
  size_t key_len, val_len;
  bool quoted; /* the call site wrote the value in quotes: kept quoted in text */
};

struct ioq_log_record {
  char msg[IOQ_LOG_MSG_MAX]; /* the prose, fields removed */
  size_t msg_len;
  struct ioq_log_field fields[IOQ_LOG_FIELDS_MAX];
  size_t n_fields;
  bool cut; /* the message was longer than IOQ_LOG_MSG_MAX */
  char buf[2 * IOQ_LOG_MSG_MAX + 2 * IOQ_LOG_FIELDS_MAX + 2]; /* scratch for both passes */
};

/* Formats fmt/ap into rec: prose in rec->msg, fields pointing into rec->buf.
 * Consumes ap twice (through va_copy). */
void ioq_log_split(struct ioq_log_record *rec, const char *fmt, va_list ap);

/* Appends one full line (with '\n') for rec to out, at most cap bytes
 * including the NUL; returns the length written. time is RFC 3339 UTC. */
size_t ioq_log_render(char *out, size_t cap, enum ioq_log_format format, const char *time,
                      enum ioq_log_level lvl, const struct ioq_log_record *rec);

#endif
