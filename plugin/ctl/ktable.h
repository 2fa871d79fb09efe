// SPDX-License-Identifier: Apache-2.0
/* Human tables as kubectl prints them: a header row of upper-case names,
 * columns left-aligned to the widest cell (counted in UTF-8 characters) and
 * separated by three spaces, no trailing blanks. Cells are copied when
 * added; control characters in them (from annotations anyone with patch
 * rights on a node or pod may write) are shown as '?', so a cell can never
 * break a row or move the terminal's cursor. An empty cell prints "<none>".
 */
#ifndef IOQOSCTL_KTABLE_H
#define IOQOSCTL_KTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CTL_TABLE_COLS_MAX 16
#define CTL_TABLE_SEP 3

struct ctl_table {
  size_t ncols;
  const char *headers[CTL_TABLE_COLS_MAX];
  char **cells; /* nrows * ncols, row by row */
  size_t nrows, cap;
};

/* headers: ncols names (not copied: string literals). 0 / -1 if ncols is
 * 0 or above CTL_TABLE_COLS_MAX. */
int ctl_table_init(struct ctl_table *t, size_t ncols, const char *const *headers);
/* Appends one row of ncols cells (NULL = empty); -1 on OOM (t unchanged). */
int ctl_table_add(struct ctl_table *t, const char *const *cells);
/* Display width of s: UTF-8 characters, not bytes. */
size_t ctl_text_width(const char *s);
/* Writes the table (header first) to f. Nothing for a table without rows
 * is the caller's choice: this writes the header alone. */
void ctl_table_print(const struct ctl_table *t, FILE *f);
/* The same as a malloc'd string (tests); NULL on OOM. */
char *ctl_table_format(const struct ctl_table *t);
void ctl_table_free(struct ctl_table *t);

#endif
