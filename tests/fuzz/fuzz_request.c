// SPDX-License-Identifier: Apache-2.0
/* Fuzzes what an extender request body goes through: chunked incremental
 * JSON reading, ExtenderArgs/ExtenderBindingArgs parsing, and the filter,
 * prioritize and bind handlers in both node modes. Every reply must be
 * valid JSON with a sensible status. Input: byte 0 picks the verb, byte 1
 * the chunk size and policy, the rest is the body. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "body.h"
#include "extender.h"
#include "base/log.h"

static struct extender g_x;
static struct ext_budget g_budget = {.max = 4u << 20};

#define ANNO                                                                                       \
  "{\"version\":1,\"node\":\"n1\",\"devices\":[{\"name\":\"nvme0n1\",\"class\":\"default\","       \
  "\"healthy\":true,\"capacity\":{\"ioqos/bandwidth\":1000,\"ioqos/iops\":50},\"allocated\":{"     \
  "\"ioqos/bandwidth\":100}},{\"name\":\"sdb\",\"class\":\"fast\",\"healthy\":true,\"capacity\":{" \
  "\"ioqos/bandwidth\":500}}],\"pods\":[\"u-1\"]}"

static json_object *node(const char *name, const char *anno) {
  char buf[1024];
  json_object *a = json_object_new_string(anno);
  snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\",\"annotations\":{\"ioqos.io/devices\":%s}}}",
           name, json_object_to_json_string(a));
  json_object_put(a);
  return json_tokener_parse(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  ioq_log_set_level(IOQ_LOG_ERROR);
  g_x.metrics = ext_metrics_new();
  g_x.assumed = ext_assumed_new(3600 * 1000);
  g_x.cache = ext_nodecache_new(g_x.assumed);
  json_object *items = json_object_new_array();
  json_object_array_add(items, node("n1", ANNO));
  json_object_array_add(items, node("n2", "{\"version\":1,\"devices\":[]}"));
  json_object_array_add(items, node("n3", "garbage"));
  ext_nodecache_on_list(g_x.cache, items);
  json_object_put(items);
  ioq_err e = {0};
  struct ext_node_lock *l = ext_assumed_lock_node(g_x.assumed, "n1", &e);
  uint64_t u[IOQ_RES_COUNT] = {300, 1};
  ext_assumed_add(g_x.assumed, "n1", "u-2", "ns/p", "nvme0n1", u, &e);
  ext_assumed_unlock_node(l);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  unsigned verb = data[0] % 3;
  bool announce = (data[0] / 3) % 2; /* Content-Length, or chunked */
  size_t chunk = (size_t)(data[1] % 61) + 1;
  g_x.policy = (enum ioq_policy)(data[1] % 3);
  data += 2;
  size -= 2;

  struct ext_body b;
  if (ext_body_init(&b, 1u << 20, announce ? size : EXT_BODY_LENGTH_UNKNOWN, &g_budget) < 0)
    return 0;
  for (size_t off = 0; off < size; off += chunk)
    ext_body_feed(&b, (const char *)data + off, size - off < chunk ? size - off : chunk);
  ext_body_finish(&b);
  if (b.err_status) {
    if (b.err_status != 400 && b.err_status != 413)
      abort(); /* 503 needs other requests holding memory: there are none */
    ext_body_free(&b);
    if (g_budget.used != 0)
      abort(); /* every reservation is returned */
    return 0;
  }
  json_object *v = ext_body_take(&b);

  struct ext_reply r = {0};
  if (verb == 0)
    ext_filter(&g_x, v, &r);
  else if (verb == 1)
    ext_prioritize(&g_x, v, &r);
  else
    ext_bind(&g_x, v, &r);
  json_object_put(v);
  ext_body_free(&b);
  if (g_budget.used != 0)
    abort();

  /* the reply is always JSON kube-scheduler (or a person) can read */
  if (!r.body || (r.status != 200 && r.status != 400 && r.status != 503))
    abort();
  json_object *out = json_tokener_parse(r.body);
  if (!out)
    abort();
  json_object_put(out);
  ext_reply_free(&r);
  return 0;
}
