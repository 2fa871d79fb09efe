// SPDX-License-Identifier: Apache-2.0
/* Blocking unary gRPC client over a unix socket (Register with kubelet, pod
 * resources List). A fresh channel per call: after a kubelet restart the next
 * call connects at once instead of waiting out a cached channel's reconnect
 * backoff, and a missing socket fails fast with UNAVAILABLE. */
#ifndef IOQOS_PLUGIN_RPC_CLIENT_H
#define IOQOS_PLUGIN_RPC_CLIENT_H

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include "base/error.h"

/* Calls `method` ("/v1beta1.Registration/Register") with `req`; on status OK
 * unpacks the reply into *resp (free with protobuf_c_message_free_unpacked)
 * and returns 0. Otherwise returns -1; *code (may be NULL) gets the gRPC
 * status (GRPC_STATUS_UNKNOWN for local failures) and e the details. */
int rpc_call_unary(const char *socket_path, const char *method, const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                   long timeout_ms, grpc_status_code *code, ioq_err *e);

/* Name of a gRPC status code ("UNAVAILABLE"). */
const char *rpc_status_name(grpc_status_code c);

#endif
