// SPDX-License-Identifier: Apache-2.0
/* The enforcement writer on temp trees: the paths, checks and error messages.
 * Plain files do not reformat or refuse writes like the kernel does; the
 * kernel's behaviour is covered by tests/kernel (real v1 blkio on the host,
 * real v2 in the VM). */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include "fixture.h"
#include "cgroup/cgwrite.h"

static char *g_root;
static char g_sys[PATH_MAX], g_cg[PATH_MAX];
static const struct ioq_devno SDB = {8, 16}, SDB1 = {8, 17};

static void setup(void) {
  g_root = fx_tmpdir();
  snprintf(g_sys, sizeof g_sys, "%s/sys", g_root);
  snprintf(g_cg, sizeof g_cg, "%s/cg/pod", g_root);
  fx_write(g_root, "sys/devices/pci0/block/sdb/dev", "8:16\n");
  fx_write(g_root, "sys/devices/pci0/block/sdb/queue/scheduler", "[mq-deadline] kyber bfq none\n");
  fx_write(g_root, "sys/devices/pci0/block/sdb/sdb1/dev", "8:17\n");
  fx_write(g_root, "sys/devices/pci0/block/sdb/sdb1/partition", "1\n");
  fx_write(g_root, "sys/devices/virtual/block/nullb0/dev", "253:0\n");
  fx_write(g_root, "sys/devices/virtual/block/nullb0/queue/scheduler", "mq-deadline [bfq] none\n");
  fx_symlink(g_root, "sys/dev/block/8:16", "../../devices/pci0/block/sdb");
  fx_symlink(g_root, "sys/dev/block/8:17", "../../devices/pci0/block/sdb/sdb1");
  fx_symlink(g_root, "sys/dev/block/253:0", "../../devices/virtual/block/nullb0");
  /* as in real sysfs: every device also under class/block */
  fx_symlink(g_root, "sys/class/block/sdb", "../../devices/pci0/block/sdb");
  fx_symlink(g_root, "sys/class/block/sdb1", "../../devices/pci0/block/sdb/sdb1");
  fx_symlink(g_root, "sys/class/block/nullb0", "../../devices/virtual/block/nullb0");
}
static void teardown(void) {
  fx_rmtree(g_root);
  free(g_root);
}

static void v2_cgroup(void) {
  fx_write(g_root, "cg/pod/cgroup.controllers", "io memory\n");
  fx_write(g_root, "cg/pod/io.max", "");
  fx_write(g_root, "cg/pod/io.weight", "default 100\n");
  fx_write(g_root, "cg/pod/io.bfq.weight", "default 100\n");
}
static void v1_cgroup(void) {
  const char *f[] = {"read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device"};
  for (int i = 0; i < 4; i++) {
    char rel[128];
    snprintf(rel, sizeof rel, "cg/pod/blkio.throttle.%s", f[i]);
    fx_write(g_root, rel, "");
  }
  fx_write(g_root, "cg/pod/blkio.bfq.weight", "100\n");
  fx_write(g_root, "cg/pod/blkio.bfq.weight_device", "default 100\n");
}

static struct ioq_apply_opts opts(void) { return (struct ioq_apply_opts){.sysfs_root = g_sys}; }

Test(enforce, open_detects_version, .init = setup, .fini = teardown) {
  struct ioq_cg cg;
  ioq_err e = {0};
  v2_cgroup();
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV_NONE, &cg, &e), 0, "%s", e.msg);
  cr_assert_eq(cg.version, IOQ_CGV2);
  fx_rmtree(g_root);
  setup();
  v1_cgroup();
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV_NONE, &cg, &e), 0, "%s", e.msg);
  cr_assert_eq(cg.version, IOQ_CGV1);
  fx_mkdir(g_root, "cg/other");
  cr_assert_eq(ioq_cg_open(fx_path(g_root, "cg/other"), IOQ_CGV_NONE, &cg, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert(strstr(e.msg, "io.max") && strstr(e.msg, "blkio.throttle"), "%s", e.msg);
  cr_assert_eq(ioq_cg_open(fx_path(g_root, "cg/missing"), IOQ_CGV_NONE, &cg, &e), -1);
  cr_assert_eq(e.code, ENOENT);
  cr_assert(strstr(e.msg, "does not exist"), "%s", e.msg);
}

Test(enforce, v2_apply_and_noop, .init = setup, .fini = teardown) {
  v2_cgroup();
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_disk_setting s = {.dev = SDB, .max = {.rbps = 1048576, .wbps = 2097152, .wiops = 500}};
  struct ioq_apply_opts o = opts();
  struct ioq_apply_report rep;
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  cr_assert_str_eq(rep.disk, "sdb");
  cr_assert_eq(rep.n, 1);
  cr_assert(rep.steps[0].changed);
  cr_assert_str_eq(rep.steps[0].written, "8:16 rbps=1048576 wbps=2097152 riops=max wiops=500");
  cr_assert_str_eq(rep.steps[0].readback, "8:16 rbps=1048576 wbps=2097152 riops=max wiops=500");
  char *c = fx_read(g_root, "cg/pod/io.max");
  cr_assert_str_eq(c, "8:16 rbps=1048576 wbps=2097152 riops=max wiops=500");
  free(c);

  /* Same values again: nothing is written (the file's mtime stays old). */
  struct utimbuf old = {.actime = 1000000000, .modtime = 1000000000};
  cr_assert_eq(utime(fx_path(g_root, "cg/pod/io.max"), &old), 0);
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  cr_assert(!rep.steps[0].changed);
  cr_assert_str_eq(rep.steps[0].written, "");
  struct stat st;
  cr_assert_eq(stat(fx_path(g_root, "cg/pod/io.max"), &st), 0);
  cr_assert_eq(st.st_mtime, 1000000000);
}

Test(enforce, v2_dry_run_writes_nothing, .init = setup, .fini = teardown) {
  v2_cgroup();
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_disk_setting s = {.dev = SDB, .max = {.rbps = 4096}, .weight = 300};
  struct ioq_apply_opts o = opts();
  o.dry_run = true;
  struct ioq_apply_report rep;
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  cr_assert_eq(rep.n, 2);
  cr_assert(rep.steps[0].changed && rep.steps[1].changed);
  cr_assert_str_eq(rep.steps[1].written, "8:16 300");
  char *c = fx_read(g_root, "cg/pod/io.max");
  cr_assert_str_eq(c, "");
  free(c);
  c = fx_read(g_root, "cg/pod/io.weight");
  cr_assert_str_eq(c, "default 100\n");
  free(c);
}

/* A kernel that does not hold what it was given (here: /dev/null swallows
 * the write and reads back nothing) is an error naming file, written, read. */
Test(enforce, readback_mismatch, .init = setup, .fini = teardown) {
  v2_cgroup();
  if (!fx_swallower(g_root, "cg/pod/io.max"))
    cr_skip_test("needs CAP_MKNOD for a write-swallowing io.max");
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_disk_setting s = {.dev = SDB, .max = {.wbps = 2097152}};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, NULL, &e), -1);
  cr_assert_eq(e.code, IOQ_EMISMATCH);
  cr_assert(strstr(e.msg, "io.max: wrote '8:16 rbps=max wbps=2097152 riops=max wiops=max'"), "%s",
            e.msg);
  cr_assert(strstr(e.msg, "reads back '(no line for the device)'"), "%s", e.msg);
}

Test(enforce, partition_refused, .init = setup, .fini = teardown) {
  v2_cgroup();
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_disk_setting s = {.dev = SDB1, .max = {.wbps = 2097152}};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, NULL, &e), -1);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
  cr_assert(strstr(e.msg, "8:17 is sdb1, a partition of sdb (8:16)"), "%s", e.msg);
  cr_assert(strstr(e.msg, "use 8:16"), "%s", e.msg);
  char *c = fx_read(g_root, "cg/pod/io.max");
  cr_assert_str_eq(c, "", "nothing written");
  free(c);
}

Test(enforce, unknown_device, .init = setup, .fini = teardown) {
  v2_cgroup();
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_disk_setting s = {.dev = {8, 99}, .max = {.wbps = 2097152}};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, NULL, &e), -1);
  cr_assert_eq(e.code, ENODEV);
  cr_assert(strstr(e.msg, "no block device 8:99"), "%s", e.msg);
}

/* A kernel without the file (io not enabled for the cgroup, or no
 * blk-throttle): a clear error, nothing else touched. */
Test(enforce, missing_iomax, .init = setup, .fini = teardown) {
  fx_write(g_root, "cg/pod/cgroup.controllers", "memory\n");
  fx_write(g_root, "cg/pod/io.weight", "default 100\n");
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV_NONE, &cg, &e), 0, "%s", e.msg);
  struct ioq_disk_setting s = {.dev = SDB, .max = {.wbps = 2097152}, .weight = 500};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, NULL, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert(strstr(e.msg, "has no io.max") && strstr(e.msg, "subtree_control"), "%s", e.msg);
  char *c = fx_read(g_root, "cg/pod/io.weight");
  cr_assert_str_eq(c, "default 100\n");
  free(c);
}

Test(enforce, missing_weight_file, .init = setup, .fini = teardown) {
  v2_cgroup();
  unlink(fx_path(g_root, "cg/pod/io.weight"));
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_disk_setting s = {.dev = SDB, .weight = 500};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, NULL, &e), -1);
  cr_assert(strstr(e.msg, "has no io.weight") && strstr(e.msg, "iocost"), "%s", e.msg);
}

struct rangecase {
  unsigned long long rbps, riops;
  unsigned weight, bfq;
  char want[40];
};
#include <criterion/parameterized.h>
ParameterizedTestParameters(enforce, out_of_range) {
  static struct rangecase cases[] = {
      {1, 0, 0, 0, "rbps=1: out of range"},
      {0, 4294967295ull, 0, 0, "riops=4294967295: out of range"},
      {0, 0, 10001, 0, "io.weight 10001 out of range"},
      {0, 0, 0, 1001, "BFQ weight 1001 out of range"},
  };
  return cr_make_param_array(struct rangecase, cases, sizeof cases / sizeof cases[0]);
}
ParameterizedTest(struct rangecase *c, enforce, out_of_range, .init = setup, .fini = teardown) {
  v2_cgroup();
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_disk_setting s = {.dev = SDB, .max = {.rbps = c->rbps, .riops = c->riops},
                               .weight = c->weight, .bfq_weight = c->bfq};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, NULL, &e), -1);
  cr_assert_eq(e.code, ERANGE);
  cr_assert(strstr(e.msg, c->want), "%s", e.msg);
  char *f = fx_read(g_root, "cg/pod/io.max");
  cr_assert_str_eq(f, "", "nothing written");
  free(f);
}

Test(enforce, bfq_only_when_disk_runs_bfq, .init = setup, .fini = teardown) {
  v2_cgroup();
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV2, &cg, &e), 0);
  struct ioq_apply_opts o = opts();
  struct ioq_apply_report rep;
  struct ioq_disk_setting s = {.dev = SDB, .bfq_weight = 500};
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  cr_assert_eq(rep.n, 2);
  cr_assert_str_eq(rep.steps[1].file, "io.bfq.weight");
  cr_assert(strstr(rep.steps[1].note, "scheduler is mq-deadline, not bfq"), "%s", rep.steps[1].note);
  char *c = fx_read(g_root, "cg/pod/io.bfq.weight");
  cr_assert_str_eq(c, "default 100\n");
  free(c);

  /* nullb0 runs bfq: the per-device line is written (a plain file then
   * holds only that line, which reads back as the device's weight) */
  fx_write(g_root, "cg/pod/io.bfq.weight", "");
  s.dev = (struct ioq_devno){253, 0};
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  cr_assert_str_eq(rep.steps[1].written, "253:0 500");
  cr_assert_str_eq(rep.steps[1].readback, "253:0 500");
}

/* v1 BFQ before Linux 5.4: blkio.bfq.weight without blkio.bfq.weight_device.
 * The cgroup-wide weight is used (raised, never lowered) and the step says so. */
Test(enforce, v1_bfq_without_per_device_file, .init = setup, .fini = teardown) {
  v1_cgroup();
  cr_assert_eq(unlink(fx_path(g_root, "cg/pod/blkio.bfq.weight_device")), 0);
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV1, &cg, &e), 0, "%s", e.msg);
  struct ioq_apply_opts o = opts();
  struct ioq_apply_report rep;
  struct ioq_disk_setting s = {.dev = {253, 0}, .bfq_weight = 500, .weights_only = true};
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  cr_assert_eq(rep.n, 1);
  cr_assert_str_eq(rep.steps[0].file, "blkio.bfq.weight");
  cr_assert_str_eq(rep.steps[0].written, "500");
  cr_assert_str_eq(rep.steps[0].readback, "default 500");
  cr_assert(strstr(rep.steps[0].note, "blkio.bfq.weight_device missing"), "%s", rep.steps[0].note);
  char *c = fx_read(g_root, "cg/pod/blkio.bfq.weight");
  cr_assert_str_eq(c, "500");
  free(c);
  /* a lower weight for another disk leaves the higher one in place */
  s.bfq_weight = 200;
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  c = fx_read(g_root, "cg/pod/blkio.bfq.weight");
  cr_assert_str_eq(c, "500");
  free(c);
}

Test(enforce, v1_apply, .init = setup, .fini = teardown) {
  v1_cgroup();
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV_NONE, &cg, &e), 0, "%s", e.msg);
  cr_assert_eq(cg.version, IOQ_CGV1);
  struct ioq_apply_opts o = opts();
  struct ioq_apply_report rep;
  struct ioq_disk_setting s = {.dev = SDB, .max = {.rbps = 1048576, .wiops = 300}, .weight = 700};
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), 0, "%s", e.msg);
  cr_assert_eq(rep.n, 5);
  cr_assert(rep.steps[0].changed);
  cr_assert_str_eq(rep.steps[0].written, "8:16 1048576");
  cr_assert(!rep.steps[1].changed, "write_bps already unlimited");
  cr_assert_str_eq(rep.steps[3].written, "8:16 300");
  cr_assert_str_eq(rep.steps[4].file, "io.weight");
  cr_assert(strstr(rep.steps[4].note, "cgroup v1 has no io.weight"), "%s", rep.steps[4].note);
  char *c = fx_read(g_root, "cg/pod/blkio.throttle.read_bps_device");
  cr_assert_str_eq(c, "8:16 1048576");
  free(c);

  struct ioq_disk_state_cg cur;
  cr_assert_eq(ioq_cg_read_disk(&cg, SDB, &cur, &e), 0, "%s", e.msg);
  cr_assert_eq(cur.max.rbps, 1048576);
  cr_assert_eq(cur.max.wiops, 300);
  cr_assert_eq(cur.bfq_weight.dflt, 100);
}

Test(enforce, v1_missing_files, .init = setup, .fini = teardown) {
  fx_write(g_root, "cg/pod/blkio.throttle.read_bps_device", "");
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV_NONE, &cg, &e), 0, "%s", e.msg);
  struct ioq_disk_setting s = {.dev = SDB, .max = {.rbps = 1048576}};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, NULL, &e), -1);
  cr_assert(strstr(e.msg, "has no blkio.throttle.write_bps_device"), "%s", e.msg);
}

Test(enforce, clear_missing_cgroup, .init = setup, .fini = teardown) {
  struct ioq_cg cg = {.version = IOQ_CGV2};
  snprintf(cg.dir, sizeof cg.dir, "%s/cg/gone", g_root);
  ioq_err e = {0};
  struct ioq_apply_opts o = opts();
  cr_assert_eq(ioq_cg_clear_disk(&cg, SDB, &o, NULL, &e), -1);
  cr_assert_eq(e.code, ENOENT);
  cr_assert(strstr(e.msg, "does not exist"), "%s", e.msg);
}

Test(enforce, scheduler_and_whole, .init = setup, .fini = teardown) {
  char buf[64], name[64];
  ioq_err e = {0};
  cr_assert_eq(ioq_blockdev_scheduler(g_sys, SDB, buf, sizeof buf, &e), 0, "%s", e.msg);
  cr_assert_str_eq(buf, "mq-deadline");
  cr_assert_eq(ioq_blockdev_whole(g_sys, SDB, name, sizeof name, &e), 0, "%s", e.msg);
  cr_assert_str_eq(name, "sdb");
  cr_assert_eq(ioq_blockdev_whole(g_sys, SDB1, name, sizeof name, &e), -1);
}
