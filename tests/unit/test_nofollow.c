// SPDX-License-Identifier: Apache-2.0
/* Privileged writes never follow a symlink planted where a cgroup, sysfs or
 * state file should be (issue 12 item 13): the write fails with ELOOP and
 * the link's target keeps its content. Temp trees stand in for cgroupfs. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "cgroup/cgwrite.h"
#include "base/fsutil.h"

static char *g_root;

static void setup(void) { g_root = fx_tmpdir(); }
static void teardown(void) {
  fx_rmtree(g_root);
  free(g_root);
}

Test(nofollow, write_file_refuses_a_symlink, .init = setup, .fini = teardown) {
  fx_write(g_root, "victim", "precious\n");
  fx_mkdir(g_root, "cg/pod");
  fx_symlink(g_root, "cg/pod/io.max", fx_path(g_root, "victim"));
  ioq_err e = {0};
  cr_assert_eq(ioq_write_file(fx_path(g_root, "cg/pod/io.max"), "8:16 rbps=1", &e), -1);
  cr_assert_eq(e.code, ELOOP, "code %d: %s", e.code, e.msg);
  cr_assert(strstr(e.msg, "symbolic link"), "%s", e.msg);
  char *c = fx_read(g_root, "victim");
  cr_assert_str_eq(c, "precious\n");
  free(c);
  /* a regular file is written as before */
  fx_write(g_root, "cg/pod/io.weight", "default 100\n");
  cr_assert_eq(ioq_write_file(fx_path(g_root, "cg/pod/io.weight"), "default 200", &e), 0, "%s", e.msg);
  c = fx_read(g_root, "cg/pod/io.weight");
  cr_assert_str_eq(c, "default 200");
  free(c);
}

/* the enforcement writer, end to end on a pod cgroup whose io.max is a link */
Test(nofollow, enforcer_does_not_write_through_a_link, .init = setup, .fini = teardown) {
  fx_write(g_root, "sys/devices/pci0/block/sdb/dev", "8:16\n");
  fx_write(g_root, "sys/devices/pci0/block/sdb/queue/scheduler", "[none]\n");
  fx_symlink(g_root, "sys/dev/block/8:16", "../../devices/pci0/block/sdb");
  fx_symlink(g_root, "sys/class/block/sdb", "../../devices/pci0/block/sdb");
  fx_write(g_root, "cg/pod/cgroup.controllers", "io memory\n");
  fx_write(g_root, "cg/pod/io.weight", "default 100\n");
  fx_write(g_root, "elsewhere/io.max", "");
  fx_symlink(g_root, "cg/pod/io.max", fx_path(g_root, "elsewhere/io.max"));
  char sys[PATH_MAX], cgdir[PATH_MAX];
  snprintf(sys, sizeof sys, "%s/sys", g_root);
  snprintf(cgdir, sizeof cgdir, "%s/cg/pod", g_root);
  struct ioq_cg cg;
  ioq_err e = {0};
  cr_assert_eq(ioq_cg_open(cgdir, IOQ_CGV2, &cg, &e), 0, "%s", e.msg);
  struct ioq_disk_setting s = {.dev = {8, 16}, .max = {.rbps = 1048576}};
  struct ioq_apply_opts o = {.sysfs_root = sys};
  struct ioq_apply_report rep;
  cr_assert_eq(ioq_cg_apply_disk(&cg, &s, &o, &rep, &e), -1, "the write went through the link");
  cr_assert(strstr(e.msg, "io.max"), "%s", e.msg);
  char *c = fx_read(g_root, "elsewhere/io.max");
  cr_assert_str_eq(c, "");
  free(c);
}

/* state files (calibration): a link at the temp name must not redirect */
Test(nofollow, atomic_write_refuses_a_link_at_the_temp_name, .init = setup, .fini = teardown) {
  fx_write(g_root, "victim", "precious\n");
  char target[PATH_MAX], tmp[PATH_MAX];
  snprintf(target, sizeof target, "%s/state/calibration.json", g_root);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
  fx_mkdir(g_root, "state");
  cr_assert_eq(symlink(fx_path(g_root, "victim"), tmp), 0);
  ioq_err e = {0};
  cr_assert_eq(ioq_write_file_atomic(target, "{}\n", &e), -1);
  char *c = fx_read(g_root, "victim");
  cr_assert_str_eq(c, "precious\n");
  free(c);
  unlink(tmp);
  cr_assert_eq(ioq_write_file_atomic(target, "{}\n", &e), 0, "%s", e.msg);
}
