// SPDX-License-Identifier: Apache-2.0
/* Which pod a PreStart that no listed container explains may be for: the
 * heuristic behind an init-only PreStart (prestart.c), as a pure function.
 *
 * kubelet lists sidecars and app containers only, so a regular init
 * container's PreStart names units no listed pod holds. Its pod is one that
 * kubelet lists with no units of that resource, whose API object is Pending
 * (not being deleted) with a regular init container asking for exactly the
 * PreStart's count, and that is placed (annotation ioqos.io/disk) on the
 * units' disk if placed at all. A pod whose init container already started
 * on these very units is the asker (a restart, the next init container),
 * alone; one that started on other units (not a guess) is not a candidate. */
#ifndef IOQOS_PLUGIN_INITPICK_H
#define IOQOS_PLUGIN_INITPICK_H

#include <stddef.h>
#include <stdint.h>

#include "units/units.h"
#include "state/podcache.h"

enum initpick {
  INITPICK_NO = 0, /* not this pod */
  INITPICK_MAYBE,  /* a candidate: nothing kubelet says tells it from the others */
  INITPICK_ASKER,  /* certainly this pod (its init container holds these units) */
};

/* pi: the pod's API object; listed: the units of r kubelet lists for it;
 * disk: the disk of the PreStart's units; n: how many; held: what the pod
 * table says of the pod's init container units (podtable_init_held: -1
 * none, 0 others, 1 exactly these, 2 a guess). */
enum initpick initpick_judge(const struct pod_info *pi, uint64_t listed, const char *disk,
                             enum ioq_resource r, size_t n, int held);

/* true if the pod may run a regular init container asking for n units of r
 * on disk: the part of initpick_judge that does not need the pod table. */
bool initpick_may_ask(const struct pod_info *pi, uint64_t listed, const char *disk,
                      enum ioq_resource r, size_t n);

#endif
