// SPDX-License-Identifier: Apache-2.0
/* The ungranted bounds' part of the explain document (explain_ungranted.h),
 * written from a copy taken under their lock (ungranted_pod_view). */
#include "explain_ungranted.h"

#include <json-c/json.h>
#include <stdint.h>

#include "core/ungranted.h"

static json_object *jint(uint64_t v) { return json_object_new_int64((int64_t)v); }

json_object *explain_ungranted_pod(struct ungranted *u, const char *uid) {
  json_object *o = json_object_new_object();
  if (!o || !u)
    return o;
  struct ungranted_pod_view v;
  if (ungranted_pod_view(u, uid, &v) < 0) {
    json_object_put(o);
    return NULL;
  }
  json_object *disks = json_object_new_array();
  json_object_object_add(o, "podSeen", json_object_new_boolean(v.pod_seen));
  if (v.pod_seen)
    json_object_object_add(o, "cgroup", json_object_new_string(v.cgroup));
  /* the page cache bound: memory.high of ours, and what the pod held at the
   * last pass (pinned: what reclaim cannot free) */
  json_object *pc = json_object_new_object();
  if (pc) {
    json_object_object_add(pc, "roomBytes", jint(v.page_cache_room));
    json_object_object_add(pc, "bounded", json_object_new_boolean(v.memory_high != 0));
    if (v.memory_high)
      json_object_object_add(pc, "memoryHighBytes", jint(v.memory_high));
    if (v.have_memory) {
      json_object_object_add(pc, "pinnedBytes", jint(v.pinned));
      json_object_object_add(pc, "pageCacheBytes", jint(v.page_cache));
      json_object_object_add(pc, "dirtyBytes", jint(v.dirty));
      json_object_object_add(pc, "writebackBytes", jint(v.writeback));
    }
    if (v.page_cache_note[0])
      json_object_object_add(pc, "note", json_object_new_string(v.page_cache_note));
    json_object_object_add(o, "pageCache", pc);
  }
  for (size_t d = 0; disks && d < v.n; d++) {
    const struct ungranted_disk_view *dv = &v.disks[d];
    json_object *j = json_object_new_object();
    if (!j)
      break;
    json_object_object_add(j, "disk", json_object_new_string(dv->disk));
    /* bounds apply only while some pod holds units of the disk */
    json_object_object_add(j, "active", json_object_new_boolean(dv->active));
    json_object_object_add(j, "poolBytesPerSec", jint(dv->pool[IOQ_RES_BANDWIDTH]));
    json_object_object_add(j, "poolIops", jint(dv->pool[IOQ_RES_IOPS]));
    json_object_object_add(j, "podsBounded", jint(dv->bounded_pods));
    /* the pool is what nobody holds (base) plus what granted pods lend now */
    json_object_object_add(j, "poolBaseBytesPerSec", jint(dv->base_pool[IOQ_RES_BANDWIDTH]));
    json_object_object_add(j, "poolBaseIops", jint(dv->base_pool[IOQ_RES_IOPS]));
    json_object_object_add(j, "lentBytesPerSec", jint(dv->lent[IOQ_RES_BANDWIDTH]));
    json_object_object_add(j, "lentIops", jint(dv->lent[IOQ_RES_IOPS]));
    if (v.pod_seen) {
      json_object_object_add(j, "granted", json_object_new_boolean(dv->granted));
      json_object_object_add(j, "bounded", json_object_new_boolean(dv->bounded));
      json_object_object_add(j, "capBytesPerSec", jint(dv->cap[IOQ_RES_BANDWIDTH]));
      json_object_object_add(j, "capIops", jint(dv->cap[IOQ_RES_IOPS]));
      if (dv->rate[IOQ_RES_BANDWIDTH] >= 0)
        json_object_object_add(j, "measuredBytesPerSec", json_object_new_double(dv->rate[IOQ_RES_BANDWIDTH]));
      if (dv->rate[IOQ_RES_IOPS] >= 0)
        json_object_object_add(j, "measuredIops", json_object_new_double(dv->rate[IOQ_RES_IOPS]));
      if (dv->owes) /* its io.max held: it got through after a cut (ungranted_owe.c) */
        json_object_object_add(j, "owesKernelSeconds", json_object_new_double(dv->owes_s));
      if (dv->granted && dv->active) { /* as a lender: what it lends of its grant now */
        json_object_object_add(j, "lendsBytesPerSec", jint(dv->lends[IOQ_RES_BANDWIDTH]));
        json_object_object_add(j, "lendsIops", jint(dv->lends[IOQ_RES_IOPS]));
      }
      if (dv->granted) { /* the opt-in burst: allowed, and the extra above its grant now */
        json_object_object_add(j, "mayBurst", json_object_new_boolean(dv->may_burst));
        json_object_object_add(j, "burstBytesPerSec", jint(dv->burst[IOQ_RES_BANDWIDTH]));
        json_object_object_add(j, "burstIops", jint(dv->burst[IOQ_RES_IOPS]));
      }
    }
    json_object_array_add(disks, j);
  }
  ungranted_pod_view_free(&v);
  if (disks)
    json_object_object_add(o, "disks", disks);
  return o;
}
