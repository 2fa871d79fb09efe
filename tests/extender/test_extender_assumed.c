// SPDX-License-Identifier: Apache-2.0
/* Assumed placements: counted per disk, expire by TTL, dropped when the node
 * reports the pod, and per-node bind locks that serialise binds. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "assumed.h"

static uint64_t g_now = 1000;
static uint64_t fake_now(void) { return g_now; }

static struct ioq_disk_state disks[2] = {
    {.name = "nvme0n1", .class_name = "default", .healthy = true},
    {.name = "sda", .class_name = "default", .healthy = true},
};

static void assume(struct ext_assumed *a, const char *node, const char *uid, const char *disk,
                   uint64_t bw, uint64_t iops) {
  ioq_err e = {0};
  struct ext_node_lock *l = ext_assumed_lock_node(a, node, &e);
  cr_assert_not_null(l, "%s", e.msg);
  uint64_t u[IOQ_RES_COUNT] = {bw, iops};
  cr_assert_eq(ext_assumed_add(a, node, uid, "ns/p", disk, u, &e), 0, "%s", e.msg);
  ext_assumed_unlock_node(l);
}

Test(assumed, counts_per_disk_and_node) {
  struct ext_assumed *a = ext_assumed_new(60000);
  assume(a, "n1", "u1", "nvme0n1", 100, 1);
  assume(a, "n1", "u2", "nvme0n1", 50, 0);
  assume(a, "n1", "u3", "sda", 7, 2);
  assume(a, "n2", "u4", "sda", 9, 9);
  uint64_t extra[2 * IOQ_RES_COUNT];
  cr_assert_eq(ext_assumed_extra(a, "n1", NULL, disks, 2, extra), 3);
  cr_assert_eq(extra[0], 150);
  cr_assert_eq(extra[1], 1);
  cr_assert_eq(extra[2], 7);
  cr_assert_eq(extra[3], 2);
  /* a pod asking again does not compete with its own placement */
  ext_assumed_extra(a, "n1", "u1", disks, 2, extra);
  cr_assert_eq(extra[0], 50);
  cr_assert_eq(extra[1], 0);
  cr_assert_eq(extra[2], 7);
  cr_assert_eq(ext_assumed_extra(a, "n3", NULL, disks, 2, extra), 0);
  cr_assert_eq(extra[0] + extra[1] + extra[2] + extra[3], 0);
  cr_assert_eq(ext_assumed_count(a), 4);
  ext_assumed_free(a);
}

Test(assumed, same_pod_replaces) {
  struct ext_assumed *a = ext_assumed_new(60000);
  assume(a, "n1", "u1", "nvme0n1", 100, 0);
  assume(a, "n1", "u1", "sda", 30, 0);
  uint64_t extra[2 * IOQ_RES_COUNT];
  ext_assumed_extra(a, "n1", NULL, disks, 2, extra);
  cr_assert_eq(extra[0], 0);
  cr_assert_eq(extra[2], 30);
  cr_assert_eq(ext_assumed_count(a), 1);
  ext_assumed_free(a);
}

Test(assumed, expire_after_ttl) {
  struct ext_assumed *a = ext_assumed_new(5000);
  ext_assumed_set_clock(a, fake_now);
  g_now = 1000;
  assume(a, "n1", "u1", "nvme0n1", 100, 0);
  g_now = 3000;
  assume(a, "n1", "u2", "nvme0n1", 10, 0);
  uint64_t extra[2 * IOQ_RES_COUNT];
  g_now = 5999;
  ext_assumed_extra(a, "n1", NULL, disks, 2, extra);
  cr_assert_eq(extra[0], 110);
  g_now = 6000; /* u1 expires exactly at 1000 + 5000 */
  ext_assumed_extra(a, "n1", NULL, disks, 2, extra);
  cr_assert_eq(extra[0], 10);
  g_now = 9000;
  cr_assert_eq(ext_assumed_count(a), 0);
  ext_assumed_free(a);
}

Test(assumed, confirm_remove_and_forget) {
  struct ext_assumed *a = ext_assumed_new(60000);
  assume(a, "n1", "u1", "nvme0n1", 100, 0);
  assume(a, "n1", "u2", "nvme0n1", 10, 0);
  assume(a, "n2", "u3", "nvme0n1", 10, 0);
  const char listed[][IOQ_POD_UID_STR_MAX + 1] = {"other", "u2"};
  cr_assert_eq(ext_assumed_confirm(a, "n1", listed, 2), 1);
  cr_assert_eq(ext_assumed_confirm(a, "n2", listed, 2), 0, "u2 is on n1 only");
  uint64_t extra[2 * IOQ_RES_COUNT];
  ext_assumed_extra(a, "n1", NULL, disks, 2, extra);
  cr_assert_eq(extra[0], 100);
  ext_assumed_remove(a, "n1", "u1");
  ext_assumed_remove(a, "n1", "nope"); /* harmless */
  cr_assert_eq(ext_assumed_extra(a, "n1", NULL, disks, 2, extra), 0);
  ext_assumed_forget_node(a, "n2");
  cr_assert_eq(ext_assumed_count(a), 0);
  ext_assumed_free(a);
}

Test(assumed, add_needs_the_node_lock) {
  struct ext_assumed *a = ext_assumed_new(60000);
  uint64_t u[IOQ_RES_COUNT] = {1, 0};
  ioq_err e = {0};
  cr_assert_eq(ext_assumed_add(a, "n1", "u1", "k", "sda", u, &e), -1);
  cr_assert(strstr(e.msg, "without its bind lock"), "%s", e.msg);
  ext_assumed_free(a);
}

/* Threads doing read-check-write on a shared counter under the node lock:
 * without serialisation some increments would be lost. */
static struct ext_assumed *g_a;
static volatile int g_counter;
static void *binder(void *arg) {
  (void)arg;
  for (int i = 0; i < 2000; i++) {
    ioq_err e = {0};
    struct ext_node_lock *l = ext_assumed_lock_node(g_a, "hot", &e);
    int v = g_counter;
    sched_yield();
    g_counter = v + 1;
    ext_assumed_unlock_node(l);
  }
  return NULL;
}

Test(assumed, node_lock_serialises) {
  g_a = ext_assumed_new(60000);
  g_counter = 0;
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, binder, NULL);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  cr_assert_eq(g_counter, 8000);
  cr_assert_eq(ext_assumed_count(g_a), 0, "lock entries without placements are dropped");
  ext_assumed_free(g_a);
}

/* issue 12 item 3: placements rebuilt after a restart need no bind lock;
 * the sweep sees each placement's age and removes the ones whose pod ended */
Test(assumed, restore_older_and_remove) {
  struct ext_assumed *a = ext_assumed_new(3600u * 1000u);
  ext_assumed_set_clock(a, fake_now);
  g_now = 1000;
  ioq_err e = {0};
  uint64_t u[IOQ_RES_COUNT] = {600, 0};
  cr_assert_eq(ext_assumed_restore(a, "n1", "u1", "ns/db", "sda", u, &e), 0, "%s", e.msg);
  g_now = 4000;
  assume(a, "n1", "u2", "nvme0n1", 10, 0);
  uint64_t extra[2 * IOQ_RES_COUNT];
  cr_assert_eq(ext_assumed_extra(a, "n1", NULL, disks, 2, extra), 2);
  cr_assert_eq(extra[2], 600);
  /* far past the old fixed 60 s TTL, both still count */
  g_now = 1000 + 600u * 1000u;
  cr_assert_eq(ext_assumed_count(a), 2);
  struct ext_assumed_ref *refs;
  g_now = 6000;
  size_t n = ext_assumed_older(a, 3000, &refs, &e);
  cr_assert_eq(n, 1, "only u1 is 3 s old");
  cr_assert_str_eq(refs[0].node, "n1");
  cr_assert_str_eq(refs[0].uid, "u1");
  cr_assert_str_eq(refs[0].key, "ns/db");
  cr_assert_eq(refs[0].age_ms, 5000);
  free(refs);
  /* just checked: not due again until a quarter of its age has passed */
  g_now = 7000;
  cr_assert_eq(ext_assumed_older(a, 3000, &refs, &e), 1, "u2 is due now, u1 is not");
  cr_assert_str_eq(refs[0].uid, "u2");
  free(refs);
  g_now = 6000 + 1500; /* u1: 6.5 s old, due 1.6 s after its check */
  cr_assert_eq(ext_assumed_older(a, 3000, &refs, &e), 0);
  free(refs);
  g_now = 6000 + 1700;
  cr_assert_eq(ext_assumed_older(a, 3000, &refs, &e), 1);
  free(refs);
  /* an old placement is checked once a minute, not every sweep */
  g_now = 1000 + 3600u * 1000u / 2;
  cr_assert_eq(ext_assumed_older(a, 3000, &refs, &e), 2);
  free(refs);
  g_now += 59000;
  cr_assert_eq(ext_assumed_older(a, 3000, &refs, &e), 0);
  free(refs);
  g_now += 1000;
  cr_assert_eq(ext_assumed_older(a, 3000, &refs, &e), 2);
  free(refs);
  cr_assert(ext_assumed_remove(a, "n1", "u1"));
  cr_assert(!ext_assumed_remove(a, "n1", "u1"), "already gone");
  cr_assert(!ext_assumed_remove(a, "n9", "u2"), "other node");
  cr_assert_eq(ext_assumed_count(a), 1);
  /* the safety bound still ends what nothing else does */
  g_now = 4000 + 3600u * 1000u;
  cr_assert_eq(ext_assumed_count(a), 0);
  ext_assumed_free(a);
}
