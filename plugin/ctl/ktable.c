// SPDX-License-Identifier: Apache-2.0
#include "ktable.h"
#include "base/grow.h"

#include <stdlib.h>
#include <string.h>

int ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *headers) {
  memset(t, 0, sizeof *t);
  if (ncols == 0 || ncols > CTL_TABLE_COLS_MAX)
    return -1;
  t->ncols = ncols;
  for (size_t i = 0; i < ncols; i++)
    t->headers[i] = headers[i];
  return 0;
}

/* a copy with every control character (C0, DEL) replaced by '?' */
static char *clean_dup(const char *s) {
  char *d = strdup(s ? s : "");
  if (!d)
    return NULL;
  for (unsigned char *p = (unsigned char *)d; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      *p = '?';
  return d;
}

int ctl_table_add(struct ctl_table *t, const char *const *cells) {
  /* rows of ncols cells: one element is a row */
  char **n = ioq_grow(t->cells, &t->cap, t->nrows + 1, t->ncols * sizeof *n, 16);
  if (!n)
    return -1;
  t->cells = n;
  char **row = t->cells + t->nrows * t->ncols;
  for (size_t i = 0; i < t->ncols; i++) {
    row[i] = clean_dup(cells[i]);
    if (!row[i]) {
      while (i-- > 0)
        free(row[i]);
      return -1;
    }
  }
  t->nrows++;
  return 0;
}

size_t ctl_text_width(const char *s) {
  size_t w = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p & 0xc0) != 0x80) /* not a continuation byte */
      w++;
  return w;
}

static const char *shown(const char *c) { return c && *c ? c : "<none>"; }

static void print_row(FILE *f, const size_t *width, size_t ncols, const char *const *cells) {
  for (size_t i = 0; i < ncols; i++) {
    const char *c = shown(cells[i]);
    fputs(c, f);
    if (i + 1 < ncols)
      fprintf(f, "%*s", (int)(width[i] - ctl_text_width(c) + CTL_TABLE_SEP), "");
  }
  fputc('\n', f);
}

void ctl_table_print(const struct ctl_table *t, FILE *f) {
  size_t width[CTL_TABLE_COLS_MAX];
  for (size_t i = 0; i < t->ncols; i++) {
    width[i] = ctl_text_width(t->headers[i]);
    for (size_t r = 0; r < t->nrows; r++) {
      size_t w = ctl_text_width(shown(t->cells[r * t->ncols + i]));
      if (w > width[i])
        width[i] = w;
    }
  }
  print_row(f, width, t->ncols, t->headers);
  for (size_t r = 0; r < t->nrows; r++)
    print_row(f, width, t->ncols, (const char *const *)t->cells + r * t->ncols);
}

char *ctl_table_format(const struct ctl_table *t) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  ctl_table_print(t, f);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

void ctl_table_free(struct ctl_table *t) {
  for (size_t i = 0; i < t->nrows * t->ncols; i++)
    free(t->cells[i]);
  free(t->cells);
  memset(t, 0, sizeof *t);
}
