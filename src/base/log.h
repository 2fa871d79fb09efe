// SPDX-License-Identifier: Apache-2.0
/* Logging: one line per event to stderr. Call sites write the message as
 * `what happened key=value key="value with spaces" ...`; the logger splits it
 * (driven by the format string, see log_split.c) and writes either logfmt
 * (`time=... level=info msg="what happened" key=value ...`, quoted and escaped
 * as needed) or one JSON object per line with the same fields, every value a
 * string. Thread-safe. */
#ifndef IOQOS_LOG_H
#define IOQOS_LOG_H

enum ioq_log_level { IOQ_LOG_ERROR = 0, IOQ_LOG_WARN, IOQ_LOG_INFO, IOQ_LOG_DEBUG };

void ioq_log_set_level(enum ioq_log_level lvl);
enum ioq_log_level ioq_log_get_level(void);
/* Parses "error|warn|info|debug"; returns -1 on anything else. */
int ioq_log_parse_level(const char *s, enum ioq_log_level *out);

enum ioq_log_format { IOQ_LOG_TEXT = 0, IOQ_LOG_JSON };

void ioq_log_set_format(enum ioq_log_format f);
/* Parses "text|json"; returns -1 on anything else. */
int ioq_log_parse_format(const char *s, enum ioq_log_format *out);

void ioq_log(enum ioq_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define ioq_error(...) ioq_log(IOQ_LOG_ERROR, __VA_ARGS__)
#define ioq_warn(...) ioq_log(IOQ_LOG_WARN, __VA_ARGS__)
#define ioq_info(...) ioq_log(IOQ_LOG_INFO, __VA_ARGS__)
#define ioq_debug(...) ioq_log(IOQ_LOG_DEBUG, __VA_ARGS__)

#endif
