// SPDX-License-Identifier: Apache-2.0
/* DRA mode (--mode=dra): the driver ioqos.io towards kubelet and the API
 * server (docs/dra.md).
 *
 * Start order, as kubelet needs it: the DRA service (v1 and v1beta1
 * DRAPlugin: NodePrepareResources / NodeUnprepareResources) is served on
 * <plugins-dir>/ioqos.io/dra.sock first, then the registration socket
 * <registry-dir>/ioqos.io-reg.sock appears (kubelet dials the endpoint as
 * soon as it registers us), and the ResourceSlice publisher runs. Stop: the
 * registration socket goes first (kubelet deregisters), then the service;
 * the node's slice stays for the next instance (drapub.h). Claim handling
 * is in draprepare.h, the slice in drapub.h. */
#ifndef IOQOS_PLUGIN_DRADRIVER_H
#define IOQOS_PLUGIN_DRADRIVER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define DRA_SOCKET_NAME "dra.sock"
#define DRA_REG_SOCKET_SUFFIX "-reg.sock"

struct plugin;
struct dradriver;

/* Refuses (EADDRINUSE) when a live process serves either socket. */
struct dradriver *dradriver_start(struct plugin *p, ioq_err *e);
void dradriver_stop(struct dradriver *d);

/* The registration socket path a DRA-mode instance on this node uses (the
 * device-plugin mode checks it is not live: one mode per node). */
int dradriver_reg_socket(const struct plugin *p, char *out, size_t outsz, ioq_err *e);

/* /readyz: registered with kubelet and the slice published. */
bool dradriver_ready(struct dradriver *d, char *why, size_t whysz);
/* /healthz: the gRPC loops run. */
bool dradriver_live(struct dradriver *d, char *why, size_t whysz);

/* Registrar thread, every check: the registration socket served again when
 * it was deleted, and ioqos_kubelet_registered for the driver = kubelet said
 * registered on the socket served now and kubelet is live (kubelet_why: why
 * not). Logs each change of the gauge with its reason. */
void dradriver_watch(struct dradriver *d, bool kubelet_live, const char *kubelet_why);
/* ioqos_kubelet_registered{resource="ioqos.io"} */
bool dradriver_kubelet_registered(struct dradriver *d);

#endif
