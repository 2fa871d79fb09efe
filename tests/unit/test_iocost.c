// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "cgroup/iocost.h"

static const struct ioq_devno D = {8, 16};

Test(iocost, parse_kernel_line) {
  const char *c = "8:0 enable=1 ctrl=auto rpct=0.00 rlat=250000 wpct=0.00 wlat=250000 min=1.00 max=10000.00\n"
                  "8:16 enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=95.00 wlat=5000 min=100.00 max=100.00\n";
  struct ioq_iocost_qos q;
  bool present;
  ioq_err e = {0};
  cr_assert_eq(ioq_iocost_qos_parse(c, D, &q, &present, &e), 0, "%s", e.msg);
  cr_assert(present && q.enable && q.ctrl_user);
  cr_assert_float_eq(q.min, 100.0, 1e-9);
  cr_assert_float_eq(q.max, 100.0, 1e-9);
  cr_assert_eq(q.latency_us, 5000);
  cr_assert_eq(ioq_iocost_qos_parse(c, (struct ioq_devno){8, 0}, &q, &present, &e), 0);
  cr_assert(present && q.enable && !q.ctrl_user);
  cr_assert_eq(ioq_iocost_qos_parse(c, (struct ioq_devno){9, 0}, &q, &present, &e), 0);
  cr_assert_not(present);
  cr_assert_eq(ioq_iocost_qos_parse("8:16 enable=1 ctrl=user min=abc max=1\n", D, &q, &present, &e), -1);
  cr_assert(strstr(e.msg, "io.cost.qos line for 8:16: bad min 'abc'"), "%s", e.msg);
}

Test(iocost, format) {
  char l[256];
  struct ioq_iocost_qos w = {.enable = true, .ctrl_user = true, .min = 100, .max = 100};
  cr_assert_eq(ioq_iocost_qos_format(l, sizeof l, D, &w, NULL), 0);
  cr_assert_str_eq(l, "8:16 enable=1 ctrl=user min=100.00 max=100.00");
  w.latency_us = 5000;
  cr_assert_eq(ioq_iocost_qos_format(l, sizeof l, D, &w, NULL), 0);
  cr_assert_str_eq(l, "8:16 enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=95.00 wlat=5000 min=100.00 max=100.00");
  w.ctrl_user = false;
  cr_assert_eq(ioq_iocost_qos_format(l, sizeof l, D, &w, NULL), 0);
  cr_assert_str_eq(l, "8:16 enable=1 ctrl=auto");
  w.enable = false;
  cr_assert_eq(ioq_iocost_qos_format(l, sizeof l, D, &w, NULL), 0);
  cr_assert_str_eq(l, "8:16 enable=0");
}

Test(iocost, apply_noop_write_and_errors) {
  char *root = fx_tmpdir();
  ioq_err e = {0};
  bool changed;
  struct ioq_iocost_qos w = {.enable = true, .ctrl_user = true, .min = 100, .max = 100};
  /* no io.cost.qos: kernel without iocost, or not the v2 root */
  cr_assert_eq(ioq_iocost_qos_apply(root, D, &w, &changed, NULL, 0, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert(strstr(e.msg, "CONFIG_BLK_CGROUP_IOCOST"), "%s", e.msg);
  /* already in place, in the kernel's own format: nothing written */
  fx_write(root, "io.cost.qos", "8:16 enable=1 ctrl=user rpct=0.00 rlat=250000 wpct=0.00 wlat=250000 min=100.00 max=100.00\n");
  cr_assert_eq(ioq_iocost_qos_apply(root, D, &w, &changed, NULL, 0, &e), 0, "%s", e.msg);
  cr_assert_not(changed);
  /* differs: written and read back */
  w.max = 150;
  char written[256];
  cr_assert_eq(ioq_iocost_qos_apply(root, D, &w, &changed, written, sizeof written, &e), 0, "%s", e.msg);
  cr_assert(changed);
  cr_assert_str_eq(written, "8:16 enable=1 ctrl=user min=100.00 max=150.00");
  /* bad range: refused before anything is written */
  w.min = 200;
  cr_assert_eq(ioq_iocost_qos_apply(root, D, &w, &changed, NULL, 0, &e), -1);
  cr_assert(strstr(e.msg, "want 1 <= min <= max <= 10000"), "%s", e.msg);
  cr_assert_not(changed);
  /* the kernel keeps nothing (here: a file that swallows writes): mismatch */
  if (!fx_swallower(root, "io.cost.qos")) {
    fx_rmtree(root);
    free(root);
    cr_skip_test("needs CAP_MKNOD for a write-swallowing io.cost.qos");
  }
  w.min = 100;
  cr_assert_eq(ioq_iocost_qos_apply(root, D, &w, &changed, NULL, 0, &e), -1);
  cr_assert_eq(e.code, IOQ_EMISMATCH);
  cr_assert(strstr(e.msg, "wrote '8:16 enable=1 ctrl=user min=100.00 max=150.00', read back '(no line for the disk)'"),
            "%s", e.msg);
  fx_rmtree(root);
  free(root);
}

Test(iocost, model_parse_format) {
  char l[256];
  ioq_err e = {0};
  struct ioq_iocost_model w = {.bps = 178257920, .iops = 43520}, m;
  cr_assert_eq(ioq_iocost_model_format(l, sizeof l, D, &w, &e), 0, "%s", e.msg);
  cr_assert_str_eq(l, "8:16 ctrl=user model=linear rbps=178257920 rseqiops=43520 rrandiops=43520 "
                      "wbps=178257920 wseqiops=43520 wrandiops=43520");
  bool user, present;
  /* the kernel's own form of what was written, next to an automatic model */
  const char *c = "8:0 ctrl=auto model=linear rbps=488636629 rseqiops=8932 rrandiops=8518 wbps=427891549 "
                  "wseqiops=28755 wrandiops=21940\n"
                  "8:16 ctrl=user model=linear rbps=178257920 rseqiops=43520 rrandiops=43520 "
                  "wbps=178257920 wseqiops=43520 wrandiops=43520\n";
  cr_assert_eq(ioq_iocost_model_parse(c, D, &m, &user, &present, &e), 0, "%s", e.msg);
  cr_assert(present && user);
  cr_assert_eq(m.bps, w.bps);
  cr_assert_eq(m.iops, w.iops);
  /* an automatic model, or a user model that is not of this shape: not ours */
  cr_assert_eq(ioq_iocost_model_parse(c, (struct ioq_devno){8, 0}, &m, &user, &present, &e), 0);
  cr_assert(present && !user && m.bps == 0);
  cr_assert_eq(ioq_iocost_model_parse("8:16 ctrl=user model=linear rbps=1 rseqiops=2 rrandiops=2 wbps=2 "
                                      "wseqiops=2 wrandiops=2\n", D, &m, &user, &present, &e), 0);
  cr_assert_not(user);
  cr_assert_eq(ioq_iocost_model_parse(c, (struct ioq_devno){9, 0}, &m, &user, &present, &e), 0);
  cr_assert_not(present);
  cr_assert_eq(ioq_iocost_model_parse("8:16 ctrl=user rbps=12x\n", D, &m, &user, &present, &e), -1);
  cr_assert(strstr(e.msg, "io.cost.model line for 8:16: bad value 'rbps=12x'"), "%s", e.msg);
  w.iops = 0;
  cr_assert_eq(ioq_iocost_model_format(l, sizeof l, D, &w, &e), -1);
  cr_assert(strstr(e.msg, "must be > 0"), "%s", e.msg);
}

Test(iocost, model_apply_noop_write_and_errors) {
  char *root = fx_tmpdir();
  ioq_err e = {0};
  bool changed;
  char written[256];
  struct ioq_iocost_model w = {.bps = 1000, .iops = 10};
  cr_assert_eq(ioq_iocost_model_apply(root, D, &w, &changed, NULL, 0, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  fx_write(root, "io.cost.model", "8:16 ctrl=user model=linear rbps=1000 rseqiops=10 rrandiops=10 wbps=1000 "
                                  "wseqiops=10 wrandiops=10\n");
  cr_assert_eq(ioq_iocost_model_apply(root, D, &w, &changed, written, sizeof written, &e), 0, "%s", e.msg);
  cr_assert_not(changed);
  cr_assert_str_eq(written, "");
  w.bps = 2000;
  cr_assert_eq(ioq_iocost_model_apply(root, D, &w, &changed, written, sizeof written, &e), 0, "%s", e.msg);
  cr_assert(changed);
  cr_assert(strstr(written, "rbps=2000 rseqiops=10"), "%s", written);
  /* the kernel keeps nothing: mismatch, naming both */
  if (!fx_swallower(root, "io.cost.model")) {
    fx_rmtree(root);
    free(root);
    cr_skip_test("needs CAP_MKNOD for a write-swallowing io.cost.model");
  }
  cr_assert_eq(ioq_iocost_model_apply(root, D, &w, &changed, NULL, 0, &e), -1);
  cr_assert_eq(e.code, IOQ_EMISMATCH);
  cr_assert(strstr(e.msg, "read back '(no line for the disk)'"), "%s", e.msg);
  fx_rmtree(root);
  free(root);
}
