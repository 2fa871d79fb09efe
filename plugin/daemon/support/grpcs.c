// SPDX-License-Identifier: Apache-2.0
/* One file on purpose (over 600 lines): one state machine. A call's `pending` count is taken
 * where a batch starts (request, answer, stream send) and given back as its tag returns, and the
 * server's phase runs from grpcs_start through loop_main to grpcs_stop: any cut shares it all. */
#include "grpcs.h"

#include <errno.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/monoclock.h"

/* How long a farewell may wait for a stalled stream peer before the server is
 * shut down anyway. */
#define FAREWELL_MAX_S 2.0

enum tag_kind { TAG_NEW, TAG_DONE, TAG_SEND, TAG_CLOSE };

struct gcall;
struct tag {
  struct gcall *c;
  enum tag_kind kind;
};

/* One call, from "request a call" to the last completed operation. Freed
 * when `pending` (operations whose tag has not come back) reaches zero. */
struct gcall {
  struct grpcs *s;
  int method; /* index into cfg.methods; -1 = unregistered (UNIMPLEMENTED) */
  grpc_call *call;
  gpr_timespec deadline;
  grpc_metadata_array md;
  grpc_call_details details; /* unregistered calls only */
  grpc_byte_buffer *payload;
  struct tag t_new, t_done, t_send, t_close;
  int pending;
  double t_start;

  /* answer (unary) or status (stream) */
  grpc_byte_buffer *resp;
  grpc_slice status_details;
  bool has_status_details;
  grpc_status_code code;
  int cancelled;

  /* server stream */
  struct gcall *next_stream;
  bool md_sent, send_in_flight, closed, farewell_sent, status_sent;
  uint64_t sent_gen;

  struct gcall *next_orphan;
};

enum phase { PH_RUNNING, PH_FAREWELL, PH_SHUTDOWN, PH_DONE };

struct grpcs {
  struct grpcs_config cfg;
  char *name, *path;
  grpc_server *server;
  grpc_completion_queue *cq;
  void **registered; /* per method */
  pthread_t thread;
  atomic_int stop_req; /* 0 running, 1 stop, 2 stop with farewell */
  enum phase phase;
  double farewell_deadline;
  bool shutdown_tag_fired;
  struct tag t_shutdown;
  unsigned live;              /* gcall objects not yet freed (loop thread only) */
  struct gcall *streams;      /* loop thread only */
  atomic_uint open_streams;
  _Atomic double last_tick;
  pthread_mutex_t orphan_lock;
  struct gcall *orphans;      /* blocking answers that could not start a batch */
};

int grpcs_reply_pack(struct grpcs_reply *out, const ProtobufCMessage *msg) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    grpcs_reply_error(out, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory packing the response");
    return -1;
  }
  protobuf_c_message_pack(msg, buf);
  free(out->data);
  out->data = buf;
  out->len = n;
  return 0;
}

void grpcs_reply_error(struct grpcs_reply *out, grpc_status_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->msg, sizeof out->msg, fmt, ap);
  va_end(ap);
  out->code = code;
  free(out->data);
  out->data = NULL;
  out->len = 0;
}

static grpc_byte_buffer *bytes_to_bb(const uint8_t *data, size_t len) {
  grpc_slice sl = grpc_slice_from_copied_buffer((const char *)data, len);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
  grpc_slice_unref(sl);
  return bb;
}

static gpr_timespec after_ms(long ms) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* ---- call objects ---- */

static struct gcall *gcall_new(struct grpcs *s, int method) {
  struct gcall *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->s = s;
  c->method = method;
  c->t_new = (struct tag){c, TAG_NEW};
  c->t_done = (struct tag){c, TAG_DONE};
  c->t_send = (struct tag){c, TAG_SEND};
  c->t_close = (struct tag){c, TAG_CLOSE};
  grpc_metadata_array_init(&c->md);
  if (method < 0)
    grpc_call_details_init(&c->details);
  s->live++;
  return c;
}

static void stream_unlink(struct grpcs *s, struct gcall *c) {
  for (struct gcall **pp = &s->streams; *pp; pp = &(*pp)->next_stream)
    if (*pp == c) {
      *pp = c->next_stream;
      atomic_fetch_sub(&s->open_streams, 1);
      return;
    }
}

static void gcall_release(struct gcall *c) {
  if (--c->pending > 0)
    return;
  struct grpcs *s = c->s;
  stream_unlink(s, c);
  if (c->call)
    grpc_call_unref(c->call);
  grpc_metadata_array_destroy(&c->md);
  if (c->method < 0)
    grpc_call_details_destroy(&c->details);
  if (c->payload)
    grpc_byte_buffer_destroy(c->payload);
  if (c->resp)
    grpc_byte_buffer_destroy(c->resp);
  if (c->has_status_details)
    grpc_slice_unref(c->status_details);
  free(c);
  s->live--;
}

/* Asks gRPC for the next call of one method (or of any unregistered one). */
static void request_call(struct grpcs *s, int method) {
  struct gcall *c = gcall_new(s, method);
  if (!c) {
    ioq_error("grpc request_call failed server=%s reason=out-of-memory", s->name);
    return;
  }
  grpc_call_error rc;
  if (method >= 0)
    rc = grpc_server_request_registered_call(s->server, s->registered[method], &c->call,
                                             &c->deadline, &c->md, &c->payload, s->cq, s->cq,
                                             &c->t_new);
  else
    rc = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, s->cq, s->cq,
                                  &c->t_new);
  if (rc != GRPC_CALL_OK) {
    ioq_error("grpc request_call failed server=%s method=%s rc=%d", s->name,
              method >= 0 ? s->cfg.methods[method].path : "(any)", (int)rc);
    c->pending = 1;
    gcall_release(c);
    return;
  }
  c->pending = 1;
}

static const char *method_path(const struct gcall *c) {
  return c->method >= 0 ? c->s->cfg.methods[c->method].path : "(unregistered)";
}

static void observe(struct gcall *c, grpc_status_code code) {
  if (c->s->cfg.observe)
    c->s->cfg.observe(c->s->cfg.ud, method_path(c), code, ioq_mono_s() - c->t_start);
}

/* Starts the one batch that answers a unary call. Returns 0 or -1 if gRPC
 * refused the batch (the tag will then never come back). */
static int answer_unary(struct gcall *c, struct grpcs_reply *r) {
  grpc_op ops[4];
  memset(ops, 0, sizeof ops);
  size_t n = 0;
  ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  if (r->code == GRPC_STATUS_OK) {
    c->resp = bytes_to_bb(r->data ? r->data : (const uint8_t *)"", r->len);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = c->resp;
  }
  c->code = r->code;
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = r->code;
  if (r->code != GRPC_STATUS_OK) {
    c->status_details = grpc_slice_from_copied_string(r->msg);
    c->has_status_details = true;
    ops[n].data.send_status_from_server.status_details = &c->status_details;
  }
  n++;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
  observe(c, r->code);
  free(r->data);
  r->data = NULL;
  grpc_call_error rc = grpc_call_start_batch(c->call, ops, n, &c->t_done, NULL);
  if (rc != GRPC_CALL_OK) {
    ioq_error("grpc answer failed server=%s method=%s rc=%d", c->s->name, method_path(c), (int)rc);
    return -1;
  }
  return 0;
}

/* Unpacks the request and runs the handler into r. */
static void run_unary(struct gcall *c, struct grpcs_reply *r) {
  const struct grpcs_method *m = &c->s->cfg.methods[c->method];
  memset(r, 0, sizeof *r);
  if (!c->payload) {
    grpcs_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: request carries no message", m->path);
    return;
  }
  grpc_byte_buffer_reader rd;
  if (!grpc_byte_buffer_reader_init(&rd, c->payload)) {
    grpcs_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, "%s: unreadable request payload", m->path);
    return;
  }
  grpc_slice sl = grpc_byte_buffer_reader_readall(&rd);
  grpc_byte_buffer_reader_destroy(&rd);
  ProtobufCMessage *req = protobuf_c_message_unpack(m->request, NULL, GRPC_SLICE_LENGTH(sl),
                                                    GRPC_SLICE_START_PTR(sl));
  size_t len = GRPC_SLICE_LENGTH(sl);
  grpc_slice_unref(sl);
  if (!req) {
    grpcs_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT,
                      "%s: request is not a valid %s message (%zu bytes)", m->path,
                      m->request->name, len);
    return;
  }
  m->unary(c->s->cfg.ud, req, r);
  protobuf_c_message_free_unpacked(req, NULL);
}

static void orphan(struct gcall *c) {
  pthread_mutex_lock(&c->s->orphan_lock);
  c->next_orphan = c->s->orphans;
  c->s->orphans = c;
  pthread_mutex_unlock(&c->s->orphan_lock);
}

static void *blocking_worker(void *arg) {
  struct gcall *c = arg;
  struct grpcs_reply r;
  run_unary(c, &r);
  if (answer_unary(c, &r) < 0)
    orphan(c); /* the loop thread drops our reference */
  return NULL;
}

/* ---- server stream ---- */

/* Sends one stream message. A reply that carries an error status is not a
 * message (an empty one would read as "no devices"): nothing is sent and
 * the next tick tries again. */
static void stream_send(struct gcall *c, struct grpcs_reply *r) {
  if (r->code != GRPC_STATUS_OK) {
    free(r->data);
    r->data = NULL;
    return;
  }
  grpc_op ops[2];
  memset(ops, 0, sizeof ops);
  size_t n = 0;
  if (!c->md_sent)
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  if (c->resp)
    grpc_byte_buffer_destroy(c->resp);
  c->resp = bytes_to_bb(r->data ? r->data : (const uint8_t *)"", r->len);
  free(r->data);
  r->data = NULL;
  ops[n].op = GRPC_OP_SEND_MESSAGE;
  ops[n++].data.send_message.send_message = c->resp;
  if (grpc_call_start_batch(c->call, ops, n, &c->t_send, NULL) != GRPC_CALL_OK) {
    ioq_error("grpc stream send refused server=%s", c->s->name);
    c->closed = true;
    return;
  }
  c->pending++;
  c->send_in_flight = true;
  c->md_sent = true;
}

static void stream_status(struct gcall *c, grpc_status_code code, const char *msg) {
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  op.data.send_status_from_server.status = code;
  c->status_details = grpc_slice_from_copied_string(msg);
  c->has_status_details = true;
  op.data.send_status_from_server.status_details = &c->status_details;
  c->status_sent = true;
  if (grpc_call_start_batch(c->call, &op, 1, &c->t_done, NULL) != GRPC_CALL_OK) {
    ioq_error("grpc stream status refused server=%s", c->s->name);
    return;
  }
  c->pending++;
  c->send_in_flight = true;
}

static void stream_open(struct gcall *c) {
  struct grpcs *s = c->s;
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  op.data.recv_close_on_server.cancelled = &c->cancelled;
  if (grpc_call_start_batch(c->call, &op, 1, &c->t_close, NULL) != GRPC_CALL_OK) {
    ioq_error("grpc stream open failed server=%s", s->name);
    return;
  }
  c->pending++;
  c->next_stream = s->streams;
  s->streams = c;
  atomic_fetch_add(&s->open_streams, 1);
  struct grpcs_reply r = {0};
  s->cfg.stream->build(s->cfg.ud, &r, &c->sent_gen);
  observe(c, GRPC_STATUS_OK);
  ioq_info("stream opened server=%s method=%s generation=%llu", s->name, method_path(c),
           (unsigned long long)c->sent_gen);
  stream_send(c, &r);
}

static void streams_tick(struct grpcs *s) {
  if (!s->streams)
    return;
  uint64_t gen = s->cfg.stream->generation(s->cfg.ud);
  for (struct gcall *c = s->streams; c; c = c->next_stream) {
    if (c->closed || c->send_in_flight || c->sent_gen == gen)
      continue;
    struct grpcs_reply r = {0};
    s->cfg.stream->build(s->cfg.ud, &r, &c->sent_gen);
    ioq_debug("stream update server=%s generation=%llu bytes=%zu", s->name,
              (unsigned long long)c->sent_gen, r.len);
    stream_send(c, &r);
  }
}

/* Farewell: final message, then UNAVAILABLE. Returns true when every stream
 * is done (closed, or its status was sent and completed). */
static bool streams_farewell(struct grpcs *s) {
  bool done = true;
  for (struct gcall *c = s->streams; c; c = c->next_stream) {
    if (c->closed)
      continue;
    if (c->send_in_flight) {
      done = false;
      continue;
    }
    if (!c->farewell_sent) {
      struct grpcs_reply r = {0};
      s->cfg.stream->build_final(s->cfg.ud, &r);
      c->farewell_sent = true;
      stream_send(c, &r);
      done = false;
    } else if (!c->status_sent) {
      stream_status(c, GRPC_STATUS_UNAVAILABLE, "ioqos-plugin is shutting down");
      done = false;
    }
  }
  return done;
}

/* ---- event loop ---- */

static void on_new_call(struct grpcs *s, struct gcall *c, bool ok) {
  if (!ok) { /* server shutting down: the request is returned unused */
    gcall_release(c);
    return;
  }
  c->t_start = ioq_mono_s();
  if (s->phase == PH_RUNNING)
    request_call(s, c->method); /* re-arm first, so the next call never waits on us */
  if (c->method < 0) {
    struct grpcs_reply r = {0};
    char *m = grpc_slice_to_c_string(c->details.method);
    grpcs_reply_error(&r, GRPC_STATUS_UNIMPLEMENTED, "unknown method %s", m);
    ioq_warn("rpc unknown method server=%s method=%s", s->name, m);
    gpr_free(m);
    c->pending++;
    if (answer_unary(c, &r) < 0)
      c->pending--;
    gcall_release(c);
    return;
  }
  const struct grpcs_method *m = &s->cfg.methods[c->method];
  if (m->kind == GRPCS_SERVER_STREAM) {
    if (s->phase != PH_RUNNING) {
      struct grpcs_reply r = {0};
      grpcs_reply_error(&r, GRPC_STATUS_UNAVAILABLE, "ioqos-plugin is shutting down");
      c->pending++;
      if (answer_unary(c, &r) < 0)
        c->pending--;
    } else {
      stream_open(c);
    }
    gcall_release(c);
    return;
  }
  c->pending++; /* held by the answer batch */
  if (m->kind == GRPCS_UNARY_BLOCKING) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, blocking_worker, c);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
      gcall_release(c); /* drops TAG_NEW's reference; the worker holds the other */
      return;
    }
    ioq_warn("rpc worker thread failed, answering inline server=%s error=%s", s->name,
             strerror(rc));
  }
  struct grpcs_reply r;
  run_unary(c, &r);
  if (answer_unary(c, &r) < 0)
    c->pending--;
  gcall_release(c);
}

static void on_event(struct grpcs *s, grpc_event ev) {
  struct tag *t = ev.tag;
  if (t == &s->t_shutdown) {
    s->shutdown_tag_fired = true;
    return;
  }
  struct gcall *c = t->c;
  switch (t->kind) {
  case TAG_NEW:
    on_new_call(s, c, ev.success);
    return;
  case TAG_DONE: /* unary answer or stream status completed */
    c->send_in_flight = false;
    if (c->method >= 0 && s->cfg.methods[c->method].kind == GRPCS_SERVER_STREAM) {
      c->closed = true;
      ioq_info("stream ended server=%s status=%d", s->name, (int)GRPC_STATUS_UNAVAILABLE);
    }
    gcall_release(c);
    return;
  case TAG_SEND:
    c->send_in_flight = false;
    if (!ev.success) {
      c->closed = true;
    }
    if (c->resp) {
      grpc_byte_buffer_destroy(c->resp);
      c->resp = NULL;
    }
    gcall_release(c);
    return;
  case TAG_CLOSE: /* the peer went away or the call ended */
    if (!c->closed && !c->status_sent)
      ioq_info("stream closed by peer server=%s cancelled=%d", s->name, c->cancelled);
    c->closed = true;
    gcall_release(c);
    return;
  }
}

static void drain_orphans(struct grpcs *s) {
  pthread_mutex_lock(&s->orphan_lock);
  struct gcall *o = s->orphans;
  s->orphans = NULL;
  pthread_mutex_unlock(&s->orphan_lock);
  while (o) {
    struct gcall *next = o->next_orphan;
    gcall_release(o);
    o = next;
  }
}

static void begin_shutdown(struct grpcs *s) {
  s->phase = PH_SHUTDOWN;
  grpc_server_shutdown_and_notify(s->server, s->cq, &s->t_shutdown);
  grpc_server_cancel_all_calls(s->server);
}

static void *loop_main(void *arg) {
  struct grpcs *s = arg;
  long tick = s->cfg.tick_ms ? (long)s->cfg.tick_ms : 100;
  while (s->phase != PH_DONE) {
    grpc_event ev = grpc_completion_queue_next(s->cq, after_ms(tick), NULL);
    if (ev.type == GRPC_OP_COMPLETE)
      on_event(s, ev);
    drain_orphans(s);
    s->last_tick = ioq_mono_s();

    int stop = atomic_load(&s->stop_req);
    switch (s->phase) {
    case PH_RUNNING:
      if (stop == 2) {
        s->phase = PH_FAREWELL;
        s->farewell_deadline = ioq_mono_s() + FAREWELL_MAX_S;
      } else if (stop == 1) {
        begin_shutdown(s);
      } else {
        streams_tick(s);
      }
      break;
    case PH_FAREWELL:
      if (streams_farewell(s) || ioq_mono_s() > s->farewell_deadline)
        begin_shutdown(s);
      break;
    case PH_SHUTDOWN:
      if (s->shutdown_tag_fired && s->live == 0)
        s->phase = PH_DONE;
      break;
    case PH_DONE:
      break;
    }
  }
  return NULL;
}

struct grpcs *grpcs_start(const struct grpcs_config *cfg, ioq_err *e) {
  struct grpcs *s = calloc(1, sizeof *s);
  if (!s)
    return ioq_fail(e, ENOMEM, "grpc server: out of memory allocating the server"), NULL;
  s->cfg = *cfg;
  s->name = strdup(cfg->name);
  s->path = strdup(cfg->socket_path);
  s->registered = calloc(cfg->n_methods ? cfg->n_methods : 1, sizeof *s->registered);
  pthread_mutex_init(&s->orphan_lock, NULL);
  s->t_shutdown = (struct tag){NULL, TAG_DONE};
  s->last_tick = ioq_mono_s();
  if (!s->name || !s->path || !s->registered) {
    ioq_fail(e, ENOMEM, "grpc server: out of memory copying its name, path and methods");
    goto fail;
  }
  s->cq = grpc_completion_queue_create_for_next(NULL);
  s->server = grpc_server_create(NULL, NULL);
  grpc_server_register_completion_queue(s->server, s->cq, NULL);
  for (size_t i = 0; i < cfg->n_methods; i++) {
    s->registered[i] = grpc_server_register_method(
        s->server, cfg->methods[i].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    if (!s->registered[i]) {
      ioq_fail(e, IOQ_EINVAL_INPUT, "grpc: cannot register method %s", cfg->methods[i].path);
      goto fail;
    }
  }
  char target[4200];
  snprintf(target, sizeof target, "unix:%s", cfg->socket_path);
  grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
  int port = grpc_server_add_http2_port(s->server, target, creds);
  grpc_server_credentials_release(creds);
  if (port == 0) {
    ioq_fail(e, EADDRNOTAVAIL, "grpc: cannot listen on %s (directory missing or not writable?)",
             cfg->socket_path);
    goto fail;
  }
  grpc_server_start(s->server);
  for (size_t i = 0; i < cfg->n_methods; i++)
    request_call(s, (int)i);
  request_call(s, -1);
  int rc = pthread_create(&s->thread, NULL, loop_main, s);
  if (rc != 0) {
    errno = rc;
    ioq_fail_errno(e, "grpc: start event loop for %s", cfg->socket_path);
    atomic_store(&s->stop_req, 1);
    loop_main(s); /* drains what was requested */
    grpc_server_destroy(s->server);
    s->server = NULL;
    goto fail;
  }
  ioq_info("grpc server listening server=%s socket=%s", s->name, s->path);
  return s;
fail:
  if (s->server) /* never started: nothing to shut down */
    grpc_server_destroy(s->server);
  if (s->cq) {
    grpc_completion_queue_shutdown(s->cq);
    while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
      ;
    grpc_completion_queue_destroy(s->cq);
  }
  pthread_mutex_destroy(&s->orphan_lock);
  free(s->registered);
  free(s->name);
  free(s->path);
  free(s);
  return NULL;
}

void grpcs_stop(struct grpcs *s, bool farewell) {
  if (!s)
    return;
  atomic_store(&s->stop_req, farewell ? 2 : 1);
  pthread_join(s->thread, NULL);
  grpc_completion_queue_shutdown(s->cq);
  while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
         GRPC_QUEUE_SHUTDOWN)
    ;
  grpc_server_destroy(s->server);
  grpc_completion_queue_destroy(s->cq);
  ioq_info("grpc server stopped server=%s socket=%s farewell=%s", s->name, s->path,
           farewell ? "yes" : "no");
  pthread_mutex_destroy(&s->orphan_lock);
  free(s->registered);
  free(s->name);
  free(s->path);
  free(s);
}

unsigned grpcs_open_streams(struct grpcs *s) { return s ? atomic_load(&s->open_streams) : 0; }

double grpcs_last_tick(struct grpcs *s) { return s ? s->last_tick : 0; }
