// SPDX-License-Identifier: Apache-2.0
/* reconcile.c: periodic + triggered passes that put every listed pod's grant
 * in place and release the gone ones; the inventory refresh. */
#ifndef IOQOS_PLUGIN_RECONCILE_H
#define IOQOS_PLUGIN_RECONCILE_H

#include "base/error.h"

struct plugin;
struct reconciler;

struct reconciler *reconciler_start(struct plugin *p, ioq_err *e);
void reconciler_kick(struct reconciler *r);
/* A kick whose pass also re-probes the disks first (the config in force
 * changed: devices, capacities, node policy). NULL-safe, any thread. */
void reconciler_kick_probe(struct reconciler *r);
/* Ends the thread; kicks are still safe until reconciler_free. */
void reconciler_stop(struct reconciler *r);
void reconciler_free(struct reconciler *r);
/* One pass now, on the caller's thread (also used at start). */
void reconcile_pass(struct plugin *p);
/* Re-probes the disks and updates the catalog (health, units). */
void inventory_refresh(struct plugin *p);

#endif
