// SPDX-License-Identifier: Apache-2.0
/* Releasing the pods a pod resources List no longer shows (podtable_release_gone):
 * what the cgroup tree and the pod cache say of each, the grace for a pod
 * still alive, and a gone pod's DRA claims. */
#include "podtable.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "state/drastate.h"
#include "podtable_internal.h"
#include "base/fsutil.h"
#include "base/log.h"

struct missing_pod {
  char ns[IOQ_POD_NAMESPACE_MAX + 1];
  char name[IOQ_POD_NAME_MAX + 1];
  char uid[IOQ_POD_UID_MAX + 1];
  char cgroup[PATH_MAX];
  bool cgroup_there, alive;
  bool replaced;     /* the API server shows the name under another UID */
  bool cache_synced; /* the pod cache has listed */
  char phase[16];
};

/* Whether kubelet's List shows the pod with its units: listed with some, or
 * listed without any while its regular init container's (never listed) are
 * what it holds. */
static bool listed_with_units(struct podtable *f, const struct podres_list *l,
                              const struct applied_pod *ap) {
  const struct podres_pod *pr = podres_find_pod(l, ap->ns, ap->name);
  return pr && (pr->n_ctrs || pt_holds_init(ap) ||
                (f->o.dra && drastate_pod_has(f->o.dra, NULL, NULL, ap->uid)));
}

/* The remembered pods applied before the List, with what the cgroup tree
 * and the pod cache say of them: the List names pods by namespace/name only,
 * so a listed name may be a new instance of a recreated pod. Gathered
 * without the pod table's locks held, since the pod cache calls into the
 * pod table with its own lock held. */
static size_t gather_missing(struct podtable *f, const struct podres_list *listed,
                             struct podcache *pc, struct missing_pod **out) {
  pthread_mutex_lock(&f->lock);
  size_t n = 0;
  struct missing_pod *m = calloc(f->n ? f->n : 1, sizeof *m);
  for (size_t i = 0; m && i < f->n; i++) {
    const struct applied_pod *ap = &f->pods[i];
    if (ap->applied_at >= listed->asked_at)
      continue;
    IOQ_COPY_FIELD(m[n].ns, ap->ns);
    IOQ_COPY_FIELD(m[n].name, ap->name);
    IOQ_COPY_FIELD(m[n].uid, ap->uid);
    IOQ_COPY_FIELD(m[n].cgroup, ap->cgroup);
    n++;
  }
  pthread_mutex_unlock(&f->lock);
  for (size_t i = 0; i < n; i++) {
    m[i].cgroup_there = ioq_is_dir(m[i].cgroup);
    struct pod_info pi;
    bool cached = pc && podcache_peek(pc, m[i].ns, m[i].name, &pi);
    m[i].cache_synced = pc && podcache_synced(pc);
    m[i].replaced = cached && pi.uid[0] && strcmp(pi.uid, m[i].uid) != 0;
    /* alive: the API server still shows it, same UID, not on its way out */
    m[i].alive = m[i].cgroup_there && cached && strcmp(pi.uid, m[i].uid) == 0 && !pi.terminating &&
                 strcmp(pi.phase, "Succeeded") != 0 && strcmp(pi.phase, "Failed") != 0;
    if (m[i].alive)
      ioq_copy_trunc(m[i].phase, sizeof m[i].phase, pi.phase[0] ? pi.phase : "alive");
  }
  *out = m;
  return n;
}

static const struct missing_pod *find_missing(const struct missing_pod *m, size_t n,
                                              const struct applied_pod *ap) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(m[i].ns, ap->ns) == 0 && strcmp(m[i].name, ap->name) == 0 &&
        strcmp(m[i].uid, ap->uid) == 0)
      return &m[i];
  return NULL;
}

static void forget_claims(struct drastate *dra, const struct applied_pod *ap) {
  ioq_err e;
  int n = drastate_forget_pod(dra, ap->uid, &e);
  if (n < 0)
    ioq_warn("claims of a gone pod not forgotten (kept until kubelet unprepares them) pod=%s/%s "
             "uid=%s error=\"%s\"",
             ap->ns, ap->name, ap->uid, e.msg);
  else if (n > 0)
    ioq_info("dra claims of a gone pod forgotten pod=%s/%s uid=%s claims=%d", ap->ns, ap->name,
             ap->uid, n);
}

size_t podtable_release_gone(struct podtable *f, const struct podres_list *listed,
                             struct podcache *pc) {
  struct missing_pod *miss;
  size_t n_miss = gather_missing(f, listed, pc, &miss);
  if (!miss) {
    ioq_error("releasing gone pods skipped reason=out-of-memory");
    return 0;
  }
  size_t released = 0;
  pthread_mutex_lock(&f->apply_lock);
  pthread_mutex_lock(&f->lock);
  struct applied_pod *taken = malloc((f->n ? f->n : 1) * sizeof *taken);
  if (!taken) {
    pthread_mutex_unlock(&f->lock);
    pthread_mutex_unlock(&f->apply_lock);
    free(miss);
    ioq_error("releasing gone pods skipped reason=out-of-memory (the list of pods to clear)");
    return 0;
  }
  for (size_t i = 0; i < f->n;) {
    struct applied_pod *ap = &f->pods[i];
    const struct missing_pod *mp = find_missing(miss, n_miss, ap);
    if (ap->applied_at >= listed->asked_at ||
        (listed_with_units(f, listed, ap) && !(mp && mp->replaced))) {
      ap->missing_since = 0;
      i++;
      continue;
    }
    if (!mp) { /* applied after the gathering: the next pass decides */
      i++;
      continue;
    }
    /* restored from the state file: only the API server can say it is gone
     * (a restarting kubelet may not list it yet) */
    if (ap->applied_at == 0 && !mp->alive && !mp->cache_synced && mp->cgroup_there) {
      i++;
      continue;
    }
    if (mp->alive) {
      if (!ap->missing_since) {
        ap->missing_since = listed->asked_at;
        ioq_warn("pod not in kubelet's pod resources List but %s per the API server, keeping its "
                 "limits for up to %.0f s (kubelet restarting?) pod=%s/%s uid=%s",
                 mp->phase, PODTABLE_MISSING_GRACE_S, ap->ns, ap->name, ap->uid);
      }
      if (listed->asked_at - ap->missing_since < PODTABLE_MISSING_GRACE_S) {
        i++;
        continue;
      }
      ioq_warn("pod still not in kubelet's pod resources List after %.0f s, releasing it pod=%s/%s "
               "uid=%s",
               PODTABLE_MISSING_GRACE_S, ap->ns, ap->name, ap->uid);
    }
    pt_take_locked(f, i, &taken[released++]);
  }
  pthread_mutex_unlock(&f->lock);
  /* DRA mode: a gone pod's claims are done with; kubelet's unprepare, if
   * it still comes, finds nothing to do (a claim recovered from the API
   * server just after kubelet unprepared it ends here too) */
  for (size_t i = 0; f->o.dra && i < released; i++)
    forget_claims(f->o.dra, &taken[i]);
  pt_clear_taken(f, taken, released, "pod gone");
  pt_save_state(f);
  pthread_mutex_unlock(&f->apply_lock);
  free(miss);
  return released;
}
