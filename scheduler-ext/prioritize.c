// SPDX-License-Identifier: Apache-2.0
/* POST /prioritize: a 0..10 score per node from the shared placement
 * function (the best disk's score); 0 where the pod does not fit. */
#include <json-c/printbuf.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "decide.h"
#include "extender.h"
#include "base/log.h"

/* The HostPriorityList is written straight into a print buffer: thousands
 * of {"Host","Score"} json-c objects (each with its own hash table) cost
 * more than the decisions themselves. */
struct hostlist {
  struct printbuf *pb;
  size_t n;
  bool oom;
};

static void hl_append(struct hostlist *h, const char *s, size_t len) {
  if (!h->oom && printbuf_memappend(h->pb, s, (int)len) < 0)
    h->oom = true;
}

/* Node names are DNS subdomains and go out verbatim between quotes; any
 * name with a byte JSON must escape is escaped by json-c instead. */
static bool needs_escape(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\')
      return true;
  return false;
}

static void hl_add(struct hostlist *h, const char *host, int score) {
  if (h->oom)
    return;
  if (!host)
    host = "";
  hl_append(h, h->n ? ",{\"Host\":" : "{\"Host\":", h->n ? 9 : 8);
  if (needs_escape(host)) {
    json_object *tmp = json_object_new_string(host);
    size_t qlen = 0;
    const char *quoted = tmp ? json_object_to_json_string_length(
                                   tmp, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &qlen)
                             : NULL;
    if (quoted)
      hl_append(h, quoted, qlen);
    else
      h->oom = true;
    json_object_put(tmp);
  } else {
    hl_append(h, "\"", 1);
    hl_append(h, host, strlen(host));
    hl_append(h, "\"", 1);
  }
  static const char *const tail[11] = {
      ",\"Score\":0}", ",\"Score\":1}", ",\"Score\":2}", ",\"Score\":3}",
      ",\"Score\":4}", ",\"Score\":5}", ",\"Score\":6}", ",\"Score\":7}",
      ",\"Score\":8}", ",\"Score\":9}", ",\"Score\":10}"};
  const char *t = tail[score < 0 ? 0 : score > 10 ? 10 : score]; /* 0..10 by contract */
  hl_append(h, t, strlen(t));
  h->n++;
}

/* Hands the text to the reply. */
static void hl_finish(struct hostlist *h, struct ext_reply *r) {
  hl_append(h, "]", 1);
  if (h->oom) {
    printbuf_free(h->pb);
    ext_reply_error(r, 500, "ioqos extender out of memory building the scores");
    return;
  }
  char *body = h->pb->buf;
  h->pb->buf = NULL; /* printbuf_free now frees only the struct */
  printbuf_free(h->pb);
  ext_reply_text(r, 200, "application/json", body);
}

void ext_prioritize(struct extender *x, json_object *body, struct ext_reply *r) {
  struct ext_args a;
  ioq_err e = {0};
  if (ext_args_parse(body, &a, &e) < 0) {
    ext_metrics_reject(x->metrics, EXT_REJECT_BAD_REQUEST);
    ext_metrics_pod(x->metrics, EXT_VERB_PRIORITIZE, EXT_POD_INVALID);
    ext_reply_error(r, 400, "%s", e.msg);
    return;
  }
  struct hostlist h = {.pb = printbuf_new()};
  if (!h.pb) {
    ext_reply_error(r, 500, "ioqos extender out of memory building the scores");
    return;
  }
  hl_append(&h, "[", 1);
  bool ioqos = ioq_pod_need_any(&a.need);
  ext_metrics_pod(x->metrics, EXT_VERB_PRIORITIZE, ioqos ? EXT_POD_IOQOS : EXT_POD_PASSTHROUGH);
  if (!ioqos) {
    /* no opinion about pods without ioqos resources */
    for (size_t i = 0; i < a.n; i++) {
      const char *name = a.names_mode ? ext_args_name(&a, i) : ext_node_name(ext_args_node(&a, i));
      hl_add(&h, name, 0);
    }
    hl_finish(&h, r);
    return;
  }
  struct ext_nodes ns;
  if (ext_nodes_resolve(x, &a, EXT_VERB_PRIORITIZE, &ns, r) < 0) {
    printbuf_free(h.pb);
    return;
  }
  struct ioq_need need;
  ioq_pod_need_placement(&a.need, &need);
  char self_buf[IOQ_POD_NAMESPACE_MAX + IOQ_POD_NAME_MAX + 2];
  const char *self = ext_assume_id(&a.need, self_buf, sizeof self_buf);
  for (size_t i = 0; i < a.n; i++) {
    const char *name = ext_nodes_name(&ns, i);
    struct ext_verdict v;
    ext_decide(x->assumed, x->policy, &need, self, name, ext_nodes_info(&ns, i), &v);
    hl_add(&h, name, v.kind == EXT_FITS ? v.score : 0);
  }
  ext_nodes_release(&ns);
  ioq_debug("prioritize pod=%s/%s nodes=%zu policy=%s", a.need.ns, a.need.name, a.n,
            ioq_policy_name(x->policy));
  hl_finish(&h, r);
}
