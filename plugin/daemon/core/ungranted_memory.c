// SPDX-License-Identifier: Apache-2.0
/* The page cache bound of pods without a grant (nodePolicy.ungranted.
 * pageCacheBytes; the rule and why: ioq_ug_page_cache_high in
 * grant/ungranted.h, docs/ungranted.md "Buffered writers without a grant").
 *
 * io.max holds a buffered writer at writeback: its dirty pages wait behind
 * its cap and count against the node-wide dirty limit every writer shares.
 * memory.high gives the pod a dirty limit of its own, so the kernel paces it
 * where it dirties.
 *
 * Which pods: bounded on some disk (some pod holds units there) and granted
 * on none (a granted pod's buffered writes are its grant's), on cgroup v2 with
 * the memory controller, without a memory limit. kubelet writes a pod
 * cgroup's memory.high only for pods with a memory limit (MemoryQoS), so for
 * the others it is ours; a pod with a limit already has a dirty limit of its
 * own, a fifth of it. Ours is lifted ("max") when the pod stops qualifying,
 * and only while it still holds what we wrote. After a restart a bounded pod
 * without a memory limit whose memory.high is a number is taken as ours.
 *
 * Called under ungranted.mu, after the io.max bounds of the pass (a new pod
 * gets both before its first container starts). A pass a PreStart waits for
 * lifts and raises but lowers nothing below a pod's usage: that write
 * reclaims the pod's page cache before it returns (the first bound of a pod
 * with a large cache, when the first grant of its disk arrives), and a
 * granted pod's start should not wait for that; the thread's next pass
 * writes it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "support/metrics.h"
#include "plugin.h"
#include "ungranted_internal.h"

static void mib(char *buf, size_t sz, uint64_t v) {
  if (v == IOQ_MEMORY_MAX)
    snprintf(buf, sz, "max");
  else
    snprintf(buf, sz, "%.1fMiB", (double)v / (1024.0 * 1024.0));
}

/* Why the pod is not bounded, said once per pod while it holds. */
static void pod_note(struct ug_pod *pp, const char *msg) {
  if (strcmp(pp->mem_note, msg) == 0)
    return;
  ioq_copy_trunc(pp->mem_note, sizeof pp->mem_note, msg);
  if (*msg)
    ioq_info("ungranted page cache not bounded cgroup=%s reason=\"%s\"", pp->cg.dir, msg);
}

/* *held (may be NULL): what the kernel holds now (whole pages) */
static bool write_high(struct ungranted *u, struct ug_pod *pp, const struct ioq_cg *cg, uint64_t v,
                       uint64_t *held) {
  ioq_err e;
  double t0 = ioq_mono_s();
  if (ioq_cg_write_memory_high(cg, v, held, &e) < 0) {
    if (!ioq_is_dir(pp->cg.dir))
      return false; /* the pod went away */
    ug_failed(u, &e);
    return false;
  }
  u->mem_writes++;
  double took = ioq_mono_s() - t0;
  /* lowering it below the pod's usage reclaims the difference right here */
  if (took > 0.1)
    ioq_info("ungranted page cache bound written cgroup=%s took=%.2fs reason=\"the kernel reclaimed "
             "the pod's page cache above it before the write returned\"",
             pp->cg.dir, took);
  return true;
}

static void lift(struct ungranted *u, struct ug_pod *pp, const struct ioq_cg *cg, const char *why) {
  if (!pp->mem_high)
    return;
  if (pp->have_mem && pp->mem.high != pp->mem_high) {
    char was[32], now[32];
    mib(was, sizeof was, pp->mem_high);
    mib(now, sizeof now, pp->mem.high);
    ioq_info("ungranted page cache bound left to its new owner cgroup=%s ours=%s now=%s reason=\"%s; "
             "memory.high was changed by someone else\"",
             pp->cg.dir, was, now, why);
    pp->mem_high = 0;
    return;
  }
  if (write_high(u, pp, cg, IOQ_MEMORY_MAX, NULL)) {
    ioq_info("ungranted page cache bound removed cgroup=%s reason=\"%s\"", pp->cg.dir, why);
    pp->mem_high = 0;
  }
}

static void one_pod(struct ungranted *u, struct ug_pod *pp, uint64_t room, bool may_reclaim) {
  bool bounded = false, granted = false;
  for (size_t d = 0; d < u->n_disks; d++) {
    granted |= pp->s[d].granted;
    bounded |= u->disks[d].active && pp->s[d].bounded && !pp->s[d].granted;
  }
  const char *why = !room       ? "nodePolicy.ungranted.pageCacheBytes is 0"
                    : granted  ? "it holds a grant"
                    : !bounded ? "not bounded on any disk (no pod holds units of its disks)"
                               : NULL;
  if (why && !pp->mem_high) {
    pp->have_mem = false;
    pod_note(pp, "");
    return; /* nothing of ours to lift: memory.stat is not even read */
  }
  struct ioq_cg cg;
  ioq_err e;
  pp->have_mem = false;
  if (ioq_cg_open(pp->cg.dir, u->p->layout.io_version, &cg, &e) < 0)
    return; /* the pod went away: its cgroup took the value with it */
  if (ioq_cg_read_memory(&cg, &pp->mem, &e) < 0) {
    if (e.code == IOQ_EUNSUPPORTED) {
      /* a node-wide fact (v1, memory controller off): said once for all pods */
      ioq_copy_trunc(pp->mem_note, sizeof pp->mem_note, e.msg);
      ug_note(u, u->p->layout.io_version == IOQ_CGV1
                     ? "page cache of pods without a grant not bounded: cgroup v1 has no memory.high "
                       "(and writes buffered pages back outside the pods' cgroups)"
                     : "page cache of pods without a grant not bounded: the memory controller is not "
                       "enabled for pod cgroups (no memory.stat)");
      return;
    }
    if (ioq_is_dir(pp->cg.dir))
      ug_failed(u, &e);
    return;
  }
  pp->have_mem = true;
  if (!pp->mem_adopted) {
    /* after a restart: a number there on a pod we bound is ours */
    pp->mem_adopted = true;
    if (bounded && pp->mem.max == IOQ_MEMORY_MAX && pp->mem.high != IOQ_MEMORY_MAX)
      pp->mem_high = pp->mem.high;
  }
  if (why) {
    lift(u, pp, &cg, why);
    pod_note(pp, "");
    return;
  }
  if (pp->mem.max != IOQ_MEMORY_MAX) {
    lift(u, pp, &cg, "it has a memory limit");
    pod_note(pp, "it has a memory limit: the kernel keeps its dirty pages within a fifth of it");
    return;
  }
  pod_note(pp, "");
  uint64_t cur = pp->mem_high;
  if (cur && pp->mem.high != cur) {
    char was[32], now[32];
    mib(was, sizeof was, cur);
    mib(now, sizeof now, pp->mem.high);
    ioq_warn("ungranted page cache bound drift corrected cgroup=%s ours=%s found=%s", pp->cg.dir, was, now);
    cur = 0;
  }
  uint64_t pinned = ioq_memory_pinned(&pp->mem);
  uint64_t want = ioq_ug_page_cache_high(pinned, room, cur);
  if (!want || (!may_reclaim && want < pp->mem.current))
    return;
  bool first = !pp->mem_high;
  uint64_t held;
  if (!write_high(u, pp, &cg, want, &held))
    return;
  pp->mem_high = held;
  char h[32], p[32], r[32], q[32];
  mib(h, sizeof h, pp->mem_high);
  mib(p, sizeof p, pinned);
  mib(r, sizeof r, room);
  mib(q, sizeof q, pp->mem.stat.file_dirty + pp->mem.stat.file_writeback);
  if (first)
    ioq_info("ungranted page cache bound placed cgroup=%s qos=%s memory_high=%s pinned=%s room=%s "
             "dirty_and_writeback=%s",
             pp->cg.dir, ioq_qos_name(pp->cg.qos), h, p, r, q);
  else
    ioq_debug("ungranted page cache bound moved cgroup=%s memory_high=%s pinned=%s", pp->cg.dir, h, p);
}

void ug_memory_pass(struct ungranted *u, bool may_reclaim) {
  uint64_t room = u->c->node_policy.ungranted_page_cache_bytes;
  u->mem_bounded = 0;
  for (size_t i = 0; i < u->n; i++) {
    one_pod(u, &u->pods[i], room, may_reclaim);
    if (u->pods[i].mem_high)
      u->mem_bounded++;
  }
}
