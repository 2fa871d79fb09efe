// SPDX-License-Identifier: Apache-2.0
/* core/v1 Events: how ioqos tells users on the object itself what happened. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/k8sname.h"
#include "kube/kube.h"

static void add_str(json_object *o, const char *k, const char *v) {
  if (v)
    json_object_object_add(o, k, json_object_new_string(v));
}

int ioq_kube_post_event(struct ioq_kube *k, const struct ioq_kube_event *ev, ioq_err *e) {
  if (!ev->ns || !ev->kind || !ev->name || !ev->reason || !ev->message)
    return ioq_fail(e, IOQ_EINVAL_INPUT, "event: namespace, kind, name, reason and message are required");
  /* the namespace becomes the URL path: "..", '/' or '%' would post elsewhere */
  if (!ioq_k8s_label_valid(ev->ns))
    return ioq_fail(e, IOQ_EINVAL_INPUT, "event on %s %.80s: namespace '%.80s' is not a DNS-1123 label",
                    ev->kind, ev->name, ev->ns);
  char now[32];
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);

  /* a unique name per event: object name + time + random suffix, like
   * client-go's recorder (name.<hex>) */
  char name[320];
  snprintf(name, sizeof name, "%.200s.%lx%04x", ev->name, (unsigned long)t,
           (unsigned)(rand() ^ getpid()) & 0xffff);

  json_object *o = json_object_new_object();
  add_str(o, "apiVersion", "v1");
  add_str(o, "kind", "Event");
  json_object *meta = json_object_new_object();
  add_str(meta, "name", name);
  add_str(meta, "namespace", ev->ns);
  json_object_object_add(o, "metadata", meta);
  json_object *inv = json_object_new_object();
  add_str(inv, "apiVersion", "v1");
  add_str(inv, "kind", ev->kind);
  add_str(inv, "name", ev->name);
  if (strcmp(ev->kind, "Node") != 0)
    add_str(inv, "namespace", ev->ns);
  add_str(inv, "uid", ev->uid);
  json_object_object_add(o, "involvedObject", inv);
  add_str(o, "reason", ev->reason);
  add_str(o, "message", ev->message);
  add_str(o, "type", ev->type ? ev->type : "Normal");
  add_str(o, "firstTimestamp", now);
  add_str(o, "lastTimestamp", now);
  json_object_object_add(o, "count", json_object_new_int(1));
  json_object *src = json_object_new_object();
  add_str(src, "component", ev->component ? ev->component : "ioqos");
  add_str(src, "host", ev->host);
  json_object_object_add(o, "source", src);

  char path[512];
  snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", ev->ns);
  int rc = ioq_kube_send_json(k, "POST", path, NULL, o, NULL, NULL, e);
  json_object_put(o);
  if (rc < 0)
    ioq_err_prefix(e, "post event %s on %s %s/%s", ev->reason, ev->kind, ev->ns, ev->name);
  return rc;
}
