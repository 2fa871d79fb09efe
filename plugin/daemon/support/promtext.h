// SPDX-License-Identifier: Apache-2.0
/* Prometheus text exposition (format 0.0.4) helpers, shared by the /metrics
 * writers (observe/metrics_text.c and the grant monitor's families): a label
 * value escaped (backslash, double quote, newline) and a family's HELP and
 * TYPE lines. */
#ifndef IOQOS_PLUGIN_PROMTEXT_H
#define IOQOS_PLUGIN_PROMTEXT_H

#include <stdio.h>

void metrics_lv(FILE *f, const char *s);
void metrics_head(FILE *f, const char *name, const char *type, const char *help);

#endif
