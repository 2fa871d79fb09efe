// SPDX-License-Identifier: Apache-2.0
/* The reconcile loop: every enforcement.reconcileIntervalSeconds, and soon
 * after pod events or a PreStart, it
 *   1. re-probes the disks (health and units; ListAndWatch follows),
 *   2. lists pod resources and re-applies every pod's grant (drift is
 *      rewritten; after a plugin restart this rebuilds everything from the
 *      List alone), clears the limits of pods no longer listed,
 *   3. publishes the node annotation when it changed.
 * A failed List changes nothing: pods are released only on a List that
 * succeeded and no longer shows them. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/catalog.h"
#include "state/diskstate.h"
#include "diskalloc.h"
#include "drarecover.h"
#include "state/drastate.h"
#include "drift.h"
#include "podtable.h"
#include "support/grpcs.h"
#include "disk/blockdev.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/monoclock.h"
#include "grant/nodeanno.h"
#include "kube/kube.h"
#include "support/metrics.h"
#include "nodepolicy.h"
#include "nvmetns.h"
#include "plugin.h"
#include "state/podcache.h"
#include "state/podres.h"
#include "reconcile.h"

#define MIN_PASS_GAP_S 0.5 /* coalesce bursts of pod events */
#define PUBLISH_BACKOFF_MAX_S 60.0

struct reconciler {
  struct plugin *p;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool kicked, stop;
  bool probe; /* the next pass re-probes first (reconciler_kick_probe) */
  char *published; /* last annotation the API server accepted, without publishedAt */
  time_t published_at; /* when it was (wall clock, as in publishedAt) */
  double publish_due, publish_backoff;
};

/* ---- disks ---- */

static char g_probe_err[IOQ_ERR_MSG_MAX]; /* only the reconcile thread and startup write it */

void inventory_refresh(struct plugin *p) {
  struct ioq_inventory inv;
  ioq_err e;
  const struct ioq_config *c = plugin_cfg(p); /* one pool's settings for the whole refresh */
  metrics_inc(p->metrics, C_PROBES);
  if (ioq_inventory_build(c, &p->probe, &inv, &e) == 0) {
    /* the node policy can change what the probe finds (iocost on a disk
     * makes io.weight effective): probe again after it changed something */
    if (nodepolicy_apply(p, c, &inv) > 0) {
      ioq_inventory_free(&inv);
      if (ioq_inventory_build(c, &p->probe, &inv, &e) < 0)
        goto failed;
    }
    /* after the node policy, which paces at everything granted (namespaces
     * included): the namespaces' units are not offered to pods */
    nvmetns_refresh(p, &inv);
    if (g_probe_err[0])
      ioq_info("disk probe recovered");
    g_probe_err[0] = '\0';
    catalog_set_faults(p->catalog, inv.faults, inv.n_faults); /* first: reasons of lost disks */
    /* once the node has moved to another pool, a known disk the probe
     * lost without a selector fault is one the pool in force does not select */
    char why[160];
    bool moved = atomic_load(&p->live) != NULL;
    if (moved)
      disks_forget_unselected(p, &inv, c);
    catalog_update(p->catalog, inv.disks, inv.n,
                   moved ? disks_unselected_why(c, why, sizeof why) : NULL);
    disks_report_health(p);
    /* selectors that gave no disk cost only themselves; with none left
     * there is nothing to serve (readyz says why) */
    if (inv.n || !inv.n_faults)
      atomic_store(&p->inventory_ok, true);
    ioq_inventory_free(&inv);
    return;
  }
failed:
  metrics_inc(p->metrics, C_PROBE_FAIL);
  if (strcmp(g_probe_err, e.msg) != 0)
    ioq_warn("disk probe failed error=\"%s\"", e.msg);
  snprintf(g_probe_err, sizeof g_probe_err, "%s", e.msg);
  /* The probe is all-or-nothing; say which known disks are gone. */
  struct cat_disk *cd;
  size_t n = catalog_snapshot(p->catalog, &cd);
  for (size_t i = 0; i < n; i++) {
    struct ioq_blockdev bd;
    ioq_err be;
    if (ioq_blockdev_read(p->opts.sysfs_root, cd[i].disk.dev.name, &bd, &be) < 0) {
      char why[sizeof cd[i].why];
      snprintf(why, sizeof why, "disk %s is gone: %s", cd[i].disk.dev.name, be.msg);
      catalog_set_health(p->catalog, cd[i].disk.dev.name, false, why);
    } else if (bd.major != cd[i].dev.major || bd.minor != cd[i].dev.minor) {
      char why[sizeof cd[i].why];
      snprintf(why, sizeof why, "disk %s changed from %u:%u to %u:%u", cd[i].disk.dev.name,
               cd[i].dev.major, cd[i].dev.minor, bd.major, bd.minor);
      catalog_set_health(p->catalog, cd[i].disk.dev.name, false, why);
    }
  }
  free(cd);
  disks_report_health(p);
}

/* ---- guesses: ambiguous init-only PreStarts (prestart.c) ---- */

/* Whether the pod shows it ran a regular init container asking for units of
 * r: one running or terminated per its status, or the pod no longer
 * Pending (its init containers are done). */
static bool ran_init(const struct pod_info *pi, enum ioq_resource r) {
  if (strcmp(pi->phase, "Pending") != 0)
    return true;
  for (size_t k = 0; k < pi->n_ctrs; k++)
    if (pi->ctrs[k].kind == IOQ_CTR_INIT && pi->ctrs[k].units[r] &&
        (pi->ctrs[k].state == PCS_RUNNING || pi->ctrs[k].state == PCS_TERMINATED))
      return true;
  return false;
}

/* A guess (the units of an ambiguous PreStart, written to every candidate)
 * is settled once exactly one of the pods holding it shows it ran such an
 * init container: that pod keeps the units, the others drop them and are
 * applied again, which lowers their limit back to their own grant. */
static void settle_guesses(struct plugin *p, const struct podres_list *l) {
  struct init_guess *g;
  size_t n = podtable_guesses(p->table, &g);
  bool *ran = calloc(n ? n : 1, sizeof *ran), *seen = calloc(n ? n : 1, sizeof *seen);
  struct pod_info *pi = malloc(sizeof *pi);
  if (!g || !ran || !seen || !pi || !p->pods) {
    if (n && (!ran || !seen || !pi))
      ioq_error("settling init container guesses skipped reason=out-of-memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    ran[i] = podcache_peek(p->pods, g[i].ns, g[i].name, pi) && strcmp(pi->uid, g[i].uid) == 0 &&
             ran_init(pi, g[i].r);
  for (size_t i = 0; i < n; i++) {
    if (seen[i])
      continue;
    size_t n_ran = 0, asker = i;
    for (size_t j = i; j < n; j++)
      if (g[j].r == g[i].r && strcmp(g[j].first, g[i].first) == 0) {
        seen[j] = true;
        if (ran[j]) {
          n_ran++;
          asker = j;
        }
      }
    if (n_ran != 1)
      continue;
    ioq_info("ambiguous init container start settled: the pod status shows which ran "
             "resource=%s pod=%s/%s uid=%s",
             ioq_resource_name(g[i].r), g[asker].ns, g[asker].name, g[asker].uid);
    podtable_settle_guess(p->table, g[asker].uid, g[asker].r, true);
    for (size_t j = i; j < n; j++) {
      if (j == asker || g[j].r != g[i].r || strcmp(g[j].first, g[i].first) != 0)
        continue;
      podtable_settle_guess(p->table, g[j].uid, g[j].r, false);
      const struct podres_pod *pr = podres_find_pod(l, g[j].ns, g[j].name);
      ioq_err e;
      struct podtable_result res;
      if (!pr) /* no longer listed: the release pass takes it */
        continue;
      if (podcache_get(p->pods, pr->ns, pr->name, pi, &e) < 0 ||
          podtable_apply(p->table, pr, pi, g[j].r, NULL, 0, 0, &res, &e) < 0)
        ioq_warn("lowering the limit of a pod that did not ask failed pod=%s/%s error=\"%s\"",
                 pr->ns, pr->name, e.msg);
      else
        ioq_info("limit of a pod that did not ask lowered to its own grant pod=%s/%s uid=%s "
                 "writes=%u",
                 pr->ns, pr->name, pi->uid, res.writes);
    }
  }
out:
  free(pi);
  free(seen);
  free(ran);
  free(g);
}

/* ---- grants ---- */

/* DRA mode: once after start, the prepared claims the state file lacks
 * (drarecover.h), before the pass applies the pods' grants; retried on
 * every pass until the API server answers. */
static void recover_dra_claims(struct plugin *p) {
  static char last_err[IOQ_ERR_MSG_MAX];
  if (!p->dra || atomic_load(&p->dra_recovered) || !p->kube_rpc)
    return;
  struct dra_recover_stats st;
  ioq_err e;
  if (dra_recover(p, &st, &e) < 0) {
    if (strcmp(last_err, e.msg) != 0)
      ioq_warn("prepared DRA claims not checked against the API server yet (retried every pass) "
               "error=\"%s\"",
               e.msg);
    snprintf(last_err, sizeof last_err, "%s", e.msg);
    return;
  }
  atomic_store(&p->dra_recovered, true);
  ioq_log(st.recovered ? IOQ_LOG_WARN : IOQ_LOG_INFO,
          "prepared DRA claims checked against the API server pods=%zu claims=%zu recovered=%zu "
          "skipped=%zu held=%zu",
          st.pods, st.claims, st.recovered, st.skipped, drastate_count(p->dra));
}

void reconcile_pass(struct plugin *p) {
  struct podres_list list;
  ioq_err e;
  static char last_err[IOQ_ERR_MSG_MAX];
  recover_dra_claims(p);
  if (podres_list(p->opts.pod_resources_socket, PODRES_TIMEOUT_MS, &list, &e) < 0) {
    metrics_inc(p->metrics, C_RECONCILE_FAIL);
    if (strcmp(last_err, e.msg) != 0)
      ioq_warn("reconcile skipped: pod resources List failed error=\"%s\"", e.msg);
    snprintf(last_err, sizeof last_err, "%s", e.msg);
    return;
  }
  if (last_err[0])
    ioq_info("pod resources List works again");
  last_err[0] = '\0';
  podcache_drop_terminal(p->pods, &list); /* done pods: not counted, not re-applied */
  listview_note(p->table, &list);
  settle_guesses(p, &list);
  size_t ok = 0, failed = 0, considered = 0;
  /* the state file was lost: init-only pods may hold a grant nobody knows */
  bool lost = podtable_state_lost(p->table);
  struct pod_info *pi = malloc(sizeof *pi);
  for (size_t i = 0; pi && i < list.n && !atomic_load(&p->stopping); i++) {
    const struct podres_pod *pr = &list.pods[i];
    /* a pod without listed units matters only if it has a grant in place:
     * its regular init container's, which kubelet does not list, or (DRA
     * mode) its prepared claims' */
    bool init_only = !pr->n_ctrs && !(p->dra && drastate_pod_has(p->dra, pr->ns, pr->name, NULL));
    if (init_only && !lost &&
        podtable_init_held(p->table, pr->ns, pr->name, NULL, -1, NULL, 0) != 1)
      continue;
    if (!p->pods) {
      considered++;
      failed++;
      continue;
    }
    if (podcache_get(p->pods, pr->ns, pr->name, pi, &e) < 0) {
      metrics_err(p->metrics, FAIL_POD_LOOKUP);
      ioq_warn("reconcile: pod lookup failed pod=%s/%s error=\"%s\"", pr->ns, pr->name, e.msg);
      considered++;
      failed++;
      continue;
    }
    if (init_only && lost &&
        podtable_init_held(p->table, pr->ns, pr->name, pi->uid, -1, NULL, 0) != 1 &&
        !podtable_unknown(p->table, pi))
      continue;
    considered++;
    struct podtable_result res;
    if (podtable_apply(p->table, pr, pi, IOQ_RES_BANDWIDTH, NULL, 0, 0, &res, &e) < 0) {
      metrics_err(p->metrics, fail_reason_counted(res.fail));
      ioq_warn("reconcile: grant not in place pod=%s/%s reason=%s error=\"%s\"", pr->ns, pr->name,
               fail_reason_name(res.fail), e.msg);
      failed++;
      continue;
    }
    if (res.grant_changed) {
      ioq_info("grant changed pod=%s/%s cgroup=%s writes=%u", pr->ns, pr->name, res.cgroup,
               res.writes);
    } else if (res.known && res.writes) {
      metrics_inc(p->metrics, C_DRIFT_FIXED);
      drift_report(p, pr, pi->uid, &res);
    } else if (!res.known) {
      ioq_info("grant rebuilt from pod resources pod=%s/%s cgroup=%s writes=%u", pr->ns, pr->name,
               res.cgroup, res.writes);
    }
    ok++;
  }
  free(pi);
  size_t released = podtable_release_gone(p->table, &list, p->pods);
  for (size_t i = 0; i < released; i++)
    metrics_inc(p->metrics, C_PODS_RELEASED);
  metrics_inc(p->metrics, failed ? C_RECONCILE_FAIL : C_RECONCILE_OK);
  ioq_debug("reconcile pass pods=%zu ok=%zu failed=%zu released=%zu", considered, ok, failed,
            released);
  podres_list_free(&list);
  atomic_store(&p->first_reconcile_done, true);
}

/* ---- node annotation ---- */

/* published_at 0: the content only, to compare with the last one sent;
 * nvmet: nvmetns_state() (may be NULL) */
static char *annotation_text(struct plugin *p, time_t published_at, json_object *nvmet) {
  struct ioq_node_state st = {0};
  st.version = IOQ_NODE_ANNO_VERSION;
  if (!ioq_copy(st.node, sizeof st.node, p->opts.node_name)) {
    ioq_error("node annotation: node name too long: %.80s", p->opts.node_name);
    return NULL;
  }
  st.units = p->cfg.units;
  st.published_at = (int64_t)published_at;
  st.n_disks = plugin_disk_states(p, &st.disks);
  char *text = NULL;
  if (st.disks) {
    /* which pods `allocated` counts: lets the extender drop its assumptions */
    st.n_pods = listview_listed_uids(p->table, p->pods, &st.pods);
    struct ioq_select_fault *f;
    st.n_faults = catalog_faults(p->catalog, &f);
    st.faults = f;
    st.nvmet = nvmet;
    text = f ? ioq_node_anno_format(&st) : NULL;
    free(f);
  }
  free(st.disks);
  free(st.pods);
  return text;
}

static void publish(struct reconciler *rc) {
  struct plugin *p = rc->p;
  /* allocated units come from the List: publish nothing before one worked */
  if (!p->kube || !listview_have_list(p->table) || ioq_mono_s() < rc->publish_due)
    return;
  json_object *nvmet = nvmetns_state(p); /* once: both texts below carry it */
  char *content = annotation_text(p, 0, nvmet);
  if (!content) {
    json_object_put(nvmet);
    ioq_error("node annotation build failed reason=out-of-memory");
    return;
  }
  /* unchanged content is sent again every IOQ_NODE_ANNO_REFRESH_S with a
   * new publishedAt, so the extender can tell this plugin is alive */
  time_t now = time(NULL);
  if (rc->published && strcmp(rc->published, content) == 0 &&
      now - rc->published_at < IOQ_NODE_ANNO_REFRESH_S && now >= rc->published_at) {
    json_object_put(nvmet);
    free(content);
    return;
  }
  char *text = annotation_text(p, now, nvmet);
  json_object_put(nvmet);
  if (!text) {
    free(content);
    ioq_error("node annotation build failed reason=out-of-memory");
    return;
  }
  json_object *patch = json_object_new_object(), *meta = json_object_new_object(),
              *ann = json_object_new_object();
  json_object_object_add(ann, IOQ_NODE_ANNOTATION, json_object_new_string(text));
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(patch, "metadata", meta);
  char path[400];
  snprintf(path, sizeof path, "/api/v1/nodes/%s", p->opts.node_name);
  ioq_err e;
  long status = 0;
  if (ioq_kube_merge_patch(p->kube, path, patch, NULL, &status, &e) == 0) {
    metrics_inc(p->metrics, C_PUBLISH_OK);
    ioq_info("node annotation published node=%s annotation=%s bytes=%zu", p->opts.node_name,
             IOQ_NODE_ANNOTATION, strlen(text));
    ioq_debug("node annotation value=%s", text);
    free(rc->published);
    rc->published = content;
    rc->published_at = now;
    free(text);
    rc->publish_backoff = 0;
  } else {
    metrics_inc(p->metrics, C_PUBLISH_FAIL);
    rc->publish_backoff = rc->publish_backoff < 1 ? 1
                          : rc->publish_backoff * 2 > PUBLISH_BACKOFF_MAX_S
                              ? PUBLISH_BACKOFF_MAX_S
                              : rc->publish_backoff * 2;
    rc->publish_due = ioq_mono_s() + rc->publish_backoff;
    ioq_warn("node annotation publish failed node=%s status=%ld retry_in=%.0fs error=\"%s\"",
             p->opts.node_name, status, rc->publish_backoff, e.msg);
    free(text);
    free(content);
  }
  json_object_put(patch);
}

/* ---- thread ---- */

static void *reconciler_main(void *arg) {
  struct reconciler *rc = arg;
  struct plugin *p = rc->p;
  double last = 0;
  for (;;) {
    /* the pool in force sets it: taken again for every wait */
    unsigned every = plugin_cfg(p)->enforcement.reconcile_interval_s;
    double interval = every ? every : 10;
    pthread_mutex_lock(&rc->mu);
    double next = last + interval;
    while (!rc->stop && !rc->kicked) {
      double now = ioq_mono_s();
      if (now >= next)
        break;
      /* also wake when a publish retry falls due */
      double until = rc->publish_due > now && rc->publish_due < next ? rc->publish_due : next;
      struct timespec ts = ioq_mono_deadline(until - now);
      if (pthread_cond_timedwait(&rc->cv, &rc->mu, &ts) == ETIMEDOUT && until < next)
        break;
    }
    bool stop = rc->stop, probe = rc->probe;
    rc->kicked = rc->probe = false;
    pthread_mutex_unlock(&rc->mu);
    if (stop)
      break;
    double now = ioq_mono_s();
    if (now - last < MIN_PASS_GAP_S) {
      struct timespec ts = {0, (long)((MIN_PASS_GAP_S - (now - last)) * 1e9)};
      nanosleep(&ts, NULL);
    }
    if (ioq_mono_s() >= next || last == 0 || probe) {
      inventory_refresh(p);
    }
    reconcile_pass(p);
    publish(rc);
    last = ioq_mono_s();
  }
  return NULL;
}

struct reconciler *reconciler_start(struct plugin *p, ioq_err *e) {
  struct reconciler *rc = calloc(1, sizeof *rc);
  if (!rc)
    return ioq_fail(e, ENOMEM, "reconciler: out of memory allocating the reconciler"), NULL;
  rc->p = p;
  pthread_mutex_init(&rc->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&rc->cv, &ca);
  pthread_condattr_destroy(&ca);
  int r = pthread_create(&rc->thread, NULL, reconciler_main, rc);
  if (r != 0) {
    pthread_cond_destroy(&rc->cv);
    pthread_mutex_destroy(&rc->mu);
    free(rc);
    errno = r;
    return ioq_fail_errno(e, "reconciler thread"), NULL;
  }
  return rc;
}

void reconciler_kick(struct reconciler *rc) {
  if (!rc)
    return;
  pthread_mutex_lock(&rc->mu);
  rc->kicked = true;
  pthread_cond_signal(&rc->cv);
  pthread_mutex_unlock(&rc->mu);
}

void reconciler_kick_probe(struct reconciler *rc) {
  if (!rc)
    return;
  pthread_mutex_lock(&rc->mu);
  rc->kicked = rc->probe = true;
  pthread_cond_signal(&rc->cv);
  pthread_mutex_unlock(&rc->mu);
}

void reconciler_stop(struct reconciler *rc) {
  if (!rc)
    return;
  pthread_mutex_lock(&rc->mu);
  rc->stop = true;
  pthread_cond_signal(&rc->cv);
  pthread_mutex_unlock(&rc->mu);
  pthread_join(rc->thread, NULL);
}

void reconciler_free(struct reconciler *rc) {
  if (!rc)
    return;
  pthread_cond_destroy(&rc->cv);
  pthread_mutex_destroy(&rc->mu);
  free(rc->published);
  free(rc);
}
