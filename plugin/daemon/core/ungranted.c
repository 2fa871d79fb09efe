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
 * over a grant being put in place. */
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
#include "support/grpcs.h"
#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "cgroup/podcg.h"
#include "grant/ungranted.h"
#include "support/metrics.h"
#include "plugin.h"
#include "ungranted.h"
#include "ungranted_internal.h"

void ug_failed(struct ungranted *u, const ioq_err *e) {
  metrics_inc(u->p->metrics, C_UG_FAIL);
  if (strcmp(u->last_err, e->msg) != 0)
    ioq_warn("ungranted bound not in place error=\"%s\"", e->msg);
  ioq_copy_trunc(u->last_err, sizeof u->last_err, e->msg);
}

/* said when it first appears, not again while it holds (not an error:
 * e.g. no QoS cgroup yet) */
static void note(struct ungranted *u, const char *msg) {
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
    note(u, m);
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
          note(u, m);
        }
      } else if (!qos_dirs[q][0]) {
        char name[PATH_MAX] = "", m[PATH_MAX + 128];
        if (ioq_qos_cgroup_name(drv, p->opts.kubelet_cgroup_root, (enum ioq_qos_class)q, name,
                                sizeof name, NULL) < 0)
          ioq_copy_trunc(name, sizeof name, "(name too long)"); /* only for the note */
        snprintf(m, sizeof m, "the %s QoS cgroup %s%s does not exist (yet): no %s pods to bound",
                 ioq_qos_name((enum ioq_qos_class)q), p->layout.io_root, name,
                 ioq_qos_name((enum ioq_qos_class)q));
        note(u, m);
      }
    }
  }
  for (size_t i = 0; i < u->n; i++)
    u->pods[i].seen = false;
  for (size_t i = 0; i < n; i++) {
    struct ug_pod *pp = find_pod(u, list[i].dir);
    if (!pp) {
      if (u->n == u->cap) {
        size_t nc = u->cap ? u->cap * 2 : 32;
        struct ug_pod *g = realloc(u->pods, nc * sizeof *g);
        if (!g) {
          free(list);
          return ioq_fail(e, ENOMEM, "ungranted: out of memory growing the pod list");
        }
        u->pods = g;
        u->cap = nc;
      }
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

/* ---- one pod's cgroup ---- */

static int cg_of(struct ungranted *u, const struct ug_pod *pp, struct ioq_cg *cg, ioq_err *e) {
  return ioq_cg_open(pp->cg.dir, u->p->layout.io_version, cg, e);
}

struct ioq_iostat ug_iostat_of(const struct ioq_iostat *st, size_t n, struct ioq_devno dev) {
  struct ioq_iostat cur = {.dev = dev};
  for (size_t i = 0; i < n; i++)
    if (ioq_devno_eq(st[i].dev, dev))
      cur = st[i];
  return cur;
}

struct ug_delta ug_iostat_delta(const struct ioq_iostat *a, const struct ioq_iostat *b) {
  struct ug_delta x;
  x.rb = b->rbytes >= a->rbytes ? (double)(b->rbytes - a->rbytes) : 0;
  x.wb = b->wbytes >= a->wbytes ? (double)(b->wbytes - a->wbytes) : 0;
  x.ri = b->rios >= a->rios ? (double)(b->rios - a->rios) : 0;
  x.wi = b->wios >= a->wios ? (double)(b->wios - a->wios) : 0;
  return x;
}

/* Reads io.stat once per pass and turns it into rates per disk. */
static void measure(struct ungranted *u, struct ug_pod *pp, double now) {
  struct ioq_cg cg;
  struct ioq_iostat st[UG_DISKS_MAX * 4];
  size_t n = 0;
  ioq_err e;
  if (cg_of(u, pp, &cg, &e) < 0 || ioq_cg_read_iostat(&cg, st, sizeof st / sizeof st[0], &n, &e) < 0) {
    ioq_debug("ungranted: io.stat not read cgroup=%s error=\"%s\"", pp->cg.dir, e.msg);
    return;
  }
  for (size_t d = 0; d < u->n_disks; d++) {
    struct ug_slot *s = &pp->s[d];
    struct ioq_iostat cur = ug_iostat_of(st, n, u->disks[d].dev);
    if (s->have_sample && now > s->last_t) {
      double dt = now - s->last_t;
      struct ug_delta x = ug_iostat_delta(&s->last, &cur);
      s->rate[IOQ_RES_BANDWIDTH] = (x.rb > x.wb ? x.rb : x.wb) / dt;
      s->rate[IOQ_RES_IOPS] = (x.ri > x.wi ? x.ri : x.wi) / dt;
    }
    s->last = cur;
    s->last_t = now;
    s->have_sample = true;
  }
}

/* A grant's io.max per resource (0: none in that resource, or no grant). */
static void grant_of(struct ungranted *u, const struct ioq_disk_grant *dg, uint64_t out[IOQ_RES_COUNT]) {
  struct ioq_io_limits lim;
  ioq_err e;
  out[IOQ_RES_BANDWIDTH] = out[IOQ_RES_IOPS] = 0;
  if (!dg)
    return;
  if (ioq_grant_limits(dg, &u->p->cfg.units, &lim, &e) < 0) {
    ioq_debug("ungranted: the grant on disk %s is not lent: %s", dg->disk, e.msg);
    return;
  }
  out[IOQ_RES_BANDWIDTH] = lim.rbps;
  out[IOQ_RES_IOPS] = lim.riops;
}

/* The caps already in io.max of a pod seen for the first time. */
static void adopt(struct ungranted *u, struct ug_pod *pp) {
  struct ioq_cg cg;
  ioq_err e;
  pp->adopted = true;
  if (cg_of(u, pp, &cg, &e) < 0)
    return;
  for (size_t d = 0; d < u->n_disks; d++) {
    struct ioq_disk_state_cg st;
    if (pp->s[d].granted || ioq_cg_read_disk(&cg, u->disks[d].dev, &st, &e) < 0 ||
        ioq_limits_unlimited(&st.max))
      continue;
    struct ug_slot *s = &pp->s[d];
    s->bounded = true;
    s->cap[IOQ_RES_BANDWIDTH] = st.max.wbps > st.max.rbps ? st.max.wbps : st.max.rbps;
    s->cap[IOQ_RES_IOPS] = st.max.wiops > st.max.riops ? st.max.wiops : st.max.riops;
  }
}

static const char *num(uint64_t v, char *buf, size_t sz) {
  if (!v)
    return "max";
  snprintf(buf, sz, "%llu", (unsigned long long)v);
  return buf;
}

/* Puts caps (0 = none) in place (nothing is written when they are);
 * false if that failed (logged). *changed (may be NULL): a write happened. */
static bool write_caps(struct ungranted *u, struct ug_pod *pp, size_t d, const uint64_t cap[IOQ_RES_COUNT],
                       bool *changed) {
  struct ug_disk *dk = &u->disks[d];
  struct ug_slot *s = &pp->s[d];
  struct ioq_cg cg;
  ioq_err e;
  if (cg_of(u, pp, &cg, &e) < 0) {
    ioq_debug("ungranted: pod cgroup gone before its bound was written cgroup=%s", pp->cg.dir);
    return false;
  }
  bool first = !s->bounded && (cap[0] || cap[1]);
  struct ioq_iostat before = {0};
  if (first) {
    /* what the pod did before its bound: read just before the write */
    struct ioq_iostat st[UG_DISKS_MAX * 4];
    size_t n = 0;
    ioq_err se;
    if (ioq_cg_read_iostat(&cg, st, sizeof st / sizeof st[0], &n, &se) == 0)
      before = ug_iostat_of(st, n, dk->dev);
  }
  struct ioq_disk_setting set = {.dev = dk->dev};
  set.max.rbps = set.max.wbps = cap[IOQ_RES_BANDWIDTH];
  set.max.riops = set.max.wiops = cap[IOQ_RES_IOPS];
  struct ioq_apply_opts o = {.sysfs_root = u->p->opts.sysfs_root};
  struct ioq_apply_report rep;
  if (changed)
    *changed = false;
  if (ioq_cg_apply_disk(&cg, &set, &o, &rep, &e) < 0) {
    if (!ioq_is_dir(pp->cg.dir)) {
      ioq_debug("ungranted: pod cgroup went away while its bound was written cgroup=%s", pp->cg.dir);
      return false;
    }
    ioq_err_prefix(&e, "disk %s", dk->name);
    ug_failed(u, &e);
    return false;
  }
  bool wrote = false;
  for (size_t k = 0; k < rep.n; k++)
    wrote |= rep.steps[k].changed;
  if (changed)
    *changed = wrote;
  if (wrote) {
    char b[24], i[24];
    metrics_inc(u->p->metrics, C_UG_WRITES);
    ioq_debug("ungranted cap written cgroup=%s disk=%s bps=%s iops=%s", pp->cg.dir, dk->name,
              num(cap[0], b, sizeof b), num(cap[1], i, sizeof i));
  }
  if (first) {
    uint64_t bytes = before.rbytes + before.wbytes, ios = before.rios + before.wios;
    /* after a grant, io.stat holds what the pod did under it: not unbounded */
    if (!s->after_grant && bytes > u->max_bytes_before)
      u->max_bytes_before = bytes;
    char b[24], i[24];
    if (s->after_grant)
      ioq_info("ungranted bound placed cgroup=%s qos=%s disk=%s rbps=%s wbps=%s riops=%s wiops=%s "
               "reason=\"its grant on the disk ended\"",
               pp->cg.dir, ioq_qos_name(pp->cg.qos), dk->name, num(cap[0], b, sizeof b),
               num(cap[0], b, sizeof b), num(cap[1], i, sizeof i), num(cap[1], i, sizeof i));
    else
      ioq_info("ungranted bound placed cgroup=%s qos=%s disk=%s rbps=%s wbps=%s riops=%s wiops=%s "
               "bytes_before=%llu ios_before=%llu",
               pp->cg.dir, ioq_qos_name(pp->cg.qos), dk->name, num(cap[0], b, sizeof b),
               num(cap[0], b, sizeof b), num(cap[1], i, sizeof i), num(cap[1], i, sizeof i),
               (unsigned long long)bytes, (unsigned long long)ios);
  }
  s->bounded = cap[0] || cap[1];
  memcpy(s->cap, cap, sizeof s->cap);
  return true;
}

/* ---- one disk ---- */

static void lift_all(struct ungranted *u, size_t d, const char *why) {
  static const uint64_t none[IOQ_RES_COUNT] = {0};
  size_t lifted = 0;
  for (size_t i = 0; i < u->n; i++) {
    struct ug_slot *s = &u->pods[i].s[d];
    if (s->bounded && !s->granted && write_caps(u, &u->pods[i], d, none, NULL))
      lifted++;
    s->bounded = false;
  }
  if (lifted)
    ioq_info("ungranted bounds removed disk=%s pods=%zu reason=\"%s\"", u->disks[d].name, lifted, why);
}

void ug_balance_disk(struct ungranted *u, size_t d) {
  struct ug_disk *dk = &u->disks[d];
  size_t n = 0;
  for (size_t i = 0; i < u->n; i++)
    if (!u->pods[i].s[d].granted)
      n++;
  dk->bounded = 0;
  if (!n)
    return;
  struct ug_pod **pp = malloc(n * sizeof *pp);
  struct ioq_ug_demand *in = malloc(n * sizeof *in);
  uint64_t *out[IOQ_RES_COUNT] = {calloc(n, sizeof(uint64_t)), calloc(n, sizeof(uint64_t))};
  bool *todo = calloc(n, sizeof *todo);
  if (!pp || !in || !out[0] || !out[1] || !todo) {
    ioq_err e;
    ioq_fail(&e, ENOMEM, "ungranted: out of memory splitting the pool of %s", dk->name);
    ug_failed(u, &e);
    goto done;
  }
  n = 0;
  for (size_t i = 0; i < u->n; i++)
    if (!u->pods[i].s[d].granted)
      pp[n++] = &u->pods[i];
  static const uint64_t floors[IOQ_RES_COUNT] = {IOQ_UG_FLOOR_BPS, IOQ_UG_FLOOR_IOPS};
  for (int r = 0; r < IOQ_RES_COUNT; r++) {
    if (!dk->pool[r])
      continue; /* not bounded in this resource: out stays 0 (max) */
    for (size_t i = 0; i < n; i++) {
      const struct ug_slot *s = &pp[i]->s[d];
      in[i].cap = s->bounded ? s->cap[r] : 0;
      in[i].rate = s->bounded ? s->rate[r] : -1; /* unbounded: its rate says nothing of its demand */
    }
    ioq_ug_split(dk->pool[r], floors[r], in, n, out[r]);
  }
  /* which to write: new bounds and big changes; small cuts too when the
   * caps would not fit the pool without them */
  uint64_t sum[IOQ_RES_COUNT] = {0}, floor_sum[IOQ_RES_COUNT] = {0};
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    bool big = !s->bounded;
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      double cur = (double)s->cap[r], want = (double)out[r][i];
      if ((cur == 0) != (want == 0) || (cur > 0 && (want > cur * (1 + UG_HYSTERESIS) ||
                                                    want < cur * (1 - UG_HYSTERESIS))))
        big = true;
    }
    todo[i] = big;
    for (int r = 0; r < IOQ_RES_COUNT; r++) {
      sum[r] += big ? out[r][i] : s->cap[r];
      floor_sum[r] += floors[r];
    }
  }
  for (int r = 0; r < IOQ_RES_COUNT; r++)
    if (dk->pool[r] && sum[r] > dk->pool[r] && sum[r] > floor_sum[r])
      for (size_t i = 0; i < n; i++)
        if (out[r][i] < pp[i]->s[d].cap[r])
          todo[i] = true;
  /* the caps that stay: rewritten only if someone changed them (the writer
   * reads first and writes nothing when they are in place) */
  for (size_t i = 0; i < n; i++) {
    struct ug_slot *s = &pp[i]->s[d];
    if (todo[i] || !s->bounded)
      continue;
    uint64_t keep[IOQ_RES_COUNT] = {s->cap[0], s->cap[1]};
    bool changed = false;
    if (write_caps(u, pp[i], d, keep, &changed) && changed)
      ioq_warn("ungranted bound drift corrected cgroup=%s disk=%s", pp[i]->cg.dir, dk->name);
  }
  /* cuts before new bounds before raises, so that from the moment every
   * pod is bounded the caps together never exceed the pool: first every
   * bounded pod gets the lower of its old and new cap in each resource,
   * then new pods their bound (a cut from no limit: written after the
   * others' cuts, or a pod already at the whole pool would briefly hold it
   * beside the new pod's share), then the raises */
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    if (!todo[i] || !s->bounded)
      continue;
    uint64_t lo[IOQ_RES_COUNT];
    for (int r = 0; r < IOQ_RES_COUNT; r++) /* 0 = no limit, the highest */
      lo[r] = s->cap[r] && (!out[r][i] || s->cap[r] < out[r][i]) ? s->cap[r] : out[r][i];
    if (memcmp(lo, s->cap, sizeof lo) != 0)
      write_caps(u, pp[i], d, lo, NULL);
  }
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    if (todo[i] && !s->bounded) {
      uint64_t cap[IOQ_RES_COUNT] = {out[0][i], out[1][i]};
      write_caps(u, pp[i], d, cap, NULL); /* then bounded at cap: the raises skip it */
    }
  }
  for (size_t i = 0; i < n; i++) {
    const struct ug_slot *s = &pp[i]->s[d];
    uint64_t cap[IOQ_RES_COUNT] = {out[0][i], out[1][i]};
    if (todo[i] && s->bounded && memcmp(cap, s->cap, sizeof cap) != 0)
      write_caps(u, pp[i], d, cap, NULL);
  }
  for (size_t i = 0; i < n; i++)
    if (pp[i]->s[d].bounded)
      dk->bounded++;
done:
  free(pp);
  free(in);
  free(out[0]);
  free(out[1]);
  free(todo);
}

/* ---- a pass ---- */

static void pass_locked(struct ungranted *u) {
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
      note(u, m);
      dk->active = false;
    }
    if (cd[i].disk.ungranted_note[0])
      note(u, cd[i].disk.ungranted_note);
    if (dk->active && !was)
      ioq_info("ungranted pool in force disk=%s pool_bps=%llu pool_iops=%llu held_bw_units=%llu "
               "held_iops_units=%llu",
               dk->name, (unsigned long long)dk->pool[0], (unsigned long long)dk->pool[1],
               (unsigned long long)held[0], (unsigned long long)held[1]);
    idx[nidx++] = k;
  }
  free(cd);
  for (size_t i = 0; i < u->n; i++)
    measure(u, &u->pods[i], now);

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
  for (size_t i = 0; i < u->n; i++) {
    struct ug_pod *pp = &u->pods[i];
    for (size_t d = 0; d < u->n_disks; d++) {
      bool g = false;
      const struct ioq_disk_grant *dg = NULL;
      for (size_t j = 0; j < nap && !g; j++) {
        if (strcmp(ap[j].uid, pp->cg.uid) != 0)
          continue;
        /* an unknown pod (state file lost) may hold an init container
         * grant on any disk: its limits are left alone too (and it lends
         * nothing: its grant is not known) */
        dg = ap[j].init_unknown ? NULL : ioq_grant_find(&ap[j].grant, u->disks[d].name);
        g = ap[j].init_unknown || dg;
      }
      /* the grant writer owns the line while there is a grant (it replaced
       * our bound), and cleared it when the grant went: start afresh */
      if (g != pp->s[d].granted) {
        slot_reset(&pp->s[d]);
        pp->s[d].after_grant = !g;
      }
      pp->s[d].granted = g;
      grant_of(u, dg, pp->s[d].grant);
    }
    if (!pp->adopted)
      adopt(u, pp);
  }
  free(ap);
  ug_lend_pods(u, now);
  for (size_t k = 0; k < nidx; k++) {
    size_t d = (size_t)idx[k];
    if (u->disks[d].active) {
      ug_lend_pass(u, d);
      ug_balance_disk(u, d);
    } else {
      memset(u->disks[d].lent, 0, sizeof u->disks[d].lent);
      lift_all(u, d, "no pod holds units of the disk");
      u->disks[d].bounded = 0;
    }
  }
  podtable_writes_unlock(p->table);
}

void ungranted_sync(struct ungranted *u) {
  if (!u)
    return;
  pthread_mutex_lock(&u->mu);
  pass_locked(u);
  pthread_mutex_unlock(&u->mu);
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
  }
  t->max_bytes_before = u->max_bytes_before;
  t->reclaims = u->reclaims;
  t->reclaim_s = u->reclaim_s;
  pthread_mutex_unlock(&u->mu);
  return n;
}

json_object *ungranted_pod_json(struct ungranted *u, const char *uid) {
  json_object *o = json_object_new_object();
  if (!o || !u)
    return o;
  json_object *disks = json_object_new_array();
  pthread_mutex_lock(&u->mu);
  const struct ug_pod *pp = NULL;
  for (size_t i = 0; i < u->n && !pp; i++)
    if (strcmp(u->pods[i].cg.uid, uid) == 0)
      pp = &u->pods[i];
  json_object_object_add(o, "podSeen", json_object_new_boolean(pp != NULL));
  if (pp)
    json_object_object_add(o, "cgroup", json_object_new_string(pp->cg.dir));
  for (size_t d = 0; disks && d < u->n_disks; d++) {
    const struct ug_disk *ud = &u->disks[d];
    json_object *j = json_object_new_object();
    if (!j)
      break;
    json_object_object_add(j, "disk", json_object_new_string(ud->name));
    /* bounds apply only while some pod holds units of the disk */
    json_object_object_add(j, "active", json_object_new_boolean(ud->active));
    json_object_object_add(j, "poolBytesPerSec",
                           json_object_new_int64((int64_t)(ud->active ? ud->pool[IOQ_RES_BANDWIDTH] : 0)));
    json_object_object_add(j, "poolIops",
                           json_object_new_int64((int64_t)(ud->active ? ud->pool[IOQ_RES_IOPS] : 0)));
    json_object_object_add(j, "podsBounded", json_object_new_int64((int64_t)ud->bounded));
    /* the pool is what nobody holds (base) plus what granted pods lend now */
    json_object_object_add(j, "poolBaseBytesPerSec",
                           json_object_new_int64((int64_t)(ud->active ? ud->base_pool[IOQ_RES_BANDWIDTH] : 0)));
    json_object_object_add(j, "poolBaseIops",
                           json_object_new_int64((int64_t)(ud->active ? ud->base_pool[IOQ_RES_IOPS] : 0)));
    json_object_object_add(j, "lentBytesPerSec",
                           json_object_new_int64((int64_t)(ud->active ? ud->lent[IOQ_RES_BANDWIDTH] : 0)));
    json_object_object_add(j, "lentIops", json_object_new_int64((int64_t)(ud->active ? ud->lent[IOQ_RES_IOPS] : 0)));
    if (pp) {
      const struct ug_slot *sl = &pp->s[d];
      json_object_object_add(j, "granted", json_object_new_boolean(sl->granted));
      json_object_object_add(j, "bounded", json_object_new_boolean(sl->bounded));
      json_object_object_add(j, "capBytesPerSec",
                             json_object_new_int64((int64_t)(sl->bounded ? sl->cap[IOQ_RES_BANDWIDTH] : 0)));
      json_object_object_add(j, "capIops",
                             json_object_new_int64((int64_t)(sl->bounded ? sl->cap[IOQ_RES_IOPS] : 0)));
      if (sl->rate[IOQ_RES_BANDWIDTH] >= 0)
        json_object_object_add(j, "measuredBytesPerSec",
                               json_object_new_double(sl->rate[IOQ_RES_BANDWIDTH]));
      if (sl->rate[IOQ_RES_IOPS] >= 0)
        json_object_object_add(j, "measuredIops", json_object_new_double(sl->rate[IOQ_RES_IOPS]));
      if (sl->granted && ud->active) { /* as a lender: what it lends of its grant now */
        json_object_object_add(j, "lendsBytesPerSec",
                               json_object_new_int64((int64_t)(sl->lend[IOQ_RES_BANDWIDTH].grant -
                                                               sl->lend[IOQ_RES_BANDWIDTH].keep)));
        json_object_object_add(j, "lendsIops", json_object_new_int64((int64_t)(sl->lend[IOQ_RES_IOPS].grant -
                                                                                sl->lend[IOQ_RES_IOPS].keep)));
      }
    }
    json_object_array_add(disks, j);
  }
  pthread_mutex_unlock(&u->mu);
  if (disks)
    json_object_object_add(o, "disks", disks);
  return o;
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
      ungranted_sync(u);
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
