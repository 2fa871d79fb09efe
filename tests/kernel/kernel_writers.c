// SPDX-License-Identifier: Apache-2.0
/* The enforcement writer against a real kernel: cgroup v1 blkio on the host
 * (run-writers.sh v1) and cgroup v2 in the VM (run-writers.sh v2). The
 * wrapper creates the disks and a parent cgroup and passes them in:
 *
 *   IOQOS_KT_VERSION   1 or 2
 *   IOQOS_KT_CGROUP    parent cgroup; each test makes its own child in it
 *   IOQOS_KT_ROOT      the hierarchy root (v2: where io.cost.qos lives)
 *   IOQOS_KT_DEV1      a whole disk not running BFQ (MAJ:MIN)
 *   IOQOS_KT_DEV2      a whole disk running BFQ
 *   IOQOS_KT_PART      a partition, IOQOS_KT_PART_DISK its disk
 *
 * Without IOQOS_KT_CGROUP every test is skipped (the binary is meant to be run
 * by the wrapper, which ctest runs).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgwrite.h"
#include "base/fsutil.h"
#include "cgroup/iocost.h"

static int g_ver;
static struct ioq_devno g_d1, g_d2, g_part, g_pdisk;
static char g_cg[PATH_MAX]; /* this test's cgroup */
static char g_root[PATH_MAX];
static struct ioq_cg g_c;

static struct ioq_devno env_dev(const char *name) {
  const char *v = getenv(name);
  struct ioq_devno d = {0, 0};
  ioq_err e = {0};
  cr_assert(v && ioq_devno_parse(v, &d, &e) == 0, "%s: %s", name, v ? e.msg : "not set");
  return d;
}

static void rm_cgroup_tree(const char *dir) {
  /* children first; the tests leave no processes behind */
  char cmd[PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "find '%s' -depth -type d -exec rmdir {} + 2>/dev/null", dir);
  if (system(cmd) != 0) {
    /* reported by the wrapper's own cleanup if anything is left */
  }
}

static void setup(void) {
  const char *parent = getenv("IOQOS_KT_CGROUP");
  if (!parent)
    cr_skip_test("IOQOS_KT_CGROUP not set: run through tests/kernel/run-writers.sh");
  g_ver = atoi(getenv("IOQOS_KT_VERSION") ? getenv("IOQOS_KT_VERSION") : "0");
  cr_assert(g_ver == 1 || g_ver == 2);
  snprintf(g_root, sizeof g_root, "%s", getenv("IOQOS_KT_ROOT") ? getenv("IOQOS_KT_ROOT") : "");
  g_d1 = env_dev("IOQOS_KT_DEV1");
  g_d2 = env_dev("IOQOS_KT_DEV2");
  g_part = env_dev("IOQOS_KT_PART");
  g_pdisk = env_dev("IOQOS_KT_PART_DISK");
  snprintf(g_cg, sizeof g_cg, "%s/t%d", parent, (int)getpid());
  cr_assert_eq(mkdir(g_cg, 0755), 0, "mkdir %s: %s", g_cg, strerror(errno));
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(g_cg, IOQ_CGV_NONE, &g_c, &e), 0, "%s", e.msg);
  cr_assert_eq((int)g_c.version, g_ver, "detected version");
}

static void teardown(void) {
  if (g_cg[0])
    rm_cgroup_tree(g_cg);
}

static char *slurp(const char *dir, const char *file) {
  char p[PATH_MAX], *c = NULL;
  snprintf(p, sizeof p, "%s/%s", dir, file);
  ioq_err e = {0};
  cr_assert_eq(ioq_read_file(p, &c, NULL, 0, &e), 0, "%s", e.msg);
  return c;
}

static void dev_line(const char *file, struct ioq_devno d, char *out, size_t sz) {
  char *c = slurp(g_cg, file);
  ioq_dev_line(c, d, out, sz);
  free(c);
}

static const struct ioq_apply_opts O = {.sysfs_root = "/sys"};

static const struct ioq_apply_step *step(const struct ioq_apply_report *r, const char *file) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->steps[i].file, file) == 0)
      return &r->steps[i];
  cr_assert_fail("no report step for %s", file);
  return NULL;
}

/* ---- both versions ------------------------------------------------------ */

Test(kernel, apply_readback_noop_clear, .init = setup, .fini = teardown) {
  struct ioq_disk_setting s = {.dev = g_d1,
                               .max = {.rbps = 2097152, .wbps = 1048576, .riops = 300, .wiops = 120}};
  struct ioq_apply_report r;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  char line[256];
  if (g_ver == 2) {
    cr_assert(step(&r, "io.max")->changed);
    dev_line("io.max", g_d1, line, sizeof line);
    char want[128];
    snprintf(want, sizeof want, "%u:%u rbps=2097152 wbps=1048576 riops=300 wiops=120", g_d1.major,
             g_d1.minor);
    cr_assert_str_eq(line, want);
  } else {
    dev_line("blkio.throttle.write_iops_device", g_d1, line, sizeof line);
    char want[64];
    snprintf(want, sizeof want, "%u:%u 120", g_d1.major, g_d1.minor);
    cr_assert_str_eq(line, want);
  }
  for (size_t i = 0; i < r.n; i++)
    if (r.steps[i].changed)
      cr_assert_str_eq(r.steps[i].written, r.steps[i].readback, "%s", r.steps[i].file);

  /* in place already: nothing written */
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  for (size_t i = 0; i < r.n; i++)
    cr_assert(!r.steps[i].changed, "%s rewritten", r.steps[i].file);

  /* one value changes, only that file is written */
  s.max.wiops = 0;
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  size_t changed = 0;
  for (size_t i = 0; i < r.n; i++)
    changed += r.steps[i].changed;
  cr_assert_eq(changed, 1);

  /* a second disk, then clear the first only */
  struct ioq_disk_setting s2 = {.dev = g_d2, .max = {.wbps = 4194304}};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s2, &O, &r, &e), 0, "%s", e.msg);
  cr_assert_eq(ioq_cg_clear_disk(&g_c, g_d1, &O, &r, &e), 0, "%s", e.msg);
  const char *f = g_ver == 2 ? "io.max" : "blkio.throttle.write_bps_device";
  dev_line(f, g_d1, line, sizeof line);
  cr_assert_str_eq(line, "", "cleared: %s", line);
  dev_line(f, g_d2, line, sizeof line);
  cr_assert(strstr(line, "4194304"), "other disk kept: '%s'", line);
  struct ioq_disk_state_cg st;
  cr_assert_eq(ioq_cg_read_disk(&g_c, g_d1, &st, &e), 0, "%s", e.msg);
  cr_assert(ioq_limits_unlimited(&st.max));
  /* clearing again: nothing to do */
  cr_assert_eq(ioq_cg_clear_disk(&g_c, g_d1, &O, &r, &e), 0, "%s", e.msg);
  for (size_t i = 0; i < r.n; i++)
    cr_assert(!r.steps[i].changed, "%s rewritten", r.steps[i].file);
}

/* The pre-check refuses a partition; the kernel itself answers ENODEV. */
Test(kernel, partition, .init = setup, .fini = teardown) {
  struct ioq_disk_setting s = {.dev = g_part, .max = {.wbps = 1048576}};
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, NULL, &e), -1);
  cr_assert_eq(e.code, IOQ_EINVAL_INPUT);
  char want[64];
  snprintf(want, sizeof want, "use %u:%u", g_pdisk.major, g_pdisk.minor);
  cr_assert(strstr(e.msg, "a partition of") && strstr(e.msg, want), "%s", e.msg);
  char p[PATH_MAX], line[64];
  snprintf(p, sizeof p, "%s/%s", g_cg, g_ver == 2 ? "io.max" : "blkio.throttle.write_bps_device");
  snprintf(line, sizeof line, "%u:%u %s", g_part.major, g_part.minor,
           g_ver == 2 ? "wbps=1048576" : "1048576");
  cr_assert_eq(ioq_write_file(p, line, &e), -1, "kernel accepted a partition");
  cr_assert_eq(e.code, ENODEV, "%s", e.msg);
}

Test(kernel, bad_values_nothing_written, .init = setup, .fini = teardown) {
  ioq_err e = {0};
  struct ioq_disk_setting s = {.dev = g_d1, .max = {.wbps = 1}};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, NULL, &e), -1);
  cr_assert_eq(e.code, ERANGE);
  struct ioq_disk_setting b = {.dev = g_d2, .bfq_weight = 1001};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &b, &O, NULL, &e), -1);
  cr_assert_eq(e.code, ERANGE);
  struct ioq_disk_state_cg st;
  cr_assert_eq(ioq_cg_read_disk(&g_c, g_d1, &st, &e), 0, "%s", e.msg);
  cr_assert(ioq_limits_unlimited(&st.max));
  /* a device that does not exist */
  struct ioq_disk_setting n = {.dev = {g_d1.major, 250}, .max = {.wbps = 1048576}};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &n, &O, NULL, &e), -1);
  cr_assert(strstr(e.msg, "no block device"), "%s", e.msg);
}

Test(kernel, bfq_weight, .init = setup, .fini = teardown) {
  ioq_err e = {0};
  struct ioq_apply_report r;
  struct ioq_disk_setting s = {.dev = g_d2, .bfq_weight = 500};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  const char *f = g_ver == 2 ? "io.bfq.weight" : "blkio.bfq.weight_device";
  const struct ioq_apply_step *st = step(&r, f);
  char want[64];
  snprintf(want, sizeof want, "%u:%u 500", g_d2.major, g_d2.minor);
  cr_assert_str_eq(st->written, want);
  cr_assert_str_eq(st->readback, want);
  char line[64];
  dev_line(f, g_d2, line, sizeof line);
  cr_assert_str_eq(line, want);
  /* not a BFQ disk: skipped with the reason */
  struct ioq_disk_setting s1 = {.dev = g_d1, .bfq_weight = 500};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s1, &O, &r, &e), 0, "%s", e.msg);
  cr_assert(strstr(step(&r, f)->note, "not bfq"), "%s", step(&r, f)->note);
  /* clear restores the default for that disk */
  cr_assert_eq(ioq_cg_clear_disk(&g_c, g_d2, &O, &r, &e), 0, "%s", e.msg);
  dev_line(f, g_d2, line, sizeof line);
  cr_assert_str_eq(line, "");
}

Test(kernel, missing_cgroup, .init = setup, .fini = teardown) {
  char gone[PATH_MAX];
  snprintf(gone, sizeof gone, "%s/gone", g_cg);
  struct ioq_cg c;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(gone, IOQ_CGV_NONE, &c, &e), -1);
  cr_assert_eq(e.code, ENOENT);
  /* a cgroup removed after it was opened */
  cr_assert_eq(mkdir(gone, 0755), 0);
  cr_assert_eq(ioq_cg_open(gone, IOQ_CGV_NONE, &c, &e), 0, "%s", e.msg);
  cr_assert_eq(rmdir(gone), 0);
  struct ioq_disk_setting s = {.dev = g_d1, .max = {.wbps = 1048576}};
  cr_assert_eq(ioq_cg_apply_disk(&c, &s, &O, NULL, &e), -1);
  cr_assert(strstr(e.msg, gone), "%s", e.msg);
}

/* ---- v1 ----------------------------------------------------------------- */

Test(kernel, v1_no_io_weight, .init = setup, .fini = teardown) {
  if (g_ver != 1)
    cr_skip_test("cgroup v1 only");
  ioq_err e = {0};
  struct ioq_apply_report r;
  struct ioq_disk_setting s = {.dev = g_d1, .weight = 500};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  cr_assert(strstr(step(&r, "io.weight")->note, "cgroup v1 has no io.weight"));
}

/* ---- v2 ----------------------------------------------------------------- */

static void write_root(const char *file, const char *val) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", g_root, file);
  ioq_err e = {0};
  cr_assert_eq(ioq_write_file(p, val, &e), 0, "%s", e.msg);
}

/* io.weight: without iocost on the disk the kernel refuses the per-device
 * form (EOPNOTSUPP); the writer falls back to "default W" and says so. Once
 * iocost is enabled on the disk the per-device form is used. */
Test(kernel, v2_io_weight_forms, .init = setup, .fini = teardown) {
  if (g_ver != 2)
    cr_skip_test("cgroup v2 only");
  ioq_err e = {0};
  struct ioq_apply_report r;
  struct ioq_disk_setting s = {.dev = g_d2, .weight = 700};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  const struct ioq_apply_step *st = step(&r, "io.weight");
  cr_assert(strstr(st->note, "rejected") && strstr(st->note, "Operation not supported"), "%s",
            st->note);
  cr_assert_str_eq(st->written, "default 700");
  cr_assert_str_eq(st->readback, "default 700");
  char *c = slurp(g_cg, "io.weight");
  cr_assert_str_eq(c, "default 700\n");
  free(c);
  /* a second such disk needing less: the default stays at the larger weight,
   * and applying either disk again changes nothing */
  struct ioq_disk_setting s1 = {.dev = g_d1, .weight = 300};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s1, &O, &r, &e), 0, "%s", e.msg);
  cr_assert(!step(&r, "io.weight")->changed);
  cr_assert_str_eq(step(&r, "io.weight")->readback, "default 700");
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  cr_assert(!step(&r, "io.weight")->changed);

  char dv[32], cmd[64];
  ioq_devno_str(g_d2, dv, sizeof dv);
  snprintf(cmd, sizeof cmd, "%s enable=1", dv);
  write_root("io.cost.qos", cmd);
  s.weight = 800;
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  st = step(&r, "io.weight");
  char want[64];
  snprintf(want, sizeof want, "%s 800", dv);
  cr_assert_str_eq(st->note, "");
  cr_assert_str_eq(st->written, want);
  cr_assert_str_eq(st->readback, want);
  /* clear: the device line goes; with reset_default_weight the default too */
  struct ioq_apply_opts o = O;
  o.reset_default_weight = true;
  cr_assert_eq(ioq_cg_clear_disk(&g_c, g_d2, &o, &r, &e), 0, "%s", e.msg);
  c = slurp(g_cg, "io.weight");
  cr_assert_str_eq(c, "default 100\n");
  free(c);
  snprintf(cmd, sizeof cmd, "%s enable=0", dv);
  write_root("io.cost.qos", cmd);
}

/* Controllers along the path: enabled where allowed, a clear error where the
 * kernel refuses (a cgroup with processes of its own cannot delegate). */
Test(kernel, v2_controllers, .init = setup, .fini = teardown) {
  if (g_ver != 2)
    cr_skip_test("cgroup v2 only");
  char a[PATH_MAX], pod[PATH_MAX];
  snprintf(a, sizeof a, "%s/kubepods", g_cg);
  snprintf(pod, sizeof pod, "%s/kubepods/pod1", g_cg);
  cr_assert_eq(mkdir(a, 0755), 0);
  cr_assert_eq(mkdir(pod, 0755), 0);
  struct ioq_cg c;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(pod, IOQ_CGV2, &c, &e), 0);
  struct ioq_disk_setting s = {.dev = g_d1, .max = {.wbps = 1048576}};
  /* nothing enabled below the test cgroup: no io.max in the pod */
  cr_assert_eq(ioq_cg_apply_disk(&c, &s, &O, NULL, &e), -1);
  cr_assert_eq(e.code, IOQ_EUNSUPPORTED);
  cr_assert(strstr(e.msg, "has no io.max"), "%s", e.msg);
  unsigned n;
  cr_assert_eq(ioq_cg_ensure_controllers(g_root, pod, IOQ_CTRL_IO | IOQ_CTRL_MEMORY, false, &n, &e),
               -1);
  cr_assert(strstr(e.msg, "not enabled"), "%s", e.msg);

  /* a process in kubepods: the kernel refuses to delegate (EBUSY) */
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    pause();
    _exit(0);
  }
  char procs[PATH_MAX], pidbuf[32];
  snprintf(procs, sizeof procs, "%s/cgroup.procs", a);
  snprintf(pidbuf, sizeof pidbuf, "%d", (int)pid);
  cr_assert_eq(ioq_write_file(procs, pidbuf, &e), 0, "%s", e.msg);
  int rc = ioq_cg_ensure_controllers(g_root, pod, IOQ_CTRL_IO | IOQ_CTRL_MEMORY, true, &n, &e);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  cr_assert_eq(rc, -1);
  cr_assert_eq(e.code, EBUSY, "%s", e.msg);
  cr_assert(strstr(e.msg, "has processes of its own"), "%s", e.msg);

  /* without the process: enabled all the way, then io.max is there */
  cr_assert_eq(ioq_cg_ensure_controllers(g_root, pod, IOQ_CTRL_IO | IOQ_CTRL_MEMORY, true, &n, &e),
               0, "%s", e.msg);
  cr_assert_geq(n, 2);
  cr_assert_eq(ioq_cg_apply_disk(&c, &s, &O, NULL, &e), 0, "%s", e.msg);
  char *sc = slurp(a, "cgroup.subtree_control");
  cr_assert(strstr(sc, "io") && strstr(sc, "memory"), "%s", sc);
  free(sc);
  /* already enabled: no writes */
  cr_assert_eq(ioq_cg_ensure_controllers(g_root, pod, IOQ_CTRL_IO | IOQ_CTRL_MEMORY, true, &n, &e),
               0, "%s", e.msg);
  cr_assert_eq(n, 0);
}

/* A read-only cgroup filesystem: the write fails and the message says why. */
Test(kernel, v2_read_only, .init = setup, .fini = teardown) {
  if (g_ver != 2 || !getenv("IOQOS_E2E_VM"))
    cr_skip_test("cgroup v2 in the VM only (mounts a read-only cgroup2)");
  const char *mnt = "/tmp/ioqos-kt-ro";
  mkdir(mnt, 0755);
  cr_assert_eq(mount("cgroup2", mnt, "cgroup2", MS_RDONLY, NULL), 0, "mount: %s", strerror(errno));
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s%s", mnt, g_cg + strlen(g_root));
  struct ioq_cg c;
  ioq_err e = {0};
  int rc = ioq_cg_open(dir, IOQ_CGV_NONE, &c, &e);
  struct ioq_disk_setting s = {.dev = g_d1, .max = {.wbps = 1048576}};
  if (rc == 0)
    rc = ioq_cg_apply_disk(&c, &s, &O, NULL, &e) == -1 ? 0 : 1;
  umount(mnt);
  cr_assert_eq(rc, 0, "write to a read-only cgroupfs succeeded (%s)", e.msg);
  cr_assert_eq(e.code, EROFS, "%s", e.msg);
  cr_assert(strstr(e.msg, "read-only"), "%s", e.msg);
}

/* The iocost node policy on the real root io.cost.qos: enable with ctrl=user
 * and a latency target, read back in the kernel's format, no write when in
 * place, refused on a partition, and turned off again. */
Test(kernel, v2_iocost_qos, .init = setup, .fini = teardown) {
  if (g_ver != 2)
    cr_skip_test("cgroup v2 only");
  ioq_err e = {0};
  struct ioq_iocost_qos want = {.enable = true, .ctrl_user = true, .min = 100, .max = 100,
                                .latency_us = 5000};
  bool changed;
  char written[256];
  cr_assert_eq(ioq_iocost_qos_apply(g_root, g_d2, &want, &changed, written, sizeof written, &e), 0,
               "%s", e.msg);
  cr_assert(changed);
  char *c = slurp(g_root, "io.cost.qos");
  char dv[32];
  ioq_devno_str(g_d2, dv, sizeof dv);
  char line[160];
  snprintf(line, sizeof line, "%s enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=95.00 wlat=5000 min=100.00 max=100.00", dv);
  cr_assert(strstr(c, line), "io.cost.qos holds:\n%s", c);
  free(c);
  cr_assert_eq(ioq_iocost_qos_apply(g_root, g_d2, &want, &changed, NULL, 0, &e), 0, "%s", e.msg);
  cr_assert_not(changed, "in place: no second write");
  /* with iocost on, the per-device io.weight form is accepted */
  struct ioq_apply_report r;
  struct ioq_disk_setting s = {.dev = g_d2, .weight = 900};
  cr_assert_eq(ioq_cg_apply_disk(&g_c, &s, &O, &r, &e), 0, "%s", e.msg);
  cr_assert_str_eq(step(&r, "io.weight")->note, "");
  cr_assert_eq(ioq_iocost_qos_apply(g_root, g_part, &want, &changed, NULL, 0, &e), -1);
  cr_assert(strstr(e.msg, "io.cost.qos"), "%s", e.msg);
  struct ioq_iocost_qos off = {.enable = false};
  cr_assert_eq(ioq_iocost_qos_apply(g_root, g_d2, &off, &changed, NULL, 0, &e), 0, "%s", e.msg);
  cr_assert(changed);
}

/* nodePolicy.iocost.pace on the real root io.cost.model: the model written in
 * the kernel's format and read back, no second write, and in effect: with
 * iocost on (vrate pinned at 100 %) a direct writer on a disk that does
 * 1000 MiB/s gets no more than the modelled 8 MiB/s. Only a lower bound on
 * the time is checked (a slow machine only makes it slower). */
Test(kernel, v2_iocost_model_paces_the_disk, .init = setup, .fini = teardown) {
  if (g_ver != 2)
    cr_skip_test("cgroup v2 only");
  ioq_err e = {0};
  struct ioq_iocost_model m = {.bps = 8u << 20, .iops = 2048};
  bool changed;
  char written[256], dv[32];
  ioq_devno_str(g_d1, dv, sizeof dv);
  cr_assert_eq(ioq_iocost_model_apply(g_root, g_d1, &m, &changed, written, sizeof written, &e), 0,
               "%s", e.msg);
  cr_assert(changed);
  char *c = slurp(g_root, "io.cost.model");
  char line[256];
  snprintf(line, sizeof line, "%s ctrl=user model=linear rbps=8388608 rseqiops=2048 rrandiops=2048 "
           "wbps=8388608 wseqiops=2048 wrandiops=2048", dv);
  cr_assert(strstr(c, line), "io.cost.model holds:\n%s", c);
  free(c);
  cr_assert_eq(ioq_iocost_model_apply(g_root, g_d1, &m, &changed, NULL, 0, &e), 0, "%s", e.msg);
  cr_assert_not(changed, "in place: no second write");
  struct ioq_iocost_qos q = {.enable = true, .ctrl_user = true, .min = 100, .max = 100,
                             .latency_us = 2000};
  cr_assert_eq(ioq_iocost_qos_apply(g_root, g_d1, &q, &changed, NULL, 0, &e), 0, "%s", e.msg);

  /* 24 MiB at 8 MiB/s: at least ~3 s (2.4 s allows for iocost's margins) */
  char sys[64], dev[PATH_MAX], real[PATH_MAX], cmd[2 * PATH_MAX + 256];
  snprintf(sys, sizeof sys, "/sys/dev/block/%s", dv);
  cr_assert(realpath(sys, real), "%s: %s", sys, strerror(errno));
  snprintf(dev, sizeof dev, "/dev/%s", strrchr(real, '/') + 1);
  snprintf(cmd, sizeof cmd,
           "sh -c 'echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=%s bs=1M count=24 "
           "oflag=direct status=none'", g_cg, dev);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = system(cmd);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  struct ioq_iocost_qos off = {.enable = false};
  cr_assert_eq(ioq_iocost_qos_apply(g_root, g_d1, &off, &changed, NULL, 0, &e), 0, "%s", e.msg);
  char autom[64];
  snprintf(autom, sizeof autom, "%s ctrl=auto", dv);
  write_root("io.cost.model", autom);
  cr_assert_eq(rc, 0, "%s failed", cmd);
  cr_assert_geq(s, 2.4, "24 MiB written in %.2f s: the 8 MiB/s model did not pace the disk", s);
}
