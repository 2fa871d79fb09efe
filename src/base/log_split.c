// SPDX-License-Identifier: Apache-2.0
/* Splits a formatted log message into its prose and its key=value fields.
 *
 * Call sites write `what happened key=%s other="%s"`. Scanning the formatted
 * text for ` key=` would let an argument that contains ` x=` or a quote invent
 * or swallow fields, so the split is driven by the format string instead (it
 * is a literal in our code): every ` key=` in the format starts a field whose
 * value runs to the next literal space (or to the closing quote when the call
 * site quoted it). The message is formatted twice: once plainly, to find a
 * control byte the arguments do not contain, then with that byte between the
 * format's pieces. The bytes found between markers are exactly what each piece
 * produced, whatever the arguments hold. */
#include "log_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Room for the format with its markers; longer formats are logged unsplit. */
#define FMT_MAX 1024

struct piece {
  size_t start, end; /* [start, end) of fmt */
  bool field;
  char quote; /* '"' or '\'' when the call site quoted the whole value */
};

/* Index after the printf conversion that starts at f[i] == '%'. */
static size_t conv_end(const char *f, size_t i) {
  size_t j = i + 1;
  while (f[j] && !strchr("diouxXeEfFgGaAcspnm%", f[j]))
    j++;
  return f[j] ? j + 1 : j;
}

/* Length of "key=" at f[i] (a literal identifier or a %s), 0 if none. */
static size_t key_at(const char *f, size_t i) {
  size_t j = i;
  if (f[j] == '%' && f[j + 1] == 's') {
    j += 2;
  } else {
    if (!isalpha((unsigned char)f[j]) && f[j] != '_')
      return 0;
    while (isalnum((unsigned char)f[j]) || f[j] == '_' || f[j] == '.' || f[j] == '-')
      j++;
  }
  return f[j] == '=' ? j + 1 - i : 0;
}

/* End of the value that starts at f[v]; sets *quote when the call site wrote
 * it as "..." or '...' followed by a space or the end. */
static size_t value_end(const char *f, size_t v, char *quote) {
  *quote = 0;
  if (f[v] == '"' || f[v] == '\'') {
    size_t j = v + 1;
    while (f[j] && f[j] != f[v])
      j = f[j] == '%' ? conv_end(f, j) : j + 1;
    if (f[j] == f[v] && (f[j + 1] == ' ' || f[j + 1] == 0)) {
      *quote = f[v];
      return j + 1;
    }
  }
  size_t j = v;
  while (f[j] && f[j] != ' ')
    j = f[j] == '%' ? conv_end(f, j) : j + 1;
  return j;
}

/* Cuts fmt into prose, field, prose, ..., field, prose; returns the count. */
static size_t cut_format(const char *f, struct piece *p, size_t max) {
  size_t n = 0, i = 0, prose = 0;
  while (f[i]) {
    size_t k = (i == 0 || f[i - 1] == ' ') && n + 2 < max ? key_at(f, i) : 0;
    if (!k) {
      i = f[i] == '%' ? conv_end(f, i) : i + 1;
      continue;
    }
    p[n++] = (struct piece){.start = prose, .end = i};
    char q;
    size_t end = value_end(f, i + k, &q);
    p[n++] = (struct piece){.start = i, .end = end, .field = true, .quote = q};
    prose = i = end;
  }
  p[n++] = (struct piece){.start = prose, .end = i};
  return n;
}

/* Replaces bytes that are not valid UTF-8 with '?' so that both formats stay
 * valid text (JSON must be UTF-8). Checks lead/continuation structure,
 * overlongs, surrogates and the U+10FFFF limit. */
static void fix_utf8(char *s, size_t n) {
  unsigned char *u = (unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned c = u[i];
    size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
                            : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; k++)
      ok = (u[i + k] & 0xc0) == 0x80;
    if (ok && len == 3)
      ok = !(c == 0xe0 && u[i + 1] < 0xa0) && !(c == 0xed && u[i + 1] >= 0xa0);
    if (ok && len == 4)
      ok = !(c == 0xf0 && u[i + 1] < 0x90) && !(c == 0xf4 && u[i + 1] >= 0x90);
    if (!ok) {
      u[i++] = '?';
      continue;
    }
    i += len;
  }
}

static void msg_add(struct ioq_log_record *rec, const char *s, size_t n) {
  while (n && *s == ' ')
    s++, n--;
  while (n && s[n - 1] == ' ')
    n--;
  if (!n || rec->msg_len + 1 + n >= sizeof rec->msg)
    return;
  if (rec->msg_len)
    rec->msg[rec->msg_len++] = ' ';
  memcpy(rec->msg + rec->msg_len, s, n);
  rec->msg_len += n;
}

static void field_add(struct ioq_log_record *rec, char *s, size_t n, char quote) {
  char *eq = memchr(s, '=', n);
  if (!eq) /* the message was cut inside the key */
    return;
  *eq = 0;
  for (char *k = s; *k; k++) /* keys from %s: keep them plain logfmt keys */
    if (!isalnum((unsigned char)*k) && !strchr("_.-/:", *k))
      *k = '_';
  char *v = eq + 1;
  size_t vn = n - (size_t)(v - s);
  if (quote && vn && v[0] == quote) {
    v++, vn--;
    if (vn && v[vn - 1] == quote) /* absent only when the message was cut */
      vn--;
  }
  v[vn] = 0;
  struct ioq_log_field *f = &rec->fields[rec->n_fields++];
  *f = (struct ioq_log_field){.key = s, .key_len = (size_t)(eq - s), .val = v, .val_len = vn,
                              .quoted = quote != 0};
}

void ioq_log_split(struct ioq_log_record *rec, const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  rec->msg_len = 0;
  rec->n_fields = 0;
  char *plain = rec->buf;
  int len = vsnprintf(plain, IOQ_LOG_MSG_MAX, fmt, ap);
  bool failed = len < 0; /* glibc: EOVERFLOW past INT_MAX bytes; say so, unsplit */
  if (failed)
    len = snprintf(plain, IOQ_LOG_MSG_MAX, "log message not formatted (%s) format: %s",
                   strerror(errno), fmt);
  size_t kept = (size_t)len < IOQ_LOG_MSG_MAX ? (size_t)len : IOQ_LOG_MSG_MAX - 1;
  rec->cut = kept < (size_t)len;

  struct piece p[2 * IOQ_LOG_FIELDS_MAX + 1];
  size_t np = !failed && strlen(fmt) < FMT_MAX - 2 * IOQ_LOG_FIELDS_MAX
                  ? cut_format(fmt, p, sizeof p / sizeof *p)
                  : 1;
  char marker = 0;
  for (char c = 1; np > 1 && c < 0x20 && !marker; c++)
    if (!memchr(plain, c, kept))
      marker = c;
  if (!marker) { /* no field, or arguments that hold every control byte */
    fix_utf8(plain, kept);
    msg_add(rec, plain, kept);
    va_end(again);
    return;
  }

  char mfmt[FMT_MAX];
  size_t m = 0;
  for (size_t i = 0; i < np; i++) {
    if (i)
      mfmt[m++] = marker;
    memcpy(mfmt + m, fmt + p[i].start, p[i].end - p[i].start);
    m += p[i].end - p[i].start;
  }
  mfmt[m] = 0;
  char *out = rec->buf + IOQ_LOG_MSG_MAX;
  size_t cap = sizeof rec->buf - IOQ_LOG_MSG_MAX;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  /* mfmt is fmt with marker bytes added between pieces: same conversions, same arguments */
  int mlen = vsnprintf(out, cap, mfmt, again);
#pragma GCC diagnostic pop
  va_end(again);
  size_t have = mlen < 0 ? 0 : (size_t)mlen < cap ? (size_t)mlen : cap - 1;

  /* Walk the pieces; stop after `kept` argument bytes: beyond them the
   * plain pass did not check that the marker is absent. */
  size_t text = 0, seg = 0, piece = 0;
  for (size_t i = 0; i <= have && piece < np; i++) {
    bool end = i == have || text == kept;
    if (!end && out[i] != marker) {
      text++;
      continue;
    }
    fix_utf8(out + seg, i - seg);
    if (p[piece].field)
      field_add(rec, out + seg, i - seg, p[piece].quote);
    else
      msg_add(rec, out + seg, i - seg);
    if (end)
      break;
    piece++;
    seg = i + 1;
  }
}
