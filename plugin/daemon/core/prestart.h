// SPDX-License-Identifier: Apache-2.0
/* prestart.c: PreStartContainer (find the pod, write its grant, answer). */
#ifndef IOQOS_PLUGIN_PRESTART_H
#define IOQOS_PLUGIN_PRESTART_H

#include <stddef.h>
#include "units/units.h"

struct plugin;
struct grpcs_reply;
void prestart_handle(struct plugin *p, enum ioq_resource r, char *const *ids, size_t n,
                     struct grpcs_reply *out);

#endif
