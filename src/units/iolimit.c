// SPDX-License-Identifier: Apache-2.0
#include "units/iolimit.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"

static int parse_uint(const char *s, size_t n, unsigned *out) {
  if (n == 0 || n > 10)
    return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v > UINT32_MAX)
    return -1;
  *out = (unsigned)v;
  return 0;
}

int ioq_devno_parse(const char *s, struct ioq_devno *out, ioq_err *e) {
  const char *colon = s ? strchr(s, ':') : NULL;
  if (!colon || parse_uint(s, (size_t)(colon - s), &out->major) < 0 ||
      parse_uint(colon + 1, strlen(colon + 1), &out->minor) < 0)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "device '%s': want MAJ:MIN (decimal numbers, e.g. 8:16)",
                    s ? s : "");
  return 0;
}

const char *ioq_devno_str(struct ioq_devno d, char *buf, size_t bufsz) {
  snprintf(buf, bufsz, "%u:%u", d.major, d.minor);
  return buf;
}

bool ioq_devno_eq(struct ioq_devno a, struct ioq_devno b) {
  return a.major == b.major && a.minor == b.minor;
}

static const char *const g_keys[IOQ_LIMIT_KEYS] = {"rbps", "wbps", "riops", "wiops"};

const char *ioq_limit_key_name(enum ioq_limit_key k) {
  return (unsigned)k < IOQ_LIMIT_KEYS ? g_keys[k] : "?";
}

uint64_t ioq_limits_get(const struct ioq_io_limits *l, enum ioq_limit_key k) {
  switch (k) {
  case IOQ_RBPS: return l->rbps;
  case IOQ_WBPS: return l->wbps;
  case IOQ_RIOPS: return l->riops;
  case IOQ_WIOPS: return l->wiops;
  default: return 0;
  }
}

void ioq_limits_set(struct ioq_io_limits *l, enum ioq_limit_key k, uint64_t v) {
  switch (k) {
  case IOQ_RBPS: l->rbps = v; break;
  case IOQ_WBPS: l->wbps = v; break;
  case IOQ_RIOPS: l->riops = v; break;
  case IOQ_WIOPS: l->wiops = v; break;
  default: break;
  }
}

bool ioq_limits_eq(const struct ioq_io_limits *a, const struct ioq_io_limits *b) {
  return a->rbps == b->rbps && a->wbps == b->wbps && a->riops == b->riops && a->wiops == b->wiops;
}

bool ioq_limits_unlimited(const struct ioq_io_limits *l) {
  return !l->rbps && !l->wbps && !l->riops && !l->wiops;
}

int ioq_limits_check(const struct ioq_io_limits *l, ioq_err *e) {
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++) {
    uint64_t v = ioq_limits_get(l, k);
    uint64_t hi = k <= IOQ_WBPS ? IOQ_BPS_LIMIT_MAX : IOQ_IOPS_LIMIT_MAX;
    if (v != 0 && (v < IOQ_LIMIT_MIN || v > hi))
      return ioq_fail(e, ERANGE, "%s=%" PRIu64 ": out of range (%llu..%" PRIu64 ", or max for no limit)",
                      g_keys[k], v, IOQ_LIMIT_MIN, hi);
  }
  return 0;
}

static void fmt_val(char *buf, size_t sz, uint64_t v) {
  if (v == 0)
    snprintf(buf, sz, "max");
  else
    snprintf(buf, sz, "%" PRIu64, v);
}

int ioq_iomax_format(char *out, size_t outsz, struct ioq_devno d, const struct ioq_io_limits *l,
                     ioq_err *e) {
  char v[IOQ_LIMIT_KEYS][24];
  for (int k = 0; k < IOQ_LIMIT_KEYS; k++)
    fmt_val(v[k], sizeof v[k], ioq_limits_get(l, k));
  int n = snprintf(out, outsz, "%u:%u rbps=%s wbps=%s riops=%s wiops=%s", d.major, d.minor, v[0],
                   v[1], v[2], v[3]);
  if (n < 0 || (size_t)n >= outsz)
    return ioq_fail(e, EOVERFLOW, "io.max line does not fit in %zu bytes", outsz);
  return 0;
}

/* Iterates over lines; returns the next line (NUL-terminated copy in buf) or
 * NULL at the end. Lines longer than the buffer are reported as such. */
static const char *next_line(const char **cursor, char *buf, size_t bufsz, bool *toolong) {
  const char *p = *cursor;
  if (!p || !*p)
    return NULL;
  const char *nl = strchr(p, '\n');
  size_t len = nl ? (size_t)(nl - p) : strlen(p);
  *cursor = nl ? nl + 1 : p + len;
  *toolong = len >= bufsz;
  if (*toolong)
    len = bufsz - 1;
  memcpy(buf, p, len);
  buf[len] = '\0';
  return buf;
}

/* Splits "MAJ:MIN rest" and says whether the line is for device d. Returns
 * -1 if the first token is not a device. */
static int line_dev(char *line, struct ioq_devno *dev, char **rest) {
  char *sp = line + strcspn(line, " \t");
  char save = *sp;
  *sp = '\0';
  int rc = ioq_devno_parse(line, dev, NULL);
  *sp = save;
  *rest = sp;
  while (**rest == ' ' || **rest == '\t')
    (*rest)++;
  return rc;
}

static int parse_val(const char *s, uint64_t *out) {
  if (strcmp(s, "max") == 0) {
    *out = 0;
    return 0;
  }
  if (ioq_parse_u64(s, out) < 0)
    return -1;
  /* IOPS are unsigned int in the kernel; UINT_MAX reads back as max, and
   * U64_MAX is max for bytes/s. */
  if (*out == UINT64_MAX)
    *out = 0;
  return 0;
}

/* The next line of a "MAJ:MIN ..." file that is for device d: 1 with *rest
 * just after the device, 0 at the end, -1 on a line of another form (the
 * kernel never writes one: a parse that skipped it could miss a limit). */
static int next_line_for(const char **cur, char *line, size_t linesz, struct ioq_devno d,
                         char **rest, const char *what, ioq_err *e) {
  bool toolong;
  while (next_line(cur, line, linesz, &toolong)) {
    ioq_trim(line);
    if (!*line)
      continue;
    struct ioq_devno ld;
    if (toolong || line_dev(line, &ld, rest) < 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "%s: unexpected line '%.120s'", what, line);
    if (ioq_devno_eq(ld, d))
      return 1;
  }
  return 0;
}

int ioq_iomax_parse(const char *content, struct ioq_devno d, struct ioq_io_limits *out,
                    bool *present, ioq_err *e) {
  memset(out, 0, sizeof *out);
  *present = false;
  char line[512], *rest;
  const char *cur = content;
  int rc;
  while ((rc = next_line_for(&cur, line, sizeof line, d, &rest, "io.max", e)) > 0) {
    *present = true;
    char *save = NULL;
    for (char *tok = strtok_r(rest, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
      char *eq = strchr(tok, '=');
      if (!eq)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "io.max: token '%s' is not KEY=VALUE", tok);
      *eq = '\0';
      for (int k = 0; k < IOQ_LIMIT_KEYS; k++) {
        if (strcmp(tok, g_keys[k]) != 0)
          continue;
        uint64_t v;
        if (parse_val(eq + 1, &v) < 0)
          return ioq_fail(e, IOQ_EINVAL_INPUT, "io.max: %s=%s is not a number or max", tok, eq + 1);
        ioq_limits_set(out, k, v);
      }
    }
  }
  return rc;
}

int ioq_blkio_parse(const char *content, struct ioq_devno d, uint64_t *out, bool *present,
                    ioq_err *e) {
  *out = 0;
  *present = false;
  char line[256], *rest;
  const char *cur = content;
  int rc;
  while ((rc = next_line_for(&cur, line, sizeof line, d, &rest, "blkio", e)) > 0) {
    uint64_t v;
    if (parse_val(rest, &v) < 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "line '%s': '%s' is not a number", line, rest);
    *out = v;
    *present = true;
  }
  return rc;
}

static int parse_weight(const char *s, unsigned *out) {
  uint64_t v;
  if (ioq_parse_u64(s, &v) < 0 || v == 0 || v > IOQ_IO_WEIGHT_MAX)
    return -1;
  *out = (unsigned)v;
  return 0;
}

int ioq_weights_parse(const char *content, struct ioq_devno d, struct ioq_weights *out,
                      ioq_err *e) {
  memset(out, 0, sizeof *out);
  char line[256];
  bool toolong;
  const char *cur = content;
  while (next_line(&cur, line, sizeof line, &toolong)) {
    ioq_trim(line);
    if (!*line)
      continue;
    if (toolong)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "weight file: line too long '%.60s...'", line);
    if (strncmp(line, "default", 7) == 0 && (line[7] == ' ' || line[7] == '\t')) {
      if (parse_weight(ioq_trim(line + 8), &out->dflt) < 0)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "weight file: bad default line '%s'", line);
      continue;
    }
    if (isdigit((unsigned char)line[0]) && !strchr(line, ':')) {
      if (parse_weight(line, &out->dflt) < 0)
        return ioq_fail(e, IOQ_EINVAL_INPUT, "weight file: bad weight '%s'", line);
      continue;
    }
    struct ioq_devno ld;
    char *rest;
    if (line_dev(line, &ld, &rest) < 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "weight file: unexpected line '%s'", line);
    if (!ioq_devno_eq(ld, d))
      continue;
    /* "MAJ:MIN default" is what clearing writes; the kernel drops the line
     * instead of showing it, a file that keeps what was written (a tree of
     * plain files) shows it: either way the device has no weight of its own */
    if (strcmp(ioq_trim(rest), "default") == 0) {
      out->device = 0;
      continue;
    }
    if (parse_weight(rest, &out->device) < 0)
      return ioq_fail(e, IOQ_EINVAL_INPUT, "weight file: bad weight in '%s'", line);
  }
  return 0;
}

void ioq_dev_line(const char *content, struct ioq_devno d, char *out, size_t outsz) {
  if (outsz)
    out[0] = '\0';
  char line[512];
  bool toolong;
  const char *cur = content;
  while (next_line(&cur, line, sizeof line, &toolong)) {
    ioq_trim(line);
    struct ioq_devno ld;
    char *rest;
    if (line_dev(line, &ld, &rest) == 0 && ioq_devno_eq(ld, d)) {
      snprintf(out, outsz, "%s", line);
      return;
    }
  }
}
