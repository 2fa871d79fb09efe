// SPDX-License-Identifier: Apache-2.0
/* The daemon's table of applied pods (plugin/daemon/core/podtable.c) against a
 * temp cgroup v2 tree: a grant written and remembered, recomputed when
 * kubelet's List changes, released when the pod is gone (not while a List
 * raced an apply), a recreated pod's earlier instance cleared, an init-only
 * pod's grant, the List view (held and allocated units), and the lock
 * discipline (the write lock holds an apply off; readers copy whole
 * entries). */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "state/catalog.h"
#include "core/podtable.h"
#include "fixture.h"
#include "base/fsutil.h"

#define UID_A "0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d"
#define UID_B "11111111-2222-3333-4444-555555555555"
#define POD_CG(uid) "cg/kubepods/burstable/pod" uid

static char *g_root;
static struct catalog *g_cat;
static struct podtable *g_f;

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pod_cgroup(const char *uid) {
  char rel[256];
  snprintf(rel, sizeof rel, "cg/kubepods/burstable/pod%s/", uid);
  const char *files[][2] = {{"cgroup.controllers", "io memory\n"},
                            {"io.max", ""},
                            {"io.weight", "default 100\n"},
                            {"io.bfq.weight", "default 100\n"}};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char p[320];
    snprintf(p, sizeof p, "%s%s", rel, files[i][0]);
    fx_write(g_root, p, files[i][1]);
  }
}

static void setup(void) {
  g_root = fx_tmpdir();
  fx_write(g_root, "sys/devices/pci0/block/sdb/dev", "8:16\n");
  fx_write(g_root, "sys/devices/pci0/block/sdb/queue/scheduler", "[mq-deadline] kyber bfq none\n");
  fx_symlink(g_root, "sys/dev/block/8:16", "../../devices/pci0/block/sdb");
  fx_symlink(g_root, "sys/class/block/sdb", "../../devices/pci0/block/sdb");
  fx_write(g_root, "cg/cgroup.controllers", "io memory\n");
  fx_write(g_root, "cg/kubepods/cgroup.controllers", "io memory\n");
  fx_write(g_root, "cg/kubepods/burstable/cgroup.controllers", "io memory\n");
  pod_cgroup(UID_A);
  pod_cgroup(UID_B);

  g_cat = catalog_new();
  struct ioq_disk d;
  memset(&d, 0, sizeof d);
  snprintf(d.dev.name, sizeof d.dev.name, "sdb");
  d.dev.major = 8;
  d.dev.minor = 16;
  snprintf(d.class_name, sizeof d.class_name, "default");
  d.units[IOQ_RES_BANDWIDTH] = 100;
  d.units[IOQ_RES_IOPS] = 100;
  d.enforceable = true;
  cr_assert(catalog_update(g_cat, &d, 1, NULL));

  struct podtable_opts o;
  memset(&o, 0, sizeof o);
  o.layout.io_version = IOQ_CGV2;
  snprintf(o.layout.root, sizeof o.layout.root, "%s/cg", g_root);
  snprintf(o.layout.io_root, sizeof o.layout.io_root, "%s/cg", g_root);
  snprintf(o.layout.unified_root, sizeof o.layout.unified_root, "%s/cg", g_root);
  o.driver = IOQ_CG_DRIVER_CGROUPFS;
  o.kubelet_cgroup_root = "/";
  o.sysfs_root = fx_path(g_root, "sys");
  ioq_unit_sizes_default(&o.sizes);
  o.catalog = g_cat;
  g_f = podtable_new(&o);
  cr_assert_not_null(g_f);
}

static void teardown(void) {
  podtable_free(g_f);
  catalog_free(g_cat);
  fx_rmtree(g_root);
  free(g_root);
}

TestSuite(podtable, .init = setup, .fini = teardown, .timeout = 30);

/* A listed pod: one app container "app" holding n bandwidth units of sdb
 * (IDs from `first`). The IDs are malloc'd; free with pod_free. */
static struct podres_pod listed_pod(const char *name, size_t first, size_t n) {
  struct podres_pod p;
  memset(&p, 0, sizeof p);
  snprintf(p.ns, sizeof p.ns, "default");
  snprintf(p.name, sizeof p.name, "%s", name);
  if (!n)
    return p;
  p.ctrs = calloc(1, sizeof *p.ctrs);
  snprintf(p.ctrs[0].name, sizeof p.ctrs[0].name, "app");
  p.ctrs[0].ids = calloc(n, sizeof(char *));
  for (size_t i = 0; i < n; i++) {
    char id[64];
    snprintf(id, sizeof id, "sdb-bw-%zu", first + i);
    p.ctrs[0].ids[i] = strdup(id);
  }
  p.ctrs[0].n_ids = n;
  p.n_ctrs = 1;
  return p;
}

static void pod_free(struct podres_pod *p) {
  for (size_t c = 0; c < p->n_ctrs; c++) {
    for (size_t i = 0; i < p->ctrs[c].n_ids; i++)
      free(p->ctrs[c].ids[i]);
    free(p->ctrs[c].ids);
  }
  free(p->ctrs);
}

static struct pod_info info(const char *name, const char *uid, const char *phase) {
  struct pod_info pi;
  memset(&pi, 0, sizeof pi);
  snprintf(pi.ns, sizeof pi.ns, "default");
  snprintf(pi.name, sizeof pi.name, "%s", name);
  snprintf(pi.uid, sizeof pi.uid, "%s", uid);
  snprintf(pi.phase, sizeof pi.phase, "%s", phase);
  pi.has_qos = true;
  pi.qos = IOQ_QOS_BURSTABLE;
  snprintf(pi.ctrs[0].name, sizeof pi.ctrs[0].name, "app");
  pi.ctrs[0].kind = IOQ_CTR_APP;
  pi.n_ctrs = 1;
  return pi;
}

static char *io_max(const char *uid) {
  char rel[256];
  snprintf(rel, sizeof rel, "cg/kubepods/burstable/pod%s/io.max", uid);
  return fx_read(g_root, rel);
}

static uint64_t granted(const char *uid) {
  struct applied_pod *a;
  size_t n = podtable_snapshot(g_f, &a);
  uint64_t u = UINT64_MAX;
  for (size_t i = 0; i < n; i++)
    if (strcmp(a[i].uid, uid) == 0)
      u = a[i].grant.n ? a[i].grant.disks[0].units[IOQ_RES_BANDWIDTH] : 0;
  free(a);
  return u;
}

static void apply_ok(const struct podres_pod *pr, const struct pod_info *pi, unsigned flags,
                     struct podtable_result *res) {
  ioq_err e;
  cr_assert_eq(podtable_apply(g_f, pr, pi, IOQ_RES_BANDWIDTH, NULL, 0, flags, res, &e), 0, "%s",
               e.msg);
  cr_assert_eq(res->fail, FAIL_NONE);
}

Test(podtable, apply_writes_and_remembers_the_grant) {
  struct podres_pod pr = listed_pod("db-0", 0, 4);
  struct pod_info pi = info("db-0", UID_A, "Running");
  struct podtable_result res;
  apply_ok(&pr, &pi, PODTABLE_PRESTART, &res);
  cr_assert_not(res.known);
  cr_assert_gt(res.writes, 0);
  cr_assert_eq(res.grant.n, 1);
  cr_assert_str_eq(res.grant.disks[0].disk, "sdb");
  cr_assert_eq(res.grant.disks[0].units[IOQ_RES_BANDWIDTH], 4);
  char *m = io_max(UID_A);
  cr_assert(strncmp(m, "8:16 ", 5) == 0, "io.max: %s", m);
  free(m);
  cr_assert_eq(granted(UID_A), 4);
  struct podtable_file *files;
  cr_assert_gt(podtable_pod_files(g_f, UID_A, &files), 0);
  free(files);
  cr_assert_eq(podtable_pod_files(g_f, UID_B, &files), -1);

  /* the same grant again: known, nothing to write */
  apply_ok(&pr, &pi, 0, &res);
  cr_assert(res.known);
  cr_assert_not(res.grant_changed);
  cr_assert_eq(res.writes, 0);
  pod_free(&pr);
}

Test(podtable, grant_recomputed_when_the_list_changes) {
  struct podres_pod pr = listed_pod("db-0", 0, 4);
  struct pod_info pi = info("db-0", UID_A, "Running");
  struct podtable_result res;
  apply_ok(&pr, &pi, PODTABLE_PRESTART, &res);
  char *before = io_max(UID_A);
  pod_free(&pr);
  pr = listed_pod("db-0", 0, 8); /* a resize: kubelet now lists 8 units */
  apply_ok(&pr, &pi, 0, &res);
  cr_assert(res.known);
  cr_assert(res.grant_changed);
  cr_assert_gt(res.writes, 0);
  cr_assert_eq(granted(UID_A), 8);
  char *after = io_max(UID_A);
  cr_assert_str_neq(before, after);
  free(before);
  free(after);
  pod_free(&pr);
}

Test(podtable, unknown_disk_fails_with_reason_grant) {
  struct podres_pod pr = listed_pod("db-0", 0, 1);
  free(pr.ctrs[0].ids[0]);
  pr.ctrs[0].ids[0] = strdup("nvme9n1-bw-0");
  struct pod_info pi = info("db-0", UID_A, "Running");
  struct podtable_result res;
  ioq_err e;
  cr_assert_eq(
      podtable_apply(g_f, &pr, &pi, IOQ_RES_BANDWIDTH, NULL, 0, PODTABLE_PRESTART, &res, &e),
               -1);
  cr_assert_eq(res.fail, FAIL_GRANT);
  cr_assert_str_eq(fail_reason_name(res.fail), "grant");
  cr_assert_eq(granted(UID_A), UINT64_MAX);
  pod_free(&pr);
}

Test(podtable, missing_cgroup_fails_with_reason_cgroup) {
  struct podres_pod pr = listed_pod("web-0", 0, 1);
  struct pod_info pi = info("web-0", "99999999-2222-3333-4444-555555555555", "Running");
  struct podtable_result res;
  ioq_err e;
  cr_assert_eq(
      podtable_apply(g_f, &pr, &pi, IOQ_RES_BANDWIDTH, NULL, 0, PODTABLE_PRESTART, &res, &e),
               -1);
  cr_assert_eq(res.fail, FAIL_CGROUP);
  cr_assert_str_eq(fail_reason_name(fail_reason_counted(res.fail)), "cgroup-not-found");
  pod_free(&pr);
}

Test(podtable, gone_pod_released_and_cleared) {
  struct podres_pod pr = listed_pod("db-0", 0, 4);
  struct pod_info pi = info("db-0", UID_A, "Running");
  struct podtable_result res;
  apply_ok(&pr, &pi, PODTABLE_PRESTART, &res);
  /* a List asked for before the apply does not release it (a PreStart that
   * raced the List keeps its limits) */
  struct podres_list empty = {NULL, 0, mono_now() - 60};
  cr_assert_eq(podtable_release_gone(g_f, &empty, NULL), 0);
  cr_assert_eq(granted(UID_A), 4);
  /* a later List without it: released, its limits cleared */
  empty.asked_at = mono_now() + 1;
  cr_assert_eq(podtable_release_gone(g_f, &empty, NULL), 1);
  cr_assert_eq(granted(UID_A), UINT64_MAX);
  char *m = io_max(UID_A);
  cr_assert(strstr(m, "rbps=max") && strstr(m, "wbps=max"), "io.max after release: %s", m);
  free(m);
  pod_free(&pr);
}

Test(podtable, listed_pod_kept) {
  struct podres_pod pr = listed_pod("db-0", 0, 4);
  struct pod_info pi = info("db-0", UID_A, "Running");
  struct podtable_result res;
  apply_ok(&pr, &pi, PODTABLE_PRESTART, &res);
  struct podres_list l = {&pr, 1, mono_now() + 1};
  cr_assert_eq(podtable_release_gone(g_f, &l, NULL), 0);
  cr_assert_eq(granted(UID_A), 4);
  pod_free(&pr);
}

Test(podtable, recreated_pod_replaces_its_earlier_instance) {
  struct podres_pod pr = listed_pod("db-0", 0, 4);
  struct pod_info a = info("db-0", UID_A, "Running"), b = info("db-0", UID_B, "Running");
  struct podtable_result res;
  apply_ok(&pr, &a, PODTABLE_PRESTART, &res);
  apply_ok(&pr, &b, PODTABLE_PRESTART, &res);
  cr_assert_eq(granted(UID_A), UINT64_MAX, "the earlier instance is forgotten");
  cr_assert_eq(granted(UID_B), 4);
  char *m = io_max(UID_A);
  cr_assert(strstr(m, "rbps=max"), "earlier instance's io.max cleared: %s", m);
  free(m);
  pod_free(&pr);
}

Test(podtable, init_only_pod_holds_its_init_container_grant) {
  struct podres_pod pr = listed_pod("job-0", 0, 0); /* kubelet lists no units */
  struct pod_info pi = info("job-0", UID_A, "Pending");
  pi.ctrs[1] = pi.ctrs[0];
  snprintf(pi.ctrs[0].name, sizeof pi.ctrs[0].name, "init");
  pi.ctrs[0].kind = IOQ_CTR_INIT;
  pi.ctrs[0].units[IOQ_RES_BANDWIDTH] = 2;
  pi.n_ctrs = 2;
  char *ids[] = {"sdb-bw-10", "sdb-bw-11"};
  struct podtable_result res;
  ioq_err e;
  cr_assert_eq(
      podtable_apply(g_f, &pr, &pi, IOQ_RES_BANDWIDTH, ids, 2, PODTABLE_PRESTART, &res, &e), 0,
               "%s", e.msg);
  cr_assert_eq(granted(UID_A), 2);
  cr_assert_eq(podtable_init_held(g_f, "default", "job-0", UID_A, IOQ_RES_BANDWIDTH, ids, 2), 1);
  cr_assert_eq(podtable_init_held(g_f, "default", "job-0", UID_A, IOQ_RES_BANDWIDTH, ids, 1), 0);
  cr_assert_eq(podtable_init_held(g_f, "default", "job-0", NULL, -1, NULL, 0), 1);
  /* a reconcile pass while Pending keeps the init units (kubelet never lists them) */
  apply_ok(&pr, &pi, 0, &res);
  cr_assert_eq(granted(UID_A), 2);
  /* running: the init containers are done, nothing granted is left to remember */
  snprintf(pi.phase, sizeof pi.phase, "Running");
  apply_ok(&pr, &pi, 0, &res);
  cr_assert_eq(granted(UID_A), UINT64_MAX);
  cr_assert_eq(podtable_init_held(g_f, "default", "job-0", NULL, -1, NULL, 0), -1);
}

Test(podtable, list_view_held_and_allocated) {
  cr_assert_not(listview_have_list(g_f));
  struct podres_pod pods[2] = {listed_pod("db-0", 0, 4), listed_pod("db-1", 4, 3)};
  struct podres_list l = {pods, 2, mono_now()};
  listview_note(g_f, &l);
  cr_assert(listview_have_list(g_f));
  uint64_t held[IOQ_RES_COUNT];
  cr_assert(listview_pod_held(g_f, "default", "db-1", held));
  cr_assert_eq(held[IOQ_RES_BANDWIDTH], 3);
  cr_assert_not(listview_pod_held(g_f, "default", "db-9", held));
  uint64_t alloc[IOQ_RES_COUNT];
  listview_allocated(g_f, "sdb", alloc);
  cr_assert_eq(alloc[IOQ_RES_BANDWIDTH], 7);
  cr_assert_eq(alloc[IOQ_RES_IOPS], 0);
  /* an older List than the one noted is ignored */
  struct podres_list old = {pods, 1, l.asked_at - 10};
  listview_note(g_f, &old);
  listview_allocated(g_f, "sdb", alloc);
  cr_assert_eq(alloc[IOQ_RES_BANDWIDTH], 7);
  /* a pod with limits in place the List does not show still counts */
  struct pod_info pi = info("web-0", UID_B, "Running");
  struct podres_pod web = listed_pod("web-0", 20, 5);
  struct podtable_result res;
  apply_ok(&web, &pi, PODTABLE_PRESTART, &res);
  listview_allocated(g_f, "sdb", alloc);
  cr_assert_eq(alloc[IOQ_RES_BANDWIDTH], 12);
  pod_free(&web);
  pod_free(&pods[0]);
  pod_free(&pods[1]);
}

/* ---- lock discipline ---- */
struct apply_arg {
  struct podres_pod pr;
  struct pod_info pi;
  int rc;
  volatile int done;
};

static void *apply_thread(void *p) {
  struct apply_arg *a = p;
  struct podtable_result res;
  ioq_err e;
  a->rc = podtable_apply(g_f, &a->pr, &a->pi, IOQ_RES_BANDWIDTH, NULL, 0, PODTABLE_PRESTART, &res,
                         &e);
  a->done = 1;
  return NULL;
}

Test(podtable, write_lock_holder_blocks_apply_not_readers) {
  struct apply_arg a = {listed_pod("db-0", 0, 4), info("db-0", UID_A, "Running"), -2, 0};
  podtable_writes_lock(g_f);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, apply_thread, &a), 0);
  struct timespec ms50 = {0, 50 * 1000000L};
  nanosleep(&ms50, NULL);
  cr_assert_eq(a.done, 0, "apply ran while the write lock was held");
  /* readers of the table do not wait on the write lock */
  struct applied_pod *snap;
  size_t n = podtable_snapshot(g_f, &snap);
  free(snap);
  cr_assert_eq(n, 0);
  uint64_t alloc[IOQ_RES_COUNT];
  listview_allocated(g_f, "sdb", alloc);
  char *m = io_max(UID_A);
  cr_assert_str_eq(m, "", "nothing written while the write lock was held");
  free(m);
  podtable_writes_unlock(g_f);
  pthread_join(t, NULL);
  cr_assert_eq(a.rc, 0);
  cr_assert_eq(granted(UID_A), 4);
  pod_free(&a.pr);
}

struct reader_arg {
  volatile int stop;
  unsigned torn, seen;
};

/* Every entry a reader copies is whole: its grant's units are one of the
 * two the writer alternates between, with the matching unit count. */
static void *reader_thread(void *p) {
  struct reader_arg *r = p;
  while (!r->stop) {
    struct applied_pod *snap;
    size_t n = podtable_snapshot(g_f, &snap);
    for (size_t i = 0; i < n; i++) {
      r->seen++;
      uint64_t u = snap[i].grant.n ? snap[i].grant.disks[0].units[IOQ_RES_BANDWIDTH] : 0;
      if ((u != 2 && u != 6) || strcmp(snap[i].name, "db-0") != 0 ||
          strcmp(snap[i].uid, UID_A) != 0 || snap[i].grant.n != 1)
        r->torn++;
    }
    free(snap);
  }
  return NULL;
}

Test(podtable, readers_never_see_a_half_updated_entry) {
  struct podres_pod p2 = listed_pod("db-0", 0, 2), p6 = listed_pod("db-0", 0, 6);
  struct pod_info pi = info("db-0", UID_A, "Running");
  struct podtable_result res;
  apply_ok(&p2, &pi, PODTABLE_PRESTART, &res);
  struct reader_arg r = {0, 0, 0};
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, reader_thread, &r), 0);
  for (int i = 0; i < 200; i++)
    apply_ok(i % 2 ? &p2 : &p6, &pi, 0, &res);
  r.stop = 1;
  pthread_join(t, NULL);
  cr_assert_gt(r.seen, 0);
  cr_assert_eq(r.torn, 0, "%u of %u entries torn", r.torn, r.seen);
  pod_free(&p2);
  pod_free(&p6);
}

Test(podtable, combined_direction_split_kept_until_the_grant_changes) {
  struct podres_pod p4 = listed_pod("db-0", 0, 4), p8 = listed_pod("db-0", 0, 8);
  struct pod_info pi = info("db-0", UID_A, "Running");
  struct podtable_result res;
  apply_ok(&p4, &pi, PODTABLE_PRESTART, &res);
  struct ioq_io_limits g, cur;
  cr_assert(podtable_get_split(g_f, UID_A, "sdb", &g, &cur));
  cr_assert_eq(memcmp(&g, &cur, sizeof g), 0, "no split yet: the full grant is in place");
  struct ioq_io_limits split = g;
  split.rbps = g.rbps / 4 * 3;
  split.wbps = g.rbps / 4;
  ioq_err e;
  cr_assert_eq(podtable_set_split(g_f, UID_A, "sdb", &g, &split, &e), 1, "%s", e.msg);
  cr_assert(podtable_get_split(g_f, UID_A, "sdb", &g, &cur));
  cr_assert_eq(cur.rbps, split.rbps);
  cr_assert_eq(cur.wbps, split.wbps);
  char *m = io_max(UID_A);
  char want[64];
  snprintf(want, sizeof want, "rbps=%llu wbps=%llu", (unsigned long long)split.rbps,
           (unsigned long long)split.wbps);
  cr_assert(strstr(m, want), "io.max %s, want %s", m, want);
  free(m);
  /* a pass with the same grant keeps the split (it is not drift) */
  apply_ok(&p4, &pi, 0, &res);
  cr_assert_eq(res.writes, 0);
  cr_assert(podtable_get_split(g_f, UID_A, "sdb", &g, &cur));
  cr_assert_eq(cur.rbps, split.rbps);
  /* a split of an outdated grant is not written */
  struct ioq_io_limits g4 = g;
  apply_ok(&p8, &pi, 0, &res);
  cr_assert(res.grant_changed);
  cr_assert(podtable_get_split(g_f, UID_A, "sdb", &g, &cur));
  cr_assert_eq(memcmp(&g, &cur, sizeof g), 0, "a grant change resets the split");
  cr_assert_gt(g.rbps, g4.rbps);
  cr_assert_eq(podtable_set_split(g_f, UID_A, "sdb", &g4, &split, &e), 0);
  /* not a split of the grant: refused */
  struct ioq_io_limits bad = g;
  bad.wbps = g.wbps / 2 + 1;
  bad.rbps = g.rbps;
  cr_assert_eq(podtable_set_split(g_f, UID_A, "sdb", &g, &bad, &e), -1);
  pod_free(&p4);
  pod_free(&p8);
}
