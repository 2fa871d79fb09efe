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

#include "base/error.h"
#include "units/units.h"

struct plugin;
struct grpcs;
struct grpcs_config;

/* A gRPC server on a socket file and that file's identity: kubelet deletes
 * sockets (device plugins at its start; a DRA registration socket removed
 * is a deregistration), so the socket is ours only while its path is still
 * the file we bound. Guarded by its owner's lock. */
struct served_socket {
  struct grpcs *srv;
  dev_t dev;
  ino_t ino;
};

/* One DevicePlugin endpoint: a socket serving one resource. */
struct endpoint {
  struct plugin *p;
  enum ioq_resource res;
  char sock_name[64]; /* bare file name, the Register endpoint */
  char sock_path[PATH_MAX];
  pthread_mutex_t lock; /* guards sock */
  struct served_socket sock;
  /* registration (registrar thread only, except the atomics) */
  atomic_bool registered;
  unsigned long kubelet_gen; /* the kubelet (registrar's count) of the last Register; 0 = none */
  double next_attempt, backoff;
};

/* Socket ownership, shared with the DRA driver's registration socket. */
/* 1 when a process accepts connections on the unix socket path, 0 when
 * nobody does (ECONNREFUSED: a file its server left behind, or no file), -1
 * on any other failure. */
int endpoint_probe(const char *path, ioq_err *e);
/* Fails if another live process serves the socket (refuses to take it over). */
int endpoint_check_free(const char *sock_path, ioq_err *e);
/* Serves cfg on its socket once endpoint_check_free allows it, into *ss
 * (under lock). */
int endpoint_serve(const struct grpcs_config *cfg, pthread_mutex_t *lock, struct served_socket *ss,
                   ioq_err *e);
/* Stops *ss's server (see grpcs_stop) after taking it out under lock. */
void endpoint_unserve(pthread_mutex_t *lock, struct served_socket *ss, bool farewell);
/* true while *ss serves and path is still the socket file it bound */
bool endpoint_serving(pthread_mutex_t *lock, const struct served_socket *ss, const char *path);
int endpoint_start(struct endpoint *ep, ioq_err *e);
/* Stops serving; farewell = empty list + UNAVAILABLE to ListAndWatch streams. */
void endpoint_stop(struct endpoint *ep, bool farewell);
/* true if our socket file is still the one we bound */
bool endpoint_socket_intact(struct endpoint *ep);
unsigned endpoint_streams(struct endpoint *ep);
double endpoint_last_tick(struct endpoint *ep);

#endif
