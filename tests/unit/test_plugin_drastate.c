// SPDX-License-Identifier: Apache-2.0
/* The DRA mode's prepared-claim table (plugin/daemon/state/drastate.c): what the
 * pod table and the held units read from it, its state file (round trip,
 * a save that fails changes nothing, torn or foreign files refused). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "state/drastate.h"
#include "fixture.h"

#define POD1 "0f4a2d8e-1b6c-4f7a-9e3d-5c2b1a0f9e8d"
#define POD2 "11111111-2222-3333-4444-555555555555"

static struct dra_rec rec(const char *claim_uid, const char *pod_uid, const char *disk, uint64_t bw,
                          uint64_t iops) {
  struct dra_rec r;
  memset(&r, 0, sizeof r);
  snprintf(r.claim_uid, sizeof r.claim_uid, "%s", claim_uid);
  snprintf(r.ns, sizeof r.ns, "db");
  snprintf(r.name, sizeof r.name, "claim-%s", claim_uid);
  snprintf(r.pod_uid, sizeof r.pod_uid, "%s", pod_uid);
  snprintf(r.pod_name, sizeof r.pod_name, "pg-%c", pod_uid[0]);
  r.n_shares = 1;
  snprintf(r.shares[0].disk, sizeof r.shares[0].disk, "%s", disk);
  snprintf(r.shares[0].device, sizeof r.shares[0].device, "%s", disk);
  snprintf(r.shares[0].request, sizeof r.shares[0].request, "disk");
  snprintf(r.shares[0].share_id, sizeof r.shares[0].share_id, "sh-%s", claim_uid);
  r.shares[0].units[IOQ_RES_BANDWIDTH] = bw;
  r.shares[0].units[IOQ_RES_IOPS] = iops;
  return r;
}

Test(drastate, pod_grant_and_disk_units) {
  struct drastate *s = drastate_new(NULL);
  ioq_err e;
  struct dra_rec a = rec("c1", POD1, "sda", 200, 0), b = rec("c2", POD1, "sda", 50, 10),
                 c = rec("c3", POD1, "nvme0n1", 0, 30), d = rec("c4", POD2, "sda", 100, 0);
  cr_assert_eq(drastate_put(s, &a, &e), 0, "%s", e.msg);
  cr_assert_eq(drastate_put(s, &b, &e), 0, "%s", e.msg);
  cr_assert_eq(drastate_put(s, &c, &e), 0, "%s", e.msg);
  cr_assert_eq(drastate_put(s, &d, &e), 0, "%s", e.msg);
  /* a device-plugin grant already there is added to, disks merged by name */
  struct ioq_pod_grant g = {.n = 1};
  snprintf(g.disks[0].disk, sizeof g.disks[0].disk, "sda");
  g.disks[0].units[IOQ_RES_BANDWIDTH] = 1;
  cr_assert_eq(drastate_pod_grant(s, POD1, &g, &e), 0, "%s", e.msg);
  cr_assert_eq(g.n, 2);
  cr_assert_str_eq(g.disks[0].disk, "sda");
  cr_assert_eq(g.disks[0].units[IOQ_RES_BANDWIDTH], 251);
  cr_assert_eq(g.disks[0].units[IOQ_RES_IOPS], 10);
  cr_assert_str_eq(g.disks[1].disk, "nvme0n1");
  cr_assert_eq(g.disks[1].units[IOQ_RES_IOPS], 30);
  uint64_t held[IOQ_RES_COUNT] = {0};
  drastate_disk_units(s, "sda", held);
  cr_assert_eq(held[IOQ_RES_BANDWIDTH], 350);
  cr_assert_eq(held[IOQ_RES_IOPS], 10);
  cr_assert(drastate_pod_has(s, NULL, NULL, POD2));
  cr_assert(drastate_pod_has(s, "db", "pg-1", NULL));
  cr_assert_not(drastate_pod_has(s, "other", "pg-1", NULL));
  /* replace by claim UID, take */
  b.shares[0].units[IOQ_RES_BANDWIDTH] = 5;
  cr_assert_eq(drastate_put(s, &b, &e), 0, "%s", e.msg);
  cr_assert_eq(drastate_count(s), 4);
  struct dra_rec got;
  cr_assert_eq(drastate_take(s, "c4", &got, &e), 1);
  cr_assert_str_eq(got.pod_uid, POD2);
  cr_assert_eq(drastate_take(s, "c4", NULL, &e), 0, "gone: nothing to undo");
  cr_assert_not(drastate_pod_has(s, NULL, NULL, POD2));
  memset(held, 0, sizeof held);
  drastate_disk_units(s, "sda", held);
  cr_assert_eq(held[IOQ_RES_BANDWIDTH], 205);
  drastate_free(s);
}

/* a claim found again from the API server: recorded only when the table
 * lacks it and kubelet has not unprepared it lately */
Test(drastate, adopt_never_over_kubelet) {
  struct drastate *s = drastate_new(NULL);
  ioq_err e;
  struct dra_rec a = rec("c1", POD1, "sda", 200, 0), a2 = rec("c1", POD1, "sda", 7, 0),
                 b = rec("c2", POD2, "sda", 50, 0), got;
  cr_assert_eq(drastate_adopt(s, &a, &e), 1, "%s", e.msg);
  cr_assert_eq(drastate_adopt(s, &a2, &e), 0, "known: kubelet's record (or the first) stays");
  cr_assert(drastate_get(s, "c1", &got));
  cr_assert_eq(got.shares[0].units[IOQ_RES_BANDWIDTH], 200);
  /* unprepared, found or not: not brought back */
  cr_assert_eq(drastate_take(s, "c1", NULL, &e), 1);
  cr_assert_eq(drastate_adopt(s, &a, &e), 0);
  cr_assert_eq(drastate_take(s, "c2", NULL, &e), 0, "not known: nothing to undo");
  cr_assert_eq(drastate_adopt(s, &b, &e), 0, "kubelet unprepared it before it was found again");
  cr_assert_eq(drastate_count(s), 0);
  /* the ring keeps the last DRASTATE_UNPREPARED_KEPT: older ones may come back */
  char uid[32];
  for (int i = 0; i < DRASTATE_UNPREPARED_KEPT; i++) {
    snprintf(uid, sizeof uid, "x%d", i);
    cr_assert_eq(drastate_take(s, uid, NULL, &e), 0);
  }
  cr_assert_eq(drastate_adopt(s, &b, &e), 1, "%s", e.msg);
  drastate_free(s);
}

Test(drastate, forget_a_gone_pod) {
  struct drastate *s = drastate_new(NULL);
  ioq_err e;
  struct dra_rec a = rec("c1", POD1, "sda", 200, 0), b = rec("c2", POD1, "sdb", 5, 0),
                 c = rec("c3", POD2, "sda", 50, 0);
  cr_assert_eq(drastate_put(s, &a, &e), 0);
  cr_assert_eq(drastate_put(s, &b, &e), 0);
  cr_assert_eq(drastate_put(s, &c, &e), 0);
  cr_assert_eq(drastate_forget_pod(s, POD1, &e), 2, "%s", e.msg);
  cr_assert_eq(drastate_forget_pod(s, POD1, &e), 0);
  cr_assert_eq(drastate_count(s), 1);
  cr_assert(drastate_get(s, "c3", NULL));
  drastate_free(s);
}

Test(drastate, too_many_disks_for_a_pod) {
  struct drastate *s = drastate_new(NULL);
  ioq_err e;
  for (int i = 0; i <= IOQ_POD_DISKS_MAX; i++) {
    char uid[16], disk[16];
    snprintf(uid, sizeof uid, "c%d", i);
    snprintf(disk, sizeof disk, "vd%c", 'a' + i);
    struct dra_rec r = rec(uid, POD1, disk, 1, 0);
    cr_assert_eq(drastate_put(s, &r, &e), 0, "%s", e.msg);
  }
  struct ioq_pod_grant g = {0};
  cr_assert_eq(drastate_pod_grant(s, POD1, &g, &e), -1);
  cr_assert(strstr(e.msg, "more than"), "%s", e.msg);
  drastate_free(s);
}

Test(drastate, file_round_trip) {
  char *dir = fx_tmpdir(), path[512];
  snprintf(path, sizeof path, "%s", fx_path(dir, "dra-claims.json"));
  struct drastate *s = drastate_new(path);
  ioq_err e;
  cr_assert_eq(drastate_load(s, &e), 0, "missing file = first start: %s", e.msg);
  struct dra_rec a = rec("c1", POD1, "sda", 200, 7), b = rec("c2", POD2, "sdb", 0, 3);
  memset(b.shares[0].share_id, 0, sizeof b.shares[0].share_id);
  cr_assert_eq(drastate_put(s, &a, &e), 0, "%s", e.msg);
  cr_assert_eq(drastate_put(s, &b, &e), 0, "%s", e.msg);
  drastate_free(s);
  s = drastate_new(path);
  cr_assert_eq(drastate_load(s, &e), 0, "%s", e.msg);
  cr_assert_eq(drastate_count(s), 2);
  struct dra_rec got;
  cr_assert(drastate_get(s, "c1", &got));
  cr_assert_eq(memcmp(&got, &a, sizeof got), 0, "c1 comes back as it was saved");
  cr_assert(drastate_get(s, "c2", &got));
  cr_assert_str_eq(got.pod_uid, b.pod_uid);
  cr_assert_str_eq(got.shares[0].share_id, "");
  cr_assert_eq(got.shares[0].units[IOQ_RES_IOPS], 3);
  cr_assert_eq(memcmp(&got, &b, sizeof got), 0, "c2 comes back as it was saved");
  cr_assert_eq(drastate_take(s, "c1", NULL, &e), 1);
  drastate_free(s);
  s = drastate_new(path);
  cr_assert_eq(drastate_load(s, &e), 0, "%s", e.msg);
  cr_assert_eq(drastate_count(s), 1, "the take was saved");
  drastate_free(s);
  fx_rmtree(dir);
  free(dir);
}

Test(drastate, failed_save_changes_nothing) {
  char *dir = fx_tmpdir();
  fx_mkdir(dir, "gone");
  char ro[512], path[600];
  snprintf(ro, sizeof ro, "%s", fx_path(dir, "gone"));
  snprintf(path, sizeof path, "%s/dra-claims.json", ro);
  struct drastate *s = drastate_new(path);
  ioq_err e;
  struct dra_rec a = rec("c1", POD1, "sda", 200, 0);
  cr_assert_eq(drastate_put(s, &a, &e), 0, "%s", e.msg);
  /* the directory turns into a file: saves fail */
  fx_rmtree(ro);
  fx_write(dir, "gone", "not a directory");
  struct dra_rec b = rec("c2", POD1, "sda", 10, 0);
  cr_assert_eq(drastate_put(s, &b, &e), -1, "put without a save must fail");
  cr_assert(strstr(e.msg, "DRA claim state"), "%s", e.msg);
  cr_assert_not(drastate_get(s, "c2", NULL), "a put that was not saved is not kept");
  cr_assert_eq(drastate_take(s, "c1", NULL, &e), -1, "take without a save must fail");
  cr_assert(drastate_get(s, "c1", NULL), "a take that was not saved keeps the claim");
  uint64_t held[IOQ_RES_COUNT] = {0};
  drastate_disk_units(s, "sda", held);
  cr_assert_eq(held[IOQ_RES_BANDWIDTH], 200);
  drastate_free(s);
  fx_rmtree(dir);
  free(dir);
}

/* arrays, not pointers: criterion runs each case in a fresh process */
struct bad_file {
  char content[400];
  char msg[64];
};

ParameterizedTestParameters(drastate, bad_files) {
  static struct bad_file p[] = {
      {"", "empty"},
      {"{\"version\":1,\"claims\":[", "dra-claims.json"},
      {"{\"version\":2,\"claims\":[]}", "version is not 1"},
      {"{\"version\":1}", "claims is not an array"},
      {"{\"version\":1,\"claims\":[7]}", "claims[0] is not an object"},
      {"{\"version\":1,\"claims\":[{\"uid\":\"c\",\"namespace\":\"n\",\"name\":\"x\",\"podUID\":"
       "\"../../etc\",\"podName\":\"p\",\"shares\":[]}]}",
       "claims[0].podUID"},
      {"{\"version\":1,\"claims\":[{\"uid\":\"c\",\"namespace\":\"n\",\"name\":\"x\",\"podUID\":"
       "\"" POD1
       "\",\"podName\":\"p\",\"shares\":[{\"disk\":\"sda\",\"device\":\"sda\",\"request\":\"r\","
       "\"bandwidth\":-1,\"iops\":0}]}]}",
       "bandwidth is not a whole number"},
      {"{\"version\":1,\"claims\":[{\"uid\":\"c\",\"namespace\":\"n\",\"name\":\"x\",\"podUID\":"
       "\"" POD1 "\",\"podName\":\"p\"}]}",
       "shares is not an array"},
  };
  return cr_make_param_array(struct bad_file, p, sizeof p / sizeof p[0]);
}

ParameterizedTest(struct bad_file *p, drastate, bad_files) {
  char *dir = fx_tmpdir();
  fx_write(dir, "dra-claims.json", p->content);
  struct drastate *s = drastate_new(fx_path(dir, "dra-claims.json"));
  ioq_err e;
  cr_assert_eq(drastate_load(s, &e), -1, "refused: %s", p->content);
  cr_assert(strstr(e.msg, p->msg), "'%s' in: %s", p->msg, e.msg);
  cr_assert_eq(drastate_count(s), 0, "nothing half-loaded");
  drastate_free(s);
  fx_rmtree(dir);
  free(dir);
}
