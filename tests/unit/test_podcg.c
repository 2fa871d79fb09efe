// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "cgroup/podcg.h"

#define UID "1234abcd-0000-4111-8222-333344445555"
#define UID_ "1234abcd_0000_4111_8222_333344445555"

struct namecase {
  int driver;
  char root[32];
  int qos;
  char want[200];
};
ParameterizedTestParameters(podcg, names) {
  static struct namecase cases[] = {
      /* shared/reference/k8s-interfaces.md section 8 */
      {IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_BURSTABLE, "/kubepods/burstable/pod" UID},
      {IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_BESTEFFORT, "/kubepods/besteffort/pod" UID},
      {IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_GUARANTEED, "/kubepods/pod" UID},
      {IOQ_CG_DRIVER_SYSTEMD, "/", IOQ_QOS_BURSTABLE,
       "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice"},
      {IOQ_CG_DRIVER_SYSTEMD, "/", IOQ_QOS_BESTEFFORT,
       "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice"},
      {IOQ_CG_DRIVER_SYSTEMD, "/", IOQ_QOS_GUARANTEED,
       "/kubepods.slice/kubepods-pod" UID_ ".slice"},
      {IOQ_CG_DRIVER_SYSTEMD, "/kubelet", IOQ_QOS_BURSTABLE,
       "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
       "kubelet-kubepods-burstable-pod" UID_ ".slice"},
      {IOQ_CG_DRIVER_SYSTEMD, "/kubelet", IOQ_QOS_GUARANTEED,
       "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" UID_ ".slice"},
      {IOQ_CG_DRIVER_CGROUPFS, "/kubelet", IOQ_QOS_BURSTABLE,
       "/kubelet/kubepods/burstable/pod" UID},
      {IOQ_CG_DRIVER_CGROUPFS, "//a//b/", IOQ_QOS_GUARANTEED, "/a/b/kubepods/pod" UID},
      /* systemd escapes '-' inside a part */
      {IOQ_CG_DRIVER_SYSTEMD, "/my-root", IOQ_QOS_GUARANTEED,
       "/my_root.slice/my_root-kubepods.slice/my_root-kubepods-pod" UID_ ".slice"},
      {IOQ_CG_DRIVER_SYSTEMD, "", IOQ_QOS_GUARANTEED, "/kubepods.slice/kubepods-pod" UID_ ".slice"},
  };
  return cr_make_param_array(struct namecase, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct namecase *c, podcg, names) {
  char out[PATH_MAX];
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_name(c->driver, c->root, c->qos, UID, out, sizeof out, &e), 0, "%s",
               e.msg);
  cr_assert_str_eq(out, c->want);
}

Test(podcg, kubepods_names) {
  char out[PATH_MAX];
  cr_assert_eq(ioq_kubepods_cgroup_name(IOQ_CG_DRIVER_SYSTEMD, "/", out, sizeof out, NULL), 0);
  cr_assert_str_eq(out, "/kubepods.slice");
  cr_assert_eq(ioq_kubepods_cgroup_name(IOQ_CG_DRIVER_SYSTEMD, "/kubelet", out, sizeof out, NULL), 0);
  cr_assert_str_eq(out, "/kubelet.slice/kubelet-kubepods.slice");
  cr_assert_eq(ioq_kubepods_cgroup_name(IOQ_CG_DRIVER_CGROUPFS, NULL, out, sizeof out, NULL), 0);
  cr_assert_str_eq(out, "/kubepods");
  ioq_err e = {0};
  cr_assert_eq(ioq_kubepods_cgroup_name(IOQ_CG_DRIVER_AUTO, "/", out, sizeof out, &e), -1);
}

struct uidcase {
  char uid[48];
  char why[40];
};
ParameterizedTestParameters(podcg, bad_uids) {
  static struct uidcase cases[] = {
      {"", "36 characters"},
      {"1234abcd-0000-4111-8222-33334444555", "36 characters"},
      {"1234abcd-0000-4111-8222-3333444455556", "more than 36"},
      {"1234ABCD-0000-4111-8222-333344445555", "lowercase hex"},
      {"1234abcd-0000-4111-8222-33334444555g", "lowercase hex"},
      {"1234abcd00000-4111-8222-333344445555", "'-' at position 9"},
      {"../../../../etc/passwd/aaaaaaaaaaaaa", "lowercase hex"},
      {"1234abcd-0000-4111-8222-3333/4445555", "lowercase hex"},
      {"1234abcd_0000_4111_8222_333344445555", "'-' at position 9"},
  };
  return cr_make_param_array(struct uidcase, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct uidcase *c, podcg, bad_uids) {
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_uid_check(c->uid, &e), -1, "'%s' accepted", c->uid);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
  cr_assert(strstr(e.msg, c->why), "'%s': %s", c->uid, e.msg);
  /* never reaches a path */
  char out[PATH_MAX];
  cr_assert_eq(ioq_pod_cgroup_name(IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_BURSTABLE, c->uid, out,
                                   sizeof out, &e), -1);
}

Test(podcg, bad_roots) {
  char out[PATH_MAX];
  ioq_err e = {0};
  const char *bad[] = {"relative", "/a/../b", "/./a", "/a b", "/a\nb"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert_eq(ioq_pod_cgroup_name(IOQ_CG_DRIVER_CGROUPFS, bad[i], IOQ_QOS_BURSTABLE, UID, out,
                                     sizeof out, &e), -1, "root '%s' accepted", bad[i]);
    cr_assert(strstr(e.msg, "cgroup root"), "%s", e.msg);
  }
}

Test(podcg, parse_names) {
  enum ioq_qos_class q;
  enum ioq_cg_driver d;
  ioq_err e = {0};
  cr_assert_eq(ioq_qos_parse("BestEffort", &q, &e), 0);
  cr_assert_eq(q, IOQ_QOS_BESTEFFORT);
  cr_assert_eq(ioq_qos_parse("guaranteed", &q, &e), 0);
  cr_assert_eq(q, IOQ_QOS_GUARANTEED);
  cr_assert_eq(ioq_qos_parse("Best-Effort", &q, &e), -1);
  cr_assert(strstr(e.msg, "Guaranteed, Burstable or BestEffort"), "%s", e.msg);
  cr_assert_eq(ioq_cg_driver_parse("systemd", &d, &e), 0);
  cr_assert_eq(d, IOQ_CG_DRIVER_SYSTEMD);
  cr_assert_eq(ioq_cg_driver_parse("Systemd", &d, &e), -1);
  cr_assert_str_eq(ioq_qos_name(IOQ_QOS_BURSTABLE), "Burstable");
  cr_assert_str_eq(ioq_cg_driver_name(IOQ_CG_DRIVER_CGROUPFS), "cgroupfs");
}

/* ---- resolution on temp trees ------------------------------------------ */

static char *g_root;
static struct ioq_cg_layout g_l;
static void setup(void) {
  g_root = fx_tmpdir();
  fx_mkdir(g_root, "cg");
  cr_assert_eq(ioq_cg_layout_for(fx_path(g_root, "cg"), IOQ_CGV2, &g_l, NULL), 0);
}
static void teardown(void) {
  fx_rmtree(g_root);
  free(g_root);
}

Test(podcg, resolve_direct, .init = setup, .fini = teardown) {
  fx_mkdir(g_root, "cg/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice");
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  for (int d = 0; d < 2; d++) { /* auto and explicit */
    enum ioq_cg_driver drv = d ? IOQ_CG_DRIVER_SYSTEMD : IOQ_CG_DRIVER_AUTO;
    cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, drv, "/", IOQ_QOS_BURSTABLE, UID, &pc, &e), 0, "%s",
                 e.msg);
    cr_assert_str_eq(pc.dir, fx_path(g_root, "cg/kubepods.slice/kubepods-burstable.slice/"
                                             "kubepods-burstable-pod" UID_ ".slice"));
    cr_assert_eq(pc.driver, IOQ_CG_DRIVER_SYSTEMD);
    cr_assert(!pc.by_search);
  }
  /* explicitly the other driver: found by search, not at the derived path */
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_BURSTABLE, UID,
                                      &pc, &e), 0, "%s", e.msg);
  cr_assert(pc.by_search);
}

Test(podcg, resolve_cgroupfs_v1, .init = setup, .fini = teardown) {
  fx_mkdir(g_root, "v1/blkio/kubepods/besteffort/pod" UID);
  struct ioq_cg_layout l;
  cr_assert_eq(ioq_cg_layout_for(fx_path(g_root, "v1"), IOQ_CGV1, &l, NULL), 0);
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_resolve(&l, IOQ_CG_DRIVER_AUTO, NULL, IOQ_QOS_BESTEFFORT, UID, &pc,
                                      &e), 0, "%s", e.msg);
  cr_assert_str_eq(pc.dir, fx_path(g_root, "v1/blkio/kubepods/besteffort/pod" UID));
  cr_assert_str_eq(pc.name, "/kubepods/besteffort/pod" UID);
  cr_assert_eq(pc.driver, IOQ_CG_DRIVER_CGROUPFS);
}

/* The QoS class given is wrong (pod was Burstable): the search finds it. */
Test(podcg, resolve_by_search, .init = setup, .fini = teardown) {
  fx_mkdir(g_root, "cg/kubepods/burstable/pod" UID "/abcdef");
  fx_mkdir(g_root, "cg/kubepods/burstable/pod1111abcd-0000-4111-8222-333344445555");
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_GUARANTEED, UID,
                                      &pc, &e), 0, "%s", e.msg);
  cr_assert(pc.by_search);
  cr_assert_str_eq(pc.dir, fx_path(g_root, "cg/kubepods/burstable/pod" UID));
  cr_assert_str_eq(pc.name, "/kubepods/burstable/pod" UID);
}

/* kubelet runs with --cgroup-root=/kubelet but we were told "/": kubepods is
 * found near the top and searched. */
Test(podcg, resolve_other_root, .init = setup, .fini = teardown) {
  fx_mkdir(g_root, "cg/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" UID_ ".slice");
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_AUTO, "/", IOQ_QOS_GUARANTEED, UID, &pc,
                                      &e), 0, "%s", e.msg);
  cr_assert(pc.by_search);
  cr_assert_eq(pc.driver, IOQ_CG_DRIVER_SYSTEMD);
  cr_assert(strstr(pc.dir, "kubelet-kubepods-pod" UID_ ".slice"));
}

Test(podcg, resolve_not_found, .init = setup, .fini = teardown) {
  fx_mkdir(g_root, "cg/kubepods.slice/kubepods-besteffort.slice");
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_AUTO, "/", IOQ_QOS_BESTEFFORT, UID, &pc,
                                      &e), -1);
  cr_assert_eq(e.code, IOQ_ENOTFOUND);
  /* names every path tried and where it searched */
  cr_assert(strstr(e.msg, "kubepods-besteffort-pod" UID_ ".slice"), "%s", e.msg);
  cr_assert(strstr(e.msg, "/kubepods/besteffort/pod" UID), "%s", e.msg);
  cr_assert(strstr(e.msg, "searched"), "%s", e.msg);

  /* no kubepods at all */
  fx_rmtree(g_root);
  fx_mkdir(g_root, "cg/system.slice");
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_SYSTEMD, "/", IOQ_QOS_BESTEFFORT, UID,
                                      &pc, &e), -1);
  cr_assert(strstr(e.msg, "no kubepods cgroup exists"), "%s", e.msg);
  /* the cgroup root itself is missing */
  fx_rmtree(g_root);
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_SYSTEMD, "/", IOQ_QOS_BESTEFFORT, UID,
                                      &pc, &e), -1);
  cr_assert_eq(e.code, IOQ_ENOTFOUND);
}

Test(podcg, resolve_malformed_uid, .init = setup, .fini = teardown) {
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_AUTO, "/", IOQ_QOS_BESTEFFORT, "../..",
                                      &pc, &e), -1);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
}

Test(podcg, resolve_ambiguous, .init = setup, .fini = teardown) {
  fx_mkdir(g_root, "cg/kubepods.slice/kubepods-pod" UID_ ".slice");
  fx_mkdir(g_root, "cg/kubepods/pod" UID);
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_AUTO, "/", IOQ_QOS_GUARANTEED, UID, &pc,
                                      &e), -1);
  cr_assert_eq(e.code, IOQ_ECONFLICT);
  /* explicit driver settles it */
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_GUARANTEED, UID,
                                      &pc, &e), 0, "%s", e.msg);
  cr_assert(!pc.by_search);
}

Test(podcg, search_is_bounded, .init = setup, .fini = teardown) {
  /* deeper than the search depth: not found */
  fx_mkdir(g_root, "cg/kubepods/a/b/c/pod" UID);
  struct ioq_pod_cgroup pc;
  ioq_err e = {0};
  cr_assert_eq(ioq_pod_cgroup_resolve(&g_l, IOQ_CG_DRIVER_CGROUPFS, "/", IOQ_QOS_GUARANTEED, UID,
                                      &pc, &e), -1);
  cr_assert_eq(e.code, IOQ_ENOTFOUND);
}

Test(podcg, driver_detect, .init = setup, .fini = teardown) {
  enum ioq_cg_driver d;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_driver_detect(&g_l, "/", &d, &e), -1);
  cr_assert_eq(e.code, IOQ_ENOTFOUND);
  cr_assert(strstr(e.msg, "kubepods.slice") && strstr(e.msg, "kubepods"), "%s", e.msg);
  fx_mkdir(g_root, "cg/kubepods.slice");
  cr_assert_eq(ioq_cg_driver_detect(&g_l, "/", &d, &e), 0, "%s", e.msg);
  cr_assert_eq(d, IOQ_CG_DRIVER_SYSTEMD);
  fx_mkdir(g_root, "cg/kubepods");
  cr_assert_eq(ioq_cg_driver_detect(&g_l, "/", &d, &e), -1);
  cr_assert_eq(e.code, IOQ_ECONFLICT);
  fx_mkdir(g_root, "cg/kubelet/kubepods");
  cr_assert_eq(ioq_cg_driver_detect(&g_l, "/kubelet", &d, &e), 0, "%s", e.msg);
  cr_assert_eq(d, IOQ_CG_DRIVER_CGROUPFS);
}
