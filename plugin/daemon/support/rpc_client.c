// SPDX-License-Identifier: Apache-2.0
#include "rpc_client.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rpc_status_name(grpc_status_code c) {
  static const char *const names[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
      "UNAUTHENTICATED"};
  return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "?";
}

int rpc_call_unary(const char *socket_path, const char *method, const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                   long timeout_ms, grpc_status_code *code, ioq_err *e) {
  *resp = NULL;
  if (code)
    *code = GRPC_STATUS_UNKNOWN;
  char target[4200];
  if (snprintf(target, sizeof target, "unix:%s", socket_path) >= (int)sizeof target)
    return ioq_fail(e, ENAMETOOLONG, "%s: socket path too long", socket_path);

  grpc_channel_credentials *creds = grpc_insecure_credentials_create();
  grpc_channel *ch = grpc_channel_create(target, creds, NULL);
  grpc_channel_credentials_release(creds);
  grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
  gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                       gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
  grpc_slice msl = grpc_slice_from_static_string(method);
  grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, msl, NULL,
                                             deadline, NULL);

  size_t n = protobuf_c_message_get_packed_size(req);
  grpc_slice reqsl = grpc_slice_malloc(n);
  protobuf_c_message_pack(req, GRPC_SLICE_START_PTR(reqsl));
  grpc_byte_buffer *send_bb = grpc_raw_byte_buffer_create(&reqsl, 1);
  grpc_slice_unref(reqsl);

  grpc_metadata_array md_init, md_trail;
  grpc_metadata_array_init(&md_init);
  grpc_metadata_array_init(&md_trail);
  grpc_byte_buffer *recv_bb = NULL;
  grpc_status_code status = GRPC_STATUS_UNKNOWN;
  grpc_slice details = grpc_empty_slice();
  const char *error_string = NULL;

  grpc_op ops[6];
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[1].op = GRPC_OP_SEND_MESSAGE;
  ops[1].data.send_message.send_message = send_bb;
  ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_init;
  ops[4].op = GRPC_OP_RECV_MESSAGE;
  ops[4].data.recv_message.recv_message = &recv_bb;
  ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  ops[5].data.recv_status_on_client.trailing_metadata = &md_trail;
  ops[5].data.recv_status_on_client.status = &status;
  ops[5].data.recv_status_on_client.status_details = &details;
  ops[5].data.recv_status_on_client.error_string = &error_string;

  int rc = -1;
  grpc_call_error ce = grpc_call_start_batch(call, ops, 6, (void *)1, NULL);
  if (ce != GRPC_CALL_OK) {
    ioq_fail(e, EIO, "%s on %s: gRPC refused the call (error %d)", method, socket_path, (int)ce);
  } else {
    grpc_event ev = grpc_completion_queue_pluck(cq, (void *)1, gpr_inf_future(GPR_CLOCK_REALTIME),
                                                NULL);
    if (ev.type != GRPC_OP_COMPLETE) {
      ioq_fail(e, EIO, "%s on %s: call did not complete", method, socket_path);
    } else if (status != GRPC_STATUS_OK) {
      char *d = grpc_slice_to_c_string(details);
      if (code)
        *code = status;
      ioq_fail(e, status == GRPC_STATUS_UNAVAILABLE ? ECONNREFUSED : EIO, "%s on %s: %s: %s",
               method, socket_path, rpc_status_name(status), *d ? d : "(no details)");
      gpr_free(d);
    } else if (!recv_bb) {
      ioq_fail(e, EIO, "%s on %s: OK status without a reply message", method, socket_path);
    } else {
      grpc_byte_buffer_reader rd;
      grpc_byte_buffer_reader_init(&rd, recv_bb);
      grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
      grpc_byte_buffer_reader_destroy(&rd);
      *resp = protobuf_c_message_unpack(resp_desc, NULL, GRPC_SLICE_LENGTH(all),
                                        GRPC_SLICE_START_PTR(all));
      if (!*resp) {
        ioq_fail(e, EIO, "%s on %s: reply is not a valid %s (%zu bytes)", method, socket_path,
                 resp_desc->name, GRPC_SLICE_LENGTH(all));
      } else {
        if (code)
          *code = GRPC_STATUS_OK;
        rc = 0;
      }
      grpc_slice_unref(all);
    }
  }
  if (error_string)
    gpr_free((void *)error_string);
  grpc_slice_unref(details);
  if (recv_bb)
    grpc_byte_buffer_destroy(recv_bb);
  grpc_byte_buffer_destroy(send_bb);
  grpc_metadata_array_destroy(&md_init);
  grpc_metadata_array_destroy(&md_trail);
  grpc_call_unref(call);
  grpc_completion_queue_shutdown(cq);
  while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
         GRPC_QUEUE_SHUTDOWN)
    ;
  grpc_completion_queue_destroy(cq);
  grpc_channel_destroy(ch);
  return rc;
}
