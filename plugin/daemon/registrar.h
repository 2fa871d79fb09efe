// SPDX-License-Identifier: Apache-2.0
/* registrar.c: Register with kubelet, re-register after its restarts. */
#ifndef IOQOS_PLUGIN_REGISTRAR_H
#define IOQOS_PLUGIN_REGISTRAR_H

#include "ioqos/error.h"

struct plugin;
struct registrar;

struct registrar *registrar_start(struct plugin *p, ioq_err *e);
void registrar_stop(struct registrar *r);

#endif
