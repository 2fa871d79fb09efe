// SPDX-License-Identifier: Apache-2.0
/* endpoint.c: the DevicePlugin service on one socket (one resource):
 * Options, ListAndWatch, GetPreferredAllocation, Allocate,
 * PreStartContainer; its socket and whether kubelet registered it. */
#ifndef IOQOS_PLUGIN_ENDPOINT_H
#define IOQOS_PLUGIN_ENDPOINT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "ioqos/error.h"
#include "ioqos/units.h"

struct plugin;
struct grpcs;

/* One DevicePlugin endpoint: a socket serving one resource. */
struct endpoint {
  struct plugin *p;
  enum ioq_resource res;
  char sock_name[64]; /* bare file name, the Register endpoint */
  char sock_path[PATH_MAX];
  pthread_mutex_t lock; /* guards srv and the socket identity */
  struct grpcs *srv;
  dev_t sock_dev; /* identity of the socket file we bound */
  ino_t sock_ino;
  /* registration (registrar thread only, except the atomics) */
  atomic_bool registered;
  dev_t kubelet_dev; /* kubelet.sock identity at the last Register */
  ino_t kubelet_ino;
  double next_attempt, backoff;
};

/* Fails if another live process serves the socket (refuses to take it over). */
int endpoint_check_free(const char *sock_path, ioq_err *e);
int endpoint_start(struct endpoint *ep, ioq_err *e);
/* Stops serving; farewell = empty list + UNAVAILABLE to ListAndWatch streams. */
void endpoint_stop(struct endpoint *ep, bool farewell);
/* true if our socket file is still the one we bound */
bool endpoint_socket_intact(struct endpoint *ep);
unsigned endpoint_streams(struct endpoint *ep);
double endpoint_last_tick(struct endpoint *ep);

#endif
