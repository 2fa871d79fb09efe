// SPDX-License-Identifier: Apache-2.0
/* Bounds for pods without a grant (nodePolicy.ungranted; the pool and its
 * split are in src/grant/ungranted.c, grant/ungranted.h).
 *
 * A pod that asks for no ioqos units gets no kubelet call, so this thread
 * learns about pods from their cgroup directories: inotify on the QoS
 * cgroups (kubelet creates the pod cgroup before the pod sandbox, so the
 * bound is in place before the first container starts), and a pass every
 * nodePolicy.ungranted.intervalMs that measures each pod's rate from
 * io.stat and re-splits the pool. A granted pod's PreStart runs a pass
 * before it answers (ungranted_sync), so the pool shrinks before the grant
 * is used.
 *
 * Ownership: while at least one pod holds units of a managed disk, io.max
 * of every other pod cgroup on that disk belongs to this module; when the
 * last grant goes, the bounds it placed are lifted. A bound found in place
 * on a pod seen for the first time (after a plugin restart) is taken over
 * as that pod's cap, so a restart changes nothing until the first
 * measurement. Writes go through the one writer (read back, verified) with
 * grant writes held off (podtable_writes_lock): a bound is never written
 * over a grant being put in place.
 *
 * This file: the pods and disks known, a pass, what /metrics and explain
 * read, and the thread. The bounds are written by ungranted_bound.c, the
 * idle part of grants lent by ungranted_lend.c, the page cache bound
 * (memory.high) by ungranted_memory.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "state/catalog.h"
#include "podtable.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "cgroup/podcg.h"
#include "grant/ungranted.h"
#include "support/metrics.h"
#include "plugin.h"
#include "ungranted.h"
#include "ungranted_internal.h"
#include "base/grow.h"

void ug_failed(struct ungranted *u, const ioq_err *e) {
  metrics_inc(u->p->metrics, C_UG_FAIL);
  if (strcmp(u->last_err, e->msg) != 0)
    ioq_warn("ungranted bound not in place error=\"%s\"", e->msg);
  ioq_copy_trunc(u->last_err, sizeof u->last_err, e->msg);
}

/* said when it first appears, not again while it holds (not an error:
 * e.g. no QoS cgroup yet) */
void ug_note(struct ungranted *u, const char *msg) {
  for (size_t i = 0; i < u->n_notes; i++)
    if (!strcmp(u->notes[i], msg))
      return;
  if (u->n_notes < UG_NOTES_MAX)
    ioq_copy_trunc(u->notes[u->n_notes++], sizeof u->notes[0], msg);
  for (size_t i = 0; i < u->n_prev_notes; i++)
    if (!strcmp(u->prev_notes[i], msg))
      return;
  ioq_info("ungranted: %s", msg);
}

/* ---- pods ---- */

static struct ug_pod *find_pod(struct ungranted *u, const char *dir) {
  for (size_t i = 0; i < u->n; i++)
    if (strcmp(u->pods[i].cg.dir, dir) == 0)
      return &u->pods[i];
  return NULL;
}

static void slot_reset(struct ug_slot *s) {
  memset(s, 0, sizeof *s);
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    s->rate[r] = -1;
}

/* Brings the table in line with the pod cgroups that exist. */
static int sync_pods(struct ungranted *u, ioq_err *e) {
  struct plugin *p = u->p;
  enum ioq_cg_driver drv = p->driver;
  if (drv == IOQ_CG_DRIVER_AUTO &&
      ioq_cg_driver_detect(&p->layout, p->opts.kubelet_cgroup_root, &drv, e) < 0) {
    char m[IOQ_ERR_MSG_MAX + 64];
    snprintf(m, sizeof m, "no pod cgroups to bound yet: %s", e->msg);
    ug_note(u, m);
    drv = IOQ_CG_DRIVER_AUTO;
  }
  struct ioq_pod_cgroup_entry *list = NULL;
  size_t n = 0;
  char qos_dirs[3][PATH_MAX];
  if (drv != IOQ_CG_DRIVER_AUTO) {
    if (ioq_pod_cgroups_list(&p->layout, drv, p->opts.kubelet_cgroup_root, &list, &n, qos_dirs, e) < 0)
      return -1;
    for (int q = 0; q < 3; q++) {
      if (qos_dirs[q][0] && u->ino >= 0) {
        /* the same path gives the same watch: adding again is cheap, and
         * covers a QoS cgroup that was removed and made again */
        int wd = inotify_add_watch(u->ino, qos_dirs[q], IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_ONLYDIR);
        if (wd < 0) {
          char m[PATH_MAX + 128];
          snprintf(m, sizeof m, "inotify on %s failed (%s): new pods are found every interval only",
                   qos_dirs[q], strerror(errno));
          ug_note(u, m);
        }
      } else if (!qos_dirs[q][0]) {
        char name[PATH_MAX] = "", m[PATH_MAX + 128];
        if (ioq_qos_cgroup_name(drv, p->opts.kubelet_cgroup_root, (enum ioq_qos_class)q, name,
                                sizeof name, NULL) < 0)
          ioq_copy_trunc(name, sizeof name, "(name too long)"); /* only for the note */
        snprintf(m, sizeof m, "the %s QoS cgroup %s%s does not exist (yet): no %s pods to bound",
                 ioq_qos_name((enum ioq_qos_class)q), p->layout.io_root, name,
                 ioq_qos_name((enum ioq_qos_class)q));
        ug_note(u, m);
      }
    }
  }
  for (size_t i = 0; i < u->n; i++)
    u->pods[i].seen = false;
  for (size_t i = 0; i < n; i++) {
    struct ug_pod *pp = find_pod(u, list[i].dir);
    if (!pp) {
      struct ug_pod *g = ioq_grow(u->pods, &u->cap, u->n + 1, sizeof *g, 32);
      if (!g) {
        free(list);
        return ioq_fail(e, ENOMEM, "ungranted: out of memory growing the pod list");
      }
      u->pods = g;
      pp = &u->pods[u->n++];
      memset(pp, 0, sizeof *pp);
      pp->cg = list[i];
      for (int d = 0; d < UG_DISKS_MAX; d++)
        slot_reset(&pp->s[d]);
    }
    pp->seen = true;
  }
  free(list);
  /* forget pods whose cgroup is gone (the kernel dropped their limits) */
  size_t w = 0;
  for (size_t i = 0; i < u->n; i++)
    if (u->pods[i].seen)
      u->pods[w++] = u->pods[i];
  u->n = w;
  return 0;
}

/* ---- disks ---- */

static int disk_index(struct ungranted *u, const struct cat_disk *cd) {
  for (size_t i = 0; i < u->n_disks; i++)
    if (strcmp(u->disks[i].name, cd->disk.dev.name) == 0 && ioq_devno_eq(u->disks[i].dev, cd->dev))
      return (int)i;
  if (u->n_disks == UG_DISKS_MAX)
    return -1;
  struct ug_disk *d = &u->disks[u->n_disks];
  memset(d, 0, sizeof *d);
  ioq_copy_trunc(d->name, sizeof d->name, cd->disk.dev.name); /* same-size fields: fits */
  d->dev = cd->dev;
  for (size_t i = 0; i < u->n; i++)
    slot_reset(&u->pods[i].s[u->n_disks]);
  return (int)u->n_disks++;
}

/* ---- a pass ---- */

/* from_thread: the thread's own pass; false: a granted pod's PreStart waits
 * for it (no page cache bound is lowered then: that reclaims, see
 * ungranted_memory.c) */
static void pass_locked(struct ungranted *u, bool from_thread) {
  struct plugin *p = u->p;
  ioq_err e;
  u->c = plugin_cfg(p);
  memcpy(u->prev_notes, u->notes, sizeof u->notes);
  u->n_prev_notes = u->n_notes;
  u->n_notes = 0;
  if (sync_pods(u, &e) < 0) {
    ug_failed(u, &e);
    return;
  }
  /* Until the first reconcile pass the held units (the List) and the
   * grants in place (rebuilt from it after a restart) are unknown: a granted
   * pod would look ungranted, and bounds in place would look orphaned. */
  if (!atomic_load(&p->first_reconcile_done) || !listview_have_list(p->table))
    return;
  struct cat_disk *cd;
  size_t ncd = catalog_snapshot(p->catalog, &cd);
  double now = ioq_mono_s();
  int idx[UG_DISKS_MAX];
  bool served[UG_DISKS_MAX] = {false};
  size_t nidx = 0;
  for (size_t i = 0; i < ncd && nidx < UG_DISKS_MAX; i++) {
    int k = disk_index(u, &cd[i]);
    if (k < 0)
      continue;
    struct ug_disk *dk = &u->disks[k];
    uint64_t held[IOQ_RES_COUNT];
    listview_allocated(p->table, dk->name, held);
    if (!cd[i].healthy)
      continue; /* gone or not enforceable: its lines cannot be written (nor need to be) */
    bool was = dk->active;
    dk->active = held[0] || held[1];
    ioq_ug_pool(&cd[i].disk, &p->cfg.units, u->c->node_policy.ungranted_headroom_share, held,
                dk->base_pool);
    /* what is lent is added by ug_lend_pass once the lenders are measured */
    memcpy(dk->pool, dk->base_pool, sizeof dk->pool);
    if (dk->active && !dk->pool[0] && !dk->pool[1]) {
      char m[160];
      snprintf(m, sizeof m, "disk %s has grants but no known capacity: pods without a grant are not bounded there",
               dk->name);
      ug_note(u, m);
      dk->active = false;
    }
    if (cd[i].disk.ungranted_note[0])
      ug_note(u, cd[i].disk.ungranted_note);
    if (dk->active && !was)
      ioq_info("ungranted pool in force disk=%s pool_bps=%llu pool_iops=%llu held_bw_units=%llu "
               "held_iops_units=%llu",
               dk->name, (unsigned long long)dk->pool[0], (unsigned long long)dk->pool[1],
               (unsigned long long)held[0], (unsigned long long)held[1]);
    idx[nidx++] = k;
    served[k] = true;
  }
  free(cd);
  for (size_t i = 0; i < u->n; i++)
    ug_measure(u, &u->pods[i], now);

  podtable_writes_lock(p->table);
  struct applied_pod *ap;
  size_t nap = podtable_snapshot(p->table, &ap);
  if (!ap) {
    /* without the grants in place a granted pod would look ungranted */
    podtable_writes_unlock(p->table);
    ioq_fail(&e, ENOMEM, "ungranted: out of memory reading the grants in place");
    ug_failed(u, &e);
    return;
  }
  enum ioq_ug_burst_mode burst = u->c->node_policy.ungranted_burst;
  for (size_t i = 0; i < u->n; i++) {
    struct ug_pod *pp = &u->pods[i];
    for (size_t d = 0; d < u->n_disks; d++) {
      bool g = false, may_burst = false;
      const struct ioq_disk_grant *dg = NULL;
      const uint64_t *extra = NULL;
      const struct ioq_io_limits *full = NULL;
      for (size_t j = 0; j < nap && !g; j++) {
        if (strcmp(ap[j].uid, pp->cg.uid) != 0)
          continue;
        /* an unknown pod (state file lost) may hold an init container
         * grant on any disk: its limits are left alone too (and it lends
         * nothing: its grant is not known) */
        dg = ap[j].init_unknown ? NULL : ioq_grant_find(&ap[j].grant, u->disks[d].name);
        g = ap[j].init_unknown || dg;
        if (dg) {
          extra = ap[j].burst[dg - ap[j].grant.disks];
          full = &ap[j].full[dg - ap[j].grant.disks];
          may_burst = burst == IOQ_UG_BURST_ALL ||
                      (burst == IOQ_UG_BURST_ANNOTATED && ap[j].burst_asked);
        }
      }
      /* the grant writer owns the line while there is a grant (it replaced
       * our bound), and cleared it when the grant went: start afresh */
      if (g != pp->s[d].granted) {
        slot_reset(&pp->s[d]);
        pp->s[d].after_grant = !g;
      }
      pp->s[d].granted = g;
      ug_grant_of(u, dg, pp->s[d].grant);
      pp->s[d].may_burst = may_burst;
      for (int r = 0; r < IOQ_RES_COUNT; r++)
        pp->s[d].burst[r] = extra ? extra[r] : 0;
      /* both directions carry the grant alike in the full split */
      pp->s[d].burst_base[IOQ_RES_BANDWIDTH] = full ? full->rbps : 0;
      pp->s[d].burst_base[IOQ_RES_IOPS] = full ? full->riops : 0;
    }
    if (!pp->adopted)
      ug_adopt(u, pp);
  }
  free(ap);
  /* a disk not served now (gone from the catalog, or not healthy) has no
   * pool to burst into: its bursts go at once, not when the grant changes */
  for (size_t d = 0; d < u->n_disks; d++)
    if (!served[d])
      ug_end_bursts(u, d, "the disk is not served now (not in the catalog, or not healthy)");
  ug_lend_pods(u, now);
  for (size_t k = 0; k < nidx; k++) {
    size_t d = (size_t)idx[k];
    if (u->disks[d].active) {
      ug_lend_pass(u, d);
      ug_balance_disk(u, d);
    } else {
      memset(u->disks[d].lent, 0, sizeof u->disks[d].lent);
      ug_end_bursts(u, d, "no pool on the disk to burst into");
      ug_lift_all(u, d, "no pod holds units of the disk");
      u->disks[d].bounded = 0;
    }
  }
  podtable_writes_unlock(p->table);
  /* memory.high is not the grant writer's: outside its lock */
  ug_memory_pass(u, from_thread);
}

static void pass_now(struct ungranted *u, bool from_thread) {
  pthread_mutex_lock(&u->mu);
  pass_locked(u, from_thread);
  pthread_mutex_unlock(&u->mu);
}

void ungranted_sync(struct ungranted *u) {
  if (u)
    pass_now(u, false);
}

size_t ungranted_stats(struct ungranted *u, struct ungranted_disk_stat *out, size_t max,
                       struct ungranted_totals *t) {
  memset(t, 0, sizeof *t);
  if (!u)
    return 0;
  pthread_mutex_lock(&u->mu);
  size_t n = 0;
  for (size_t i = 0; i < u->n_disks && n < max; i++, n++) {
    ioq_copy_trunc(out[n].disk, sizeof out[n].disk, u->disks[i].name); /* same-size fields: fits */
    out[n].pool_bps = u->disks[i].active ? u->disks[i].pool[IOQ_RES_BANDWIDTH] : 0;
    out[n].pool_iops = u->disks[i].active ? u->disks[i].pool[IOQ_RES_IOPS] : 0;
    out[n].pods = u->disks[i].bounded;
    out[n].lent_bps = u->disks[i].active ? u->disks[i].lent[IOQ_RES_BANDWIDTH] : 0;
    out[n].lent_iops = u->disks[i].active ? u->disks[i].lent[IOQ_RES_IOPS] : 0;
    /* the bursts in place: the granted slots' own (kept by every write) */
    out[n].burst_bps = out[n].burst_iops = out[n].bursting = 0;
    for (size_t k = 0; k < u->n; k++) {
      const struct ug_slot *s = &u->pods[k].s[i];
      if (!s->granted)
        continue;
      out[n].burst_bps += s->burst[IOQ_RES_BANDWIDTH];
      out[n].burst_iops += s->burst[IOQ_RES_IOPS];
      out[n].bursting += s->burst[IOQ_RES_BANDWIDTH] || s->burst[IOQ_RES_IOPS];
    }
  }
  t->max_bytes_before = u->max_bytes_before;
  t->reclaims = u->reclaims;
  t->owe_holds = u->owe_holds;
  t->owing = 0;
  for (size_t k = 0; k < u->n; k++)
    for (size_t i = 0; i < u->n_disks; i++)
      t->owing += u->pods[k].s[i].owe.owes;
  t->reclaim_s = u->reclaim_s;
  t->page_cache_bounded = u->mem_bounded;
  t->page_cache_writes = u->mem_writes;
  pthread_mutex_unlock(&u->mu);
  return n;
}

int ungranted_pod_view(struct ungranted *u, const char *uid, struct ungranted_pod_view *out) {
  memset(out, 0, sizeof *out);
  if (!u)
    return 0;
  pthread_mutex_lock(&u->mu);
  const struct ug_pod *pp = NULL;
  for (size_t i = 0; i < u->n && !pp; i++)
    if (strcmp(u->pods[i].cg.uid, uid) == 0)
      pp = &u->pods[i];
  out->disks = calloc(u->n_disks ? u->n_disks : 1, sizeof *out->disks);
  if (!out->disks) {
    pthread_mutex_unlock(&u->mu);
    return -1;
  }
  out->pod_seen = pp != NULL;
  out->page_cache_room = plugin_cfg(u->p)->node_policy.ungranted_page_cache_bytes;
  if (pp) {
    ioq_copy_trunc(out->cgroup, sizeof out->cgroup, pp->cg.dir); /* same size: fits */
    out->memory_high = pp->mem_high;
    out->have_memory = pp->have_mem;
    if (pp->have_mem) {
      out->pinned = ioq_memory_pinned(&pp->mem);
      out->page_cache = pp->mem.stat.active_file + pp->mem.stat.inactive_file;
      out->dirty = pp->mem.stat.file_dirty;
      out->writeback = pp->mem.stat.file_writeback;
    }
    ioq_copy_trunc(out->page_cache_note, sizeof out->page_cache_note, pp->mem_note);
  }
  out->n = u->n_disks;
  for (size_t d = 0; d < u->n_disks; d++) {
    const struct ug_disk *ud = &u->disks[d];
    struct ungranted_disk_view *v = &out->disks[d];
    ioq_copy_trunc(v->disk, sizeof v->disk, ud->name); /* same size: fits */
    v->active = ud->active;
    v->bounded_pods = ud->bounded;
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      v->pool[r] = ud->active ? ud->pool[r] : 0;
      v->base_pool[r] = ud->active ? ud->base_pool[r] : 0;
      v->lent[r] = ud->active ? ud->lent[r] : 0;
    }
    if (!pp)
      continue;
    const struct ug_slot *sl = &pp->s[d];
    v->granted = sl->granted;
    v->bounded = sl->bounded;
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      v->cap[r] = sl->bounded ? sl->cap[r] : 0;
      v->rate[r] = sl->rate[r];
      v->lends[r] = sl->granted && ud->active ? sl->lend[r].grant - sl->lend[r].keep : 0;
      v->burst[r] = sl->granted ? sl->burst[r] : 0;
    }
    v->may_burst = sl->granted && sl->may_burst;
    v->owes = sl->owe.owes;
    v->owes_s = sl->owe.owes ? ioq_mono_s() - sl->owe.since : 0;
  }
  pthread_mutex_unlock(&u->mu);
  return 0;
}

void ungranted_pod_view_free(struct ungranted_pod_view *v) {
  free(v->disks);
  v->disks = NULL;
  v->n = 0;
}

/* ---- thread ---- */

static void *ug_main(void *arg) {
  struct ungranted *u = arg;
  double next = 0, next_sample = 0;
  for (;;) {
    /* the node pool in force sets them: taken again for every wait */
    const struct ioq_config *c = plugin_cfg(u->p);
    double interval = c->node_policy.ungranted_interval_ms / 1000.0;
    double sample = c->node_policy.ungranted_lend_sample_ms / 1000.0;
    double now = ioq_mono_s();
    if (now >= next) {
      pass_now(u, true);
      next = ioq_mono_s() + interval;
      next_sample = ioq_mono_s() + sample;
      continue;
    }
    /* while something is lent, the lenders are sampled between passes */
    double until = next;
    pthread_mutex_lock(&u->mu);
    bool lending = ug_lending(u);
    if (lending && now >= next_sample) {
      ug_lend_sample(u);
      next_sample += sample;
      if (next_sample <= now)
        next_sample = now + sample; /* late (a slow machine): no catching up */
    }
    pthread_mutex_unlock(&u->mu);
    if (lending && next_sample < until)
      until = next_sample;
    struct pollfd fds[2] = {{.fd = u->wake[0], .events = POLLIN}, {.fd = u->ino, .events = POLLIN}};
    int ms = until > now ? (int)((until - now) * 1000) + 1 : 0;
    int r = poll(fds, u->ino >= 0 ? 2 : 1, ms);
    if (r < 0 && errno != EINTR) {
      ioq_error("ungranted: poll failed: %s", strerror(errno));
      break;
    }
    if (r > 0 && (fds[0].revents & POLLIN))
      break; /* ungranted_stop */
    if (r > 0 && u->ino >= 0 && (fds[1].revents & POLLIN)) {
      /* a pod cgroup came or went: bound it now, not at the next tick */
      char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
      while (read(u->ino, buf, sizeof buf) > 0) {
      }
      next = 0;
    }
  }
  return NULL;
}

struct ungranted *ungranted_start(struct plugin *p, ioq_err *e) {
  struct ungranted *u = calloc(1, sizeof *u);
  if (!u)
    return ioq_fail(e, ENOMEM, "ungranted: out of memory allocating the checker"), NULL;
  u->p = p;
  pthread_mutex_init(&u->mu, NULL);
  u->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (u->ino < 0)
    ioq_warn("ungranted: inotify not available (%s): new pods are bounded at the next interval "
             "(%u ms) only",
             strerror(errno), p->cfg.node_policy.ungranted_interval_ms);
  if (pipe2(u->wake, O_CLOEXEC) < 0) {
    ioq_fail_errno(e, "ungranted: pipe");
    goto fail;
  }
  int r = pthread_create(&u->thread, NULL, ug_main, u);
  if (r != 0) {
    errno = r;
    ioq_fail_errno(e, "ungranted: thread");
    close(u->wake[0]);
    close(u->wake[1]);
    goto fail;
  }
  u->running = true;
  ioq_info("ungranted pods bounded on disks with grants interval=%ums (nodePolicy.ungranted)",
           p->cfg.node_policy.ungranted_interval_ms);
  return u;
fail:
  if (u->ino >= 0)
    close(u->ino);
  pthread_mutex_destroy(&u->mu);
  free(u);
  return NULL;
}

void ungranted_stop(struct ungranted *u) {
  if (!u || !u->running)
    return;
  if (write(u->wake[1], "q", 1) < 0)
    ioq_warn("ungranted: stop not delivered: %s", strerror(errno));
  pthread_join(u->thread, NULL);
  u->running = false;
}

void ungranted_free(struct ungranted *u) {
  if (!u)
    return;
  ungranted_stop(u);
  close(u->wake[0]);
  close(u->wake[1]);
  if (u->ino >= 0)
    close(u->ino);
  pthread_mutex_destroy(&u->mu);
  free(u->pods);
  free(u);
}
