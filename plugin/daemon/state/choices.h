// SPDX-License-Identifier: Apache-2.0
/* The disks GetPreferredAllocation chose, remembered for `ioqosctl explain`
 * (the newest CHOICES_MAX): kubelet never tells the plugin which pod asked,
 * so the decision is noted when the asking pod is known and shown later. */
#ifndef IOQOS_PLUGIN_CHOICES_H
#define IOQOS_PLUGIN_CHOICES_H

#include <stdbool.h>

#include "grant/podneed.h" /* IOQ_POD_NAME_MAX, IOQ_POD_NAMESPACE_MAX */
#include "units/units.h"

/* Preferred-allocation decisions remembered (newest kept). */
#define CHOICES_MAX 256

struct choice {
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  enum ioq_resource r;
  char disk[IOQ_DISK_NAME_MAX + 1];
  char how[24];
  char note[320];
  double at; /* CLOCK_REALTIME */
};

struct choices;

struct choices *choices_new(void);
void choices_free(struct choices *x);

/* GetPreferredAllocation chose `disk` (how: prefer.h's) for the one pod that
 * could be asking. NULL-safe; a name too long to keep whole is not kept (it
 * would be found under another pod or disk) and logged. Any thread. */
void choices_note(struct choices *x, const char *ns, const char *name, enum ioq_resource r,
                  const char *disk, const char *how, const char *note);

/* The newest decision for the pod, resource and disk (false if none). */
bool choices_find(struct choices *x, const char *ns, const char *name, enum ioq_resource r,
                  const char *disk, struct choice *out);

#endif
