// SPDX-License-Identifier: Apache-2.0
/* The node's view from the last pod resources List, kept by the pod table
 * (podtable.h) under its table lock: which pods hold units and how many
 * units of each disk are allocated (the List's plus the grants in place it
 * does not show). Read by GetPreferredAllocation, the node annotation,
 * metrics and explain; noted by every List (reconcile, GetPreferredAllocation).
 * Thread-safe; never takes the write lock, so it does not wait on the kernel. */
#ifndef IOQOS_PLUGIN_LISTVIEW_H
#define IOQOS_PLUGIN_LISTVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grant/nodeanno.h"
#include "units/units.h"
#include "podcache.h"
#include "podres.h"

struct podtable;

/* Remembers the List result: pods holding units, units allocated per disk.
 * A List asked for before the one already noted is ignored (the reconcile
 * loop and GetPreferredAllocation list concurrently). */
void listview_note(struct podtable *f, const struct podres_list *listed);
/* true if the last List showed the pod; held gets its units per resource */
bool listview_pod_held(struct podtable *f, const char *ns, const char *name,
                       uint64_t held[IOQ_RES_COUNT]);
/* Units allocated on `disk` per the last List, plus the grants of pods
 * with limits in place that it does not show holding units (kept while a
 * restarting kubelet does not list them, a PreStart that raced the List, a
 * regular init container's). */
void listview_allocated(struct podtable *f, const char *disk, uint64_t out[IOQ_RES_COUNT]);
/* UIDs (from the pod cache `pc`) of the pods the last List showed holding
 * units, i.e. the pods `allocated` counts; pods the cache does not know yet
 * are left out. Returns how many (malloc'd array in *out). */
size_t listview_listed_uids(struct podtable *f, struct podcache *pc,
                            char (**out)[IOQ_POD_UID_STR_MAX + 1]);
/* true once a List has been noted */
bool listview_have_list(struct podtable *f);

#endif
