// SPDX-License-Identifier: Apache-2.0
/* Prometheus text exposition helpers (promtext.h). */
#include <stdio.h>

#include "promtext.h"

/* label values: escape backslash, double quote and newline */
void metrics_lv(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      fputc('\\', f);
    if (*s == '\n') {
      fputs("\\n", f);
      continue;
    }
    fputc(*s, f);
  }
}

void metrics_head(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}
