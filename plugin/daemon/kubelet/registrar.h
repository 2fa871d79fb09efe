// SPDX-License-Identifier: Apache-2.0
/* registrar.c: Register with kubelet, re-register after its restarts, and
 * keep ioqos_kubelet_registered true to kubelet's presence (both modes). */
#ifndef IOQOS_PLUGIN_REGISTRAR_H
#define IOQOS_PLUGIN_REGISTRAR_H

#include "base/error.h"

struct plugin;
struct registrar;

struct registrar *registrar_start(struct plugin *p, ioq_err *e);
void registrar_stop(struct registrar *r);

#endif
