// SPDX-License-Identifier: Apache-2.0
/* Combined-direction grants (enforcement.combinedDirections): after each
 * grant monitor interval, re-splits every granted pod's rbps/wbps and
 * riops/wiops from the interval's achieved rates (grant/dirsplit.h) so that
 * read + write stays within the grant, and writes the new split through the
 * pod table (podtable_set_split: the one writer, read back, under the write
 * lock; reconcile keeps it). Counted in ioqos_direction_resplits_total and
 * ioqos_direction_resplit_errors_total. */
#ifndef IOQOS_PLUGIN_COMBINED_H
#define IOQOS_PLUGIN_COMBINED_H

#include <stddef.h>

#include "monitor.h"

struct plugin;
struct combined;

/* The monitor hook; ud is the struct combined combined_attach made. */
void combined_hook(void *ud, const struct monitor_sample *s, size_t n);

/* Registers the hook when the option is on (its state in p->combined);
 * call after the monitor started (p->mon). Without a monitor it logs that
 * nothing is re-split. */
void combined_attach(struct plugin *p);
/* After the monitor stopped. NULL is fine. */
void combined_free(struct combined *c);

#endif
