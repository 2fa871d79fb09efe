// SPDX-License-Identifier: Apache-2.0
#include "decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grant/podneed.h"

#define STACK_DISKS 32

static unsigned g_max_age_s;
static int64_t (*g_now)(void);

void ext_decide_set_max_age(unsigned max_age_s, int64_t (*now)(void)) {
  g_max_age_s = max_age_s;
  g_now = now;
}

/* true when the annotation is older than the limit; *age: seconds since it
 * was published */
static bool stale(const struct ioq_node_state *st, int64_t *age) {
  if (!g_max_age_s || !st->published_at)
    return false;
  *age = (g_now ? g_now() : (int64_t)time(NULL)) - st->published_at;
  return *age > (int64_t)g_max_age_s;
}

static bool class_present(const struct ioq_node_state *st, const char *cls) {
  for (size_t i = 0; i < st->n_disks; i++)
    if (strcmp(st->disks[i].class_name, cls) == 0)
      return true;
  return false;
}

const char *ext_assume_id(const struct ioq_pod_need *pn, char *buf, size_t bufsz) {
  if (pn->uid[0])
    return pn->uid;
  snprintf(buf, bufsz, "%s/%s", pn->ns, pn->name);
  return buf;
}

void ext_decide(struct ext_assumed *a, enum ioq_policy policy, const struct ioq_need *need,
                const char *self, const char *name, const struct ext_nodeinfo *ni,
                struct ext_verdict *out) {
  out->disk = -1;
  out->score = 0;
  out->reason[0] = '\0';
  if (!ni) {
    out->kind = EXT_UNRESOLVABLE;
    snprintf(out->reason, sizeof out->reason,
             "node is not in the ioqos extender's node cache (new node, or not visible to its "
             "service account)");
    return;
  }
  if (ni->status != EXT_NODE_OK) {
    out->kind = EXT_UNRESOLVABLE;
    snprintf(out->reason, sizeof out->reason, "%s",
             ni->error ? ni->error : "out of memory keeping the node's annotation error");
    return;
  }
  const struct ioq_node_state *st = &ni->st;
  int64_t age;
  if (stale(st, &age)) {
    out->kind = EXT_UNRESOLVABLE;
    snprintf(out->reason, sizeof out->reason,
             "node annotation " IOQ_NODE_ANNOTATION " is stale: published %lld s ago, more than "
             "%u s (--annotation-max-age); is ioqos-plugin running there?",
             (long long)age, g_max_age_s);
    return;
  }
  uint64_t stack_extra[STACK_DISKS * IOQ_RES_COUNT];
  uint64_t *extra = stack_extra;
  if (st->n_disks > STACK_DISKS) {
    extra = calloc(st->n_disks * IOQ_RES_COUNT, sizeof *extra);
    if (!extra) {
      out->kind = EXT_FAILED;
      snprintf(out->reason, sizeof out->reason,
               "ioqos extender out of memory building the per-disk totals");
      return;
    }
  }
  ext_assumed_extra(a, name, self, st->disks, st->n_disks, extra);
  struct ioq_choice ch;
  if (ioq_place(st->disks, st->n_disks, extra, need, policy, &ch)) {
    out->kind = EXT_FITS;
    out->disk = ch.disk;
    out->score = ch.score;
  } else {
    const char *cls = need->class_name && *need->class_name ? need->class_name : IOQ_DEFAULT_CLASS;
    out->kind = class_present(st, cls) ? EXT_FAILED : EXT_UNRESOLVABLE;
    snprintf(out->reason, sizeof out->reason, "%s", ch.reason);
  }
  if (extra != stack_extra)
    free(extra);
}
