// SPDX-License-Identifier: Apache-2.0
/* A small gRPC server on gRPC C core: one unix socket, one completion queue,
 * one event-loop thread. Knows nothing about device plugins: it is given a
 * table of methods (unary, unary-but-blocking, server-stream) and calls back.
 *
 * - Unary handlers run on the loop thread and must be quick; BLOCKING ones
 *   (they wait on other services) run on their own thread and answer from it.
 * - The one server-stream method sends the source's current message whenever
 *   its generation changes (polled on a short tick: C core has no public way
 *   to wake a completion queue from another thread). At most one send is in
 *   flight per stream and only the latest state is sent, so bursts coalesce.
 * - Unknown methods get UNIMPLEMENTED; a payload that does not unpack gets
 *   INVALID_ARGUMENT.
 */
#ifndef IOQOS_PLUGIN_GRPCS_H
#define IOQOS_PLUGIN_GRPCS_H

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

struct grpcs_reply {
  grpc_status_code code; /* GRPC_STATUS_OK or the error */
  char msg[1024];        /* status details on error */
  uint8_t *data;         /* packed response (malloc'd), taken by the server */
  size_t len;
};

/* Packs msg into out->data (code stays OK). Returns -1 on OOM (and sets
 * out->code = RESOURCE_EXHAUSTED). */
int grpcs_reply_pack(struct grpcs_reply *out, const ProtobufCMessage *msg);
/* Sets an error status with a formatted message. */
void grpcs_reply_error(struct grpcs_reply *out, grpc_status_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

enum grpcs_kind { GRPCS_UNARY, GRPCS_UNARY_BLOCKING, GRPCS_SERVER_STREAM };

struct grpcs_method {
  const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
  const ProtobufCMessageDescriptor *request;
  enum grpcs_kind kind;
  /* unary kinds: req is the unpacked request */
  void (*unary)(void *ud, const ProtobufCMessage *req, struct grpcs_reply *out);
};

/* Content of the server stream. */
struct grpcs_stream_source {
  /* changes whenever the content changes (cheap, called every tick) */
  uint64_t (*generation)(void *ud);
  /* builds the current message; *gen = the generation it reflects. An error
   * code in out means "nothing to send now" (retried on the next tick). */
  void (*build)(void *ud, struct grpcs_reply *out, uint64_t *gen);
  /* the last message before the stream ends on shutdown (e.g. empty list) */
  void (*build_final)(void *ud, struct grpcs_reply *out);
};

struct grpcs_config {
  const char *name;        /* for logs, e.g. "ioqos/bandwidth" */
  const char *socket_path; /* bound as unix:PATH */
  const struct grpcs_method *methods;
  size_t n_methods;
  const struct grpcs_stream_source *stream; /* needed if a method is a stream */
  void *ud;
  /* optional: called once per finished RPC (loop or worker thread) */
  void (*observe)(void *ud, const char *path, grpc_status_code code, double seconds);
  unsigned tick_ms; /* stream poll interval; 0 = 100 */
};

struct grpcs;

/* Binds and starts serving. The path must not be served by anyone else (the
 * caller checks; binding replaces a socket file silently). */
struct grpcs *grpcs_start(const struct grpcs_config *cfg, ioq_err *e);

/* Stops and frees. With farewell, every open stream first gets the final
 * message and then status UNAVAILABLE (bounded wait if a peer stalls);
 * otherwise streams are cancelled. Waits for blocking handlers to answer.
 * The socket file is removed. */
void grpcs_stop(struct grpcs *s, bool farewell);

/* Open server streams right now (for metrics and readiness). */
unsigned grpcs_open_streams(struct grpcs *s);

/* Wall time of the last loop iteration (CLOCK_MONOTONIC seconds), to tell a
 * live loop from a stuck one in /healthz. */
double grpcs_last_tick(struct grpcs *s);

#endif
